"""A run's input is refused before LangGraph keeps it, and the check does not read the queue twice.

The thread's owner is read from its checkpoint once; later runs of the same agent reuse it
while the thread's newest checkpoint is the one the last admitted run left. Whatever
writes to the thread in between (a deleted thread started again by another agent, an
``update_state``) makes the next run read the checkpoint again: another agent's input is
still refused with nothing of it kept, on every saver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checkpointers import open_saver
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel

THREAD = {"configurable": {"thread_id": "kitchen"}}
ALICE_SECRET = "alice-secret-4471"


def _send(text: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "send_message", "args": {"message": text}}]}


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    where = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgres"
        else str(tmp_path / "checkpoints.sqlite")
    )
    opened, close = open_saver(where)
    yield opened
    close()


def _agent(tmp_path: Path, name: str) -> Context:
    return Context(data_dir=str(tmp_path / "memory"), agent_id=name, embedding_model="none")


def _holds(saver: BaseCheckpointSaver[Any], word: str) -> bool:
    saved = saver.get_tuple(THREAD)
    return saved is not None and (
        word in repr(saved.checkpoint["channel_values"]) or word in repr(saved.pending_writes)
    )


def test_a_thread_deleted_and_started_again_by_another_agent_refuses_its_old_agent(
    saver: BaseCheckpointSaver[Any], tmp_path: Path
) -> None:
    model = ScriptedChatModel.from_steps([_send(f"ok {i}") for i in range(8)])
    graph = build_graph(model=model).compile(checkpointer=saver)
    alice, bob = _agent(tmp_path, "alice"), _agent(tmp_path, "bob")
    for text in ("hello", "how are you?", "and now?"):  # the owner is known, then kept
        graph.invoke({"messages": [HumanMessage(text)]}, THREAD, context=alice)
    saver.delete_thread("kitchen")
    graph.invoke({"messages": [HumanMessage("bob's kitchen now")]}, THREAD, context=bob)

    with pytest.raises(ValueError, match="belongs to agent 'bob'"):
        graph.invoke({"messages": [HumanMessage(ALICE_SECRET)]}, THREAD, context=alice)

    assert not _holds(saver, ALICE_SECRET), "alice's refused input was kept in bob's thread"
    graph.invoke({"messages": [HumanMessage("anything new?")]}, THREAD, context=bob)
    assert not _holds(saver, ALICE_SECRET), "bob's next run took alice's input for his own"


def test_a_thread_given_to_another_agent_by_update_state_refuses_its_old_agent(
    saver: BaseCheckpointSaver[Any], tmp_path: Path
) -> None:
    model = ScriptedChatModel.from_steps([_send(f"ok {i}") for i in range(8)])
    graph = build_graph(model=model).compile(checkpointer=saver)
    alice = _agent(tmp_path, "alice")
    for text in ("hello", "how are you?"):
        graph.invoke({"messages": [HumanMessage(text)]}, THREAD, context=alice)
    graph.update_state(THREAD, {"agent_id": "bob"})

    with pytest.raises(ValueError, match="belongs to agent 'bob'"):
        graph.invoke({"messages": [HumanMessage(ALICE_SECRET)]}, THREAD, context=alice)
    assert not _holds(saver, ALICE_SECRET)


class _CountingSaver(InMemorySaver):
    """LangGraph's in-memory saver, counting the checkpoints read."""

    reads = 0

    def get_tuple(self, config: Any) -> Any:
        self.reads += 1
        return super().get_tuple(config)


def test_a_run_of_the_threads_own_agent_reads_its_checkpoint_once(tmp_path: Path) -> None:
    """The owner check reuses what it read while nothing else wrote to the thread."""
    saver = _CountingSaver()
    model = ScriptedChatModel.from_steps([_send(f"ok {i}") for i in range(8)])
    graph = build_graph(model=model).compile(checkpointer=saver)
    alice = _agent(tmp_path, "alice")
    for text in ("hello", "how are you?"):
        graph.invoke({"messages": [HumanMessage(text)]}, THREAD, context=alice)
    before = saver.reads
    for text in ("one", "two", "three"):
        graph.invoke({"messages": [HumanMessage(text)]}, THREAD, context=alice)
    assert saver.reads - before == 3, "each run should read the thread's checkpoint once"


def test_async_runs_on_an_async_saver_refuse_the_old_agent_of_a_restarted_thread(
    tmp_path: Path,
) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def scenario() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as saver:
            model = ScriptedChatModel.from_steps([_send(f"ok {i}") for i in range(8)])
            graph = build_graph(model=model).compile(checkpointer=saver)
            alice, bob = _agent(tmp_path, "alice"), _agent(tmp_path, "bob")
            for text in ("hello", "how are you?", "and now?"):
                await graph.ainvoke({"messages": [HumanMessage(text)]}, THREAD, context=alice)
            await saver.adelete_thread("kitchen")
            await graph.ainvoke({"messages": [HumanMessage("mine now")]}, THREAD, context=bob)
            with pytest.raises(ValueError, match="belongs to agent 'bob'"):
                await graph.ainvoke(
                    {"messages": [HumanMessage(ALICE_SECRET)]}, THREAD, context=alice
                )
            saved = await saver.aget_tuple(THREAD)
            assert saved is not None
            assert ALICE_SECRET not in repr(saved.checkpoint["channel_values"])
            assert ALICE_SECRET not in repr(saved.pending_writes)

    asyncio.run(scenario())
