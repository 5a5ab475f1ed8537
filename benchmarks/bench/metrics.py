"""Turn-retrieval metrics as LongMemEval defines them (``src/retrieval/eval_utils.py``).

Kept formula-for-formula identical to LongMemEval so figures are comparable with published
ones: ``recall_any@k`` (any evidence turn in the top k), ``recall_all@k`` (every evidence turn
in the top k) and ``ndcg_any@k`` (binary relevance, LongMemEval's DCG in which ranks 1 and 2
are both undiscounted).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20, 50)
METRIC_NAMES: tuple[str, ...] = ("recall_any", "recall_all", "ndcg_any")


def dcg(relevances: Sequence[float], k: int) -> float:
    """Discounted cumulative gain of the first ``k`` relevances, LongMemEval's variant.

    The first item is not discounted and item ``i`` (0-based, ``i >= 1``) is divided by
    ``log2(i + 1)``, exactly as LongMemEval computes it.
    """
    rel = list(relevances)[:k]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i + 1) for i, r in enumerate(rel[1:], start=1))


def ndcg_any(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Binary-relevance nDCG@k of a ranked id list against the relevant ids.

    The ideal ranking puts ``min(len(relevant), k)`` relevant ids first; LongMemEval takes it
    from the whole corpus, which is the same thing when every relevant id is in the corpus
    (the loader guarantees that by dropping evidence ids that do not resolve).
    """
    gold = set(relevant)
    if not gold:
        return 0.0
    actual = dcg([1.0 if doc in gold else 0.0 for doc in ranked[:k]], k)
    ideal = dcg([1.0] * min(len(gold), k), k)
    return actual / ideal if ideal else 0.0


def recall_any(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when at least one relevant id is among the first ``k`` ranked ids, else 0.0."""
    top = set(ranked[:k])
    return float(any(doc in top for doc in relevant))


def recall_all(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when every relevant id is among the first ``k`` ranked ids, else 0.0."""
    top = set(ranked[:k])
    return float(all(doc in top for doc in relevant))


def score_ranking(
    ranked: Sequence[str], relevant: Collection[str], ks: Iterable[int] = DEFAULT_KS
) -> dict[str, float]:
    """All metrics of one question, keyed ``"<metric>@<k>"`` (e.g. ``"recall_any@10"``)."""
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall_any@{k}"] = recall_any(ranked, relevant, k)
        out[f"recall_all@{k}"] = recall_all(ranked, relevant, k)
        out[f"ndcg_any@{k}"] = ndcg_any(ranked, relevant, k)
    return out


@dataclass
class MetricAccumulator:
    """Averages per-question metrics overall and per group of questions.

    Each question is filed under its category, and where given under its BEAM ability
    (``qa[].beam_type``) and its conversation: every figure of a report, overall or per
    group, comes from this one accumulator of one system's rankings.
    """

    ks: tuple[int, ...] = DEFAULT_KS
    _overall: list[dict[str, float]] = field(default_factory=list)
    _by_category: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    _by_ability: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    _ability_category: dict[str, str] = field(default_factory=dict)
    _by_conversation: dict[str, list[dict[str, float]]] = field(default_factory=dict)

    def add(
        self,
        category: int | str,
        ranked: Sequence[str],
        relevant: Collection[str],
        *,
        ability: str | None = None,
        conversation: str | None = None,
    ) -> None:
        """Score one question's ranking; file it under its category, ability, conversation."""
        scores = score_ranking(ranked, relevant, self.ks)
        self._overall.append(scores)
        self._by_category.setdefault(str(category), []).append(scores)
        if ability is not None:
            self._by_ability.setdefault(ability, []).append(scores)
            self._ability_category.setdefault(ability, str(category))
        if conversation is not None:
            self._by_conversation.setdefault(conversation, []).append(scores)

    @property
    def count(self) -> int:
        """Number of questions scored so far."""
        return len(self._overall)

    def overall(self) -> dict[str, float]:
        """Mean of every metric over all questions."""
        return _mean(self._overall)

    def per_category(self) -> dict[str, dict[str, float]]:
        """Mean of every metric per category, plus the category's question count as ``"n"``."""
        return {
            cat: {**_mean(rows), "n": float(len(rows))}
            for cat, rows in sorted(self._by_category.items(), key=lambda kv: _cat_key(kv[0]))
        }

    def per_ability(self) -> dict[str, dict[str, float]]:
        """As `per_category`, per BEAM ability; ordered by the category it maps to, then name.

        Empty when no question carried an ability (LoCoMo's own files).
        """
        order = sorted(self._by_ability, key=lambda a: (_cat_key(self._ability_category[a]), a))
        return {
            a: {**_mean(self._by_ability[a]), "n": float(len(self._by_ability[a]))} for a in order
        }

    def per_conversation(self) -> dict[str, dict[str, float]]:
        """Mean of every metric per conversation (in the order first scored), with ``"n"``."""
        return {
            conv: {**_mean(rows), "n": len(rows)} for conv, rows in self._by_conversation.items()
        }


def percentiles(values: Iterable[float], digits: int = 1) -> dict[str, float | None]:
    """p50 and p95 with linear interpolation (numpy's default); None when empty."""
    import numpy as np

    data = list(values)
    if not data:
        return {"p50": None, "p95": None}
    p50, p95 = np.percentile(np.asarray(data, dtype=float), [50, 95])
    return {"p50": round(float(p50), digits), "p95": round(float(p95), digits)}


def _cat_key(cat: str) -> tuple[int, str]:
    return (int(cat), cat) if cat.isdigit() else (1 << 30, cat)


def _mean(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    keys = list(rows[0])
    return {key: sum(row[key] for row in rows) / len(rows) for key in keys}
