"""BM25 as SQLite FTS5 scores it, and long texts scored on words by their best part.

Both backends rank words with the same BM25 (``stores.sqlite.fts`` asks FTS5's ``bm25()``;
``stores.postgres.search`` computes it with :func:`bm25_term` from kept statistics).

BM25 normalises by length: a 120-word message whose one sentence holds every topic word
of a lookup ("... my bike lock combination is 123456 ...") scored below a short near-miss
sharing one or two of them ("I bought a new bike lock because the old one rusted shut.").
So a text with parts (``stores.chunks.parts_of``: over ``LONG_WORDS`` words) scores on
words as its best part would, when that is better than its whole: each part is scored as
if it were one more row of the same corpus (the same document count, average length and
each term's document frequency, its own term frequencies and length), which is what the
same fact said in a short message of its own scores. Short texts, most of a conversation
(no LoCoMo turn has parts), score exactly as before. docs/concepts/search.md ("Long
texts") says what this does for a search; benchmarks/README.md has the needle figures.

A part counts a term only if the whole text was scored for it: a common term scores its
newest ``words.TERM_MATCH_CAP`` matches only, and an older long text stays out of that
term's score whole and in parts alike.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from langgraph_memgpt.stores.chunks import LONG_WORDS, PART_SLOTS

BM25_K1 = 1.2
"""BM25's term-frequency saturation, as SQLite FTS5's ``bm25()`` uses it."""
BM25_B = 0.75
"""BM25's length normalisation, as SQLite FTS5's ``bm25()`` uses it."""

LONG_CHARS = 2 * LONG_WORDS + 1
"""The fewest characters of a text with parts (more than ``LONG_WORDS`` words, each a
character at least, with a separator between)."""

SEPARATORS = (32, 10, 9, 13)
"""The code points of space, newline, tab and carriage return: what separates words in
nearly every text (``str.split`` knows a few more, such as the no-break space)."""


def long_text_sql(column: str, chr_function: str) -> str:
    """A SQL condition true for every ``column`` with parts, and for few others.

    At least :data:`LONG_CHARS` characters and ``LONG_WORDS`` separators
    (:data:`SEPARATORS`): the database leaves out the short texts among a search's
    matches itself, so they are never read into Python nor split. A text whose words are
    separated by other whitespace only scores as its whole. The same condition on both
    backends (``chr_function``: SQLite ``char``, Postgres ``chr``), so they split the same
    texts.
    """
    stripped = column
    for code in SEPARATORS:
        stripped = f"replace({stripped}, {chr_function}({code}), '')"
    return (
        f"length({column}) >= {LONG_CHARS} "
        f"AND length({column}) - length({stripped}) >= {LONG_WORDS}"
    )


@dataclass(frozen=True)
class Corpus:
    """BM25's collection statistics of one text column: documents and their total length."""

    documents: int
    tokens: int

    @property
    def average_length(self) -> float:
        """Tokens per document (1.0 for an empty corpus, which has no matches anyway)."""
        return self.tokens / self.documents if self.documents and self.tokens else 1.0


def bm25_term(tf: float, df: int, length: float, stats: Corpus) -> float:
    """One query term's BM25 in one document, exactly as SQLite FTS5's ``bm25()`` scores it.

    ``idf = ln((N - df + 0.5) / (df + 0.5))``, floored at 1e-6 (a term in more than half
    the documents still counts a little), times ``tf (k1 + 1) / (tf + k1 (1 - b + b
    length / avgdl))``.
    """
    norm = 1.0 - BM25_B + BM25_B * length / stats.average_length
    return bm25_idf(df, stats) * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * norm)


def bm25_idf(df: int, stats: Corpus) -> float:
    """A term's BM25 weight, as FTS5's ``bm25()`` computes it (see :func:`bm25_term`)."""
    idf = math.log((stats.documents - df + 0.5) / (df + 0.5))
    return 1e-6 if idf <= 0.0 else idf


@dataclass(frozen=True)
class PartWords:
    """One part of a long text as BM25 sees it: its length and each term's frequency."""

    length: int
    frequencies: Mapping[str, int]
    """Term -> occurrences in the part (terms it does not hold are left out)."""


