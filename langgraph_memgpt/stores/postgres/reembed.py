"""Re-embed an agent's Postgres memory with another model, switched in one transaction.

The slow part (embedding every message and passage again) writes the new vectors aside,
into temporary tables of one session; the agent's rows keep their old vectors and stay
searchable meanwhile. Then one transaction switches: it holds the agent's model lock
exclusively (`models.model_lock_key`: every vector writer shares it, so writes in flight
finish first and new ones wait), embeds what was written since the staging began, copies
the new vectors into the rows, re-pools the context vectors whose window changed, and
records the new model. A crash before the commit leaves the old vectors and the old model
(the temporary tables die with the session); after it, every vector is the new model's.

A server still configured with the old model is refused at its next write
(``EmbeddingMismatchError``, from `models.hold_model`): restart it with the new model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from langchain_core.embeddings import Embeddings
from pgvector.psycopg import register_vector

from langgraph_memgpt.stores.capabilities import Progress, ProgressFor
from langgraph_memgpt.stores.chunks import embed_parts, parts_of
from langgraph_memgpt.stores.embeddings import (
    FloatArray,
    embed_texts,
    embedding_identity,
    normalize,
)
from langgraph_memgpt.stores.postgres.bulk import EMBED_BATCH, windows
from langgraph_memgpt.stores.postgres.db import ensure_hnsw
from langgraph_memgpt.stores.postgres.models import model_lock_key
from langgraph_memgpt.stores.postgres.parts import PARTS_OF, part_rows

_RECALL_STAGE = "memgpt_reembed_recall"
_ARCHIVAL_STAGE = "memgpt_reembed_archival"
_PARTS_STAGE = "memgpt_reembed_parts"
"""New part vectors of long messages and passages (``stores.postgres.parts``), by table."""


def reembed_postgres(
    backend: Any,
    agent_id: str,
    embeddings: Embeddings,
    progress_for: ProgressFor = lambda _: lambda done, total: None,
) -> tuple[int, int]:
    """Embed every message and passage of ``agent_id`` with ``embeddings``; switch at once.

    ``backend`` is the agent's ``PostgresBackend`` (its URL and pool; its own model does
    not matter). ``progress_for(task)`` returns the progress callback of one task.
    Returns (messages embedded, passages embedded).
    """
    identity = embedding_identity(embeddings)
    ensure_hnsw(backend.pool(), identity[1])  # the schema, and the new dimension's indexes
    with psycopg.connect(backend.url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(
            f"CREATE TEMP TABLE {_RECALL_STAGE} (id bigint PRIMARY KEY, embedding vector, "
            "context text, context_embedding vector)"
        )
        conn.execute(
            f"CREATE TEMP TABLE {_ARCHIVAL_STAGE} (id bigint PRIMARY KEY, embedding vector)"
        )
        conn.execute(
            f"CREATE TEMP TABLE {_PARTS_STAGE} (tbl text NOT NULL, item_id bigint NOT NULL, "
            "n integer NOT NULL, embedding vector NOT NULL)"
        )
        _stage_recall(conn, agent_id, embeddings, progress_for("recall messages"))
        _stage_archival(conn, agent_id, embeddings, progress_for("archival passages"))
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (model_lock_key(agent_id),))
            messages = _switch_recall(conn, agent_id, embeddings)
            passages = _switch_archival(conn, agent_id, embeddings)
            for table in PARTS_OF:
                _switch_parts(conn, agent_id, table)
            conn.execute(
                "INSERT INTO memgpt_embeddings (agent_id, model, dims) VALUES (%s, %s, %s) "
                "ON CONFLICT (agent_id) DO UPDATE SET model = excluded.model, dims = excluded.dims",
                (agent_id, *identity),
            )
    return messages, passages


# -- staging (outside any transaction: the agent keeps working) ---------------------------


def _stage_recall(
    conn: psycopg.Connection[Any], agent_id: str, embeddings: Embeddings, progress: Progress
) -> None:
    """New message and context vectors of the agent's searchable messages, thread by thread."""
    row = conn.execute(
        "SELECT count(*) FROM memgpt_recall WHERE agent_id = %s AND searchable", (agent_id,)
    ).fetchone()
    total, done = (int(row[0]) if row else 0), 0
    progress(0, total)
    threads = [
        str(r[0])
        for r in conn.execute(
            "SELECT DISTINCT thread_id FROM memgpt_recall WHERE agent_id = %s AND searchable "
            "ORDER BY thread_id",
            (agent_id,),
        )
    ]
    for thread in threads:
        rows = conn.execute(
            "SELECT id, search_text, context FROM memgpt_recall WHERE agent_id = %s "
            "AND thread_id = %s AND searchable ORDER BY created_at, id",
            (agent_id, thread),
        ).fetchall()
        vectors = _embed(embeddings, [str(r[1]) for r in rows])
        staged = []
        for i, window in enumerate(windows(len(rows))):
            pooled = normalize(np.mean([vectors[j] for j in window], axis=0))[0]
            staged.append((int(rows[i][0]), vectors[i], rows[i][2], pooled))
        _copy(conn, _RECALL_STAGE, ["int8", "vector", "text", "vector"], staged)
        _stage_parts(conn, "memgpt_recall", embeddings, rows)
        done += len(rows)
        progress(done, total)


