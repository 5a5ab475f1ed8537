"""What the recall and archival tiers share on Postgres: an agent's rows in one table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import psycopg
from langchain_core.embeddings import Embeddings
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.postgres.search import Params, has_more_than


class PgTier:
    """One agent's rows of a tier's table (``table``), searched exactly or through HNSW.

    Args:
        pool: the backend's connection pool.
        agent_id: the agent; every query is scoped to it.
        embeddings: the agent's embedding model, or None to search words only.
        exact_scan_limit: up to this many vectors, vector search is exact; beyond it, the
            HNSW index with an iterative scan.
    """

    table: ClassVar[str]

    def __init__(
        self,
        pool: ConnectionPool[Any],
        agent_id: str,
        embeddings: Embeddings | None,
        *,
        exact_scan_limit: int = 5_000,
    ) -> None:
        self.pool = pool
        self.agent_id = agent_id
        self.embeddings = embeddings
        self.exact_scan_limit = exact_scan_limit
        self._large = False  # past exact_scan_limit once, always: agents' vectors only grow
        self._identity: tuple[str, int] | None = None

    def _approximate(self, conn: psycopg.Connection[Any]) -> bool:
        """Whether vector search goes through HNSW: the agent has outgrown an exact scan."""
        if not self._large:
            self._large = has_more_than(
                conn, self.table, "embedding", self.agent_id, self.exact_scan_limit
            )
        return self._large

    def _rows(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        """Every row of one query, on a connection of the pool."""
        with self.pool.connection() as conn:
            rows: list[tuple[Any, ...]] = conn.execute(sql, list(params)).fetchall()
        return rows

    def _count(self, conn: psycopg.Connection[Any], where: str, params: Params) -> int:
        row = conn.execute(
            f"SELECT count(*) FROM {self.table} AS b WHERE {where}", params
        ).fetchone()
        return int(row[0]) if row else 0
