"""The FAISS cache is a cache: never trusted for another database, never fatal to lose.

SQLite holds every vector. A cache built from a replaced ``memory.sqlite`` (whose new
rows reuse the old vector ids) must be rebuilt, not matched by id; a cache folder that
cannot be written must not fail a turn. Also the process-wide pieces around the stores:
the memory cache is bounded, FAISS's thread count is set once, and a locked database is
an error, not "no metadata". Real SQLite files, real FAISS, real MiniLM.

Every test here stays on the embedded backend: each is about one of its own pieces (FAISS
cache files, the process's cache of open SQLite memories, FAISS threads, SQLite locks),
which the Postgres backend does not have (vectors live in their rows, connections in a
pool). Each test names its piece.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import sqlite3
import threading
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path

import faiss
import pytest
import sqlite_utils
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import langgraph_memgpt.stores.sqlite as stores_module
from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.sqlite import AgentMemory, close_all, open_memory
from langgraph_memgpt.stores.sqlite.db import get_meta
from langgraph_memgpt.stores.sqlite.faiss_cache import agent_cache_dir
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes
from langgraph_memgpt.stores.types import RecallMessage

ANIMALS = [
    "The cat sleeps on the warm windowsill all afternoon.",
    "A herd of elephants crossed the dry riverbed at dawn.",
    "The parrot learned to whistle the neighbour's doorbell.",
]
COOKING = [
    "Boil the pasta in salted water for nine minutes.",
    "Knead the bread dough until it is smooth and elastic.",
    "Simmer the tomato sauce with garlic and fresh basil.",
]


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    yield
    close_all()
    forget_loaded_indexes()


def test_a_cache_built_from_a_replaced_database_is_rebuilt_not_trusted(
    tmp_path: Path, embeddings: MiniLMEmbeddings
) -> None:
    """SQLite only: about FAISS cache files next to a replaced memory.sqlite."""
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    for folder, texts in ((data, ANIMALS), (elsewhere, COOKING)):
        memory = AgentMemory.open(folder, "ada", embeddings)
        memory.archival.insert_many(texts)  # passage (and vector) ids 1-3 in both
        memory.close()
    forget_loaded_indexes()
    # memory.sqlite replaced (a backup restored, a fresh start): data's caches stay.
    for path in data.glob("memory.sqlite*"):
        path.unlink()
    shutil.copy(elsewhere / "memory.sqlite", data / "memory.sqlite")

    memory = AgentMemory.open(data, "ada", embeddings)
    for query, expected in zip(
        ["cooking spaghetti", "baking a loaf", "a sauce for noodles"], COOKING, strict=True
    ):
        top = memory.archival.search(query, mode="vector", page_size=1).hits[0].item
        assert top.text == expected, query
    memory.close()


def _block_cache(data: Path, how: str) -> None:
    """Make the FAISS cache of agent "ada" unwritable the way a user might."""
    data.mkdir(parents=True, exist_ok=True)
    if how == "faiss is a file":
        (data / "faiss").write_text("not a folder")
    elif how == "the agent's cache folder is a file":
        folder = agent_cache_dir(data / "faiss", "ada")
        folder.parent.mkdir(parents=True)
        folder.write_text("not a folder")
    else:  # a read-only cache folder (root ignores permissions)
        (data / "faiss").mkdir()
        (data / "faiss").chmod(0o555)


CACHE_BLOCKS = [
    "faiss is a file",
    "the agent's cache folder is a file",
    pytest.param(
        "read-only faiss folder",
        marks=pytest.mark.skipif(
            hasattr(os, "geteuid") and os.geteuid() == 0,
            reason="root writes into read-only folders",
        ),
    ),
]


@pytest.mark.parametrize("how", CACHE_BLOCKS)
def test_an_unwritable_cache_never_fails_a_turn_nor_loses_the_users_message(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite only: about the FAISS cache folder (Postgres writes no cache files)."""
    data = tmp_path / "data"
    _block_cache(data, how)
    steps = [
        {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Oh?"}}]},
        {"content": "", "tool_calls": [{"name": "archival_memory_insert", "args": {
            "content": "Ada's bike is a green Raleigh", "request_heartbeat": True}}]},
        {"content": "", "tool_calls": [{"name": "archival_memory_search", "args": {
            "query": "which bicycle", "request_heartbeat": True}}]},
        {"content": "", "tool_calls": [{"name": "conversation_search", "args": {
            "query": "bicycle", "request_heartbeat": True}}]},
        {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Noted!"}}]},
    ]  # fmt: skip
    model = ScriptedChatModel.from_steps(steps)
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(data), agent_id="ada", context_window=1_000_000)
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:6]}"}}
    later = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:6]}"}}
    with caplog.at_level(logging.WARNING, logger="langgraph_memgpt.stores.sqlite.vectors"):
        graph.invoke({"messages": [HumanMessage("My bike is green")]}, config, context=ctx)
        # Searched from another thread: a search skips the messages in view.
        out = graph.invoke({"messages": [HumanMessage("Remember it")]}, later, context=ctx)
        assert out["messages"][-1].content == "Noted!"
        results = [m.content for m in out["messages"] if m.type == "tool"]
        assert all('"status": "OK"' in r for r in results), results
        assert "green Raleigh" in results[1]
        assert "My bike is green" in results[2]
        memory = open_memory(data, "ada")
        assert "My bike is green" in [m.text for m in memory.recall.latest(20)]
        close_all()
    warnings = [r for r in caplog.records if "cannot write the FAISS cache" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]


