"""Two processes writing one agent's memory at once: no lost write, no duplicate, no lock error.

Both writers (``concurrent_writer.py``) start on the same signal, open the same data
directory (racing to create the database itself), and write recall messages, the same
shared messages (same ids) and archival passages with real MiniLM embeddings. SQLite's
WAL and busy timeout serialise the writes; each process keeps its own FAISS copy and
catches up with the other's writes. Afterwards a fresh open must find every write exactly
once, by SQL and by vector search.

The turns test also runs on Postgres (`place`): the writers share one database
(`PostgresBackend`, and ``PostgresSaver`` for the threads), where row locks and unique
keys do what WAL and the busy timeout do for SQLite, and pgvector rows replace FAISS.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checkpointers import Place, open_saver

from langgraph_memgpt.stores.sqlite import close_all, open_memory
from langgraph_memgpt.stores.sqlite.faiss_cache import agent_cache_dir
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes

WRITER = Path(__file__).parents[1] / "concurrent_writer.py"
AGENT = "shared-agent"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    close_all()
    forget_loaded_indexes()
    yield
    close_all()
    forget_loaded_indexes()


def race(tmp_path: Path, n: int, m: int, mode: str = "stores", url: str = "") -> list[str]:
    """Start two writers, release them together, return their stderr (both must succeed)."""
    data_dir = tmp_path / "data"
    go = tmp_path / "go"
    if url and mode == "graph":  # the checkpoint tables are made once, not raced for
        _, close_saver = open_saver(url)
        close_saver()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WRITER.parent), *sys.path])}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(WRITER),
                str(data_dir),
                AGENT,
                name,
                str(n),
                str(m),
                str(go),
                mode,
                url,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("w1", "w2")
    ]
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    go.touch()
    errors = []
    deadline = time.monotonic() + 240
    for proc in procs:
        out, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
        errors.append(err)
        assert proc.returncode == 0 and out.strip() == "done", err
    return errors


def test_two_processes_writing_one_agent_lose_nothing_and_duplicate_nothing(tmp_path: Path) -> None:
    """SQLite only: about SQLite's WAL, busy timeout and per-process FAISS copies. On Postgres
    the same race (four processes, shared message ids, one core block) is
    `test_postgres_backend::test_processes_on_one_database_lose_and_duplicate_nothing`, and
    concurrent writers' vectors are checked by the turns test below."""
    n, m = 12, 8
    errors = race(tmp_path, n, m)
    assert not any("locked" in e or "busy" in e for e in errors), errors

    memory = open_memory(tmp_path / "data", AGENT)
    conn = memory.db.conn
    ids = [
        row[0] for row in conn.execute("SELECT message_id FROM recall WHERE agent_id = ?", (AGENT,))
    ]
    expected = {f"{w}-m{i}" for w in ("w1", "w2") for i in range(n)} | {
        f"shared-m{i}" for i in range(n)
    }
    assert sorted(ids) == sorted(expected), "a message was lost or stored twice"

    passages = conn.execute("SELECT id, text FROM archival WHERE agent_id = ?", (AGENT,)).fetchall()
    texts = sorted(text for _, text in passages)
    assert texts == sorted(
        f"{w} passage {i}: the {w} fact number {i}" for w in ("w1", "w2") for i in range(m)
    )
    # Every passage has exactly one vector, the FAISS cache holds exactly those, and
    # vector search finds each passage first for its own text.
    vectors = conn.execute(
        "SELECT item_id, count(*) FROM vectors WHERE tier = 'archival' AND agent_id = ? "
        "GROUP BY item_id",
        (AGENT,),
    ).fetchall()
    assert sorted(vectors) == sorted((pid, 1) for pid, _ in passages)
    assert memory.archival.index is not None and memory.archival.index.count() == 2 * m
    for passage_id, text in passages:
        hits = memory.archival.search(text, mode="vector", page_size=1).hits
        assert hits[0].item.id == passage_id, text
    searchable = conn.execute(
        "SELECT count(*) FROM recall WHERE agent_id = ? AND searchable = 1", (AGENT,)
    ).fetchone()[0]
    assert memory.recall.vectors is not None
    assert memory.recall.vectors.turn.count() == searchable == 3 * n
    page = memory.recall.search("w2 says message 7", mode="vector", page_size=3)
    assert "w2-m7" in [hit.item.message_id for hit in page.hits]
    # The two writers' cache files may have crossed (one's index, the other's checksum);
    # this open detected that and rebuilt them: what it writes now is intact.
    memory.close()
    folder = agent_cache_dir(tmp_path / "data" / "faiss", AGENT)
    written = sorted(folder.glob("*.faiss"))
    assert written
    for index_file in written:
        sidecar = json.loads(index_file.with_name(index_file.name + ".json").read_text())
        assert sidecar["sha256"] == hashlib.sha256(index_file.read_bytes()).hexdigest()
    assert not list(folder.glob(".*.tmp"))


