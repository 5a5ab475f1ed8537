"""The embedded memory backend: every agent's tiers in one SQLite file, FAISS caches beside it.

``AgentMemory`` holds one agent's core blocks, recall (every message) and archival
(passages), scoped to its ``agent_id`` in one SQLite file per data directory. It meets the
``Memory`` protocol of ``stores.base``; ``SqliteBackend`` is the ``MemoryBackend`` that
opens it, and the default of ``build_graph``. Locking is this backend's own business: the
three tiers share one connection and FAISS indexes, so every call into them takes the
agent's lock (the graph never does).
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, Unpack, cast

import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.capabilities import ProgressFor
from langgraph_memgpt.stores.embeddings import get_embeddings
from langgraph_memgpt.stores.registry import EngineSettings
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.core import SqliteCoreMemory
from langgraph_memgpt.stores.sqlite.db import DB_FILENAME, close_db, open_db, transaction
from langgraph_memgpt.stores.sqlite.deletions import SqliteDeletionLog
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import StoreAccessError

__all__ = [
    "DB_FILENAME",
    "AgentMemory",
    "Memory",
    "MemoryBackend",
    "SqliteBackend",
    "list_agents",
    "open_memory",
]

S = TypeVar("S")


class _Locked:
    """A store whose every method runs under its agent's lock."""

    def __init__(self, store: object, lock: threading.RLock) -> None:
        self._store = store
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)

        setattr(self, name, locked)  # made once: the next access finds it directly
        return locked


def _locked(store: S, lock: threading.RLock) -> S:
    return cast(S, _Locked(store, lock))