def test_the_process_keeps_a_bounded_number_of_memories_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite only: about the process cache of open SQLite memories (Postgres: one pool)."""
    monkeypatch.setattr(stores_module, "MAX_OPEN_MEMORIES", 3)
    held = open_memory(tmp_path, "agent-0", embedding_model="none")
    for n in range(1, 8):
        open_memory(tmp_path, f"agent-{n}", embedding_model="none")
    assert len(stores_module._OPEN) == 3
    # A memory evicted while a caller still holds it keeps working for that caller.
    held.recall.add([RecallMessage("agent-0", "t", "1", "user", "still here", "2026-01-01")])
    assert held.recall.count() == 1
    # Used again, it is opened again; the least recently used one goes instead.
    assert open_memory(tmp_path, "agent-0", embedding_model="none").recall.count() == 1
    conn = held.db.conn
    gone = weakref.ref(held)
    del held
    gc.collect()
    assert gone() is None
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")


def test_searches_from_several_threads_set_faiss_to_one_thread_once_each(
    tmp_path: Path, embeddings: MiniLMEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite only: about FAISS's OpenMP threads (Postgres searches in the server).

    OpenMP keeps the count per thread: each searching thread sets it once, never again
    around its later searches (setting and restoring it per search raced between threads).
    """
    memory = AgentMemory.open(tmp_path, "ada", embeddings)
    memory.archival.insert_many(ANIMALS + COOKING)
    memory.archival.search("pasta", mode="vector")
    calls: list[int] = []
    original = faiss.omp_set_num_threads
    monkeypatch.setattr(faiss, "omp_set_num_threads", lambda n: calls.append(n) or original(n))

    def search() -> None:
        for _ in range(10):
            memory.archival.search("pasta", mode="vector")

    workers = [threading.Thread(target=search) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert calls == [1] * len(workers)  # 10 searches each, one setting each
    assert faiss.omp_get_max_threads() == 1
    memory.close()


def test_a_locked_database_is_an_error_not_missing_metadata(tmp_path: Path) -> None:
    """A lock read as "no value" made the embedding check overwrite the recorded model.

    SQLite only: about SQLite's file locks and its meta table (Postgres keeps each agent's
    model in a row, `test_postgres_backend::test_an_agent_keeps_its_embedding_model`).
    """
    path = tmp_path / "memory.sqlite"
    # A rollback-journal database, where a writer's exclusive lock stops readers too.
    db = sqlite_utils.Database(sqlite3.connect(path, timeout=0.05))
    db.conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.conn.execute("INSERT INTO meta VALUES ('embedding:recall:ada', 'm')")
    db.conn.commit()
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            get_meta(db, "embedding:recall:ada")
    finally:
        holder.rollback()
        holder.close()
    assert get_meta(db, "embedding:recall:ada") == "m"
    db.conn.close()
    fresh = sqlite_utils.Database(sqlite3.connect(tmp_path / "other.sqlite"))
    assert get_meta(fresh, "anything") is None  # no meta table yet: simply no value
    fresh.conn.close()
