"""Writing recall messages in SQLite: idempotent inserts and updates of (thread, message id).

A turn re-records its whole queue (the write-ahead's repair) and a retried step records
again, so a write must tell a replay (nothing to do) from an edit (update the row, its
words and vectors) from a new message, and never bring back a forgotten one. Row ids
never go back either: readers resume after the largest id they saw.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlite_utils

from langgraph_memgpt.stores.context_windows import NewContext
from langgraph_memgpt.stores.messages import PreparedMessage
from langgraph_memgpt.stores.sqlite.db import get_meta, set_meta, transaction
from langgraph_memgpt.stores.sqlite.deletions import forgotten_among
from langgraph_memgpt.stores.sqlite.recall_context import neighbours, refresh_contexts
from langgraph_memgpt.stores.sqlite.recall_vectors import RecallVectors

_ID_FLOOR = "recall_id_floor"
"""Meta key: the largest recall row id ever given out, once the newest rows were deleted."""


def not_forgotten(
    db: sqlite_utils.Database, agent_id: str, prepared: list[PreparedMessage]
) -> list[PreparedMessage]:
    """The messages that were never deleted (a deleted one is never recorded again)."""
    forgotten = forgotten_among(db, agent_id, [_key(p) for p in prepared])
    return [p for p in prepared if _key(p) not in forgotten] if forgotten else prepared


def ingest(
    db: sqlite_utils.Database,
    agent_id: str,
    vectors: RecallVectors | None,
    batch: Sequence[PreparedMessage],
) -> list[tuple[int, PreparedMessage]]:
    """Write a batch: new messages are inserted, re-recorded ones with new content updated.

    A message is (thread, message id): the same id in another thread is another
    message. Re-recording a message as it is stored changes nothing (a retried or
    replayed step adds nothing); re-recording it with new content (an edit and rerun)
    updates its row, its full-text entries and its vectors, keeping its time and turn.
    Messages are embedded before the write transaction, so the write lock is never
    held for a model call.

    Returns:
        The (row id, message) of every message that was new or changed.
    """
    stored = _stored(db.conn, agent_id, batch)
    wanted = {
        item.text for item in batch if item.searchable and _differs(stored.get(_key(item)), item)
    }
    embedded = vectors.embed(wanted) if vectors is not None else {}
    parts = vectors.embed_parts(wanted) if vectors is not None else {}
    with transaction(db):
        # Read again under the write lock: another writer may have come in between.
        stored = _stored(db.conn, agent_id, batch)
        written: list[tuple[int, PreparedMessage]] = []
        dropped: list[tuple[int, str]] = []  # (id, thread) of messages no longer searchable
        for item in batch:
            old = stored.get(_key(item))
            if not _differs(old, item):
                continue
            if old is None:
                rowid = _insert_row(db, agent_id, item)
            else:
                rowid = _update_row(db.conn, old, item)
                if old.searchable and not item.searchable:
                    dropped.append((rowid, item.message.thread_id))
            stored[_key(item)] = _Stored.of(rowid, item)
            written.append((rowid, item))
        searchable = [(rowid, item) for rowid, item in written if item.searchable]
        db.conn.executemany(
            "INSERT INTO recall_fts (rowid, text) VALUES (?, ?)",
            [(rowid, item.text) for rowid, item in searchable],
        )
        by_thread: dict[str, set[int]] = {}
        for rowid, item in searchable:
            by_thread.setdefault(item.message.thread_id, set()).add(rowid)
        for rowid, thread_id in dropped:
            by_thread.setdefault(thread_id, set()).update(
                neighbours(db.conn, agent_id, thread_id, rowid)
            )
        changed: list[NewContext] = []
        for thread_id, rowids in by_thread.items():
            if rowids:
                changed.extend(refresh_contexts(db.conn, agent_id, thread_id, rowids))
        if vectors is not None:
            vectors.forget([rowid for rowid, _ in dropped])
            missing = {item.text for _, item in searchable} - set(embedded)
            embedded.update(vectors.embed(missing))  # only when another writer raced us
            parts.update(vectors.embed_parts(missing))
            vectors.store(
                [rowid for rowid, _ in searchable],
                np.stack([embedded[item.text] for _, item in searchable]) if searchable else None,
                {row.id: row.window for row in changed},
            )
            vectors.store_parts(
                [rowid for rowid, _ in searchable], [parts[item.text] for _, item in searchable]
            )
        return written


def never_reuse(db: sqlite_utils.Database, deleted_top: int) -> None:
    """Keep row ids growing after the newest rows were deleted.

    SQLite gives a new row the largest id + 1, so deleting the newest rows would hand
    their ids out again: a reader resuming after a position (`since`, the sleep-time
    watermark) would skip the new message, and a vector cache keyed by id could hold a
    stale entry for it. The largest id ever given out is kept as a floor instead.
    """
    if deleted_top > _top_id(db.conn):
        set_meta(db, _ID_FLOOR, str(max(deleted_top, _id_floor(db))))


@dataclass(frozen=True)
class _Stored:
    """The stored content of a message, to tell a replay from an edit."""

    id: int
    role: str
    name: str | None
    text: str
    tool_calls: str  # JSON, as stored
    searchable: bool

    @classmethod
    def of(cls, rowid: int, item: PreparedMessage) -> _Stored:
        m = item.message
        return cls(rowid, m.role, m.name, m.text, _calls_json(m.tool_calls), item.searchable)


def _stored(
    conn: sqlite3.Connection, agent_id: str, batch: Sequence[PreparedMessage]
) -> dict[tuple[str, str], _Stored]:
    """What is stored for the batch's (thread, message id) keys."""
    keys = sorted({_key(item) for item in batch})
    if not keys:
        return {}
    # CROSS JOIN keeps the keys as the outer loop, each one a lookup in the unique
    # (agent, thread, message id) index. Left to the planner, it walked the agent's
    # messages once per key, and a re-import cost more than the first import.
    rows = conn.execute(
        "SELECT r.id, r.thread_id, r.message_id, r.role, r.name, r.text, r.tool_calls, "
        "r.searchable FROM json_each(?) AS k CROSS JOIN recall AS r "
        "ON r.agent_id = ? AND r.thread_id = json_extract(k.value, '$[0]') "
        "AND r.message_id = json_extract(k.value, '$[1]')",
        (json.dumps(keys), agent_id),
    ).fetchall()
    return {
        (str(r[1]), str(r[2])): _Stored(
            int(r[0]), str(r[3]), r[4], str(r[5]), str(r[6]), bool(r[7])
        )
        for r in rows
    }


