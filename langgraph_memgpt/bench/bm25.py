"""Plain Okapi BM25, the floor every memory search has to beat on LoCoMo.

Written independently of the stores (no SQLite, no FTS5) so the baseline cannot drift with the
code it judges: lower-cased alphanumeric tokens, a small stop-word list, k1 = 1.5, b = 0.75,
one index per conversation.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"[a-z0-9]+")

#: Deliberately small: function words only, so the baseline stays "plain".
STOP_WORDS: frozenset[str] = frozenset(
    """a an and are as at be but by did do does for from had has have he her his how i in is it
    its me my of on or our she so that the their them they this to was we were what when where
    which who whom why will with you your""".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens without stop words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]


class BM25:
    """Okapi BM25 over a fixed list of documents (Lucene's non-negative idf)."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._docs = [Counter(tokenize(d)) for d in documents]
        self._lengths = [sum(c.values()) for c in self._docs]
        n = len(self._docs)
        self._avgdl = (sum(self._lengths) / n) if n else 0.0
        df: Counter[str] = Counter()
        for counts in self._docs:
            df.update(counts.keys())
        self._idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> list[float]:
        """BM25 score of every document for the query, in document order."""
        terms = [t for t in tokenize(query) if t in self._idf]
        out = [0.0] * len(self._docs)
        if not terms or not self._avgdl:
            return out
        for i, counts in enumerate(self._docs):
            norm = self.k1 * (1.0 - self.b + self.b * self._lengths[i] / self._avgdl)
            total = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    total += self._idf[term] * tf * (self.k1 + 1.0) / (tf + norm)
            out[i] = total
        return out

    def rank(self, query: str, limit: int | None = None) -> list[int]:
        """Document indexes best first; ties (and non-matching documents) keep corpus order."""
        scores = self.scores(query)
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        return order[:limit] if limit is not None else order
