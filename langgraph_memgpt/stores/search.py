"""Hybrid search for every backend and tier: signals in, fused page out.

Recall and archival, on SQLite (FTS5 + FAISS) and on Postgres (full-text search +
pgvector), search the same way; only the queries that produce the raw signals differ. A
backend hands :func:`hybrid_search` a :class:`SignalSource` for one search (its filters
already applied: agent, roles, dates, tags, excluded ids) and this module does the rest
identically everywhere:

- which signals a mode uses (``fts``: words; ``vector``: meaning; ``hybrid``: both; with
  words, also what the query names, e.g. a date or a participant, where the tier knows
  such things);
- how many candidates each vector signal contributes (:class:`Pool`: one per tier, the
  same on every backend: :data:`RECALL_POOL`, :data:`ARCHIVAL_POOL`);
- exact-match handling: the rare query terms and which of their holders are questions
  (``stores.ranking.fuse``);
- fusion (``stores.ranking.fuse``), paging and the total.

The total is the number of candidates ranked: every word match (at most
``words.TERM_MATCH_CAP`` newest per term) plus each vector signal's pool (recall: only
those above ``ranking.SIMILARITY_FLOOR``, see :attr:`Tier.matches_only`), so with very
common words or many vectors it is a lower bound; in ``vector`` mode every candidate with
a vector matches by meaning, and the total counts them, up to :data:`VECTOR_TOTAL_CAP`.
A query without words lists the candidates newest first (the tier's listing) in every
mode.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from langgraph_memgpt.stores.base import SearchMode, TagMatch
from langgraph_memgpt.stores.duplicates import normalised
from langgraph_memgpt.stores.mentions import (
    ASKER_WEIGHT,
    ASKER_WEIGHT_ACROSS,
    asks_about_asker,
    asks_across_sessions,
    asks_for_own_words,
    two_events,
)
from langgraph_memgpt.stores.ranking import (
    RARE_MATCHES,
    Signal,
    fuse,
    is_question,
    matched_keys,
    rare_term_matches,
)
from langgraph_memgpt.stores.types import (
    Excluded,
    Hit,
    Passage,
    RecallMessage,
    SearchPage,
    check_page,
)
from langgraph_memgpt.stores.words import query_terms

T = TypeVar("T")


VECTOR_TOTAL_CAP = 10_000
"""The most a ``vector``-mode total counts (it is then a lower bound, as the others are).

Counting every vector of a very large agent would cost more than the search itself; a page
says "10000 matches" as truly as "1000000"."""


@dataclass(frozen=True)
class Pool:
    """How many nearest candidates each vector signal contributes to a ranking.

    ``max(minimum, (page + 1) * page_size * per_result)``: the asked page is always
    inside the pool, with room for the other signals to reorder it.
    """

    minimum: int
    per_result: int

    def size(self, page: int, page_size: int) -> int:
        """The pool for a search asking for ``page`` of ``page_size`` results."""
        return max(self.minimum, (page + 1) * page_size * self.per_result)


RECALL_POOL = Pool(minimum=50, per_result=1)
"""Recall's pool, on every backend. Recall has two vector signals (the message, its ±2
context) beside two word signals, and a larger pool lets more weak neighbours into the
fusion: archival's larger pool ranked recall worse on LoCoMo and the needle benchmark."""

ARCHIVAL_POOL = Pool(minimum=100, per_result=10)
"""Archival's pool, on every backend: one word and one vector signal, so the vector pool
carries more of the ranking (recall's smaller pool ranked archival worse on LoCoMo)."""

MODES: tuple[SearchMode, ...] = ("hybrid", "fts", "vector")


