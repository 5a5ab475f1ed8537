"""Part vectors of long messages and passages in Postgres (``stores.chunks`` for SQLite).

One table per tier (``memgpt_recall_parts``, ``memgpt_archival_parts``): a row per part,
``(item_id, n)`` keyed, its ``item_id`` a foreign key of the message or passage with ``ON
DELETE CASCADE``, so whatever deletes a row (forgetting a message, a thread, a passage, an
agent) deletes its parts in the same statement, with no code path to forget.

Search scores each candidate's best part exactly (a scan of the filtered candidates'
parts, grouped by item): only texts longer than ``stores.chunks.LONG_WORDS`` words have
parts, a small share of most memories, so no HNSW index is kept for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from langgraph_memgpt.stores.chunks import parts_of
from langgraph_memgpt.stores.embeddings import FloatArray

RECALL_PARTS = "memgpt_recall_parts"
ARCHIVAL_PARTS = "memgpt_archival_parts"

PARTS_OF = {"memgpt_recall": RECALL_PARTS, "memgpt_archival": ARCHIVAL_PARTS}
"""The parts table of each tier's table."""

SCHEMA = tuple(
    statement
    for base, parts in PARTS_OF.items()
    for statement in (
        f"""CREATE TABLE IF NOT EXISTS {parts} (
            item_id bigint NOT NULL REFERENCES {base} (id) ON DELETE CASCADE,
            n integer NOT NULL,
            agent_id text NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (item_id, n)
        )""",
        f"CREATE INDEX IF NOT EXISTS {parts}_by_agent ON {parts} (agent_id)",
    )
)
"""The parts tables (run by ``stores.postgres.db.ensure_schema``)."""


def part_rows(
    agent_id: str, items: Sequence[int], per_text: Sequence[FloatArray]
) -> list[tuple[int, int, str, FloatArray]]:
    """``(item_id, n, agent_id, vector)`` rows of ``items`` and their ``embed_parts``."""
    return [
        (int(item), n, agent_id, np.asarray(vector, dtype=np.float32))
        for item, parts in zip(items, per_text, strict=True)
        for n, vector in enumerate(parts)
    ]


def store_parts(
    conn: psycopg.Connection[Any],
    table: str,
    agent_id: str,
    items: Sequence[int],
    per_text: Sequence[FloatArray],
) -> None:
    """Write the parts of new rows of ``table`` (their ``stores.chunks.embed_parts``)."""
    rows = part_rows(agent_id, items, per_text)
    if not rows:
        return
    with conn.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {PARTS_OF[table]} (item_id, n, agent_id, embedding) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (item_id, n) DO UPDATE "
            "SET embedding = excluded.embedding",
            rows,
        )


def has_parts(text: str) -> bool:
    """Whether ``text`` is long enough to be embedded in parts too."""
    return bool(parts_of(text))


def nearest_parts(
    conn: psycopg.Connection[Any],
    table: str,
    vector: np.ndarray[Any, Any],
    k: int,
    where: str,
    params: list[object],
) -> dict[int, float]:
    """``{item id: best part cosine}``: the ``k`` candidates whose best part is nearest.

    ``where`` (over ``b``, the tier's table) is the search's filter.
    """
    if k <= 0:
        return {}
    rows = conn.execute(
        f"SELECT p.item_id, max(1 - (p.embedding <=> %s)) AS s FROM {PARTS_OF[table]} AS p "
        f"JOIN {table} AS b ON b.id = p.item_id WHERE ({where}) "
        "GROUP BY p.item_id ORDER BY s DESC LIMIT %s",
        (vector, *params, k),
    ).fetchall()
    return {int(r[0]): float(r[1]) for r in rows}


__all__ = [
    "ARCHIVAL_PARTS",
    "PARTS_OF",
    "RECALL_PARTS",
    "SCHEMA",
    "has_parts",
    "nearest_parts",
    "part_rows",
    "store_parts",
]
