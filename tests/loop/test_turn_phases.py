"""Every phase of a turn is a node of the graph; the routes only read what the nodes wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph, routes
from langgraph_memgpt.llm.scripted import ScriptedChatModel


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def ctx(tmp_path: Path, **values: Any) -> Context:
    return Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none", **values)


def test_the_graph_draws_open_turn_and_close_step() -> None:
    graph = build_graph().compile().get_graph()
    edges = {(e.source, e.target) for e in graph.edges}
    assert ("__start__", "open_turn") in edges
    assert ("open_turn", "check_pressure") in edges
    assert ("call_memory_tool", "close_step") in edges
    assert {("close_step", "check_pressure"), ("close_step", "respond")} <= edges


def test_no_route_computes_a_decision_or_reads_the_run_context() -> None:
    # The routes module holds no decision and no way to reach the run's settings.
    for name in ("decide", "close_step", "get_runtime", "Context", "open_step"):
        assert not hasattr(routes, name), name
    sent = AIMessage("", id="m1", tool_calls=[call("send_message", message="Hi") | {"id": "c1"}])
    result = ToolMessage('{"status": "OK"}', tool_call_id="c1", name="send_message")
    queue = [HumanMessage("hi", id="u1"), sent, result]
    # Outside any run: no runtime, no context. The route believes the state, whatever
    # the queue suggests (the decision is close_step's, written once).
    assert routes.after_close({"messages": queue, "turn_over": False}) == "check_pressure"
    assert routes.after_close({"messages": queue, "turn_over": True}) == "respond"


def test_a_step_of_several_calls_is_closed_once_after_every_call(tmp_path: Path) -> None:
    model = ScriptedChatModel.from_steps(
        [
            {
                "content": "",
                "tool_calls": [
                    call("archival_memory_insert", content="Ada likes tea."),
                    call("archival_memory_insert", content="Ada likes jazz."),
                    call("send_message", message="Noted, Ada."),
                ],
            }
        ]
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    order = [
        node
        for update in graph.stream(
            {"messages": [HumanMessage("I like tea and jazz.")]},
            config,
            context=ctx(tmp_path),
            stream_mode="updates",
        )
        for node in update
    ]
    assert order[:2] == ["open_turn", "check_pressure"]
    assert order.count("call_memory_tool") == 3
    assert order.count("close_step") == 1
    assert order.index("close_step") > max(
        i for i, n in enumerate(order) if n == "call_memory_tool"
    )
    assert order[-1] == "respond"
    state = graph.get_state(config).values
    assert state["turn_over"] is True
    assert state["step_closed"] == next(
        m.id for m in state["messages"] if isinstance(m, AIMessage) and m.tool_calls
    )
    assert state["messages"][-1].content == "Noted, Ada."


def test_a_repeated_call_is_stopped_by_the_decision_close_step_writes(tmp_path: Path) -> None:
    looping = {"content": "", "tool_calls": [call("conversation_search", query="tea")]}
    model = ScriptedChatModel.from_steps([looping] * 5)
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    out = graph.invoke(
        {"messages": [HumanMessage("What do I like?")]},
        config,
        context=ctx(tmp_path, max_repeated_calls=3),
    )
    state = graph.get_state(config).values
    assert state["repeat_count"] == 3
    assert "conversation_search" in out["messages"][-1].content
    assert model.remaining == 2
