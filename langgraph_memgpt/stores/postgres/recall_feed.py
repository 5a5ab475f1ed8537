"""Recall in storage order in Postgres: the change feed, its saved marks, and the export.

Sleep-time reflection and export read recall by row id, resuming after the last id they
saw; a mark saves such a position under a name.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.messages import message_from_row
from langgraph_memgpt.stores.postgres.db import pg_text
from langgraph_memgpt.stores.postgres.recall_rows import COLUMNS, TABLE
from langgraph_memgpt.stores.postgres.recall_writes import writers_key
from langgraph_memgpt.stores.types import RecallMessage


def since(
    pool: ConnectionPool[Any], agent_id: str, position: int, limit: int
) -> list[tuple[int, RecallMessage]]:
    """Up to ``limit`` messages recorded after ``position`` (a row id), oldest first.

    Row ids come from one sequence, but two threads of one agent recording at once may
    commit out of id order: a reader seeing id 11 before id 10 commits would resume
    after 11 and never see 10. So the read first takes the agent's writers' lock
    exclusively: it waits until every write in flight has committed, and an id given
    out after that is larger than any the reader can see.
    """
    if limit <= 0:
        return []
    with pool.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (writers_key(agent_id),))
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.id > %s "
            "ORDER BY b.id LIMIT %s",
            (agent_id, int(position), int(limit)),
        ).fetchall()
    return [(int(row[0]), message_from_row(row)) for row in rows]


def list_messages(
    pool: ConnectionPool[Any], agent_id: str, after: int, limit: int
) -> list[tuple[int, RecallMessage]]:
    """Every stored message after position ``after``, ``searchable`` as stored (export)."""
    with pool.connection() as conn:
        rows = conn.execute(
            f"SELECT {COLUMNS}, b.searchable FROM {TABLE} AS b "
            "WHERE b.agent_id = %s AND b.id > %s ORDER BY b.id LIMIT %s",
            (agent_id, int(after), max(1, limit)),
        ).fetchall()
    return [(int(r[0]), replace(message_from_row(r[:-1]), searchable=bool(r[-1]))) for r in rows]


def mark(pool: ConnectionPool[Any], agent_id: str, name: str) -> int:
    """The position saved under ``name`` (0 when never saved)."""
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT position FROM memgpt_recall_marks WHERE agent_id = %s AND name = %s",
            (agent_id, pg_text(name)),
        ).fetchone()
    return 0 if row is None else int(row[0])


def set_mark(pool: ConnectionPool[Any], agent_id: str, name: str, position: int) -> int:
    """Save ``position`` under ``name``, never moving it back; returns the mark now."""
    with pool.connection() as conn:
        row = conn.execute(
            "INSERT INTO memgpt_recall_marks (agent_id, name, position) VALUES (%s, %s, %s) "
            "ON CONFLICT (agent_id, name) DO UPDATE SET "
            "position = GREATEST(memgpt_recall_marks.position, excluded.position) "
            "RETURNING position",
            (agent_id, pg_text(name), int(position)),
        ).fetchone()
    assert row is not None
    return int(row[0])


__all__ = ["list_messages", "mark", "set_mark", "since"]