def check_mode(mode: str) -> None:
    """Refuse an unknown mode with a message naming the allowed ones."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'hybrid', 'fts' or 'vector', got {mode!r}")


@dataclass(frozen=True)
class Tier:
    """What differs between recall and archival search, on every backend."""

    name: str
    pool: Pool
    refuse_vector_mode: bool
    """Without an embedding model, "vector" mode is an error (recall) or searches words
    (archival, whose tool the model calls with a mode less carefully)."""
    matches_only: bool
    """In "hybrid" and "fts" mode, leave out candidates no signal matched
    (``ranking.fuse(matches_only=True)``). Recall: a question about something never said
    otherwise got a page of the nearest small talk, which a small model answered from.
    Archival keeps ranking its whole vector pool."""
    spreads_sessions: bool = False
    """In "hybrid" mode, for a question about what was said across conversations ("in
    what order did I bring up ...", "how has my project progressed"), spread the first
    results over the threads (:func:`spread_sessions`): such questions need a message from
    each session, and one session's many close messages otherwise fill the page. (In
    "fts" or "vector" mode alone it lowered a BEAM dev chat, so they rank as they did.)"""
    shows_repeats_once: bool = False
    """Show a text said again word for word once, at its best rank (:func:`once_each`):
    recall holds every message verbatim, and a message pasted or said in several sessions
    otherwise takes a result for each copy."""
    neighbour_context: bool = False
    """Score each candidate also by its neighbours in its thread, at search time
    (:func:`neighbour_signals`). Recall indexes each message's context when it is written;
    archival passages come one at a time, in any order, from tools and evictions, so their
    neighbourhood is read when searched."""


RECALL = Tier(
    "recall",
    RECALL_POOL,
    refuse_vector_mode=True,
    matches_only=True,
    spreads_sessions=True,
    shows_repeats_once=True,
)
ARCHIVAL = Tier(
    "archival", ARCHIVAL_POOL, refuse_vector_mode=False, matches_only=False, neighbour_context=True
)

CONTEXT_RADIUS = 2
"""Neighbours on each side that make up an item's context in its thread: a recall
message's, indexed when written, and an archival passage's, read when
searched (:func:`neighbour_signals`)."""

RECENT_TEXTS = 200
"""How many of an agent's newest texts tell what its memory is made of
(``SignalSource.long_share``)."""

SELF_CONTAINED_SHARE = 0.5
"""From this share of long texts in a memory, the words of an item's neighbours no
longer count (:func:`neighbours_weight`)."""


def neighbours_weight(long_share: float) -> float:
    """Weight of the word signals read from an item's neighbours, by what the memory holds.

    A context window's words exist for short turns: "Yes, in May!" holds nothing of what it
    answers, its neighbours do. A long message says what it is about itself, and its
    neighbours' words (four more long messages, a topic's every common word) lift the
    messages beside a match above the match. So the weight falls from 1 (a memory of short
    turns) to 0 (at least `SELF_CONTAINED_SHARE` of its newest texts are long;
    ``SignalSource.long_share``). Measured on the dev files (``benchmarks/README.md``):
    BEAM dev's chats, mostly long messages, each gain; LoCoMo's short turns, and the needle
    benchmark's few long messages among short ones, keep their figures.
    """
    return max(0.0, min(1.0, (1.0 - long_share / SELF_CONTAINED_SHARE)))


CONTEXT_SEEDS = 30
"""How many of the best candidates (before context) have their neighbourhoods read: a
passage whose neighbours matched weakly gains little, and each seed costs a lookup."""


class SignalSource(Protocol[T]):
    """What a backend supplies for one search of one tier, its filters already applied.

    Every method sees only the candidates (the rows passing the search's filters); ids are
    the backend's row ids. Scores are raw: higher is better.
    """

    @property
    def has_vectors(self) -> bool:
        """Whether the tier has an embedding model (no vector signal without one)."""
        ...

    def word_signals(self, terms: Sequence[str], neighbours: bool = True) -> list[dict[int, float]]:
        """One ``{id: BM25}`` map per word signal: the item's own words first.

        Any others are read from the item's neighbours (a recall message's context), and
        only when ``neighbours``: a search that would weigh them 0 does not pay for them.
        """
        ...

    def long_share(self) -> float:
        """The share of long texts (with parts) among the agent's newest in this tier.

        What the memory is made of, whatever the search's filters: an assistant's long
        answers, or a chat's short turns (``stores.chunks.parts_of``; 0.0 when empty).
        """
        ...

    def term_matches(self, terms: Sequence[str], limit: int) -> dict[str, set[int]]:
        """For each term, the ids (at most ``limit + 1``) of the candidates holding it."""
        ...

    def vector_text(self, query: str, mode: SearchMode) -> str:
        """The text to embed for ``query`` (recall leaves out participants' names)."""
        ...

    def vectors_wait_for_words(self, query: str, mode: SearchMode) -> bool:
        """Whether :meth:`vector_text` needs the word signals first.

        Archival's hybrid text leaves out the tags its word matches carry; when the query
        can name none, the vector signals start before the words (``begin_nearest``).
        """
        ...

    def embed(self, text: str) -> Any:
        """The query vector of ``text``."""
        ...

    def begin_nearest(self, vector: Any, k: int) -> Callable[[], list[dict[int, float]]]:
        """One ``{id: cosine}`` map per vector signal, its ``k`` nearest candidates, begun.

        Calling the result returns them: a backend that can run them beside the word
        signals (Postgres, on spare connections) starts them here; the others find them
        here (:func:`found_now`).
        """
        ...

    def vector_total(self, at_most: int) -> int:
        """How many candidates have a vector (all match in ``vector`` mode), up to ``at_most``."""
        ...

    def named_signals(self, query: str, candidates: Collection[int]) -> list[dict[int, float]]:
        """Signals from what the query names (a date, a participant); [] if none."""
        ...

    def askers_own(self, candidates: Collection[int]) -> Collection[int]:
        """The candidates the asker wrote (recall: the user's messages; archival: none)."""
        ...

    def sequences(self, ids: Sequence[int], reach: int) -> dict[int, list[int]]:
        """For each of ``ids`` that came from a thread, the candidates around it, in order.

        Up to ``reach`` candidates before it in its thread (by turn, then id), itself, and up
        to ``reach`` after; ids without a thread are left out. Only asked of a tier with
        :attr:`Tier.neighbour_context`.
        """
        ...

    def fetch(self, ids: Sequence[int]) -> Mapping[int, T]:
        """The items with these ids (missing ones left out)."""
        ...

    def text_of(self, item: T) -> str:
        """The text an item is found by (to tell a question from a statement)."""
        ...

    def thread_of(self, item: T) -> str | None:
        """The thread (session) an item was said in, if any (`spread_sessions`)."""
        ...

    def listing(self, page: int, page_size: int) -> SearchPage[T]:
        """The candidates newest first, with their count (a query without words)."""
        ...


class _Search(Generic[T]):
    """One search: the signals gathered from a source, then fused and paged."""

    def __init__(self, source: SignalSource[T], query: str, terms: list[str]) -> None:
        self.source = source
        self.query = query
        self.terms = terms
        self.signals: list[Signal[int]] = []
        self.rare: list[Collection[int]] = []
        self._nearest: Callable[[], list[dict[int, float]]] | None = None

    def add_words(self) -> None:
        # In a memory of long messages the neighbours weigh 0: they are not read (at 1M
        # tokens they were half of a words search), and match nothing.
        weight = neighbours_weight(self.source.long_share())
        own, *neighbours = self.source.word_signals(self.terms, neighbours=weight > 0.0)
        self.signals += [Signal(own), *(Signal(scores, weight=weight) for scores in neighbours)]
        matches = self.source.term_matches(self.terms, RARE_MATCHES)
        self.rare = rare_term_matches(matches)

    def begin_vectors(self, mode: SearchMode, k: int) -> Callable[[], list[dict[int, float]]]:
        vector = self.source.embed(self.source.vector_text(self.query, mode))
        self._nearest = self.source.begin_nearest(vector, k)
        return self._nearest

    def add_vectors(self, mode: SearchMode, k: int) -> None:
        """The vector signals, begun now unless :meth:`begin_vectors` began them."""
        nearest = self._nearest or self.begin_vectors(mode, k)
        # A word match outside a vector pool scores 0 there. Giving the best of them their
        # true cosine (archival did) changed no LoCoMo figure of archival and none of
        # recall at recall's pool, so there is no such step.
        self.signals += [Signal(scores, "similarity") for scores in nearest()]

    def questions(self) -> set[int]:
        """Holders of every rare term that only ask about it (see ``ranking.fuse``)."""
        if not self.rare:
            return set()
        every = sorted(set.intersection(*map(set, self.rare)))
        holders = self.source.fetch(every)
        return {
            key
            for key, item in holders.items()
            if is_question(self.source.text_of(item), self.terms)
        }


def found_now(signals: list[dict[int, float]]) -> Callable[[], list[dict[int, float]]]:
    """``begin_nearest``'s result for signals found at once (a backend that cannot wait)."""
    return lambda: signals


def neighbour_signals(
    signals: Sequence[Signal[int]],
    sequences: Callable[[Sequence[int], int], dict[int, list[int]]],
    reach: int = CONTEXT_RADIUS,
) -> list[Signal[int]]:
    """Two context signals: what a candidate's neighbours scored on words and on meaning.

    As recall's context (the message with its two neighbours each side), so a passage
    that answers a question asked just before it is found through that question's words.
    For the best :data:`CONTEXT_SEEDS` candidates, the neighbourhood within ``2 * reach``
    is read; then every item within ``reach`` of a seed scores:

    - words: the sum of its window's word scores (the first "rank" signal);
    - meaning: the mean of its window's similarities (the first "similarity" signal),
      a member outside the vector pool counting as the pool's lowest.

    Returns [] when no candidate came from a thread.
    """
    words = next((s.scores for s in signals if s.kind == "rank"), {})
    vectors = next((s.scores for s in signals if s.kind == "similarity"), {})
    seeds = [key for key, _ in fuse(signals)[:CONTEXT_SEEDS]]
    around = sequences(seeds, 2 * reach)
    if not around:
        return []
    lowest = min(vectors.values(), default=0.0)
    by_words: dict[int, float] = {}
    by_meaning: dict[int, float] = {}
    for seed, sequence in around.items():
        at = sequence.index(seed)
        for position in range(max(0, at - reach), min(len(sequence), at + reach + 1)):
            item = sequence[position]
            window = sequence[max(0, position - reach) : position + reach + 1]
            matched = [words[n] for n in window if n in words]
            if matched:
                by_words[item] = sum(matched)
            if vectors:
                by_meaning[item] = sum(vectors.get(n, lowest) for n in window) / len(window)
    out: list[Signal[int]] = []
    if by_words:
        out.append(Signal(by_words))
    if by_meaning:
        out.append(Signal(by_meaning, "similarity"))
    return out


SPREAD_DISCOUNT = 0.2
"""How much each result already taken from a thread lowers another of that thread
(`spread_sessions`). Chosen on the dev files (the ``spread`` rows of
``benchmarks/locomo_levers.py``): 0.1 to 0.5 all raised BEAM dev's hybrid recall; 0.2
alone lowered no conversation of BEAM dev or LoCoMo dev."""

SPREAD_HEAD = 60
"""How many of the first results `spread_sessions` reorders; the rest keep their place."""


def spread_sessions(
    fused: Sequence[tuple[int, float]], source: SignalSource[T]
) -> tuple[list[tuple[int, float]], Mapping[int, T]]:
    """``fused`` with its head reordered so that the threads take turns, and its items.

    The head's items are read to know their threads; the page is then taken from them.
    Greedy (MMR-like): the next result is the one whose score, discounted by `SPREAD_DISCOUNT` for
    each result of its thread already taken, is highest; items without a thread are not
    discounted. Scores are kept as fused.
    """
    head = list(fused[:SPREAD_HEAD])
    items = source.fetch([key for key, _ in head])
    threads = {key: source.thread_of(item) for key, item in items.items()}
    taken: dict[str | None, int] = {}
    spread: list[tuple[int, float]] = []
    keep = 1.0 - SPREAD_DISCOUNT
    while head:

        def value(pair: tuple[int, float]) -> float:
            thread = threads.get(pair[0])
            return pair[1] * keep ** taken.get(thread, 0) if thread is not None else pair[1]

        best = max(head, key=value)
        head.remove(best)
        spread.append(best)
        thread = threads.get(best[0])
        if thread is not None:
            taken[thread] = taken.get(thread, 0) + 1
    return spread + list(fused[SPREAD_HEAD:]), items


def _ranking(
    tier: Tier, source: SignalSource[T], query: str, terms: list[str], mode: SearchMode, k: int
) -> tuple[list[tuple[int, float]], Mapping[int, T], int | None]:
    """Every candidate of ``source`` for ``query``, fused, best first.

    Also the items read on the way (`spread_sessions`) and, in "vector" mode, the count of
    candidates with a vector.
    """
    search = _Search(source, query, terms)
    with_vectors = source.has_vectors and mode != "fts"
    if with_vectors and not source.vectors_wait_for_words(query, mode):
        search.begin_vectors(mode, k)  # beside the words, where the backend can
    if mode != "vector":
        search.add_words()
    total: int | None = None
    if with_vectors:
        search.add_vectors(mode, k)  # after the words: the signals' order is the same either way
        if mode == "vector":
            total = source.vector_total(VECTOR_TOTAL_CAP)
    if tier.neighbour_context:
        search.signals += neighbour_signals(search.signals, source.sequences)
    across = mode == "hybrid" and asks_across_sessions(query)
    if mode != "vector":
        candidates = {key for signal in search.signals for key in signal.scores}
        search.signals += [Signal(s) for s in source.named_signals(query, candidates)]
        if mode == "hybrid" and asks_about_asker(query):
            # A question about its asker: their own messages among the matches are lifted,
            # as a named participant's are (``mentions.asks_about_asker``); never one that
            # only the vector pool brought, which would then pass for a match.
            own = source.askers_own(matched_keys(search.signals))
            if own:
                halved = across and not asks_for_own_words(query)
                weight = ASKER_WEIGHT_ACROSS if halved else ASKER_WEIGHT
                search.signals.append(Signal(dict.fromkeys(own, 1.0), weight=weight))
    fused = fuse(
        search.signals,
        rare=search.rare,
        questions=search.questions(),
        matches_only=tier.matches_only and mode != "vector",
    )
    read: Mapping[int, T] = {}
    if tier.spreads_sessions and across:
        fused, read = spread_sessions(fused, source)
    return fused, read, total


def take_turns(rankings: Sequence[Sequence[tuple[int, float]]]) -> list[tuple[int, float]]:
    """The rankings merged by taking their next unseen result in turns, first to last."""
    merged: list[tuple[int, float]] = []
    seen: set[int] = set()
    for row in itertools.zip_longest(*rankings):
        for pair in row:
            if pair is not None and pair[0] not in seen:
                seen.add(pair[0])
                merged.append(pair)
    return merged


def hybrid_search(
    tier: Tier, source: SignalSource[T], query: str, mode: SearchMode, page: int, page_size: int
) -> SearchPage[T]:
    """Rank the candidates of ``source`` for ``query`` and return one page, best first.

    Args:
        tier: :data:`RECALL` or :data:`ARCHIVAL`.
        source: the backend's signals for this search (filters applied).
        query: any text.
        mode: ``"hybrid"``, ``"fts"`` or ``"vector"``.
        page: page number, from 0.
        page_size: results per page.

    Returns:
        The page; ``total`` as the module docstring says.

    Raises:
        ValueError: an unknown mode, a bad page, or recall's "vector" mode without an
            embedding model.
    """
    check_mode(mode)
    check_page(page, page_size)
    vectors = source.has_vectors
    if not vectors and mode == "vector":
        if tier.refuse_vector_mode:
            raise ValueError(f"vector search needs an embedding model; this {tier.name} has none")
        mode = "fts"
    terms = query_terms(query)
    if not terms:
        return source.listing(page, page_size)
    k = tier.pool.size(page, page_size)
    fused, read, total = _ranking(tier, source, query, terms, mode, k)
    events = two_events(query) if mode == "hybrid" else None
    if events is not None:
        # Each event's own ranking beside the question's, taken in turns: a question
        # joining two events needs the message of each, and one of them often outranks
        # every message of the other.
        each = [_ranking(tier, source, event, query_terms(event), mode, k) for event in events]
        fused = take_turns([fused, *(ranked for ranked, _, _ in each)])
        read = {key: item for _, items, _ in each for key, item in items.items()} | dict(read)
    total = len(fused) if total is None else max(total, len(fused))
    found: Mapping[int, T]
    if tier.shows_repeats_once:
        shown, found = once_each(fused, source, (page + 1) * page_size, read)
        window = shown[page * page_size :]
    else:
        window = fused[page * page_size : (page + 1) * page_size]
        found = {**read, **source.fetch([key for key, _ in window if key not in read])}
    hits = [Hit(found[key], score) for key, score in window if key in found]
    return SearchPage(hits=hits, total=total, page=page, page_size=page_size)


def once_each(
    fused: Sequence[tuple[int, float]],
    source: SignalSource[T],
    count: int,
    read: Mapping[int, T] | None = None,
) -> tuple[list[tuple[int, float]], dict[int, T]]:
    """The first ``count`` of ``fused`` with each text once, and their items.

    A text said again word for word (pasted twice, a greeting of every session, a note
    repeated in many threads) ranks as high as the first time, and its copies would fill
    the page with one result: the best-ranked copy stands for them all. Texts are compared
    as `duplicates.normalised` (case, spacing and punctuation aside). Reads the items in
    batches of ``count`` as it goes, so a page without repeats costs one read, as before;
    items already ``read`` (`spread_sessions` read the head) are not read again.
    """
    read = read or {}
    shown: list[tuple[int, float]] = []
    found: dict[int, T] = {}
    seen: set[str] = set()
    start = 0
    while len(shown) < count and start < len(fused):
        batch = fused[start : start + count]
        start += count
        missing = [key for key, _ in batch if key not in read]
        items = {**read, **(source.fetch(missing) if missing else {})}
        for key, score in batch:
            item = items.get(key)
            if item is None:
                continue
            text = normalised(source.text_of(item))
            if text in seen:
                continue
            seen.add(text)
            shown.append((key, score))
            found[key] = item
            if len(shown) == count:
                break
    return shown, found


__all__ = [
    "ARCHIVAL",
    "ARCHIVAL_POOL",
    "CONTEXT_RADIUS",
    "CONTEXT_SEEDS",
    "MODES",
    "RECALL",
    "RECALL_POOL",
    "Tier",
    "Pool",
    "SignalSource",
    "check_mode",
    "hybrid_search",
    "neighbour_signals",
    "once_each",
    "spread_sessions",
]


# --- the search methods of the tiers, one signature for every backend ----------------


def split_excluded(items: Collection[Excluded]) -> tuple[list[str], list[list[str]]]:
    """Bare message ids, and ``[thread, message id]`` pairs, of excluded messages, sorted."""
    bare = sorted({i for i in items if isinstance(i, str)})
    pairs = sorted({(str(i[0]), str(i[1])) for i in items if not isinstance(i, str)})
    return bare, [list(p) for p in pairs]


@dataclass(frozen=True)
class RecallFilter:
    """What a recall search keeps, as its caller asked (checked by the backend)."""

    roles: Sequence[str] | None
    start_date: str | None
    end_date: str | None
    exclude_ids: Collection[Excluded]


@dataclass(frozen=True)
class ArchivalFilter:
    """What an archival search keeps, as its caller asked (checked by the backend)."""

    tags: Iterable[str] | str | None
    tag_match: TagMatch
    start_date: str | None
    end_date: str | None


Signals = AbstractContextManager[SignalSource[T]]
"""The signal source of one search, open while the search runs (a connection, say)."""


class SearchesRecall:
    """``RecallStore.search`` for every backend: its filters pick, `hybrid_search` ranks.

    A backend supplies :meth:`_recall_signals`, the signal source of one search with its
    filters applied.
    """

    def search(
        self,
        query: str,
        *,
        roles: Sequence[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        page: int = 0,
        page_size: int = 5,
        mode: SearchMode = "hybrid",
        exclude_ids: Collection[Excluded] = (),
    ) -> SearchPage[RecallMessage]:
        """Find past messages by words and meaning, best first.

        Filters (agent, roles, dates, excluded message ids) select the candidates first;
        ranking only ever sees candidates, so a narrow filter never comes back empty
        because better matches outside it took the top places. Tool results and messages
        recorded unsearchable (the model's search calls) are never candidates.

        Args:
            query: Free text; any characters are safe. A query without words lists the
                most recent first.
            roles: Keep only these roles ("user", "assistant", "system").
            start_date: Earliest time, "YYYY-MM-DD" or ISO-8601 (inclusive).
            end_date: Latest time (inclusive); a bare date covers that whole day.
            page: Page number, from 0.
            page_size: Results per page.
            mode: "hybrid" (words and meaning), "fts" (words) or "vector" (meaning).
            exclude_ids: Messages to leave out (e.g. those already in the prompt), as
                ``(thread id, message id)``: ids are unique per thread only, so a bare id
                leaves out that id in every thread.

        Returns:
            The page, ranked and counted by ``stores.search.hybrid_search`` (the same
            for archival and for Postgres): ``total`` = candidates that matched any
            signal (a word, a mention, or a vector above ``ranking.SIMILARITY_FLOOR``: a
            candidate nothing matched is no result; each vector signal contributes its
            ``search.RECALL_POOL`` nearest, each query word at most its 250 newest
            matches, so it can be a lower bound); every candidate with a vector in
            "vector" mode, and every candidate for a listing.

        Raises:
            ValueError: Bad date, role, mode or page; "vector" mode without embeddings.
        """
        chosen = RecallFilter(roles, start_date, end_date, exclude_ids)
        with self._recall_signals(chosen) as source:
            return hybrid_search(RECALL, source, query, mode, page, page_size)

    def _recall_signals(self, chosen: RecallFilter) -> Signals[RecallMessage]:
        raise NotImplementedError


class SearchesArchival:
    """``ArchivalStore.search`` for every backend: its filters pick, `hybrid_search` ranks.

    A backend supplies :meth:`_archival_signals`, the signal source of one search with its
    filters applied; :meth:`_arranged` may reorder the ranked page before it is shown
    (``stores.supersession.SearchesCurrentFirst``).
    """

    def search(
        self,
        query: str,
        *,
        tags: Iterable[str] | str | None = None,
        tag_match: TagMatch = "any",
        start_date: str | None = None,
        end_date: str | None = None,
        page: int = 0,
        page_size: int = 5,
        mode: SearchMode = "hybrid",
    ) -> SearchPage[Passage]:
        """Search this agent's passages; filters apply before ranking.

        Args:
            query: any text; an empty query (no words) lists passages newest first.
            tags: only passages with these tags (case-insensitive); None or empty for all.
            tag_match: ``"any"`` (at least one of ``tags``) or ``"all"`` (every one).
            start_date: ``YYYY-MM-DD`` or ISO-8601, inclusive.
            end_date: ``YYYY-MM-DD`` (the whole day) or ISO-8601, inclusive.
            page: zero-based page number.
            page_size: results per page.
            mode: ``"hybrid"`` (BM25 + cosine, fused by ``ranking.fuse``), ``"fts"`` or
                ``"vector"``; without embeddings every mode searches words only.

        Returns:
            One page of hits (best first), ranked and counted by
            ``stores.search.hybrid_search`` as recall is: ``total`` = passages ranked
            (word matches and each vector signal's pool); every filtered passage with a
            vector in "vector" mode; every filtered passage for a listing.

        Raises:
            ValueError: a bad date, page, page size, mode or tag_match, with a message
                the model can act on.
        """
        if tag_match not in ("any", "all"):
            raise ValueError(f"tag_match must be 'any' or 'all', got {tag_match!r}")
        chosen = ArchivalFilter(tags, tag_match, start_date, end_date)
        with self._archival_signals(chosen) as source:
            found = hybrid_search(ARCHIVAL, source, query, mode, page, page_size)
        return self._arranged(found)

    def _archival_signals(self, chosen: ArchivalFilter) -> Signals[Passage]:
        raise NotImplementedError

    def _arranged(self, found: SearchPage[Passage]) -> SearchPage[Passage]:
        """The ranked page as shown (as ranked, unless a subclass reorders it)."""
        return found
