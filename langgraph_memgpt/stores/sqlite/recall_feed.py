"""Recall in storage order in SQLite: the change feed, its saved marks, and the export.

Sleep-time reflection and export read recall by row id, resuming after the last id they
saw; a mark saves such a position under a name. Row ids only grow (see
``recall_writes.never_reuse``), so a reader resuming after a position misses nothing.
"""

from __future__ import annotations

from dataclasses import replace

import sqlite_utils

from langgraph_memgpt.stores.messages import message_from_row, row_columns
from langgraph_memgpt.stores.sqlite.db import transaction
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import RecallMessage


def since(
    db: sqlite_utils.Database, agent_id: str, position: int, limit: int
) -> list[tuple[int, RecallMessage]]:
    """Up to ``limit`` messages recorded after ``position`` (a row id), oldest first.

    SQLite has one writer at a time, so ids are committed in order.
    """
    if limit <= 0:
        return []
    rows = db.conn.execute(
        f"SELECT {row_columns()} FROM recall WHERE agent_id = ? AND id > ? ORDER BY id LIMIT ?",
        (agent_id, int(position), int(limit)),
    ).fetchall()
    return [(int(row[0]), message_from_row(row)) for row in rows]


def list_messages(
    db: sqlite_utils.Database, agent_id: str, after: int, limit: int
) -> list[tuple[int, RecallMessage]]:
    """Every stored message after position ``after``, ``searchable`` as stored (export)."""
    rows = db.conn.execute(
        f"SELECT {row_columns()}, searchable FROM recall WHERE agent_id = ? AND id > ? "
        "ORDER BY id LIMIT ?",
        (agent_id, int(after), max(1, limit)),
    ).fetchall()
    return [(int(r[0]), replace(message_from_row(r[:-1]), searchable=bool(r[-1]))) for r in rows]


def mark(db: sqlite_utils.Database, agent_id: str, name: str) -> int:
    """The position saved under ``name`` (0 when never saved)."""
    row = db.conn.execute(
        "SELECT position FROM recall_marks WHERE agent_id = ? AND name = ?",
        (agent_id, valid_text(name)),
    ).fetchone()
    return 0 if row is None else int(row[0])


def set_mark(db: sqlite_utils.Database, agent_id: str, name: str, position: int) -> int:
    """Save ``position`` under ``name``, never moving it back; returns the mark now."""
    with transaction(db):
        db.conn.execute(
            "INSERT INTO recall_marks (agent_id, name, position) VALUES (?, ?, ?) "
            "ON CONFLICT (agent_id, name) DO UPDATE SET "
            "position = MAX(position, excluded.position)",
            (agent_id, valid_text(name), int(position)),
        )
    return mark(db, agent_id, name)


__all__ = ["list_messages", "mark", "set_mark", "since"]
