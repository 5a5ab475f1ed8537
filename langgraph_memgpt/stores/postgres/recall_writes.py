"""Writing recall messages in Postgres: each (thread, message id) once, contexts in step.

Every turn re-records its whole queue (the write-ahead's repair), so a write skips what
is stored and what was forgotten. Writes of one thread are serialised by a
transaction-scoped advisory lock, so two processes adding to a thread at once cannot
compute a neighbour's context from half of the other's messages; writers of one agent
share a lock that the change feed (``recall_feed.since``) takes exclusively.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.chunks import embed_parts
from langgraph_memgpt.stores.embeddings import FloatArray, embed_texts
from langgraph_memgpt.stores.messages import ROW_COLUMNS, PreparedMessage
from langgraph_memgpt.stores.postgres import part_terms
from langgraph_memgpt.stores.postgres.db import pg_text
from langgraph_memgpt.stores.postgres.deletions import forgotten_among
from langgraph_memgpt.stores.postgres.models import hold_model
from langgraph_memgpt.stores.postgres.parts import store_parts
from langgraph_memgpt.stores.postgres.recall_context import (
    ContextWindow,
    new_contexts,
    pool_contexts,
    write_rows,
)
from langgraph_memgpt.stores.postgres.recall_rows import TABLE

MESSAGE_COLUMNS = (*ROW_COLUMNS[1:], "searchable", "search_text")
"""The columns of a recorded message that ``add`` and the bulk loader both write."""


def write_messages(
    conn: psycopg.Connection[Any],
    agent_id: str,
    embeddings: Embeddings | None,
    identity: tuple[str, int] | None,
    prepared: Sequence[PreparedMessage],
) -> int:
    """Store messages not stored or forgotten, inside the caller's transaction.

    ``identity``: the embedding model's, held for the transaction (vectors are written).

    Returns:
        How many messages were new.
    """
    threads = sorted({pg_text(p.message.thread_id) for p in prepared})
    # The lock the inserts take, taken before the reads below: a read first and a
    # schema change queued between it and the insert deadlock (the insert's lock
    # waits for the change, which waits for the read).
    conn.execute(f"LOCK TABLE {TABLE} IN ROW EXCLUSIVE MODE")
    # Shared: writers of one agent run side by side; `since` waits for them all.
    conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (writers_key(agent_id),))
    if identity is not None:
        hold_model(conn, agent_id, identity)
    lock_threads(conn, agent_id, threads)
    keys = [(pg_text(p.message.thread_id), pg_text(p.message.message_id)) for p in prepared]
    # A deleted message is never recorded again (a re-recorded queue still holds it).
    # Nor is a stored one offered again: every turn re-records the whole queue (the
    # write-ahead's repair), and one lookup spares an INSERT per queued message
    # and the ids they would burn.
    # The threads are locked, so no other writer adds these keys meanwhile.
    skip = forgotten_among(conn, agent_id, keys) | _stored_among(conn, agent_id, keys)
    new: list[tuple[int, PreparedMessage]] = []
    for item, key in zip(prepared, keys, strict=True):
        if key in skip:
            continue
        # A searchable row stays out of the graphs until its context is final
        # (`settling`); the others never have vectors.
        row = conn.execute(
            f"INSERT INTO {TABLE} ({', '.join(MESSAGE_COLUMNS)}, settled) "
            f"VALUES ({', '.join(['%s'] * len(MESSAGE_COLUMNS))}, %s) "
            "ON CONFLICT (agent_id, thread_id, message_id) DO NOTHING RETURNING id",
            (*message_row(agent_id, item), not item.searchable),
        ).fetchone()
        if row is not None:
            new.append((int(row[0]), item))
    searchable = [(rowid, item) for rowid, item in new if item.searchable]
    if not searchable:
        part_terms.catch_up(conn)
        return len(new)
    by_thread: dict[str, list[tuple[int, str]]] = {}
    for rowid, item in searchable:
        by_thread.setdefault(pg_text(item.message.thread_id), []).append((rowid, item.created_at))
    contexts: dict[int, ContextWindow] = {}
    for thread_id, rows in by_thread.items():
        contexts.update(new_contexts(conn, agent_id, thread_id, rows))
    vectors: dict[int, FloatArray] = {}
    pooled: dict[int, FloatArray] = {}
    if embeddings is not None:
        vectors, pooled = _embed(conn, agent_id, embeddings, searchable, contexts)
    write_rows(conn, contexts, vectors, pooled)
    # The part words of the long messages and contexts written, before the commit.
    part_terms.catch_up(conn)
    return len(new)


def message_row(agent_id: str, item: PreparedMessage) -> tuple[Any, ...]:
    """One message's values for :data:`MESSAGE_COLUMNS` (text made storable: no NUL)."""
    m = item.message
    return (
        agent_id,
        pg_text(m.thread_id),
        pg_text(m.message_id),
        m.role,
        None if m.name is None else pg_text(m.name),
        pg_text(m.text),
        pg_text(json.dumps(m.tool_calls, default=str)),
        item.created_at,
        m.turn,
        item.searchable,
        pg_text(item.text) if item.searchable else None,
    )


def writers_key(agent_id: str) -> int:
    """The advisory lock key of an agent's recall writers (see ``recall_feed.since``)."""
    digest = hashlib.blake2b(f"memgpt-recall-writers:{agent_id}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def lock_threads(conn: psycopg.Connection[Any], agent_id: str, threads: Sequence[str]) -> None:
    """Take the write lock of each thread until the transaction ends."""
    for thread_id in sorted(threads):  # sorted: two writers never wait in a cycle
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (json.dumps([agent_id, thread_id]),),
        )


def _stored_among(
    conn: psycopg.Connection[Any], agent_id: str, keys: Sequence[tuple[str, str]]
) -> set[tuple[str, str]]:
    """Which of these (thread, message id) keys the agent has stored."""
    rows = conn.execute(
        f"SELECT r.thread_id, r.message_id FROM {TABLE} AS r "
        "JOIN unnest(%s::text[], %s::text[]) AS k (thread_id, message_id) "
        "ON r.thread_id = k.thread_id AND r.message_id = k.message_id WHERE r.agent_id = %s",
        ([k[0] for k in keys], [k[1] for k in keys], agent_id),
    ).fetchall()
    return {(str(r[0]), str(r[1])) for r in rows}


def _embed(
    conn: psycopg.Connection[Any],
    agent_id: str,
    embeddings: Embeddings,
    new: Sequence[tuple[int, PreparedMessage]],
    contexts: Mapping[int, ContextWindow],
) -> tuple[dict[int, FloatArray], dict[int, FloatArray]]:
    """Message vectors of the new rows (their parts stored) and the changed contexts'.

    A context vector is the mean of its window's message vectors.
    """
    vectors = embed_texts(embeddings, [item.text for _, item in new])
    store_parts(
        conn,
        TABLE,
        agent_id,
        [rowid for rowid, _ in new],
        embed_parts(embeddings, [item.text for _, item in new]),
    )
    fresh: dict[int, FloatArray] = {rowid: v for (rowid, _), v in zip(new, vectors, strict=True)}
    return fresh, pool_contexts(conn, contexts, fresh)


__all__ = ["MESSAGE_COLUMNS", "lock_threads", "message_row", "write_messages", "writers_key"]
