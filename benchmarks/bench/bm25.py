"""Plain BM25, the floor every memory search has to beat on LoCoMo, by the ``bm25s`` library.

The baseline is not ours to tune: ``bm25s`` scores (Lucene's BM25: k1 = 1.5, b = 0.75,
non-negative idf) and tokenizes (lower-cased words of two or more letters or digits, Lucene's
33 English stop words, no stemming), with its defaults. Nothing is shared with the stores
(no SQLite, no FTS5), so the floor cannot drift with the code it judges. One index per
conversation.
"""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np

#: bm25s's name for Lucene's English stop-word list.
STOP_WORDS = "en"


def tokenize(text: str) -> list[str]:
    """The tokens ``bm25s`` indexes for a text (its default tokenizer, English stop words)."""
    tokens = bm25s.tokenize(text, stopwords=STOP_WORDS, return_ids=False, show_progress=False)
    return list(tokens[0]) if tokens else []


class BM25:
    """A ``bm25s`` index over a fixed list of documents."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self._size = len(documents)
        self._index = bm25s.BM25(k1=k1, b=b, method="lucene")
        if documents:
            corpus = bm25s.tokenize(
                list(documents), stopwords=STOP_WORDS, return_ids=False, show_progress=False
            )
            self._index.index(corpus, show_progress=False)

    def scores(self, query: str) -> list[float]:
        """BM25 score of every document for the query, in document order."""
        terms = tokenize(query)
        if not terms or not self._size:
            return [0.0] * self._size
        return [float(s) for s in self._index.get_scores(terms)]

    def rank(self, query: str, limit: int | None = None) -> list[int]:
        """Document indexes best first; ties (and non-matching documents) keep corpus order."""
        scores = np.asarray(self.scores(query), dtype=np.float64)
        order = [int(i) for i in np.argsort(-scores, kind="stable")]
        return order[:limit] if limit is not None else order
