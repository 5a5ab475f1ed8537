"""The MemGPT agent composed into larger LangGraph graphs, for real.

Real parent graphs (``langgraph-supervisor``'s supervisor, a ``langgraph-swarm`` swarm, a
hand-written StateGraph), real SQLite memory in a temp folder, a real MCP server started
over stdio; only the chat models are scripted.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.sqlite import open_memory

HERE = Path(__file__).resolve().parents[1]


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def scripted(*steps: Any) -> ScriptedChatModel:
    return ScriptedChatModel.from_steps(list(steps))


def context(tmp_path: Path, agent_id: str = "ada-agent") -> Context:
    return Context(data_dir=str(tmp_path), agent_id=agent_id, embedding_model="none")


def memory_of(tmp_path: Path, agent_id: str) -> Any:
    return open_memory(str(tmp_path), agent_id, embedding_model="none")


def assert_every_call_answered(messages: list[AnyMessage]) -> None:
    """The history a provider would accept: each tool call has its result after it."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for message in messages:
        if isinstance(message, AIMessage):
            for tool_call in message.tool_calls:
                assert tool_call["id"] in answered, f"unanswered {tool_call['name']}"


def system_prompt(model: ScriptedChatModel, call_index: int = -1) -> str:
    return str(model.calls[call_index][0].content)


# -- a worker under a supervisor -----------------------------------------------------------


def test_a_memgpt_worker_under_a_supervisor_keeps_its_memory_across_threads(
    tmp_path: Path,
) -> None:
    from langgraph_supervisor import create_supervisor

    worker_model = scripted(
        step(call("core_memory_append", label="human", content="Drinks green tea")),
        step(call("send_message", message="Noted: you drink green tea.")),
        step(call("send_message", message="You drink green tea.")),
    )
    worker = build_graph(model=worker_model).compile(name="memory_agent")
    boss = scripted(
        step(call("transfer_to_memory_agent")),
        "The memory agent has it.",
        step(call("transfer_to_memory_agent")),
        "Green tea.",
    )
    app = create_supervisor([worker], model=boss, prompt="Route memory questions.").compile(
        checkpointer=InMemorySaver()
    )
    ctx = context(tmp_path)

    first = app.invoke(
        {"messages": [HumanMessage("Remember that I drink green tea")]},
        {"configurable": {"thread_id": "p1"}},
        context=ctx,
    )
    replies = [m.content for m in first["messages"] if isinstance(m, AIMessage)]
    assert "Noted: you drink green tea." in replies
    assert first["messages"][-1].content == "The memory agent has it."
    assert_every_call_answered(first["messages"])
    human = {b.label: b.value for b in memory_of(tmp_path, ctx.agent_id).core.blocks()}
    assert "Drinks green tea" in human["human"]

    second = app.invoke(
        {"messages": [HumanMessage("What do I drink?")]},
        {"configurable": {"thread_id": "p2"}},
        context=ctx,
    )
    assert "You drink green tea." in [m.content for m in second["messages"]]
    assert "Drinks green tea" in system_prompt(worker_model), "core memory in a new thread"
    assert worker_model.remaining == 0 and boss.remaining == 0


# -- a swarm, handing off both ways ---------------------------------------------------------


def swarm_app(tmp_path: Path, memgpt_model: ScriptedChatModel, helper_model: ScriptedChatModel):  # noqa: ANN201
    from langgraph_swarm import create_handoff_tool, create_swarm

    concierge = build_graph(
        model=memgpt_model,
        tools=[create_handoff_tool(agent_name="helper", description="Ask the helper.")],
    ).compile(name="concierge")
    helper = create_agent(
        helper_model,
        tools=[create_handoff_tool(agent_name="concierge", description="Back to concierge.")],
        name="helper",
    )
    return create_swarm([concierge, helper], default_active_agent="concierge").compile(
        checkpointer=InMemorySaver()
    )


