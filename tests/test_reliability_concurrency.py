"""Two processes writing one agent's memory at once: no lost write, no duplicate, no lock error.

Both writers (``concurrent_writer.py``) start on the same signal, open the same data
directory (racing to create the database itself), and write recall messages, the same
shared messages (same ids) and archival passages with real MiniLM embeddings. SQLite's
WAL and busy timeout serialise the writes; each process keeps its own FAISS copy and
catches up with the other's writes. Afterwards a fresh open must find every write exactly
once, by SQL and by vector search.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_memgpt.stores import close_all, open_memory
from langgraph_memgpt.stores.vectors import agent_cache_dir, forget_loaded_indexes

WRITER = Path(__file__).parent / "concurrent_writer.py"
AGENT = "shared-agent"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    close_all()
    forget_loaded_indexes()
    yield
    close_all()
    forget_loaded_indexes()


def race(tmp_path: Path, n: int, m: int, mode: str = "stores") -> list[str]:
    """Start two writers, release them together, return their stderr (both must succeed)."""
    data_dir = tmp_path / "data"
    go = tmp_path / "go"
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
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
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
    assert memory.recall._turn_index is not None
    assert memory.recall._turn_index.count() == searchable == 3 * n
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


def test_two_processes_running_turns_of_one_agent_keep_every_message(tmp_path: Path) -> None:
    turns = 4
    errors = race(tmp_path, turns, 0, mode="graph")
    assert not any("locked" in e for e in errors), errors
    memory = open_memory(tmp_path / "data", AGENT)
    conn = memory.db.conn
    for writer in ("w1", "w2"):
        users = conn.execute(
            "SELECT text FROM recall WHERE agent_id = ? AND thread_id = ? AND role = 'user' "
            "ORDER BY id",
            (AGENT, f"thread-{writer}"),
        ).fetchall()
        assert [u[0] for u in users] == [f"{writer} turn {i}" for i in range(turns)]
    duplicates = conn.execute(
        "SELECT message_id FROM recall WHERE agent_id = ? GROUP BY message_id HAVING count(*) > 1",
        (AGENT,),
    ).fetchall()
    assert not duplicates
    # One set of default core blocks, however the two first turns raced to create them.
    labels = [b.label for b in memory.core.blocks()]
    assert labels == ["persona", "human"]
    passages = memory.archival.search("turn fact", page_size=20)
    assert passages.total == 2 * turns
    assert memory.archival.index is not None and memory.archival.index.count() == 2 * turns
