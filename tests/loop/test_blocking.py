"""No node blocks the server's event loop.

The LangGraph server runs every run on one asyncio loop. The nodes are sync functions
over SQLite, FAISS and the tokenizer, so LangGraph runs them in its thread pool; a node
that did that I/O on the loop itself would stall every other request. blockbuster makes
blocking calls on a running loop raise ``BlockingError`` (with *all* its checks on:
stricter than ``langgraph dev``, which lets file reads and writes pass).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from blockbuster import BlockingError, blockbuster_ctx
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph

from langgraph_memgpt import Context, State, build_graph
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.nodes import make_open_turn
from langgraph_memgpt.stores.sqlite import close_all, open_memory
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes


@pytest.fixture(autouse=True)
def fresh_memory() -> Any:
    yield
    close_all()
    forget_loaded_indexes()


def step(name: str, heartbeat: bool = False, **args: Any) -> dict[str, Any]:
    if heartbeat:
        args["request_heartbeat"] = True
    return {"content": f"I call {name}.", "tool_calls": [{"name": name, "args": args}]}


SCRIPT = [
    # Every kind of store access: a core edit, archival write and search, recall search.
    step("core_memory_append", heartbeat=True, label="human", content="Name: Ada"),
    step("archival_memory_insert", heartbeat=True, content="Ada has a dog, Biscuit."),
    step("archival_memory_search", heartbeat=True, query="dog"),
    step("conversation_search", heartbeat=True, query="Ada"),
    step("send_message", message="Hello Ada!"),
]


def test_a_full_turn_under_blockbuster_never_blocks_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedChatModel.from_steps(SCRIPT)
    # As Studio sends it: a partial dict, so LangGraph builds the Context (defaults
    # included, data_dir among them) on the event loop, inside the check.
    monkeypatch.delenv("MEMGPT_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    context = {"agent_id": "ada"}

    async def run() -> dict[str, Any]:
        # As on the server: an async durable checkpointer, the graph driven with ainvoke.
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
            graph = build_graph(model=model).compile(checkpointer=saver)
            config = {"configurable": {"thread_id": "t1"}}
            with blockbuster_ctx():
                out: dict[str, Any] = await graph.ainvoke(
                    {"messages": [HumanMessage("hi, I'm Ada")]}, config, context=context
                )
            return out

    out = asyncio.run(run())
    assert out["messages"][-1].content == "Hello Ada!"
    assert model.remaining == 0  # every scripted step, every store, ran under the check
    memory = open_memory(tmp_path / ".memgpt", "ada")
    assert "Name: Ada" in memory.core.get("human").value
    assert memory.archival.count() == 1


def test_the_check_is_live_a_node_doing_store_io_on_the_loop_is_caught(tmp_path: Path) -> None:
    """The same open_turn node, wrapped in ``async def``: its SQLite I/O now runs on the
    loop, and blockbuster must refuse it (else the test above would prove nothing)."""
    sync_node = make_open_turn(Deps(model=ScriptedChatModel.from_steps([])))

    async def open_turn_on_the_loop(state: State, config: RunnableConfig) -> Any:
        return sync_node(state, config)

    builder = StateGraph(State, context_schema=Context)
    builder.add_node("open_turn", open_turn_on_the_loop)
    builder.add_edge(START, "open_turn")
    builder.add_edge("open_turn", END)
    graph = builder.compile()
    ctx = Context(data_dir=str(tmp_path / "data"), agent_id="ada")

    async def run() -> None:
        with blockbuster_ctx():
            await graph.ainvoke({"messages": [HumanMessage("hi")]}, context=ctx)

    with pytest.raises(BlockingError):
        asyncio.run(run())
