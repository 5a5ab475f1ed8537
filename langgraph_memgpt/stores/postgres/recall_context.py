"""Recall's neighbour contexts in Postgres: each message's +-2 window of its thread.

A searchable message's context is its text with the searchable messages around it
(``stores.search.CONTEXT_RADIUS`` each side), and its context vector the mean of the
window's message vectors. Writing or forgetting messages changes their neighbours'
windows: these functions find the changed contexts, pool their vectors and write each
changed row once, inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from langgraph_memgpt.stores.context_windows import Neighbour, changed_contexts
from langgraph_memgpt.stores.embeddings import FloatArray, normalize
from langgraph_memgpt.stores.postgres.db import pg_text
from langgraph_memgpt.stores.postgres.recall_rows import TABLE
from langgraph_memgpt.stores.search import CONTEXT_RADIUS


@dataclass(frozen=True)
class ContextWindow:
    """A message's new context text and the ids of its window (itself and +-2)."""

    text: str
    window: tuple[int, ...]


def new_contexts(
    conn: psycopg.Connection[Any], agent_id: str, thread_id: str, new: Sequence[tuple[int, str]]
) -> dict[int, ContextWindow]:
    """The contexts that change around new messages: theirs and their +-2 neighbours'.

    ``new``: (row id, created_at) of each new message. Reads the thread between the first
    and last new message plus four searchable messages on each side: an append reads a
    handful of rows. Writes nothing: each changed row is then updated once, with its
    vectors (:func:`write_rows`).
    """
    low = (min(at for _, at in new), min(i for i, _ in new))
    high = (max(at for _, at in new), max(i for i, _ in new))
    base = (
        f"SELECT id, search_text, context FROM {TABLE} WHERE agent_id = %s "
        "AND thread_id = %s AND searchable "
    )
    reach = 2 * CONTEXT_RADIUS
    key = (agent_id, thread_id)
    before = conn.execute(
        base + "AND (created_at, id) < (%s, %s) ORDER BY created_at DESC, id DESC LIMIT %s",
        (*key, *low, reach),
    ).fetchall()
    span = conn.execute(
        base + "AND (created_at, id) >= (%s, %s) AND (created_at, id) <= (%s, %s) "
        "ORDER BY created_at, id",
        (*key, *low, *high),
    ).fetchall()
    after = conn.execute(
        base + "AND (created_at, id) > (%s, %s) ORDER BY created_at, id LIMIT %s",
        (*key, *high, reach),
    ).fetchall()
    sequence = [Neighbour(int(r[0]), str(r[1]), r[2]) for r in [*reversed(before), *span, *after]]
    return {
        c.id: ContextWindow(c.text, c.window)
        for c in changed_contexts(sequence, {i for i, _ in new})
    }


def pool_contexts(
    conn: psycopg.Connection[Any],
    contexts: Mapping[int, ContextWindow],
    known: Mapping[int, FloatArray],
) -> dict[int, FloatArray]:
    """Context vectors of ``contexts``' windows: the mean of their message vectors.

    ``known``: message vectors not stored yet (new rows); the others are read.
    """
    wanted = sorted({i for c in contexts.values() for i in c.window} - set(known))
    found = dict(known)
    if wanted:
        rows = conn.execute(
            f"SELECT id, embedding FROM {TABLE} WHERE id = ANY(%s) AND embedding IS NOT NULL",
            (wanted,),
        ).fetchall()
        found.update({int(r[0]): np.asarray(r[1].to_numpy(), dtype=np.float32) for r in rows})
    pooled: dict[int, FloatArray] = {}
    for item_id, context in contexts.items():
        parts = [found[i] for i in context.window if i in found]
        if parts:
            pooled[item_id] = normalize(np.mean(parts, axis=0))[0]
    return pooled


def write_rows(
    conn: psycopg.Connection[Any],
    contexts: Mapping[int, ContextWindow],
    vectors: Mapping[int, FloatArray],
    pooled: Mapping[int, FloatArray | None],
) -> None:
    """One UPDATE per changed row: its new context, message vector, context vector.

    A row's update is a new row version in every index of the table (a vector column or
    the context changes, so it is never a HOT update), and a graph insert costs more as
    the graph grows: writing the context and each vector in separate statements made up
    to three versions of each new message and two of each neighbour. An absent value
    keeps the stored one; a context vector given as None is cleared.

    Recall's graphs hold settled rows only (``settling``): a row's versions while the next
    messages of its thread join its window are in none of them.
    """
    rows = sorted(set(contexts) | set(vectors) | set(pooled))
    if not rows:
        return
    with conn.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {TABLE} SET context = coalesce(%s, context), "
            "embedding = coalesce(%s, embedding), "
            "context_embedding = CASE WHEN %s THEN %s::vector ELSE context_embedding END "
            "WHERE id = %s",
            [
                (
                    None if i not in contexts else pg_text(contexts[i].text),
                    vectors.get(i),
                    i in pooled,
                    pooled.get(i),
                    i,
                )
                for i in rows
            ],
        )


__all__ = ["ContextWindow", "new_contexts", "pool_contexts", "write_rows"]
