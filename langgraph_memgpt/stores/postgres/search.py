"""The signals of a search in Postgres: word scores (full-text search) and vector scores.

Words: each query term (``stores.words.query_terms``) becomes ``plainto_tsquery('english',
term)`` and the terms are OR-ed, so any text is a valid query (never a tsquery syntax
error); matches are scored with ``ts_rank`` (not BM25: see the README). Meaning: cosine
similarity from pgvector. Both are computed over the rows that pass the search's filters
(agent, roles, dates, tags), so ranking only ever sees candidates, and the caller fuses
them with ``stores.ranking.fuse`` as the embedded backend does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from langgraph_memgpt.stores.words import TERM_MATCH_CAP

Params = list[object]


def placeholders(conditions: Sequence[str]) -> list[str]:
    """Conditions written with ``?`` (as ``stores.dates`` writes them) in psycopg's ``%s``."""
    return [c.replace("?", "%s") for c in conditions]


def word_scores(
    conn: psycopg.Connection[Any],
    table: str,
    tsv_column: str,
    terms: Sequence[str],
    where: str,
    params: Params,
) -> dict[int, float]:
    """``{id: ts_rank}`` of the rows of ``table`` (alias ``b``) matching any term and ``where``.

    Scores at most the ``TERM_MATCH_CAP`` newest matches per term, as the embedded backend
    does, so a very common word costs a bounded amount.
    """
    if not terms:
        return {}
    query = " || ".join(["plainto_tsquery('english', %s)"] * len(terms))
    # Pick the newest matches first, then rank only those: ts_rank reads each row's
    # tsvector, and computing it for every match before the LIMIT cost most of a search.
    rows = conn.execute(
        f"WITH q AS (SELECT {query} AS q) "
        f"SELECT m.id, ts_rank(m.tsv, q.q) FROM q, LATERAL ("
        f"SELECT b.id, b.{tsv_column} AS tsv FROM {table} AS b "
        f"WHERE b.{tsv_column} @@ q.q AND ({where}) ORDER BY b.id DESC LIMIT %s) AS m",
        (*terms, *params, TERM_MATCH_CAP * len(terms)),
    ).fetchall()
    return {int(r[0]): float(r[1]) for r in rows}


def vector_scores(
    conn: psycopg.Connection[Any],
    table: str,
    column: str,
    vector: np.ndarray[Any, Any],
    k: int,
    where: str,
    params: Params,
    *,
    approximate: bool,
) -> dict[int, float]:
    """The ``k`` rows passing ``where`` nearest to ``vector``: ``{id: cosine similarity}``.

    Exact (``approximate`` False): the filter picks the agent's rows through its btree index
    and every candidate's distance is computed, so a narrow filter is never starved (a plain
    HNSW scan with a 1%-selective filter returned 0.4 of 10 rows here). Approximate: the
    HNSW index of the vector's dimension, with pgvector's iterative scan so filtered-out
    neighbours make it look further instead of returning fewer rows; for large agents.
    """
    if k <= 0:
        return {}
    dims = int(vector.shape[0])
    if not approximate:
        expr = f"b.{column}"
        extra = f"b.{column} IS NOT NULL"
    else:
        expr = f"b.{column}::vector({dims})"
        extra = f"vector_dims(b.{column}) = {dims}"
    sql = (
        f"SELECT b.id, 1 - ({expr} <=> %s) FROM {table} AS b "
        f"WHERE ({where}) AND {extra} ORDER BY {expr} <=> %s LIMIT %s"
    )
    args = (vector, *params, vector, k)
    if not approximate:
        rows = conn.execute(sql, args).fetchall()
    else:
        with conn.transaction():
            conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            conn.execute("SET LOCAL hnsw.ef_search = 128")
            rows = conn.execute(sql, args).fetchall()
    return {int(r[0]): float(r[1]) for r in rows}


def has_more_than(
    conn: psycopg.Connection[Any], table: str, column: str, agent_id: str, limit: int
) -> bool:
    """Whether the agent has more than ``limit`` rows with a vector (costs at most limit+1)."""
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE agent_id = %s "
        f"AND {column} IS NOT NULL LIMIT %s) AS x",
        (agent_id, limit + 1),
    ).fetchone()
    return row is not None and int(row[0]) > limit


def term_matches(
    conn: psycopg.Connection[Any],
    table: str,
    tsv_column: str,
    terms: Sequence[str],
    where: str,
    params: Params,
    *,
    limit: int,
) -> dict[str, set[int]]:
    """For each term, the ids (at most ``limit + 1``) of the rows that hold it and pass ``where``.

    As ``stores.fts.term_matches``: what tells a rare term from a common one.
    """
    out: dict[str, set[int]] = {}
    for term in dict.fromkeys(terms):
        rows = conn.execute(
            f"SELECT b.id FROM {table} AS b WHERE b.{tsv_column} @@ plainto_tsquery('english', %s) "
            f"AND ({where}) LIMIT %s",
            (term, *params, limit + 1),
        ).fetchall()
        out[term] = {int(r[0]) for r in rows}
    return out
