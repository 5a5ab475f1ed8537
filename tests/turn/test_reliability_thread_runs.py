"""One run per thread at a time: runs of the same thread at once never lose each other's messages.

Two runs of one thread that overlap both start from the same checkpoint; without the
thread lock (``langgraph_memgpt.turn.threads``) the last to write dropped the other's messages.
Real concurrent runs: ``ainvoke``s on one event loop, ``invoke``s on several threads, and
two processes sharing the checkpoint file and the data directory.

Each runs on both backends (`place`): memory and threads in a folder (SQLite), or in one
Postgres database (`PostgresBackend`; ``PostgresSaver``, ``AsyncPostgresSaver`` for
``ainvoke``), where a run also claims its thread with an advisory lock.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from checkpointers import Place, open_saver
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from thread_runner import SlowModel, reply

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.stores.sqlite import close_all
from langgraph_memgpt.turn.threads import ThreadBusyError, one_run

RUNNER = Path(__file__).parents[1] / "thread_runner.py"


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    yield
    close_all()


def _said(values: dict[str, Any]) -> tuple[list[str], list[str]]:
    users = [str(m.content) for m in values["messages"] if isinstance(m, HumanMessage)]
    replies = [str(m.content) for m in values["messages"] if isinstance(m, AIMessage)]
    return users, replies


@asynccontextmanager
async def async_saver(place: Place) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """An async checkpointer of the place: Postgres's own, or (SQLite) an in-memory one."""
    if not place.url:
        yield InMemorySaver()
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(place.url) as saver:
        await saver.setup()
        yield saver


def test_two_ainvokes_of_one_thread_at_once_keep_both_turns(place: Place) -> None:
    model = SlowModel.from_steps([reply("first answer"), reply("second answer")])
    config = {"configurable": {"thread_id": "t1"}}
    ctx = Context(data_dir=str(place.data_dir), embedding_model="none")
    backend = place.backend()

    async def both() -> dict[str, Any]:
        async with async_saver(place) as saver:
            graph = build_graph(model=model, memory=backend).compile(checkpointer=saver)
            await asyncio.gather(
                graph.ainvoke({"messages": [HumanMessage("hello from A")]}, config, context=ctx),
                graph.ainvoke({"messages": [HumanMessage("hello from B")]}, config, context=ctx),
            )
            return (await graph.aget_state(config)).values

    try:
        values = asyncio.run(both())
    finally:
        if backend is not None:
            backend.close()
    users, _ = _said(values)
    assert sorted(users) == ["hello from A", "hello from B"]
    assert sum("answer" in r for r in _said(values)[1]) >= 2
    assert values["turn"] == 2


def test_invokes_of_one_thread_from_several_threads_keep_every_turn(place: Place) -> None:
    model = SlowModel.from_steps([reply(f"answer {i}") for i in range(4)])
    saver, close_saver = open_saver(place.threads)
    backend = place.backend()
    graph = build_graph(model=model, memory=backend).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
    ctx = Context(data_dir=str(place.data_dir), embedding_model="none")
    try:
        with ThreadPoolExecutor(4) as pool:
            list(
                pool.map(
                    lambda i: graph.invoke(
                        {"messages": [HumanMessage(f"message {i}")]}, config, context=ctx
                    ),
                    range(4),
                )
            )
        users, _ = _said(graph.get_state(config).values)
    finally:
        close_saver()
        if backend is not None:
            backend.close()
    assert sorted(users) == [f"message {i}" for i in range(4)]
    stored = place.open().recall.list_messages(limit=100)
    assert sorted(m.text for _, m in stored if m.role == "user") == sorted(users)


