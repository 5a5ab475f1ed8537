"""Score fusion for hybrid search, shared by every backend (no database engine here).

Min-max normalising each signal and adding them, unlike reciprocal rank fusion, keeps how
far ahead a strong match is, which matters when one signal is confident and the other is not.

Two things a plain sum gets wrong, which :func:`fuse` fixes:

- **Vectors are judged by how similar they are.** Min-max stretches whatever the nearest
  candidates scored to 0..1, so for a query the embedding model cannot place (an
  identifier such as ``k7q-2291``) two vector signals of noise outvote the one exact word
  match. A similarity signal is scaled from a fixed floor instead
  (:data:`SIMILARITY_FLOOR`), so weak similarity stays weak.
- **An exact match is never buried.** A result holding every rare query word (a word few
  messages contain: an identifier, a name, a number) is never outranked by a result that
  holds none of them; and among such results a statement comes before a question that
  only asked about it, since asking again ("what was k7q-2291?") would otherwise bury the
  answer under short questions, which BM25's length normalisation favours.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from langgraph_memgpt.stores.words import query_words

K = TypeVar("K", bound=Hashable)

SignalKind = Literal["rank", "similarity"]

SIMILARITY_FLOOR = 0.2
"""Cosine similarity that counts as no match at all (MiniLM puts unrelated text near 0.1).

A similarity signal scores ``(s - floor) / (best - floor)`` clipped at 0: the best
candidate still gets 1 (as with min-max), but candidates barely above the floor get almost
nothing instead of a stretched share. Chosen with ``benchmarks/locomo_loo.py``, kept only
as long as no LoCoMo conversation ranks worse than with min-max."""

RARE_MATCHES = 8
"""A query word matching at most this many candidates is rare (see :func:`fuse`)."""

RARE_SHARE = 0.5
"""The exact-match lift applies when at least this share of the query's words are rare.

A lookup by identifier ("ZX4417", "code ZX4417") is mostly rare words; a question in
ordinary words ("what did Caroline research for her essay?") may hold one rare word that
the answer paraphrases, and lifting the messages that repeat it cost LoCoMo recall."""


@dataclass(frozen=True)
class Signal(Generic[K]):
    """One ranking signal: raw scores (higher is better) and how to normalise them.

    ``kind`` "rank" (BM25, mentions) is min-max normalised; "similarity" (cosine) is
    scaled from :data:`SIMILARITY_FLOOR` (see there).
    """

    scores: Mapping[K, float]
    kind: SignalKind = "rank"
    weight: float = 1.0


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


def similarity_normalize(scores: Mapping[K, float], floor: float | None = None) -> dict[K, float]:
    """Scale similarities so the best is 1.0 and ``floor`` (or below) is 0.0.

    Unlike min-max, the spread among the candidates does not matter: ten candidates all
    barely above the floor keep small, close scores instead of being stretched to 0..1.
    """
    if not scores:
        return {}
    low = SIMILARITY_FLOOR if floor is None else floor
    high = max(scores.values())
    if high <= low:
        return dict.fromkeys(scores, 0.0)
    span = high - low
    return {key: max(0.0, (value - low) / span) for key, value in scores.items()}


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
    return fuse([Signal(s, "rank", w) for s, w in zip(score_maps, weights, strict=True)])


def is_question(text: str, terms: Collection[str] = ()) -> bool:
    """Whether ``text`` asks about ``terms`` rather than states them.

    It does when every sentence holding one of the terms is a question: a long message that
    states a fact and also asks something else ("Did you see the sunset? ... the locker
    code is ZX4417.") is a statement. Without ``terms``, any question mark counts.
    """
    if not terms:
        return "?" in text
    wanted = set(terms)
    holding = [s for s in _SENTENCE.split(text) if wanted & set(query_words(s))]
    return bool(holding) and all(s.rstrip().endswith("?") for s in holding)


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def rare_term_matches(
    term_matches: Mapping[str, Collection[K]], limit: int | None = None
) -> list[Collection[K]]:
    """The match sets of the rare terms among ``term_matches`` (term -> keys holding it).

    A term is rare when at most ``limit`` (default :data:`RARE_MATCHES`) candidates hold
    it and at least one does: a word nothing holds says nothing about any result. Unless
    :data:`RARE_SHARE` of the terms are rare, none is returned: the query is not a lookup.
    """
    cap = RARE_MATCHES if limit is None else limit
    rare = [keys for keys in term_matches.values() if 0 < len(keys) <= cap]
    if len(rare) < RARE_SHARE * len(term_matches):
        return []
    return rare


def matched_keys(signals: Sequence[Signal[K]]) -> set[K]:
    """The keys some signal matched: in a "rank" signal, or above the floor in a similarity.

    A vector pool holds the nearest items whatever they are; one only there is no match.
    """
    return {
        key
        for signal in signals
        for key, value in signal.scores.items()
        if signal.kind == "rank" or value > SIMILARITY_FLOOR
    }


def fuse(
    signals: Sequence[Signal[K]],
    *,
    rare: Sequence[Collection[K]] = (),
    questions: Collection[K] = (),
    matches_only: bool = False,
) -> list[tuple[K, float]]:
    """Fuse signals into one ranking: the weighted sum of normalised scores, then exact matches.

    Args:
        signals: the ranking signals; a key missing from a signal scores 0 for it.
        rare: for each rare query term, the keys of the results that hold it (see
            :func:`rare_term_matches`). A result holding every one of them is lifted to
            just above the best result holding none of them, when it was below it.
        questions: keys of results that are questions. Among results holding every rare
            term, statements come first: the question that asked about a fact must not
            outrank the statement of it.
        matches_only: leave out keys no signal matched: in no "rank" signal and at or
            below :data:`SIMILARITY_FLOOR` in every "similarity" one. A vector pool is
            filled with the nearest items whatever they are; shown as results, they pass
            for an answer (asked "what is my dog's name?" with no dog in memory, a small
            model answered from the nearest small talk).

    Returns:
        ``(key, fused score)`` pairs, best first. Ties keep first-seen key order (keys of
        the first signal first), so equal results page deterministically. A lifted
        result's score is the score it was lifted to.
    """
    fused: dict[K, float] = {}
    for signal in signals:
        if signal.kind == "similarity":
            normalised = similarity_normalize(signal.scores)
        else:
            normalised = minmax_normalize(signal.scores)
        for key, value in normalised.items():
            fused[key] = fused.get(key, 0.0) + signal.weight * value
    if matches_only:
        matched = matched_keys(signals)
        fused = {key: value for key, value in fused.items() if key in matched}
    order = {key: i for i, key in enumerate(fused)}
    if not rare:
        # sorted() is stable, so equal scores keep the first-seen order of their keys.
        return sorted(fused.items(), key=lambda pair: -pair[1])

    holders = [set(keys) for keys in rare]
    every = set.intersection(*holders) & fused.keys()
    some = set.union(*holders)
    floor = max((s for k, s in fused.items() if k not in some), default=float("-inf"))
    asks = set(questions)
    lifted = {key: max(fused[key], floor) for key in every}
    # A statement holding every rare term is lifted at least to the best question that
    # holds them too.
    asked = max((lifted[k] for k in every if k in asks), default=float("-inf"))
    for key in every - asks:
        lifted[key] = max(lifted[key], asked)

    def rank(pair: tuple[K, float]) -> tuple[float, int, int, float, int]:
        key, score = pair
        if key not in every:
            return (-score, 1, 0, 0.0, order[key])
        # Exact matches at one level: before the result they were lifted over,
        # statements before questions, then by their own score.
        return (-lifted[key], 0, int(key in asks), -score, order[key])

    ranked = sorted(fused.items(), key=rank)
    return [(key, lifted.get(key, score)) for key, score in ranked]