def test_a_memgpt_agent_hands_off_in_a_swarm_and_continues_with_its_memory(
    tmp_path: Path,
) -> None:
    memgpt_model = scripted(
        # One step: save a fact and hand the user over; both calls get their results.
        step(
            call("core_memory_append", label="human", content="Name: Ada; drinks green tea"),
            call("transfer_to_helper"),
        ),
        step(call("send_message", message="The helper says it is sunny, Ada.")),
        step(call("send_message", message="Green tea, Ada.")),
    )
    helper_model = scripted(
        step(call("transfer_to_concierge"), content="It is sunny."),
    )
    app = swarm_app(tmp_path, memgpt_model, helper_model)
    ctx = context(tmp_path)

    out = app.invoke(
        {"messages": [HumanMessage("I'm Ada, I drink green tea. What's the weather?")]},
        {"configurable": {"thread_id": "s1"}},
        context=ctx,
    )
    messages = out["messages"]
    assert_every_call_answered(messages)
    assert out["active_agent"] == "concierge"
    assert messages[-1].content == "The helper says it is sunny, Ada."
    assert any(m.content == "It is sunny." for m in messages if isinstance(m, AIMessage))
    # Back from the helper, the agent thinks with the fact it saved before the handoff.
    assert "drinks green tea" in system_prompt(memgpt_model, 1)

    memory = memory_of(tmp_path, ctx.agent_id)
    handoff = next(
        m for m in messages if isinstance(m, ToolMessage) and m.name == "transfer_to_helper"
    )
    recorded = memory.recall.get([str(handoff.id)])
    assert recorded and "transferred to helper" in recorded[0].text, "recall holds the handoff"
    assert json.loads(str(handoff.content))["status"] == "OK"

    again = app.invoke(
        {"messages": [HumanMessage("What do I drink?")]},
        {"configurable": {"thread_id": "s2"}},
        context=ctx,
    )
    assert again["messages"][-1].content == "Green tea, Ada."
    assert "drinks green tea" in system_prompt(memgpt_model)
    assert memgpt_model.remaining == 0 and helper_model.remaining == 0


def test_a_swarm_thread_comes_back_to_the_agent_that_holds_it(tmp_path: Path) -> None:
    memgpt_model = scripted(
        step(call("transfer_to_helper")),
        step(call("send_message", message="Welcome back; I remember you asked about rain.")),
    )
    helper_model = scripted("Rain at noon.", step(call("transfer_to_concierge")))
    app = swarm_app(tmp_path, memgpt_model, helper_model)
    config = {"configurable": {"thread_id": "s1"}}
    ctx = context(tmp_path)

    first = app.invoke({"messages": [HumanMessage("Will it rain?")]}, config, context=ctx)
    assert first["active_agent"] == "helper"
    assert first["messages"][-1].content == "Rain at noon."
    assert_every_call_answered(first["messages"])

    second = app.invoke({"messages": [HumanMessage("Thanks, back to you")]}, config, context=ctx)
    assert second["active_agent"] == "concierge"
    assert second["messages"][-1].content.startswith("Welcome back")
    assert_every_call_answered(second["messages"])
    # The agent's recall holds the earlier part of the thread, the helper's answer included.
    memory = memory_of(tmp_path, ctx.agent_id)
    page = memory.recall.search("rain noon", page_size=5)
    assert any("Rain at noon." in hit.item.text for hit in page.hits)


# -- two agents, one data dir, one parent graph -----------------------------------------------


class Routed(MessagesState):
    to: str


def test_two_memgpt_agents_in_one_parent_graph_keep_their_memories_apart(
    tmp_path: Path,
) -> None:
    alice_model = scripted(
        step(
            call("core_memory_append", label="human", content="Door code is 4711"),
            call("archival_memory_insert", content="The door code is 4711"),
            call("send_message", message="Saved."),
        ),
        step(call("send_message", message="The code is 4711.")),
    )
    bob_model = scripted(
        step(call("archival_memory_search", query="door code")),
        step(call("send_message", message="I don't know any code.")),
    )
    alice = build_graph(model=alice_model, agent_id="alice").compile(name="alice")
    bob = build_graph(model=bob_model, agent_id="bob").compile(name="bob")

    def route(state: Routed) -> Literal["alice", "bob"]:
        return "alice" if state["to"] == "alice" else "bob"

    parent = StateGraph(Routed)
    parent.add_node("alice", alice)
    parent.add_node("bob", bob)
    parent.add_conditional_edges(START, route)
    app = parent.compile(checkpointer=InMemorySaver())
    ctx = context(tmp_path, agent_id="ignored-by-both")

    def ask(to: str, text: str, thread: str) -> str:
        out = app.invoke(
            {"messages": [HumanMessage(text)], "to": to},
            {"configurable": {"thread_id": thread}},
            context=ctx,
        )
        return str(out["messages"][-1].content)

    assert ask("alice", "The door code is 4711", "t1") == "Saved."
    assert ask("bob", "What is the door code?", "t2") == "I don't know any code."
    bob_result = json.loads(str(bob_model.calls[1][-1].content))
    assert "4711" not in bob_result["message"], "bob searched alice's archive"
    assert "4711" not in system_prompt(bob_model)
    assert ask("alice", "What was the code?", "t3") == "The code is 4711."
    assert "4711" in system_prompt(alice_model)

    blocks = {
        agent: {b.label: b.value for b in memory_of(tmp_path, agent).core.blocks()}
        for agent in ("alice", "bob")
    }
    assert "4711" in blocks["alice"]["human"] and "4711" not in blocks["bob"]["human"]
    assert memory_of(tmp_path, "bob").archival.search("door code").hits == []
    assert memory_of(tmp_path, "alice").archival.search("door code").hits