def _stage_archival(
    conn: psycopg.Connection[Any], agent_id: str, embeddings: Embeddings, progress: Progress
) -> None:
    """New vectors of the agent's passages, in id order, a batch at a time."""
    row = conn.execute(
        "SELECT count(*) FROM memgpt_archival WHERE agent_id = %s", (agent_id,)
    ).fetchone()
    total, done, after = (int(row[0]) if row else 0), 0, 0
    progress(0, total)
    while True:
        rows = conn.execute(
            "SELECT id, text FROM memgpt_archival WHERE agent_id = %s AND id > %s "
            "ORDER BY id LIMIT %s",
            (agent_id, after, EMBED_BATCH),
        ).fetchall()
        if not rows:
            return
        vectors = _embed(embeddings, [str(r[1]) for r in rows])
        _copy(
            conn,
            _ARCHIVAL_STAGE,
            ["int8", "vector"],
            [(int(r[0]), v) for r, v in zip(rows, vectors, strict=True)],
        )
        _stage_parts(conn, "memgpt_archival", embeddings, rows)
        after = int(rows[-1][0])
        done += len(rows)
        progress(done, total)


# -- the switch (one transaction, the model lock held) ------------------------------------


def _switch_recall(conn: psycopg.Connection[Any], agent_id: str, embeddings: Embeddings) -> int:
    """New vectors into the agent's recall rows; returns how many messages have one."""
    # Messages recorded since their thread was staged: embed them now.
    _stage_late(
        conn,
        f"SELECT r.id, r.search_text FROM memgpt_recall AS r LEFT JOIN {_RECALL_STAGE} AS s "
        "ON s.id = r.id WHERE r.agent_id = %s AND r.searchable AND s.id IS NULL",
        agent_id,
        embeddings,
        _RECALL_STAGE,
        ["int8", "vector", "text", "vector"],
        "memgpt_recall",
    )
    conn.execute(
        f"UPDATE memgpt_recall AS r SET embedding = s.embedding, context_embedding = "
        "CASE WHEN s.context IS NOT DISTINCT FROM r.context THEN s.context_embedding END "
        f"FROM {_RECALL_STAGE} AS s WHERE r.id = s.id AND r.agent_id = %s",
        (agent_id,),
    )
    # Contexts that changed since staging (a neighbour added or forgotten), and the late
    # messages: their context vector is the mean of their window's new message vectors.
    stale = conn.execute(
        "SELECT DISTINCT thread_id FROM memgpt_recall WHERE agent_id = %s AND searchable "
        "AND context_embedding IS NULL",
        (agent_id,),
    ).fetchall()
    for (thread,) in stale:
        rows = conn.execute(
            "SELECT id, embedding, context_embedding IS NULL FROM memgpt_recall "
            "WHERE agent_id = %s AND thread_id = %s AND searchable ORDER BY created_at, id",
            (agent_id, thread),
        ).fetchall()
        stored = {i: np.asarray(r[1].to_numpy(), dtype=np.float32) for i, r in enumerate(rows)}
        updates = [
            (_pool(stored, window), int(rows[i][0]))
            for i, window in enumerate(windows(len(rows)))
            if rows[i][2]
        ]
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE memgpt_recall SET context_embedding = %s WHERE id = %s", updates
            )
    return _with_vectors(conn, "memgpt_recall", agent_id)


