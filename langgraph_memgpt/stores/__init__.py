"""The memory tiers that live outside the prompt, opened together for one agent.

``AgentMemory`` is the one object the graph talks to: core blocks, recall (every message)
and archival (passages), all scoped to one ``agent_id`` in one SQLite file per data
directory, with FAISS caches beside it.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.archival import ArchivalMemory
from langgraph_memgpt.stores.core import CoreMemory
from langgraph_memgpt.stores.db import open_db
from langgraph_memgpt.stores.embeddings import get_embeddings
from langgraph_memgpt.stores.recall import RecallMemory
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import StoreAccessError

DB_FILENAME = "memory.sqlite"

__all__ = ["AgentMemory", "open_memory", "list_agents", "DB_FILENAME"]


@dataclass
class AgentMemory:
    """Core, recall and archival memory of one agent.

    ``lock`` serialises use of the shared SQLite connection and FAISS index between the
    threads of one process (the server runs sync nodes on a thread pool); other processes
    are kept consistent by SQLite's WAL and the FAISS staleness check.
    """

    agent_id: str
    data_dir: Path
    db: sqlite_utils.Database
    core: CoreMemory
    recall: RecallMemory
    archival: ArchivalMemory
    lock: threading.RLock = field(default_factory=threading.RLock)

    def close(self) -> None:
        """Write the FAISS caches and close the database connection."""
        with self.lock:
            self.recall.close()
            self.archival.close()
            self.db.conn.close()

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
        return cls(
            agent_id=agent_id,
            data_dir=root,
            db=db,
            core=CoreMemory(db, agent_id, default_limit=core_block_limit),
            recall=RecallMemory(db, agent_id, embeddings, cache_dir),
            archival=ArchivalMemory(db, agent_id, embeddings, cache_dir),
        )


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
        str(Path(data_dir).expanduser().resolve()),
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