def test_two_processes_running_one_thread_keep_every_turn(place: Place, tmp_path: Path) -> None:
    data_dir, checkpoints, go = tmp_path / "data", place.threads, tmp_path / "go"
    turns = 3
    saver, close_saver = open_saver(checkpoints)  # tables created once, not raced for
    saver.setup()  # type: ignore[attr-defined]
    close_saver()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(RUNNER.parent), *sys.path])}
    procs = [
        subprocess.Popen(
            [sys.executable, str(RUNNER), str(data_dir), checkpoints, "shared", name]
            + [str(turns), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("p1", "p2")
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0 and out.strip() == "done", err

    saver, close_saver = open_saver(checkpoints)
    graph = build_graph().compile(checkpointer=saver)
    values = graph.get_state({"configurable": {"thread_id": "shared"}}).values
    close_saver()
    users, replies = _said(values)
    expected = sorted(f"{name} {i}" for name in ("p1", "p2") for i in range(turns))
    assert sorted(users) == expected
    assert sorted(r for r in replies if "reply" in r) == sorted(
        f"{name} reply {i}" for name in ("p1", "p2") for i in range(turns)
    )
    stored = Place(place.kind, data_dir, place.url)  # the processes' data directory
    try:
        recall = stored.open().recall
        assert sorted(m.text for m in recall.latest(100) if m.role == "user") == expected
    finally:
        stored.close()


def test_a_thread_held_too_long_is_a_clear_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite only: the thread is held by the file lock beside the checkpoint file. On
    Postgres a thread another worker holds is test_many_workers' clear-error test."""
    from langgraph_memgpt.turn import threads

    monkeypatch.setattr(threads, "THREAD_WAIT_SECONDS", 0.2)
    config = {"configurable": {"thread_id": "busy-thread"}}
    saver, close = open_saver(str(tmp_path / "threads.sqlite"))
    try:
        with one_run(config, str(tmp_path)):  # another process's run, as far as locks go
            graph = build_graph(model=SlowModel.from_steps([reply("x")])).compile(
                checkpointer=saver
            )
            started = time.monotonic()
            with pytest.raises(ThreadBusyError, match="thread 'busy-thread' is busy"):
                graph.invoke(
                    {"messages": [HumanMessage("hi")]},
                    config,
                    context=Context(data_dir=str(tmp_path), embedding_model="none"),
                )
            assert time.monotonic() - started < 5
        assert graph.get_state(config).values == {}  # refused before it read the thread
    finally:
        close()


def _agent_as_a_tool(
    tmp_path: Path, saver: BaseCheckpointSaver[Any], own_thread: bool, asynchronous: bool
) -> dict[str, Any]:
    """Agent "a" whose tool asks agent "b" (one checkpointer for both), as a user would."""
    ctx = Context(data_dir=str(tmp_path), embedding_model="none")
    b = build_graph(
        model=SlowModel.from_steps([reply("b says: the key is in the drawer")]), agent_id="b"
    )
    agent_b = b.compile(checkpointer=saver)
    b_config = {"configurable": {"thread_id": "b-thread"}} if own_thread else None

    def ask_b(question: str) -> str:
        """Ask agent b."""
        out = agent_b.invoke({"messages": [HumanMessage(question)]}, b_config, context=ctx)
        return str(out["messages"][-1].content)

    async def aask_b(question: str) -> str:
        """Ask agent b."""
        out = await agent_b.ainvoke({"messages": [HumanMessage(question)]}, b_config, context=ctx)
        return str(out["messages"][-1].content)

    a_model = SlowModel.from_steps(
        [
            {"content": "", "tool_calls": [{"name": "ask_b", "args": {"question": "keys?"}}]},
            reply("a says: in the drawer"),
        ]
    )
    tool = _named(aask_b) if asynchronous else ask_b
    agent_a = build_graph(model=a_model, agent_id="a", tools=[tool]).compile(checkpointer=saver)
    if asynchronous:
        return asyncio.run(
            agent_a.ainvoke(
                {"messages": [HumanMessage("where are my keys?")]},
                {"configurable": {"thread_id": "a-thread"}},
                context=ctx,
            )
        )
    return agent_a.invoke(
        {"messages": [HumanMessage("where are my keys?")]},
        {"configurable": {"thread_id": "a-thread"}},
        context=ctx,
    )


def _named(function: Any) -> Any:
    from langchain_core.tools import StructuredTool

    return StructuredTool.from_function(coroutine=function, name="ask_b")


@pytest.mark.parametrize("own_thread", [True, False], ids=["b-own-thread", "b-in-a-task"])
@pytest.mark.parametrize(
    ("saver_kind", "asynchronous"),
    # SqliteSaver has no async API: ainvoke is the in-memory saver's.
    [("memory", False), ("memory", True), ("sqlite", False)],
    ids=["memory-invoke", "memory-ainvoke", "sqlite-invoke"],
)
def test_an_agent_used_as_a_tool_by_another_on_one_checkpointer_answers(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    saver_kind: str,
    own_thread: bool,
    asynchronous: bool,
) -> None:
    """Agent a's tool runs agent b (its own thread, or the config it inherits in a's
    task): b's run is not kept waiting for a's, which waits for the tool."""
    from langgraph_memgpt.turn import threads

    monkeypatch.setattr(threads, "THREAD_WAIT_SECONDS", 5.0)  # the wait would be 900 s
    if saver_kind == "memory":
        out = _agent_as_a_tool(tmp_path, InMemorySaver(), own_thread, asynchronous)
    else:
        saver, close = open_saver(str(tmp_path / "threads.sqlite"))
        try:
            out = _agent_as_a_tool(tmp_path, saver, own_thread, asynchronous)
        finally:
            close()
    results = [str(m.content) for m in out["messages"] if m.type == "tool"]
    assert '"b says: the key is in the drawer"' in results[0], results
    assert out["messages"][-1].content == "a says: in the drawer"


def test_the_thread_held_is_the_configurable_one_whatever_the_metadata_says(
    tmp_path: Path,
) -> None:
    """LangSmith groups traces by ``metadata.thread_id``; a caller setting it per request
    must not make two runs of one thread run at once (one turn would leave the queue)."""
    model = SlowModel.from_steps([reply(f"answer {i}") for i in range(2)])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), embedding_model="none")

    def turn(i: int) -> None:
        config: Any = {
            "configurable": {"thread_id": "t1"},
            "metadata": {"thread_id": f"trace-group-{i}"},
        }
        graph.invoke({"messages": [HumanMessage(f"message {i}")]}, config, context=ctx)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(turn, range(2)))
    users, replies = _said(graph.get_state({"configurable": {"thread_id": "t1"}}).values)
    assert sorted(users) == ["message 0", "message 1"]
    assert sorted(r for r in replies if r.startswith("answer")) == ["answer 0", "answer 1"]
