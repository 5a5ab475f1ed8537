"""Long texts scored on words by their best part in Postgres (``stores.bm25``).

The part's score is what ``search.bm25_scores`` would give it as one more row of the
agent's column: the column's statistics (``word_stats.term_statistics``: documents, total
length, each term's document frequency), the part's own words as the column's are made
(``memgpt_words``, ``memgpt_token_count``, computed on the fly for the few parts there
are: nothing is stored), and a term counted in a part only if the part matches it as a row
would (``@@ plainto_tsquery``). So both backends give a part the same score, as they do
whole texts (tests/test_part_words.py).

Only the long texts among a search's word matches are read: the term queries of
``search.bm25_scores`` flag them on the rows they read anyway (``bm25.long_text_sql``),
then ``chunks.parts_of`` decides. A memory of short texts costs no query more; reading
them by id after the term queries instead would be one more query per search.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import psycopg

from langgraph_memgpt.stores.bm25 import PartWords, best_part_scores, long_text_sql
from langgraph_memgpt.stores.chunks import parts_of
from langgraph_memgpt.stores.postgres.word_stats import TermStats, term_statistics

TEXT_OF = {
    ("memgpt_recall", "search_tsv"): "search_text",
    ("memgpt_recall", "context_tsv"): "context",
    ("memgpt_archival", "tsv"): "text",
}
"""The text column each scored ``tsvector`` column is made from."""

GATE = {("memgpt_recall", "context_tsv"): "search_text"}
"""Columns split only for rows whose other text has parts: a message's context (the
message with its neighbours) only for a long message, as in the embedded backend."""


def long_column(table: str, tsv: str) -> str | None:
    """The column telling whether a row of ``tsv`` may be split: its text, or the gate's."""
    return GATE.get((table, tsv)) or TEXT_OF.get((table, tsv))


def long_texts(
    conn: psycopg.Connection[Any], table: str, column: str, ids: Sequence[int]
) -> dict[int, str]:
    """``{id: text}`` of the rows among ``ids`` whose ``column`` is long enough for parts."""
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT id, {column} FROM {table} WHERE id = ANY(%s) AND {long_text_sql(column, 'chr')}",
        (list(ids),),
    ).fetchall()
    return {int(r[0]): str(r[1]) for r in rows if r[1] is not None}


def part_words(
    conn: psycopg.Connection[Any], texts: Mapping[int, str], terms: Mapping[str, TermStats]
) -> dict[int, list[PartWords]]:
    """The parts of each long text with their length and terms' frequencies, in one query."""
    split = {item: parts_of(text) for item, text in texts.items()}
    split = {item: parts for item, parts in split.items() if parts}
    flat = [part for parts in split.values() for part in parts]
    used = [term for term, found in terms.items() if found.documents]
    if not flat or not used:
        return {}
    # Per term, its frequency where the part matches it, as `search._TermQuery` counts it.
    columns = ", ".join(
        "CASE WHEN v.w @@ plainto_tsquery('english', %s) THEN (SELECT coalesce(sum(coalesce("
        "array_length(u.positions, 1), 1)), 0) FROM unnest(ts_filter(setweight(v.w, 'A', "
        "%s::text[]), '{a}')) AS u) ELSE 0 END"
        for _ in used
    )
    args: list[object] = [value for term in used for value in (term, terms[term].lexemes)]
    rows = conn.execute(
        f"SELECT memgpt_token_count(x.part), {columns} "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS x(part, n), "
        "LATERAL (SELECT memgpt_words(x.part) AS w) AS v ORDER BY x.n",
        (*args, flat),
    ).fetchall()
    out: dict[int, list[PartWords]] = {}
    at = 0
    for item, parts in split.items():
        out[item] = [
            PartWords(
                int(row[0] or 0),
                {term: int(tf) for term, tf in zip(used, row[1:], strict=True) if tf},
            )
            for row in rows[at : at + len(parts)]
        ]
        at += len(parts)
    return out


def with_best_parts(
    conn: psycopg.Connection[Any],
    table: str,
    tsv: str,
    agent_id: str,
    whole: dict[int, float],
    matched: Mapping[str, Sequence[int]],
    long: Collection[int],
) -> dict[int, float]:
    """``whole`` (``search.bm25_scores`` of ``tsv``) with each long text's best part's score.

    ``matched``: each term's matches ``whole`` was scored for; ``long``: those whose
    :func:`long_column` may have parts (``bm25_scores(long=...)`` told them, from the rows
    it read): with none, as for a memory of short texts, this costs no query.
    """
    column = TEXT_OF.get((table, tsv))
    ids = [item for item in long if item in whole]
    if column is None or not ids:
        return whole
    gate = GATE.get((table, tsv))
    if gate is not None:
        ids = [i for i, text in long_texts(conn, table, gate, ids).items() if parts_of(text)]
    texts = long_texts(conn, table, column, ids)
    if not texts:
        return whole
    corpus, terms = term_statistics(conn, table, tsv, agent_id, list(matched))
    parts = part_words(conn, texts, terms)
    if not parts:
        return whole
    documents = {term: found.documents for term, found in terms.items()}
    return best_part_scores(whole, matched, parts, corpus, documents)


__all__ = ["GATE", "TEXT_OF", "long_column", "long_texts", "part_words", "with_best_parts"]