# -- an MCP tool, through langchain-mcp-adapters ---------------------------------------------


def mcp_tools() -> list[Any]:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient(
        {
            "timetable": {
                "command": sys.executable,
                "args": [str(HERE / "mcp_timetable.py")],
                "transport": "stdio",
            }
        }
    )
    return asyncio.run(client.get_tools())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_agent_calls_an_mcp_servers_tool(tmp_path: Path, mode: str) -> None:
    tools = mcp_tools()
    assert [t.name for t in tools] == ["departure"]
    model = scripted(
        step(call("departure", flight="AF12")),
        step(call("send_message", message="AF12 leaves Paris at 09:40 from gate B12.")),
    )
    graph = build_graph(model=model, tools=tools).compile(checkpointer=InMemorySaver())
    request = {"messages": [HumanMessage("When does AF12 leave?")]}
    config = {"configurable": {"thread_id": "m"}}
    if mode == "sync":
        out = graph.invoke(request, config, context=context(tmp_path))
    else:
        out = asyncio.run(graph.ainvoke(request, config, context=context(tmp_path)))
    result = json.loads(str(next(m for m in out["messages"] if isinstance(m, ToolMessage)).content))
    assert result["status"] == "OK"
    assert "Paris 09:40, gate B12" in result["message"]
    assert out["messages"][-1].content.startswith("AF12 leaves Paris")


# -- the docs' example ---------------------------------------------------------------------


def test_the_docs_composition_example_runs_as_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (HERE.parent / "docs" / "library" / "composition.md").read_text()
    after = page.split("<!-- compose-example -->", 1)[1]
    code = after.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "composition.md", "exec"), {"__name__": "docs"})  # noqa: S102
    assert capsys.readouterr().out.splitlines() == ["Sunny today, Ada.", "Green tea."]
    blocks = {
        b.label: b.value for b in memory_of(tmp_path / "memory", "ada-assistant").core.blocks()
    }
    assert "Drinks green tea" in blocks["human"]


def test_an_agent_keeping_its_own_queue_resumes_cleanly_after_a_handoff(tmp_path: Path) -> None:
    """Compiled with ``checkpointer=True`` the agent keeps its own queue between visits: the
    handoff's results are in it, so nothing is reported as interrupted and no handoff repeats.
    """
    from langgraph_swarm import create_handoff_tool, create_swarm

    memgpt_model = scripted(
        step(call("transfer_to_helper")),
        step(call("send_message", message="Back with you.")),
    )
    helper_model = scripted("Rain at noon.", step(call("transfer_to_concierge")))
    concierge = build_graph(
        model=memgpt_model, tools=[create_handoff_tool(agent_name="helper")]
    ).compile(name="concierge", checkpointer=True)
    helper = create_agent(
        helper_model, tools=[create_handoff_tool(agent_name="concierge")], name="helper"
    )
    app = create_swarm([concierge, helper], default_active_agent="concierge").compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "s1"}}
    ctx = context(tmp_path)

    app.invoke({"messages": [HumanMessage("Will it rain?")]}, config, context=ctx)
    out = app.invoke({"messages": [HumanMessage("Thanks")]}, config, context=ctx)
    assert out["messages"][-1].content == "Back with you."
    assert out["active_agent"] == "concierge"
    queue = memgpt_model.calls[-1]
    transfer = [m for m in queue if isinstance(m, ToolMessage) and m.name == "transfer_to_helper"]
    assert len(transfer) == 1 and transfer[0].status == "success"
    assert not any("interrupted" in str(m.content).lower() for m in queue)
    assert memgpt_model.remaining == 0 and helper_model.remaining == 0
