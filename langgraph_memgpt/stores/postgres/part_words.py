"""A long text's part words counted from its text at search time, in Postgres (``stores.bm25``).

The part's score is what ``search.bm25_scores`` would give it as one more row of the
agent's column: the column's statistics (``word_stats.term_statistics``: documents, total
length, each term's document frequency), the part's own words as the column's are made
(``memgpt_words``, ``memgpt_token_count``), and a term counted in a part only if the part
matches it as a row would (``@@ plainto_tsquery``). So both backends give a part the same
score, as they do whole texts (tests/stores/test_part_words.py).

The counts are kept when a text is written (``part_terms``); :func:`part_words` counts
them from the text, for a text written since and not yet caught up, and for a query term
of several lexemes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from langgraph_memgpt.stores.bm25 import PartWords
from langgraph_memgpt.stores.chunks import parts_of
from langgraph_memgpt.stores.postgres.word_stats import TermStats


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


__all__ = ["part_words"]