@dataclass
class AgentMemory:
    """Core, recall and archival memory of one agent.

    ``lock`` serialises use of the shared SQLite connection and FAISS index between the
    threads of one process (the server runs sync nodes on a thread pool): ``core``,
    ``recall`` and ``archival`` take it on every call. Other processes are kept consistent
    by SQLite's WAL and the FAISS staleness check.
    """

    agent_id: str
    data_dir: Path
    db: sqlite_utils.Database
    core: SqliteCoreMemory
    recall: SqliteRecallMemory
    archival: SqliteArchivalMemory
    deletions: SqliteDeletionLog
    lock: threading.RLock = field(default_factory=threading.RLock)

    def scrub(self) -> None:
        """Leave no copy of deleted text in the database's files (after a forget).

        Rows are deleted with ``secure_delete`` (their bytes overwritten), but a full-text
        index keeps a deleted row's words in its older segments until they are merged:
        ``optimize`` merges every segment of the three indexes (the whole index is
        rewritten, so the cost grows with the database), and the write-ahead log, which may
        hold the old pages, is copied back and truncated.
        """
        with self.lock:
            with transaction(self.db):
                for table in FTS_TABLES:
                    self.db.conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            self.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Write the FAISS caches and close the database connection.

        A background WAL checkpoint still due for the file is dropped (closing the last
        connection checkpoints it anyway), and one running is waited for: once closed, no
        thread of this process holds the file, which may then be copied or moved aside.
        """
        with self.lock:
            self.recall.close()
            self.archival.close()
            close_db(self.db)

    @classmethod
    def open(
        cls,
        data_dir: str | Path,
        agent_id: str,
        embeddings: Embeddings | None,
        *,
        core_block_limit: int = 2000,
        read_only: bool = False,
    ) -> AgentMemory:
        """Open (creating if needed) the memory of ``agent_id`` under ``data_dir``.

        With ``read_only`` an existing database is opened for reading only (``inspect``),
        which also works in a read-only data directory; writes then fail. Use it without
        embeddings: a vector index writes its cache and its model record.

        Raises:
            ValueError: An empty or invalid agent id, or embeddings with ``read_only``.
            MemoryStoreError: The database cannot be used (see ``open_db``).
        """
        if read_only and embeddings is not None:
            raise ValueError("a read-only memory is opened without embeddings")
        if not agent_id or not agent_id.strip():
            raise ValueError("agent_id must be a non-empty string")
        if valid_text(agent_id) != agent_id:
            # Replacing the surrogate (as for message text) could merge two agents.
            raise ValueError(f"agent_id {agent_id!r} is not valid Unicode text")
        root = Path(data_dir).expanduser()
        db = open_db(root / DB_FILENAME, read_only=read_only)
        cache_dir = root / "faiss"
        lock = threading.RLock()
        return cls(
            agent_id=agent_id,
            data_dir=root,
            db=db,
            core=_locked(SqliteCoreMemory(db, agent_id, default_limit=core_block_limit), lock),
            recall=_locked(SqliteRecallMemory(db, agent_id, embeddings, cache_dir), lock),
            archival=_locked(SqliteArchivalMemory(db, agent_id, embeddings, cache_dir), lock),
            deletions=_locked(SqliteDeletionLog(db, agent_id), lock),
            lock=lock,
        )


FTS_TABLES = ("recall_fts", "recall_context_fts", "archival_fts")
"""The full-text indexes of the embedded backend (`AgentMemory.scrub` merges them)."""

MAX_OPEN_MEMORIES = 64
"""Memories kept open per process. A server with many agents once kept every agent it
had ever served open (a connection and FAISS indexes each), without bound."""

_OPEN: OrderedDict[tuple[str, str, str, int], AgentMemory] = OrderedDict()
_OPEN_LOCK = threading.Lock()


def _retire(memory: AgentMemory) -> None:
    """Let go of a memory evicted from the process cache, safely for whoever still uses it.

    A node may have taken the memory just before it was evicted, so its connection is not
    closed here: the FAISS caches are written (under the memory's lock, so not in the
    middle of anyone's write) and the connection closes when the last user drops it.
    """
    with memory.lock:
        memory.recall.close()
        memory.archival.close()
    weakref.finalize(memory, memory.db.conn.close)


@functools.lru_cache(maxsize=256)
def _absolute(data_dir: str, cwd: str) -> str:
    """``data_dir`` resolved, once per (path, working directory): every graph step asks."""
    return str(Path(data_dir).expanduser().resolve())


def open_memory(
    data_dir: str | Path,
    agent_id: str,
    *,
    embedding_model: str = "minilm",
    embeddings: Embeddings | None = None,
    core_block_limit: int = 2000,
) -> AgentMemory:
    """Return the process-wide ``AgentMemory`` for (data_dir, agent_id), opening it once.

    At most :data:`MAX_OPEN_MEMORIES` stay open; the least recently used is let go (see
    :func:`_retire`) and opened again if it is needed again.
    """
    key = (
        _absolute(str(data_dir), "" if Path(data_dir).is_absolute() else os.getcwd()),
        agent_id,
        embedding_model if embeddings is None else f"obj:{id(embeddings)}",
        core_block_limit,
    )
    evicted: list[AgentMemory] = []
    with _OPEN_LOCK:
        memory = _OPEN.get(key)
        if memory is None:
            emb = embeddings if embeddings is not None else get_embeddings(embedding_model)
            memory = AgentMemory.open(key[0], agent_id, emb, core_block_limit=core_block_limit)
            _OPEN[key] = memory
            while len(_OPEN) > MAX_OPEN_MEMORIES:
                evicted.append(_OPEN.popitem(last=False)[1])
        else:
            _OPEN.move_to_end(key)
    for old in evicted:  # outside the cache lock: writing a cache file takes a while
        _retire(old)
    return memory


@dataclass(frozen=True)
class SqliteBackend:
    """The embedded backend: agents' memory in ``data_dir`` (SQLite + FAISS), no set-up.

    Attributes:
        data_dir: folder of ``memory.sqlite`` and the FAISS caches.
        embedding_model: ``minilm``, ``openai:<model>`` or ``none`` (unless ``embeddings``).
        embeddings: an embeddings object to use instead of ``embedding_model``.
        core_block_limit: character limit of a new agent's default blocks.
    """

    data_dir: str | Path
    embedding_model: str = "minilm"
    embeddings: Embeddings | None = None
    core_block_limit: int = 2000
    read_only: bool = False
    """Open existing memory for reading only, without embeddings (``inspect``): works in a
    read-only data directory and after an embedding model change; writes fail."""
    _read_only_open: list[AgentMemory] = field(default_factory=list, compare=False, repr=False)

    def open(self, agent_id: str) -> AgentMemory:
        """The agent's memory, opened once per process and shared by its threads."""
        if self.read_only:
            memory = AgentMemory.open(self.data_dir, agent_id, None, read_only=True)
            self._read_only_open.append(memory)
            return memory
        return open_memory(
            self.data_dir,
            agent_id,
            embedding_model=self.embedding_model,
            embeddings=self.embeddings,
            core_block_limit=self.core_block_limit,
        )

    def agents(self) -> list[str]:
        """Ids of the agents with memory in ``data_dir`` (see `list_agents`)."""
        return list_agents(self.data_dir)

    def close(self) -> None:
        """Close the read-only memories this backend opened (shared ones stay open)."""
        while self._read_only_open:
            self._read_only_open.pop().close()

    @classmethod
    def from_url(cls, url: str, **settings: Unpack[EngineSettings]) -> SqliteBackend:
        """The backend the registry opens (`stores.registry.Engine`): ``data_dir``'s memory.

        A ``sqlite:///path/to/folder`` URL names the folder instead of ``data_dir``.
        """
        path = url.partition("://")[2] if url else ""
        read_only = settings["read_only"]
        return cls(
            Path(path).expanduser() if path else settings["data_dir"],
            embedding_model=settings["embedding_model"],
            embeddings=None if read_only else settings["embeddings"],
            core_block_limit=settings["core_block_limit"],
            read_only=read_only,
        )

    def recorded_embedding(self, agent_id: str) -> dict[str, object] | None:
        """The model the agent's vectors were made with, from the file (`Reembeddable`)."""
        from langgraph_memgpt.stores.sqlite.reembed import recorded_embedding_sqlite

        return recorded_embedding_sqlite(self.data_dir, agent_id)

    def reembed(
        self, agent_id: str, embeddings: Embeddings, progress_for: ProgressFor
    ) -> tuple[int, int]:
        """`Reembeddable.reembed`: drop the agent's vectors and embed everything again.

        Stop any server or chat using the data directory first (they hold the old vectors).
        """
        from langgraph_memgpt.stores.sqlite.reembed import reembed_sqlite

        return reembed_sqlite(self.data_dir, agent_id, embeddings, progress_for)

    def close_shared(self) -> None:
        """Write and close the memories of ``data_dir`` this process opened (`SharedOpenMemories`).

        What a command does before it ends; memories of other data directories stay open.
        """
        root = _absolute(
            str(self.data_dir), "" if Path(self.data_dir).is_absolute() else os.getcwd()
        )
        with _OPEN_LOCK:
            mine = [key for key in _OPEN if key[0] == root]
            closing = [_OPEN.pop(key) for key in mine]
        for memory in closing:
            memory.close()


def close_all() -> None:
    """Forget every opened memory (tests and the crash harness reopen from disk)."""
    with _OPEN_LOCK:
        for memory in _OPEN.values():
            memory.close()
        _OPEN.clear()


def list_agents(data_dir: str | Path) -> list[str]:
    """Ids of the agents with any memory under ``data_dir`` (none if it holds no database).

    Reads only (works in a read-only data directory).

    Raises:
        MemoryStoreError: ``data_dir`` is a file, or its database cannot be used.
    """
    root = Path(data_dir).expanduser()
    if root.exists() and not root.is_dir():
        raise StoreAccessError(f"data directory {root} is a file, not a folder")
    path = root / DB_FILENAME
    if not path.is_file():
        return []
    db = open_db(path, read_only=True)
    try:
        tables = set(db.table_names())
        selects = [
            f"SELECT agent_id FROM {table}"
            for table in ("core_blocks", "recall", "archival")
            if table in tables
        ]
        if not selects:
            return []
        rows = db.conn.execute(" UNION ".join(selects) + " ORDER BY 1").fetchall()
        return [str(row[0]) for row in rows]
    finally:
        db.conn.close()
