"""One run per thread at a time: runs of the same thread at once never lose each other's messages.

Two runs of one thread that overlap both start from the same checkpoint; without the
thread lock (``langgraph_memgpt.threads``) the last to write dropped the other's messages.
Real concurrent runs: ``ainvoke``s on one event loop, ``invoke``s on several threads, and
two processes sharing the checkpoint file and the data directory.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from thread_runner import SlowModel, reply

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.stores import close_all, open_memory
from langgraph_memgpt.threads import ThreadBusyError, one_run

RUNNER = Path(__file__).parent / "thread_runner.py"


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    yield
    close_all()


def _said(values: dict[str, Any]) -> tuple[list[str], list[str]]:
    users = [str(m.content) for m in values["messages"] if isinstance(m, HumanMessage)]
    replies = [str(m.content) for m in values["messages"] if isinstance(m, AIMessage)]
    return users, replies


def test_two_ainvokes_of_one_thread_at_once_keep_both_turns(tmp_path: Path) -> None:
    model = SlowModel.from_steps([reply("first answer"), reply("second answer")])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    ctx = Context(data_dir=str(tmp_path), embedding_model="none")

    async def both() -> None:
        await asyncio.gather(
            graph.ainvoke({"messages": [HumanMessage("hello from A")]}, config, context=ctx),
            graph.ainvoke({"messages": [HumanMessage("hello from B")]}, config, context=ctx),
        )

    asyncio.run(both())
    values = graph.get_state(config).values
    users, _ = _said(values)
    assert sorted(users) == ["hello from A", "hello from B"]
    assert sum("answer" in r for r in _said(values)[1]) >= 2
    assert values["turn"] == 2


def test_invokes_of_one_thread_from_several_threads_keep_every_turn(tmp_path: Path) -> None:
    model = SlowModel.from_steps([reply(f"answer {i}") for i in range(4)])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    ctx = Context(data_dir=str(tmp_path), embedding_model="none")
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
    assert sorted(users) == [f"message {i}" for i in range(4)]


def test_two_processes_running_one_thread_keep_every_turn(tmp_path: Path) -> None:
    data_dir, checkpoints, go = tmp_path / "data", tmp_path / "checkpoints.sqlite", tmp_path / "go"
    turns = 3
    with sqlite3.connect(checkpoints) as conn:  # created once, not raced for
        SqliteSaver(conn).setup()
    procs = [
        subprocess.Popen(
            [sys.executable, str(RUNNER), str(data_dir), str(checkpoints), "shared", name]
            + [str(turns), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
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

    conn = sqlite3.connect(checkpoints, check_same_thread=False)
    graph = build_graph().compile(checkpointer=SqliteSaver(conn))
    values = graph.get_state({"configurable": {"thread_id": "shared"}}).values
    conn.close()
    users, replies = _said(values)
    expected = sorted(f"{name} {i}" for name in ("p1", "p2") for i in range(turns))
    assert sorted(users) == expected
    assert sorted(r for r in replies if "reply" in r) == sorted(
        f"{name} reply {i}" for name in ("p1", "p2") for i in range(turns)
    )
    memory = open_memory(data_dir, "default", embedding_model="none")
    assert sorted(m.text for m in memory.recall.latest(100) if m.role == "user") == expected


def test_a_thread_held_too_long_is_a_clear_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_memgpt import threads

    monkeypatch.setattr(threads, "THREAD_WAIT_SECONDS", 0.2)
    config = {"configurable": {"thread_id": "busy-thread"}}
    with one_run(config, str(tmp_path)):
        graph = build_graph(model=SlowModel.from_steps([reply("x")])).compile(
            checkpointer=InMemorySaver()
        )
        started = time.monotonic()
        with pytest.raises(ThreadBusyError, match="thread 'busy-thread' is busy"):
            graph.invoke(
                {"messages": [HumanMessage("hi")]},
                config,
                context=Context(data_dir=str(tmp_path), embedding_model="none"),
            )
        assert time.monotonic() - started < 5
