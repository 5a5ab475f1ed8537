"""Safe full-text queries over SQLite FTS5, and BM25 scores restricted by SQL filters.

FTS5 has its own query language: a user's (or a model's) text such as ``don't``,
``C++ -O2``, ``NEAR`` or an unbalanced parenthesis is a syntax error when passed
verbatim. The query is therefore never passed verbatim: it is split into words and each
word is matched on its own, quoted, so any input is valid; BM25 summed over the words
ranks documents that share more (and rarer) words higher, as an OR-query would.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlite_utils

from langgraph_memgpt.stores.words import TERM_MATCH_CAP

SEARCH_ROW_INDEXES = {"recall": "recall_search_rows", "archival": "archival_search_rows"}
"""A content table's covering index for the filter of a search (``schema.SEARCH_ROWS``)."""


def match_phrase(word: str) -> str:
    """The FTS5 MATCH expression for one word of :func:`query_words`.

    Quoted, it is never a syntax error, since such a word is only letters and digits.
    """
    return f'"{word}"'


def filtered_rows(db: sqlite_utils.Database, base_table: str) -> str:
    """``base_table AS b``, its rows read through its covering index where the file has one.

    Named (``INDEXED BY``), since the planner, with no statistics, prefers the table's own
    key; checked, since a file opened read-only is not migrated and may lack it.
    """
    index = SEARCH_ROW_INDEXES.get(base_table)
    if (
        index is not None
        and db.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (index,)
        ).fetchone()
    ):
        return f"{base_table} AS b INDEXED BY {index}"
    return f"{base_table} AS b"


def bm25_scores(
    db: sqlite_utils.Database,
    fts_table: str,
    base_table: str,
    terms: Sequence[str],
    where: str = "1",
    params: Sequence[object] = (),
    *,
    term_cap: int | None = TERM_MATCH_CAP,
    matched: dict[str, list[int]] | None = None,
) -> dict[int, float]:
    """Return ``{rowid: BM25 score}`` of the rows of ``base_table`` that match and pass ``where``.

    The score is the BM25 of the OR-query of ``terms`` (FTS5 ``bm25()``, negated so that
    higher is better), computed term by term: BM25 is a sum over query terms, and FTS5
    scores one term with the same statistics (row count, the term's document frequency,
    average length) whatever else the query holds, so the sum is exactly the OR-query's
    score. Doing it per term is what keeps a search's cost bounded as memory grows: a term
    contributes for at most ``term_cap`` matching rows, its most recently stored ones,
    because SQLite computes ``bm25()`` for every row a query visits. A term
    matching more rows than the cap is a common one with a low weight; its older matches
    can still be found through the other terms and through the vector signals, which
    cover all of history. Below the cap the scores are exact.

    The filter is applied in the same query, before the cap, so a narrow filter (one
    agent, one date) never loses its matches to rows it excludes.

    Args:
        db: The database.
        fts_table: FTS5 table whose rowid equals ``base_table``'s ``id`` (a trusted name).
        base_table: The content table, referenced as ``b`` in ``where`` (a trusted name).
        terms: Words from :func:`query_terms`.
        where: A parameterised SQL condition over ``b`` (e.g. ``"b.agent_id = ?"``).
        params: The parameters of ``where``.
        term_cap: Most matches scored per term; None scores every match.
        matched: filled with each term's rows scored, newest first (what a long text's
            parts may score for, ``stores.bm25.best_part_scores``).
    """
    # CROSS JOIN fixes the join order: match in the index first, then look each match up
    # by id. Left to itself the planner may walk the filter's index and run the MATCH
    # once per row, which is quadratic (minutes instead of milliseconds at 20k rows).
    # FTS5 walks matches in rowid order itself, so "ORDER BY rowid DESC LIMIT" stops
    # after the cap instead of sorting every match.
    sql = (
        f"SELECT f.rowid, -bm25({fts_table}) FROM {fts_table} AS f "
        f"CROSS JOIN {filtered_rows(db, base_table)} ON b.id = f.rowid "
        f"WHERE {fts_table} MATCH ? AND ({where}) ORDER BY f.rowid DESC LIMIT ?"
    )
    limit = -1 if term_cap is None else term_cap
    scores: dict[int, float] = {}
    for term in dict.fromkeys(terms):
        rows = db.conn.execute(sql, (match_phrase(term), *params, limit)).fetchall()
        if matched is not None:
            matched[term] = [int(rowid) for rowid, _ in rows]
        for rowid, score in rows:
            scores[rowid] = scores.get(rowid, 0.0) + float(score)
    return scores


def term_matches(
    db: sqlite_utils.Database,
    fts_table: str,
    base_table: str,
    terms: Sequence[str],
    where: str = "1",
    params: Sequence[object] = (),
    *,
    limit: int,
) -> dict[str, set[int]]:
    """For each term, the ids (at most ``limit + 1``) of the rows holding it and passing ``where``.

    What tells a rare term from a common one (``stores.ranking.rare_term_matches``): a term
    with more than ``limit`` matches is not rare, and only its first ``limit + 1`` are read.
    """
    sql = (
        f"SELECT f.rowid FROM {fts_table} AS f "
        f"CROSS JOIN {filtered_rows(db, base_table)} ON b.id = f.rowid "
        f"WHERE {fts_table} MATCH ? AND ({where}) LIMIT ?"
    )
    return {
        term: {int(r[0]) for r in db.conn.execute(sql, (match_phrase(term), *params, limit + 1))}
        for term in dict.fromkeys(terms)
    }