def test_two_processes_running_turns_of_one_agent_keep_every_message(
    place: Place, tmp_path: Path
) -> None:
    turns = 4
    errors = race(tmp_path, turns, 0, mode="graph", url=place.url)
    assert not any("locked" in e for e in errors), errors
    where = Place(place.kind, tmp_path / "data", place.url)  # the writers' memory
    try:
        _check_turns(where.open(AGENT, "minilm"), turns, embedded=not place.url)
    finally:
        where.close()


def _check_turns(memory: Any, turns: int, *, embedded: bool) -> None:
    stored = [msg for _, msg in memory.recall.list_messages(limit=1000)]
    for writer in ("w1", "w2"):
        users = [
            msg.text for msg in stored if msg.thread_id == f"thread-{writer}" and msg.role == "user"
        ]
        assert users == [f"{writer} turn {i}" for i in range(turns)]
    ids = [msg.message_id for msg in stored]
    assert len(ids) == len(set(ids)), "a message stored twice"
    # One set of default core blocks, however the two first turns raced to create them.
    labels = [b.label for b in memory.core.blocks()]
    assert labels == ["persona", "human"]
    passages = memory.archival.search("turn fact", page_size=20)
    assert passages.total == 2 * turns
    assert sorted(h.item.text for h in passages.hits) == sorted(
        f"{w} turn {i} fact" for w in ("w1", "w2") for i in range(turns)
    )
    for hit in passages.hits:  # every passage has its vector: vector search finds it
        found = memory.archival.search(hit.item.text, mode="vector", page_size=2 * turns).hits
        assert hit.item.id in [other.item.id for other in found], hit.item.text
    if embedded:
        assert memory.archival.index is not None and memory.archival.index.count() == 2 * turns


def _open_at_signal(path: str, go: Any, errors: Any) -> None:
    from langgraph_memgpt.stores.sqlite.db import open_db

    go.wait()
    try:
        db = open_db(Path(path))
        db.conn.close()
    except Exception as err:  # reported to the test, which fails on any
        errors.put(repr(err))


def test_processes_opening_a_new_data_directory_together_all_open(tmp_path: Path) -> None:
    """Switching a new database to WAL is retried while another process holds the lock.

    SQLite answers "database is locked" to it at once, without its busy handler, when
    waiting could deadlock; six processes opening one new file together hit that a few
    times in 40 rounds before the retry (``stores.sqlite.db._set_wal``).
    """
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    for round_ in range(40):
        go = ctx.Event()
        path = str(tmp_path / f"round{round_}" / "memory.sqlite")
        procs = [ctx.Process(target=_open_at_signal, args=(path, go, errors)) for _ in range(6)]
        for proc in procs:
            proc.start()
        go.set()
        for proc in procs:
            proc.join(timeout=60)
            assert proc.exitcode == 0
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == []
