"""Score fusion for hybrid search.

Min-max normalising each signal and adding them measured clearly better than reciprocal
rank fusion on LoCoMo (0.833 vs 0.634 recall_any@10): unlike RRF it keeps how far ahead a
strong match is, which matters when one signal is confident and the other is not.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def minmax_normalize(scores: Mapping[K, float]) -> dict[K, float]:
    """Scale scores to [0, 1]; a single score, or all-equal scores, become 1.0 each.

    Equal scores mean the signal cannot tell the items apart, yet each did match, so they
    get full credit rather than none.
    """
    if not scores:
        return {}
    low = min(scores.values())
    high = max(scores.values())
    if high - low <= 0.0:
        return dict.fromkeys(scores, 1.0)
    span = high - low
    return {key: (value - low) / span for key, value in scores.items()}


def minmax_fuse(
    score_maps: Sequence[Mapping[K, float]], weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """Fuse several score maps into one ranking by the weighted sum of min-max scores.

    Args:
        score_maps: one mapping per signal from item key to raw score (higher is better;
            negate BM25 from SQLite's ``bm25()`` first). A key missing from a map scores 0
            for that signal.
        weights: one weight per map; defaults to 1.0 each.

    Returns:
        ``(key, fused score)`` pairs, best first. Ties keep first-seen key order (keys of
        the first map first), so equal results page deterministically.

    Raises:
        ValueError: ``weights`` does not have one entry per map.
    """
    if weights is None:
        weights = [1.0] * len(score_maps)
    if len(weights) != len(score_maps):
        raise ValueError(f"minmax_fuse got {len(score_maps)} score maps but {len(weights)} weights")
    fused: dict[K, float] = {}
    for scores, weight in zip(score_maps, weights, strict=True):
        for key, value in minmax_normalize(scores).items():
            fused[key] = fused.get(key, 0.0) + weight * value
    # sorted() is stable, so equal scores keep the first-seen order of their keys.
    return sorted(fused.items(), key=lambda pair: -pair[1])