def _switch_archival(conn: psycopg.Connection[Any], agent_id: str, embeddings: Embeddings) -> int:
    """New vectors into the agent's passages; returns how many passages have one."""
    _stage_late(
        conn,
        f"SELECT a.id, a.text FROM memgpt_archival AS a LEFT JOIN {_ARCHIVAL_STAGE} AS s "
        "ON s.id = a.id WHERE a.agent_id = %s AND s.id IS NULL",
        agent_id,
        embeddings,
        _ARCHIVAL_STAGE,
        ["int8", "vector"],
        "memgpt_archival",
    )
    conn.execute(
        f"UPDATE memgpt_archival AS a SET embedding = s.embedding FROM {_ARCHIVAL_STAGE} AS s "
        "WHERE a.id = s.id AND a.agent_id = %s",
        (agent_id,),
    )
    return _with_vectors(conn, "memgpt_archival", agent_id)


# -- helpers --------------------------------------------------------------------------


def _stage_late(
    conn: psycopg.Connection[Any],
    sql: str,
    agent_id: str,
    embeddings: Embeddings,
    stage: str,
    types: list[str],
    table: str,
) -> None:
    """Embed and stage the rows ``sql`` finds (id, text): those written since staging began.

    A staged row holds its id and new vector; the stage's other columns (a recall
    context and its vector) stay empty, so the switch recomputes them.
    """
    late = conn.execute(sql, (agent_id,)).fetchall()
    if late:
        vectors = _embed(embeddings, [str(r[1]) for r in late])
        blanks = (None,) * (len(types) - 2)
        rows = [(int(r[0]), v, *blanks) for r, v in zip(late, vectors, strict=True)]
        _copy(conn, stage, types, rows)
        _stage_parts(conn, table, embeddings, late)


def _stage_parts(
    conn: psycopg.Connection[Any],
    table: str,
    embeddings: Embeddings,
    rows: Sequence[tuple[Any, ...]],
) -> None:
    """Stage the new part vectors of the long texts among ``rows`` (id, text, ...)."""
    long = [r for r in rows if parts_of(str(r[1]))]
    if not long:
        return
    per_text = embed_parts(embeddings, [str(r[1]) for r in long])
    staged = [
        (table, item, n, vector)
        for item, n, _, vector in part_rows("", [int(r[0]) for r in long], per_text)
    ]
    _copy(conn, _PARTS_STAGE, ["text", "int8", "int4", "vector"], staged)


def _switch_parts(conn: psycopg.Connection[Any], agent_id: str, table: str) -> None:
    """The agent's parts of ``table`` replaced by the staged ones (of rows still there)."""
    parts = PARTS_OF[table]
    conn.execute(f"DELETE FROM {parts} WHERE agent_id = %s", (agent_id,))
    conn.execute(
        f"INSERT INTO {parts} (item_id, n, agent_id, embedding) "
        f"SELECT s.item_id, s.n, b.agent_id, s.embedding FROM {_PARTS_STAGE} AS s "
        f"JOIN {table} AS b ON b.id = s.item_id WHERE s.tbl = %s AND b.agent_id = %s",
        (table, agent_id),
    )


def _with_vectors(conn: psycopg.Connection[Any], table: str, agent_id: str) -> int:
    """How many of the agent's rows in ``table`` have a vector."""
    row = conn.execute(
        f"SELECT count(*) FROM {table} WHERE agent_id = %s AND embedding IS NOT NULL",
        (agent_id,),
    ).fetchone()
    return int(row[0]) if row else 0


def _embed(embeddings: Embeddings, texts: Sequence[str]) -> FloatArray:
    parts = [
        embed_texts(embeddings, texts[i : i + EMBED_BATCH])
        for i in range(0, len(texts), EMBED_BATCH)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, 1), dtype=np.float32)


def _pool(vectors: Mapping[int, FloatArray], window: range) -> FloatArray:
    pooled: FloatArray = normalize(np.mean([vectors[j] for j in window], axis=0))[0]
    return pooled


def _copy(
    conn: psycopg.Connection[Any], table: str, types: list[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    with conn.cursor() as cursor, cursor.copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)