def best_parts(
    owner: NDArray[np.int64],
    part: NDArray[np.int64],
    count: NDArray[np.float64],
    length: NDArray[np.float64],
    weight: NDArray[np.float64],
    corpus: Corpus,
) -> dict[int, float]:
    """Each item's best part score, from one entry per (part, term the part holds).

    Entry ``i``: part ``part[i]`` of item ``owner[i]`` holds a term ``count[i]`` times, is
    ``length[i]`` tokens long, and the term weighs ``weight[i]`` (its :func:`bm25_idf`). A
    part scores the sum of :func:`bm25_term` over its terms; computed for every entry at
    once (a search may score thousands of parts).
    """
    if not len(owner):
        return {}
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * length / corpus.average_length)
    scores = weight * count * (BM25_K1 + 1.0) / (count + norm)
    # One sum per (item, part), then the best part of each item.
    keys, where = np.unique(owner * PART_SLOTS + part, return_inverse=True)
    per_part = np.bincount(where, weights=scores)
    owners = keys // PART_SLOTS  # sorted, since the keys are
    first = np.flatnonzero(np.diff(owners, prepend=-1))
    best = np.maximum.reduceat(per_part, first)
    kept = best > 0.0
    return dict(zip(owners[first][kept].tolist(), best[kept].tolist(), strict=True))


def best_kept_parts(
    found: Sequence[tuple[int, bytes, float]], dtype: np.dtype[Any], corpus: Corpus
) -> dict[int, float]:
    """Each item's best part score from counts kept when its text was written.

    ``found``: one entry per (item, term) the item's parts hold: the item, its
    ``(part, count, part length)`` triples of the term as kept (flat 32-bit integers of
    ``dtype``: each backend packs them in its own byte order) and the term's
    :func:`bm25_idf`. Scored by :func:`best_parts`, as counts made from the text at
    search time are (:func:`best_part_scores`). The packed rows are joined and read as
    one array: a search reads thousands of them, and one array each cost more than the
    scoring.
    """
    if not found:
        return {}
    triples = np.frombuffer(b"".join(p for _, p, _ in found), dtype=dtype)
    triples = triples.reshape(-1, 3).astype(np.int64)
    sizes = np.fromiter((len(p) // 12 for _, p, _ in found), dtype=np.int64, count=len(found))
    owners = np.fromiter((item for item, _, _ in found), dtype=np.int64, count=len(found))
    weights = np.fromiter((w for _, _, w in found), dtype=np.float64, count=len(found))
    return best_parts(
        np.repeat(owners, sizes),
        triples[:, 0],
        triples[:, 1].astype(np.float64),
        triples[:, 2].astype(np.float64),
        np.repeat(weights, sizes),
        corpus,
    )


def best_part_scores(
    whole: Mapping[int, float],
    matched: Mapping[str, Collection[int]],
    parts: Mapping[int, Sequence[PartWords]],
    corpus: Corpus,
    documents: Mapping[str, int],
) -> dict[int, float]:
    """``whole`` with each long text's score raised to its best part's, where higher.

    Args:
        whole: ``{id: BM25}`` of the whole texts (the OR-query's sum over terms).
        matched: each term's matches the whole scores were computed for.
        parts: the parts of the long texts among ``whole``.
        corpus: the statistics of the texts' column (what ``whole`` was scored with).
        documents: each term's document frequency in that column.
    """
    holders = {term: set(ids) for term, ids in matched.items()}
    idf = {term: bm25_idf(documents[term], corpus) for term in holders}
    rows = [
        (item, n, tf, piece.length, idf[term])
        for item, pieces in parts.items()
        for n, piece in enumerate(pieces)
        for term, tf in piece.frequencies.items()
        if tf and term in holders and item in holders[term]
    ]
    if not rows:
        return dict(whole)
    columns = np.array(rows, dtype=np.float64).T
    owner, part, count, length, weight = columns
    best = best_parts(owner.astype(np.int64), part.astype(np.int64), count, length, weight, corpus)
    return raised_to_parts(whole, best)


def raised_to_parts(whole: Mapping[int, float], best: Mapping[int, float]) -> dict[int, float]:
    """``whole`` with each long text's score raised to its best part's, where that is higher."""
    out = dict(whole)
    for item, score in best.items():
        if score > out.get(item, 0.0):
            out[item] = score
    return out


__all__ = [
    "BM25_B",
    "BM25_K1",
    "LONG_CHARS",
    "SEPARATORS",
    "Corpus",
    "PartWords",
    "best_kept_parts",
    "best_part_scores",
    "raised_to_parts",
    "best_parts",
    "bm25_idf",
    "bm25_term",
    "long_text_sql",
]
