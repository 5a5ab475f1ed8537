"""MemGPT's memory in an agent that is not this package's loop (a ``create_agent`` agent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import after_model, dynamic_prompt
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config

from langgraph_memgpt import Context
from langgraph_memgpt.compose.tools import memory_prompt, memory_tools, recorder
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.sqlite import open_memory


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": n, "args": a} for n, a in pairs]}


def run(agent: Any, text: str, thread: str, **configurable: Any) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread, **configurable}}
    out: dict[str, Any] = agent.invoke({"messages": [HumanMessage(text)]}, config)
    return out


def results(out: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(str(m.content)) for m in out["messages"] if isinstance(m, ToolMessage)]


@pytest.fixture
def ctx(tmp_path: Path) -> Context:
    return Context(data_dir=str(tmp_path), embedding_model="none")


def test_a_create_agent_agent_keeps_facts_in_core_memory_and_finds_past_threads(
    ctx: Context,
) -> None:
    model = ScriptedChatModel.from_steps(
        [
            calls(("core_memory_append", {"label": "human", "content": "Keeps bees."})),
            "Bees! Noted.",
            calls(("conversation_search", {"query": "bees"})),
            "You keep bees.",
        ]
    )
    view = memory_prompt("ada", context=ctx)
    record = recorder("ada", context=ctx)

    @dynamic_prompt
    def with_memory(request: Any) -> str:
        return view()

    @after_model
    def record_messages(state: Any, runtime: Any) -> dict[str, Any]:
        return record(state, get_config())

    agent = create_agent(
        model,
        memory_tools("ada", context=ctx),
        middleware=[with_memory, record_messages],
        checkpointer=InMemorySaver(),
    )

    first = run(agent, "I keep bees, by the way.", "t1")
    assert results(first)[0]["message"].startswith("Appended to 'human'")
    assert open_memory(ctx.data_dir, "ada").core.get("human").value == "Keeps bees."

    second = run(agent, "What did I tell you about bees?", "t2")
    found = results(second)[0]["message"]
    assert "I keep bees, by the way." in found  # recorded from the first thread
    assert second["messages"][-1].content == "You keep bees."
    # Core memory is in view on the next call, as in MemGPT.
    assert "Keeps bees." in str(model.calls[2][0].content)


def test_the_model_sees_the_memory_arguments_and_nothing_injected(ctx: Context) -> None:
    model = ScriptedChatModel.from_steps(["hi"])
    create_agent(model, memory_tools("ada", context=ctx)).invoke({"messages": [HumanMessage("hi")]})
    tools = {t["function"]["name"]: t["function"] for t in model.bound_tools}
    assert "send_message" not in tools
    assert set(tools) == {
        "core_memory_append",
        "core_memory_replace",
        "archival_memory_insert",
        "archival_memory_search",
        "conversation_search",
        "conversation_search_date",
        "forget",
    }
    append = tools["core_memory_append"]
    assert set(append["parameters"]["properties"]) >= {"label", "content"}
    assert "tool_call_id" not in append["parameters"]["properties"]
    assert "config" not in append["parameters"]["properties"]


def test_the_guards_and_failures_read_the_same_as_in_the_loop(ctx: Context) -> None:
    model = ScriptedChatModel.from_steps(
        [
            calls(
                ("core_memory_append", {"label": "human", "content": "Where do I live?"}),
                ("core_memory_append", {"label": "nope", "content": "x"}),
            ),
            "ok",
        ]
    )
    out = run(create_agent(model, memory_tools("ada", context=ctx)), "hi", "t1")
    question, unknown = results(out)
    assert "a question is not a fact" in question["message"]
    assert unknown["status"] == "Failed" and "nope" in unknown["message"]


def test_the_agent_comes_from_the_run_when_not_fixed(ctx: Context) -> None:
    step = calls(("archival_memory_insert", {"content": "Locker code 4711"}))
    model = ScriptedChatModel.from_steps([step, "saved", step, "saved"])
    agent = create_agent(model, memory_tools(context=ctx))
    run(agent, "save it", "t1", agent_id="ada")
    run(agent, "save it", "t2", agent_id="bob")
    for name in ("ada", "bob"):
        page = open_memory(ctx.data_dir, name).archival.search("locker", mode="fts")
        assert [h.item.text for h in page.hits] == ["Locker code 4711"], name


def test_a_replayed_insert_saves_nothing_twice(ctx: Context) -> None:
    tool = {t.name: t for t in memory_tools("ada", context=ctx)}["archival_memory_insert"]
    call = {
        "name": "archival_memory_insert",
        "args": {"content": "Locker code 4711"},
        "id": "call_1",
        "type": "tool_call",
    }
    config = {"configurable": {"thread_id": "t1"}}
    tool.invoke(call, config)
    tool.invoke(call, config)
    assert open_memory(ctx.data_dir, "ada").archival.count() == 1


def test_an_unknown_tool_name_is_a_clear_error(ctx: Context) -> None:
    with pytest.raises(ValueError, match="unknown memory tool"):
        memory_tools("ada", context=ctx, names=["core_memory_delete"])
