"""The deletion log and forgotten-message ids in Postgres (as ``stores.sqlite.deletions``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.postgres.db import pg_text
from langgraph_memgpt.stores.types import Deletion

LogRow = tuple[str, str, str | None, str]
"""(kind, item id, thread id, detail) of one deletion."""


def log_deletions(
    conn: psycopg.Connection[Any], agent_id: str, actor: str, rows: Iterable[LogRow]
) -> None:
    """Add entries to the log, inside the deletion's transaction."""
    now = to_utc_iso()
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO memgpt_deletions "
            "(agent_id, kind, item_id, thread_id, actor, detail, deleted_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (agent_id, kind, pg_text(item), thread, pg_text(actor), detail, now)
                for kind, item, thread, detail in rows
            ],
        )


def remember_forgotten(
    conn: psycopg.Connection[Any], agent_id: str, keys: Iterable[tuple[str, str]]
) -> None:
    """Keep the (thread, message id) of deleted messages, so they are never recorded again."""
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO memgpt_recall_forgotten (agent_id, thread_id, message_id) "
            "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            [(agent_id, thread, message) for thread, message in keys],
        )


def forgotten_among(
    conn: psycopg.Connection[Any], agent_id: str, keys: Sequence[tuple[str, str]]
) -> set[tuple[str, str]]:
    """Which of these (thread, message id) keys were deleted before."""
    if not keys:
        return set()
    rows = conn.execute(
        "SELECT f.thread_id, f.message_id FROM memgpt_recall_forgotten AS f "
        "JOIN unnest(%s::text[], %s::text[]) AS k (thread_id, message_id) "
        "ON f.thread_id = k.thread_id AND f.message_id = k.message_id WHERE f.agent_id = %s",
        ([k[0] for k in keys], [k[1] for k in keys], agent_id),
    ).fetchall()
    return {(str(r[0]), str(r[1])) for r in rows}


class PgDeletionLog:
    """The deletion log of one agent in Postgres (meets ``stores.base.DeletionLog``)."""

    def __init__(self, pool: ConnectionPool[Any], agent_id: str) -> None:
        self.pool = pool
        self.agent_id = agent_id

    def entries(self, limit: int = 50) -> list[Deletion]:
        """The newest ``limit`` deletions, newest first."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT kind, item_id, actor, deleted_at, thread_id, detail "
                "FROM memgpt_deletions WHERE agent_id = %s ORDER BY id DESC LIMIT %s",
                (self.agent_id, max(0, limit)),
            ).fetchall()
        return [Deletion(str(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], str(r[5])) for r in rows]

    def record(
        self, kind: str, item_id: str, *, actor: str, thread_id: str | None = None, detail: str = ""
    ) -> None:
        """Log a deletion made outside the stores (a thread's checkpoint, a whole agent)."""
        with self.pool.connection() as conn, conn.transaction():
            log_deletions(conn, self.agent_id, actor, [(kind, item_id, thread_id, detail)])
