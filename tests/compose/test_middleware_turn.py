"""`MemGPTMiddleware` runs the graph's turn: its step cap, repeat breaker and heartbeats.

The graph and the middleware share one turn core (`langgraph_memgpt.turn.core`): these are the
graph's rules (`tests/loop/test_turn_phases.py`, `tests/loop/test_graph_loop.py`) on a
``create_agent(..., middleware=[MemGPTMiddleware(...)])`` agent with a scripted model.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, prompts
from langgraph_memgpt.compose.middleware import MemGPTMiddleware
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.tools.memory_tools import DEFAULT_TOOLS
from tests.compose.test_middleware import MwAgent, UserCtx, calls


def ask(mw: MwAgent, text: str, run: str) -> dict[str, Any]:
    if run == "invoke":
        return mw.say(text)
    out: dict[str, Any] = asyncio.run(
        mw.agent.ainvoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": "t1"}},
            context=UserCtx("bo"),
        )
    )
    return out


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_a_model_repeating_the_same_call_is_stopped_by_the_breaker(
    memory_backend: MemoryBackend, run: str
) -> None:
    forever = calls(("conversation_search", {"query": "tea"}))
    mw = MwAgent(memory_backend, [forever] * 8, max_repeated_calls=3)

    out = ask(mw, "What tea do I like?", run)

    assert mw.model.remaining == 5  # three calls, then the breaker
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls
    assert last.content == prompts.REPEATED_CALL_REPLY.format(name="conversation_search")
    assert mw.state()["repeat_count"] == 3


def test_a_turn_is_capped_at_max_steps(memory_backend: MemoryBackend) -> None:
    searches = [calls(("conversation_search", {"query": f"topic {i}"})) for i in range(8)]
    mw = MwAgent(memory_backend, searches, max_steps=3)

    out = mw.say("Tell me everything.")

    assert mw.model.remaining == 5
    assert out["messages"][-1].content == prompts.STEP_CAP_REPLY.format(steps=3)


def test_a_reply_sent_without_a_heartbeat_ends_the_turn(memory_backend: MemoryBackend) -> None:
    """With ``send_message`` among its tools, the agent's turn ends as the graph's does: the
    reply is out and nothing asked for another step."""
    model = ScriptedChatModel.from_steps(
        [
            calls(
                ("core_memory_append", {"label": "human", "content": "Likes green tea."}),
                ("send_message", {"message": "Noted: green tea."}),
            ),
            "never asked",
        ]
    )
    memgpt = MemGPTMiddleware(
        backend=memory_backend,
        context=Context(embedding_model="none"),
        tools=[*DEFAULT_TOOLS, "send_message"],
    )
    agent = create_agent(
        model, [], middleware=[memgpt], context_schema=UserCtx, checkpointer=InMemorySaver()
    )

    out = agent.invoke(
        {"messages": [HumanMessage("I like green tea.")]},
        {"configurable": {"thread_id": "t1"}},
        context=UserCtx("bo"),
    )

    assert model.remaining == 1  # no second model call: the reply is out
    assert out["messages"][-1].content == "Noted: green tea."
    assert memory_backend.open("bo").core.get("human").value == "Likes green tea."


def test_a_search_result_is_read_before_the_turn_ends(memory_backend: MemoryBackend) -> None:
    mw = MwAgent(
        memory_backend,
        [calls(("conversation_search", {"query": "tea"})), "You never told me."],
    )
    out = mw.say("What tea do I like?")
    assert mw.model.remaining == 0
    assert out["messages"][-1].content == "You never told me."


def _unparseable(name: str, args: str, call_id: str) -> AIMessage:
    return AIMessage(
        "",
        invalid_tool_calls=[
            {"name": name, "args": args, "id": call_id, "error": "bad", "type": "invalid_tool_call"}
        ],
    )


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_a_call_whose_arguments_do_not_parse_gets_an_error_result_and_the_turn_goes_on(
    memory_backend: MemoryBackend, run: str
) -> None:
    """As the graph's ``think``: the model reads why its call failed and tries again."""
    mw = MwAgent(
        memory_backend,
        [
            _unparseable("archival_memory_search", '{"query": "tea', "c1"),
            calls(("archival_memory_search", {"query": "tea"})),
            "Nothing saved about tea.",
        ],
    )

    out = ask(mw, "What tea do I like?", run)

    assert mw.model.remaining == 0, "the turn ended at the unparseable call"
    assert out["messages"][-1].content == "Nothing saved about tea."
    errors = [m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "c1"]
    assert len(errors) == 1 and "not valid JSON" in str(errors[0].content)
    second_prompt = mw.model.calls[1]
    assert any(isinstance(m, ToolMessage) and m.tool_call_id == "c1" for m in second_prompt), (
        "the model never read the error"
    )
    recorded = memory_backend.open("bo").recall.get([str(errors[0].id)])
    assert recorded, "the error result was not written ahead to recall"


def test_the_graph_and_the_middleware_call_one_turn_core() -> None:
    """No mirrored orchestration: each phase is a function of `langgraph_memgpt.turn.core` that
    the graph's node and the middleware's hook both call; neither writes recall itself."""
    import inspect

    from langgraph_memgpt.compose import middleware
    from langgraph_memgpt.nodes import check_pressure, close_step, open_turn, respond, think

    hooks = inspect.getsource(middleware)
    nodes = {
        "open_turn": inspect.getsource(open_turn),
        "measure": inspect.getsource(check_pressure),
        "close": inspect.getsource(close_step),
        "step_cap": inspect.getsource(think),
        "after_overflow": inspect.getsource(think),
        "take": inspect.getsource(think),
        "reply_text": inspect.getsource(respond),
    }
    for phase, node in nodes.items():
        assert f"turn.{phase}(" in hooks, f"the middleware does not call turn.{phase}"
        assert f"turn.{phase}(" in node or f"turn_core.{phase}(" in node, phase
    assert "turn.plan(" in hooks  # measure, evict, render, build the prompt: one call
    leaves = ("record", "stamped", "fitted", "message_budget", "pressure", "close_step")
    for leaf in (*leaves, "build_prompt"):
        assert leaf not in vars(middleware), f"the middleware orchestrates {leaf} itself"
    # The eviction is handed to the turn core's plan (which runs it), never called here.
    assert "evict=evict" in hooks and "evict(" not in hooks
