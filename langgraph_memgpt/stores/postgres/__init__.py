"""The Postgres memory backend: every agent's tiers in one Postgres database (pgvector).

``PostgresBackend(url)`` is a ``MemoryBackend`` (``stores.base``): ``open(agent_id)``
returns a ``PostgresMemory`` whose ``core``, ``recall`` and ``archival`` meet the memory
protocols. Several threads and several processes (server workers) may use one agent at
once: every call takes its own pooled connection, core edits lock their row, recall adds
are idempotent on (agent, thread, message id) and serialised per thread, and a run claims
its thread with an advisory lock (`PostgresBackend.try_lock_thread`), so two servers on one
database never run one thread at once.

Needs the ``postgres`` extra (``pip install 'langgraph-memgpt[postgres]'``) and a server
with the pgvector extension available (the schema runs ``CREATE EXTENSION IF NOT EXISTS
vector``).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Unpack

import psycopg
from langchain_core.embeddings import Embeddings
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.capabilities import ProgressFor
from langgraph_memgpt.stores.embeddings import embedding_identity, get_embeddings
from langgraph_memgpt.stores.postgres.archival import PgArchivalMemory
from langgraph_memgpt.stores.postgres.core import PgCoreMemory
from langgraph_memgpt.stores.postgres.db import (
    SCHEMA_VERSION,
    SchemaVersionError,
    ensure_hnsw,
    ensure_schema,
    graphs_and_buffers,
    graphs_outgrow_buffers,
    open_pool,
    refresh_statistics,
)
from langgraph_memgpt.stores.postgres.deletions import PgDeletionLog
from langgraph_memgpt.stores.postgres.models import claim_model, recorded_model
from langgraph_memgpt.stores.postgres.recall import PgRecallMemory
from langgraph_memgpt.stores.postgres.settling import Settler
from langgraph_memgpt.stores.registry import EngineSettings
from langgraph_memgpt.stores.text import valid_text

logger = logging.getLogger(__name__)

__all__ = [
    "SCHEMA_VERSION",
    "PostgresBackend",
    "PostgresMemory",
    "SchemaVersionError",
]


@dataclass(frozen=True)
class PostgresMemory:
    """Core, recall and archival memory of one agent, in Postgres."""

    agent_id: str
    core: PgCoreMemory
    recall: PgRecallMemory
    archival: PgArchivalMemory
    deletions: PgDeletionLog


_THREAD_LOCKS = 0x6D656D67  # advisory-lock class of thread claims ("memg"; any constant)


def thread_lock_key(thread_id: str) -> int:
    """The advisory-lock key of a thread: 32 bits of the id's SHA-256.

    A collision only makes two threads wait for each other (never lets two runs of one
    thread through): harmless, and rare at 2**-32 a pair.
    """
    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:4], "big", signed=True)


class PostgresBackend:
    """Agents' memory in the Postgres database at ``url`` (schema created on first use).

    Args:
        url: a libpq connection string, e.g. ``postgresql://user:pw@host:5432/db``.
        embedding_model: ``minilm``, ``openai:<model>`` or ``none`` (unless ``embeddings``).
        embeddings: an embeddings object to use instead of ``embedding_model``.
        core_block_limit: character limit of a new agent's default blocks.
        exact_scan_limit: an agent with up to this many vectors per tier is searched
            exactly; a larger one through HNSW with pgvector's iterative scan. An exact
            scan grows with the agent's vectors and a search turn runs several; below the
            limit, exact is as fast as HNSW and never misses.
        pool_size: most connections this process opens.
    """

    def __init__(
        self,
        url: str,
        *,
        embedding_model: str = "minilm",
        embeddings: Embeddings | None = None,
        core_block_limit: int = 2000,
        exact_scan_limit: int = 5_000,
        pool_size: int = 8,
    ) -> None:
        if core_block_limit <= 0:
            raise ValueError(f"core_block_limit must be positive, got {core_block_limit}")
        self.url = url
        self.embedding_model = embedding_model
        self.core_block_limit = core_block_limit
        self.exact_scan_limit = exact_scan_limit
        self.pool_size = pool_size
        self._embeddings = embeddings
        self._embeddings_ready = embeddings is not None
        self._identity: tuple[str, int] | None = None
        self._pool: ConnectionPool[Any] | None = None
        self._settler: Settler | None = None
        self._open: dict[str, PostgresMemory] = {}
        self._lock = threading.Lock()

    @property
    def embeddings(self) -> Embeddings | None:
        """The embedding model (built from ``embedding_model`` on first use)."""
        with self._lock:
            return self._ensure_embeddings()

    def _ensure_embeddings(self) -> Embeddings | None:
        if not self._embeddings_ready:
            self._embeddings = get_embeddings(self.embedding_model)
            self._embeddings_ready = True
        return self._embeddings

    def pool(self) -> ConnectionPool[Any]:
        """The connection pool, opened (and the schema ensured) on first use."""
        with self._lock:
            return self._ensure_pool()

    def _ensure_pool(self) -> ConnectionPool[Any]:
        if self._pool is None:
            ensure_schema(self.url)
            self._pool = open_pool(self.url, max_size=self.pool_size)
            self._settler = Settler(self._pool)
            # A first start on loaded or restored data: the planner statistics first.
            refresh_statistics(self._pool)
            with self._pool.connection() as conn:
                graphs, buffers = graphs_and_buffers(conn)
            if graphs_outgrow_buffers(graphs, buffers):
                logger.warning(
                    "the memory's HNSW graphs (%d MB) are larger than the server's "
                    "shared_buffers (%d MB): large agents' searches will read their pages "
                    "from outside Postgres' buffers; give shared_buffers at least the graphs' "
                    "size (docs/scale.md, 'What a Postgres server must be given')",
                    graphs // 2**20,
                    buffers // 2**20,
                )
        return self._pool

    def open(self, agent_id: str) -> PostgresMemory:
        """The memory of ``agent_id`` (created on first use; cheap to call every step).

        Raises:
            ValueError: the agent id is empty or not valid Unicode text.
            EmbeddingMismatchError: the agent's vectors were made by another model.
        """
        if not agent_id or not agent_id.strip():
            raise ValueError("agent_id must be a non-empty string")
        if valid_text(agent_id) != agent_id or "\x00" in agent_id:
            raise ValueError(f"agent_id {agent_id!r} is not valid Unicode text")
        with self._lock:
            memory = self._open.get(agent_id)
            if memory is not None:
                return memory
            pool = self._ensure_pool()
            embeddings = self._ensure_embeddings()
            if embeddings is not None:
                self._check_identity(pool, agent_id, embeddings)
            memory = PostgresMemory(
                agent_id=agent_id,
                core=PgCoreMemory(pool, agent_id, default_limit=self.core_block_limit),
                recall=PgRecallMemory(
                    pool, agent_id, embeddings, exact_scan_limit=self.exact_scan_limit
                ),
                archival=PgArchivalMemory(
                    pool, agent_id, embeddings, exact_scan_limit=self.exact_scan_limit
                ),
                deletions=PgDeletionLog(pool, agent_id),
            )
            memory.recall.settler = self._settler
            self._open[agent_id] = memory
            return memory

    def _check_identity(
        self, pool: ConnectionPool[Any], agent_id: str, embeddings: Embeddings
    ) -> None:
        if self._identity is None:
            self._identity = embedding_identity(embeddings)
            ensure_hnsw(pool, self._identity[1])
        with pool.connection() as conn:
            claim_model(conn, agent_id, self._identity)

    def agents(self) -> list[str]:
        """Ids of the agents with any memory in this database."""
        with self.pool().connection() as conn:
            rows = conn.execute(
                "SELECT agent_id FROM memgpt_core_blocks UNION SELECT agent_id FROM memgpt_recall "
                "UNION SELECT agent_id FROM memgpt_archival ORDER BY 1"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def try_lock_thread(self, thread_id: str) -> Callable[[], None] | None:
        """Claim ``thread_id`` for one run across every process on this database.

        A session-level advisory lock, on a connection of its own (not the pool's: a run
        holds it for minutes, and the pool serves the run's memory calls meanwhile). Returns
        the function that unlocks and closes it, or None when another session holds the
        thread. Postgres drops the lock with the session, so a killed server never leaves
        a thread claimed.
        """
        self.pool()  # the schema (and a reachable server) first, with a clear error
        conn = psycopg.connect(self.url, autocommit=True)
        try:
            row = conn.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (_THREAD_LOCKS, thread_lock_key(thread_id))
            ).fetchone()
        except BaseException:
            conn.close()
            raise
        if row is None or not row[0]:
            conn.close()
            return None

        def release() -> None:
            # Closing the session drops its locks even when the unlock itself fails.
            try:
                conn.execute(
                    "SELECT pg_advisory_unlock(%s, %s)",
                    (_THREAD_LOCKS, thread_lock_key(thread_id)),
                )
            finally:
                conn.close()

        return release

    def wait_settled(self, timeout: float = 30.0) -> bool:
        """Wait until the recall rows written so far are settled (``settling``).

        Nothing needs it to be correct (an unsettled row is searched exactly); a benchmark
        that runs turns back to back waits here so one turn's settling does not run in the
        next one's time. False when ``timeout`` passed first.
        """
        settler = self._settler
        return settler is None or settler.drain(timeout)

    @property
    def settling_seconds(self) -> float:
        """The time settling passes have taken in this process so far (beside the turns)."""
        settler = self._settler
        return 0.0 if settler is None else settler.seconds

    @classmethod
    def from_url(cls, url: str, **settings: Unpack[EngineSettings]) -> PostgresBackend:
        """The backend the registry opens for a ``postgresql://`` URL (`stores.registry.Engine`).

        ``read_only``: no embedding model (reading memory after an embedding change).
        ``data_dir`` is not used: everything is in the database.
        """
        read_only = settings["read_only"]
        return cls(
            url,
            embedding_model="none" if read_only else settings["embedding_model"],
            embeddings=None if read_only else settings["embeddings"],
            core_block_limit=settings["core_block_limit"],
        )

    def recorded_embedding(self, agent_id: str) -> dict[str, object] | None:
        """The model the agent's vectors were made with (``memgpt_embeddings``), or None."""
        with self.pool().connection() as conn:
            found = recorded_model(conn, agent_id)
        return None if found is None else {"model": found[0], "dim": found[1]}

    def reembed(
        self, agent_id: str, embeddings: Embeddings, progress_for: ProgressFor
    ) -> tuple[int, int]:
        """`Reembeddable.reembed`, switched in with the new model in one transaction.

        New vectors are written aside (`stores.postgres.reembed`): a crash halfway leaves
        the old ones. Servers may keep running; restart them with the new model.
        """
        from langgraph_memgpt.stores.postgres.reembed import reembed_postgres

        return reembed_postgres(self, agent_id, embeddings, progress_for)

    def close(self) -> None:
        """Close the connection pool (the backend opens a new one if used again)."""
        with self._lock:
            if self._settler is not None:
                self._settler.close()
                self._settler = None
            if self._pool is not None:
                self._pool.close()
                self._pool = None
            self._open.clear()