def _top_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COALESCE(MAX(id), 0) FROM recall").fetchone()
    return int(row[0])


def _id_floor(db: sqlite_utils.Database) -> int:
    return int(get_meta(db, _ID_FLOOR) or 0)


def _insert_row(db: sqlite_utils.Database, agent_id: str, item: PreparedMessage) -> int:
    m = item.message
    floor = _id_floor(db)
    # Above the floor of deleted ids (see `never_reuse`); NULL: SQLite's own next id.
    explicit = floor + 1 if floor and floor >= _top_id(db.conn) else None
    cursor = db.conn.execute(
        "INSERT INTO recall (id, agent_id, thread_id, message_id, role, name, "
        "text, tool_calls, created_at, turn, searchable) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            explicit,
            agent_id,
            m.thread_id,
            m.message_id,
            m.role,
            m.name,
            m.text,
            _calls_json(m.tool_calls),
            item.created_at,
            m.turn,
            int(item.searchable),
        ),
    )
    assert cursor.lastrowid is not None
    return int(cursor.lastrowid)


def _update_row(conn: sqlite3.Connection, old: _Stored, item: PreparedMessage) -> int:
    """Give a stored message its new content; its time and turn stay as first recorded."""
    m = item.message
    conn.execute(
        "UPDATE recall SET role = ?, name = ?, text = ?, tool_calls = ?, searchable = ? "
        "WHERE id = ?",
        (m.role, m.name, m.text, _calls_json(m.tool_calls), int(item.searchable), old.id),
    )
    conn.execute("DELETE FROM recall_fts WHERE rowid = ?", (old.id,))
    if not item.searchable:
        conn.execute("UPDATE recall SET context = NULL WHERE id = ?", (old.id,))
    return old.id


def _key(item: PreparedMessage) -> tuple[str, str]:
    return item.message.thread_id, item.message.message_id


def _calls_json(tool_calls: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(tool_calls, default=str)


def _differs(stored: _Stored | None, item: PreparedMessage) -> bool:
    """Whether writing ``item`` changes anything: new, or its content was edited.

    A cut copy (``partial``) only counts when nothing is stored. Time and turn are left
    out: a message re-recorded after a crash carries the time of
    the retry, and is still the same message.
    """
    if stored is None:
        return True
    m = item.message
    if m.partial:  # a cut copy never replaces the whole message
        return False
    return (stored.role, stored.name, stored.text, stored.tool_calls, stored.searchable) != (
        m.role,
        m.name,
        m.text,
        _calls_json(m.tool_calls),
        item.searchable,
    )


__all__ = ["ingest", "never_reuse", "not_forgotten"]
