"""Recall's neighbour contexts in SQLite: each message's ±2 window of its thread.

A searchable message's context is its text with the searchable messages around it in its
thread (``stores.search.CONTEXT_RADIUS`` on each side), stored in ``recall.context`` and
indexed in ``recall_context_fts``; its context vector is the mean of the window's message
vectors. Writing or forgetting a message changes its neighbours' windows: these functions
find the windows and recompute the texts, inside the caller's transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

import numpy as np

from langgraph_memgpt.stores.context_windows import Neighbour, NewContext, changed_contexts
from langgraph_memgpt.stores.embeddings import FloatArray
from langgraph_memgpt.stores.search import CONTEXT_RADIUS

TIER = "recall"
"""Recall's tier name in the vector tables."""


def neighbours(conn: sqlite3.Connection, agent_id: str, thread_id: str, rowid: int) -> set[int]:
    """The searchable messages just before and after ``rowid`` in its thread."""
    at = conn.execute("SELECT created_at FROM recall WHERE id = ?", (rowid,))
    created_at = str(at.fetchone()[0])
    base = "SELECT id FROM recall WHERE agent_id = ? AND thread_id = ? AND searchable = 1 "
    before = conn.execute(
        base + "AND (created_at < ? OR (created_at = ? AND id < ?)) "
        "ORDER BY created_at DESC, id DESC LIMIT 1",
        (agent_id, thread_id, created_at, created_at, rowid),
    ).fetchall()
    after = conn.execute(
        base + "AND (created_at > ? OR (created_at = ? AND id > ?)) "
        "ORDER BY created_at, id LIMIT 1",
        (agent_id, thread_id, created_at, created_at, rowid),
    ).fetchall()
    return {int(r[0]) for r in [*before, *after]}


def refresh_contexts(
    conn: sqlite3.Connection, agent_id: str, thread_id: str, new_ids: set[int]
) -> list[NewContext]:
    """Recompute the context of the new messages and of their ±2 neighbours.

    Reads the thread only between the first and last new message, plus four
    searchable messages on each side (the neighbours' own neighbours): an appended
    message costs a handful of rows, a bulk ingest one pass over its thread.
    """
    ordered = (
        "SELECT r.id, r.created_at, f.text, r.context FROM recall AS r "
        "JOIN recall_fts AS f ON f.rowid = r.id "
        "WHERE r.agent_id = ? AND r.thread_id = ? AND r.searchable = 1 "
    )
    base = (agent_id, thread_id)
    low_at, high_at = conn.execute(
        "SELECT MIN(created_at), MAX(created_at) FROM recall "
        "WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(new_ids)),),
    ).fetchone()
    # (created_at, id) bounds at or beyond the new rows: min/max ids may belong to other
    # new rows than the min/max times, which only widens the span read.
    low_id, high_id = min(new_ids), max(new_ids)
    reach = 2 * CONTEXT_RADIUS
    # Written as a range on created_at plus a tie-break on id so the thread index
    # serves them: an append reads a few rows, not the whole thread.
    before = conn.execute(
        ordered + "AND r.created_at <= ? AND (r.created_at < ? OR r.id < ?) "
        "ORDER BY r.created_at DESC, r.id DESC LIMIT ?",
        (*base, low_at, low_at, low_id, reach),
    ).fetchall()
    span = conn.execute(
        ordered + "AND r.created_at BETWEEN ? AND ? "
        "AND (r.created_at > ? OR r.id >= ?) AND (r.created_at < ? OR r.id <= ?) "
        "ORDER BY r.created_at, r.id",
        (*base, low_at, high_at, low_at, low_id, high_at, high_id),
    ).fetchall()
    after = conn.execute(
        ordered + "AND r.created_at >= ? AND (r.created_at > ? OR r.id > ?) "
        "ORDER BY r.created_at, r.id LIMIT ?",
        (*base, high_at, high_at, high_id, reach),
    ).fetchall()
    seen: set[int] = set()
    sequence: list[Neighbour] = []
    for row in [*reversed(before), *span, *after]:
        if int(row[0]) not in seen:  # low/high bounds may straddle equal timestamps
            seen.add(int(row[0]))
            sequence.append(Neighbour(int(row[0]), str(row[2]), row[3]))
    changed = changed_contexts(sequence, new_ids)
    conn.executemany(
        "UPDATE recall SET context = ? WHERE id = ?",
        [(row.text, row.id) for row in changed],
    )
    return changed


def thread_windows(
    conn: sqlite3.Connection, agent_id: str, thread_ids: Iterable[str]
) -> dict[int, tuple[int, ...]]:
    """The context window (ids) of every searchable message of these threads."""
    out: dict[int, tuple[int, ...]] = {}
    for thread_id in thread_ids:
        ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM recall WHERE agent_id = ? AND thread_id = ? "
                "AND searchable = 1 ORDER BY created_at, id",
                (agent_id, thread_id),
            )
        ]
        for i, item_id in enumerate(ids):
            out[item_id] = tuple(ids[max(0, i - CONTEXT_RADIUS) : i + CONTEXT_RADIUS + 1])
    return out


def stored_vectors(
    conn: sqlite3.Connection, agent_id: str, ids: Sequence[int]
) -> dict[int, FloatArray]:
    """Stored message vectors of ``ids`` (those that have one)."""
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT item_id, embedding FROM vectors WHERE tier = ? AND agent_id = ? "
        "AND key = 'turn' AND item_id IN (SELECT value FROM json_each(?))",
        (TIER, agent_id, json.dumps(list(ids))),
    ).fetchall()
    return {int(r[0]): np.frombuffer(r[1], dtype=np.float32) for r in rows}


__all__ = [
    "TIER",
    "neighbours",
    "refresh_contexts",
    "stored_vectors",
    "thread_windows",
]
