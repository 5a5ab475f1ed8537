"""Recovery at start: thread by thread, for the agent each thread's runs recorded it for.

Real SQLite checkpoints (``SqliteSaver``), real memory on each backend, a scripted model.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph._internal._constants import NULL_TASK_ID
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_memgpt.context import Context
from langgraph_memgpt.graph import build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.ops.recovery import recover_threads
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.sqlite import close_all


def send(text: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "send_message", "args": {"message": text}}]}


def graph_on(checkpoints: Path, memory: MemoryBackend | None = None, turns: int = 8) -> Any:
    conn = sqlite3.connect(checkpoints, check_same_thread=False)
    model = ScriptedChatModel.from_steps([send("hi") for _ in range(turns)])
    return build_graph(model=model, memory=memory).compile(checkpointer=SqliteSaver(conn))


def texts(memory: MemoryBackend, agent: str) -> list[tuple[str, str]]:
    """The user messages recall holds for ``agent``: (thread, text)."""
    found = memory.open(agent).recall.latest(100)
    return sorted((m.thread_id, m.text) for m in found if m.role == "user")


def test_recovery_goes_on_past_a_bad_thread_and_records_the_later_ones(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A thread whose checkpoint cannot be read, or whose state cannot be built (a refused
    ``events`` input left in its pending writes), is logged and skipped; every other
    thread's checkpointed-but-unrecorded message is still recorded."""
    data_dir, checkpoints = tmp_path / "data", tmp_path / "checkpoints.sqlite"
    graph = graph_on(checkpoints)
    ctx = Context(data_dir=str(data_dir), agent_id="ada", embedding_model="none")
    # Checkpoint order (newest first, as recovery walks them): bad-events, b, bad-blob, a.
    for thread in ("a", "bad-blob", "b", "bad-events"):
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"messages": [HumanMessage("hello")]}, config, context=ctx)
        if thread in ("a", "b"):  # checkpointed, not recorded: a process died in between
            graph.update_state(config, {"messages": [HumanMessage(f"orphan of {thread}")]})
    latest = graph.checkpointer.get_tuple({"configurable": {"thread_id": "bad-events"}})
    graph.checkpointer.put_writes(latest.config, [("events", [{"text": 7}])], NULL_TASK_ID)
    with pytest.raises(ValueError, match=r"events\[0\]"):  # the thread cannot be read
        graph.get_state({"configurable": {"thread_id": "bad-events"}})
    graph.checkpointer.conn.execute(
        "UPDATE checkpoints SET checkpoint = x'c1c1c1' WHERE thread_id = 'bad-blob'"
    )
    graph.checkpointer.conn.commit()
    close_all()

    with caplog.at_level("ERROR", logger="langgraph_memgpt.ops.recovery"):
        recorded = recover_threads(graph_on(checkpoints), ctx)
    assert recorded == 2
    from langgraph_memgpt.stores.sqlite import SqliteBackend

    memory = SqliteBackend(data_dir, embedding_model="none")
    orphans = [(t, x) for t, x in texts(memory, "ada") if x.startswith("orphan")]
    assert orphans == [("a", "orphan of a"), ("b", "orphan of b")]
    failed = " ".join(r.getMessage() for r in caplog.records)
    assert "bad-events" in failed and "bad-blob" in failed


def test_recovery_records_a_thread_for_the_agent_its_runs_recorded_not_the_one_its_state_names(
    tmp_path: Path, memory_backend: MemoryBackend
) -> None:
    """bob's thread stamped ``agent_id: "alice"`` by a state write: nothing goes to alice."""
    checkpoints = tmp_path / "checkpoints.sqlite"
    graph = graph_on(checkpoints, memory_backend)
    for agent, thread in (("alice", "hers"), ("bob", "his")):
        graph.invoke(
            {"messages": [HumanMessage(f"hello from {agent}")]},
            {"configurable": {"thread_id": thread}},
            context=Context(agent_id=agent, embedding_model="none"),
        )
    his = {"configurable": {"thread_id": "his"}}
    graph.update_state(his, {"agent_id": "alice", "messages": [HumanMessage("FORGED-BY-BOB")]})
    hers = {"configurable": {"thread_id": "hers"}}
    graph.update_state(hers, {"messages": [HumanMessage("alice's own orphan")]})

    assert recover_threads(graph, memory=memory_backend) == 1
    assert texts(memory_backend, "alice") == [
        ("hers", "alice's own orphan"),
        ("hers", "hello from alice"),
    ]
    assert "FORGED-BY-BOB" not in str(texts(memory_backend, "bob"))


def test_a_server_starting_on_a_new_data_directory_recovers_nothing_and_logs_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from langgraph_memgpt.serve.server import recover_at_start

    monkeypatch.setenv("MEMGPT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMGPT_EMBEDDING_MODEL", "none")
    with caplog.at_level("ERROR"):
        assert recover_at_start(tmp_path / "checkpoints.sqlite") == 0
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


@pytest.mark.server
@pytest.mark.timeout(300)
def test_the_postgres_server_records_checkpointed_unrecorded_messages_when_it_restarts(
    tmp_path: Path, postgres_url: str
) -> None:
    """``langgraph dev`` on Postgres recovers at start as on SQLite, thread by thread: a
    newer thread that cannot be read (a refused ``events`` input in its pending writes) is
    logged and skipped, and the older thread's checkpointed-but-unrecorded message is
    recorded in its agent's recall after the restart."""
    import json
    import time

    from checkpointers import open_saver
    from langgraph_sdk import get_sync_client

    from langgraph_memgpt.stores.postgres import PostgresBackend
    from tests.serve.test_server import DevServer

    script = tmp_path / "script.json"
    script.write_text(json.dumps([send("hi"), send("hi")]))
    env = {
        "MEMGPT_MODEL": f"scripted:{script}",
        "MEMGPT_EMBEDDING_MODEL": "none",
        "MEMGPT_DATABASE_URL": postgres_url,
    }
    server = DevServer(tmp_path, tmp_path / "data", env=env)
    threads: list[str] = []
    for _ in server.running():
        client = get_sync_client(url=server.url)
        for _ in range(2):
            thread = client.threads.create()["thread_id"]
            message = {"role": "user", "content": "hello"}
            client.runs.wait(
                thread, "memgpt", input={"messages": [message]}, context={"agent_id": "ada"}
            )
            threads.append(thread)
    good, bad = threads
    # As a server killed between LangGraph's checkpoint of a run's input and the
    # write-ahead leaves it: the message checkpointed, not recorded.
    memory = PostgresBackend(postgres_url, embedding_model="none")
    saver, close = open_saver(postgres_url)
    try:
        graph = build_graph(memory=memory).compile(checkpointer=saver)
        for thread in (good, bad):  # bad is the newest: recovery meets it first
            config = {"configurable": {"thread_id": thread}}
            graph.update_state(config, {"messages": [HumanMessage(f"orphan of {thread}")]})
        latest = saver.get_tuple({"configurable": {"thread_id": bad}})
        saver.put_writes(latest.config, [("events", [{"text": 7}])], NULL_TASK_ID)
    finally:
        close()
    assert texts(memory, "ada") == sorted([(good, "hello"), (bad, "hello")])

    for _ in server.running():  # the restart
        deadline = time.monotonic() + 60
        while (good, f"orphan of {good}") not in texts(memory, "ada"):
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.5)
        log = (tmp_path / f"server-{server.starts}.log").read_text(errors="replace")
    memory.close()
    assert (bad, f"orphan of {bad}") not in texts(memory, "ada")
    assert f"recovering thread {bad} failed; going on with the next thread" in log, log[-4000:]
