"""Forgetting recall messages in Postgres: rows, words, vectors, and neighbours' contexts.

A forgotten message must leave no trace a search could find: its row (its parts go by
``ON DELETE CASCADE``), and its words and vector in its neighbours' contexts, which are
recomputed without it. Its key is kept, so re-recording a queue that still holds it adds
nothing, and the deletion is logged without its text.
"""

from __future__ import annotations

from typing import Any

import psycopg
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.embeddings import FloatArray
from langgraph_memgpt.stores.messages import message_from_row
from langgraph_memgpt.stores.postgres import part_terms
from langgraph_memgpt.stores.postgres.deletions import (
    LogRow,
    log_deletions,
    remember_forgotten,
)
from langgraph_memgpt.stores.postgres.models import hold_model
from langgraph_memgpt.stores.postgres.recall_context import (
    ContextWindow,
    new_contexts,
    pool_contexts,
    write_rows,
)
from langgraph_memgpt.stores.postgres.recall_rows import COLUMNS, TABLE
from langgraph_memgpt.stores.postgres.recall_writes import lock_threads
from langgraph_memgpt.stores.postgres.search import Params
from langgraph_memgpt.stores.search import CONTEXT_RADIUS
from langgraph_memgpt.stores.types import RecallMessage


def delete_where(
    conn: psycopg.Connection[Any],
    agent_id: str,
    embeddings: Embeddings | None,
    identity: tuple[str, int] | None,
    where: str,
    params: Params,
    actor: str,
    bulk: tuple[str, str] | None,
) -> list[RecallMessage]:
    """Delete the agent's rows matching ``where`` and re-context their neighbours.

    Inside the caller's transaction. ``identity``: the embedding model's, held for the
    transaction (context vectors are re-pooled). ``bulk`` (kind, item) logs one entry for
    all of them; None logs each message.
    """
    if identity is not None:
        hold_model(conn, agent_id, identity)
    found = conn.execute(
        f"SELECT DISTINCT thread_id FROM {TABLE} WHERE agent_id = %s AND {where}",
        [agent_id, *params],
    ).fetchall()
    threads = sorted(str(r[0]) for r in found)
    if not threads:
        return []
    lock_threads(conn, agent_id, threads)
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND {where} ORDER BY b.id",
        [agent_id, *params],
    ).fetchall()
    gone = {int(r[0]) for r in rows}
    deleted = [message_from_row(r) for r in rows]
    # Messages whose +-2 window held a deleted one, by thread (read before deleting).
    touched: dict[str, list[int]] = {}
    for thread in threads:
        ids = [
            int(r[0])
            for r in conn.execute(
                f"SELECT id FROM {TABLE} WHERE agent_id = %s AND thread_id = %s "
                "AND searchable ORDER BY created_at, id",
                (agent_id, thread),
            )
        ]
        for i, row_id in enumerate(ids):
            window = ids[max(0, i - CONTEXT_RADIUS) : i + CONTEXT_RADIUS + 1]
            if row_id not in gone and gone.intersection(window):
                touched.setdefault(thread, []).append(row_id)
    conn.execute(f"DELETE FROM {TABLE} WHERE id = ANY(%s)", (sorted(gone),))
    remember_forgotten(conn, agent_id, ((m.thread_id, m.message_id) for m in deleted))
    log: list[LogRow]
    if bulk is None:
        log = [("message", m.message_id, m.thread_id, "") for m in deleted]
    else:
        kind, item = bulk
        detail = f"{len(deleted)} messages" + (
            "" if kind == "thread" else f" in {len(threads)} threads"
        )
        log = [(kind, item, item if kind == "thread" else None, detail)]
    log_deletions(conn, agent_id, actor, log)
    contexts: dict[int, ContextWindow] = {}
    for thread, ids in touched.items():
        at = conn.execute(f"SELECT id, created_at FROM {TABLE} WHERE id = ANY(%s)", (ids,))
        contexts.update(
            new_contexts(conn, agent_id, thread, [(int(r[0]), str(r[1])) for r in at.fetchall()])
        )
    if contexts:
        # A window left with no message vector, or no model to pool with: the stale
        # context vector goes.
        pooled: dict[int, FloatArray | None] = dict.fromkeys(contexts)
        if embeddings is not None:
            pooled.update(pool_contexts(conn, contexts, {}))
        write_rows(conn, contexts, {}, pooled)
        part_terms.catch_up(conn)  # the neighbours' new contexts (the rows' went by trigger)
    return deleted


__all__ = ["delete_where"]
