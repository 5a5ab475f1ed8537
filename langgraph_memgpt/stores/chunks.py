"""Long texts are found by their best part: sentence-bounded chunks with their own vectors.

One vector per message or passage dilutes a long text: a 120-word message that states one
fact among everyday talk is embedded as the average of all of it, so a lookup by the fact's
topic words scores it like small talk; and a passage beyond the embedding model's window
(MiniLM: 256 tokens) is embedded by its beginning only, its tail invisible to vectors.

So every text longer than :data:`LONG_WORDS` words is also split into *parts*
(:func:`parts_of`: whole sentences packed into windows of at most that many words, each far
inside any model's window), each part gets its own vector, and a text's vector signal is
the best similarity among its whole vector and its parts (:func:`best_of`). Short texts,
most of a conversation, have no parts: nothing changes for them, and no stored vector of an
existing memory changes meaning (the whole-text vector is kept as it was).

Words too: a text with parts scores on words as its best part where that is higher
(``stores.bm25``; each part's word counts are kept when the text is written:
``stores.sqlite.part_terms``, ``stores.postgres.part_terms``).

Part vectors live beside the whole-text vectors of the same tier, in a vector store keyed
``<key>.parts`` (SQLite + FAISS: ``stores.sqlite.parts``, with ids :func:`part_id`;
Postgres: ``stores.postgres.parts``). Everything that removes a text removes its parts
too. Parts are made when a text is written, bulk-loaded or re-embedded: a memory written
before them gets them from ``langgraph-memgpt reembed``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.embeddings import FloatArray, embed_texts

PART_WORDS = 20
"""Most words in a part: sentences are packed into parts of at most this many words (a
sentence is never cut below :data:`SENTENCE_WORDS`)."""

LONG_WORDS = 90
"""A text of at most this many words has no parts: its one vector is its best.

Two or three sentences rarely hold more than one topic, and most of a conversation is
that short: parts for shorter texts cost conversational retrieval (LoCoMo) where long
messages (the needle benchmark's) gain nothing more."""

SENTENCE_WORDS = 100
"""A sentence longer than this is cut into windows of this many words (about 130 MiniLM
tokens, inside its 256-token window); a shorter one is never cut."""

MAX_PARTS = 4096
"""Most parts of one text; a longer text gets longer windows (it is still covered whole).
Parts hold at least half of :data:`PART_WORDS` words on average (two neighbours together
overflow it), so up to ~40k words keep the usual size."""

PART_SLOTS = 1 << 12
"""Part ids of item ``i`` are ``i * PART_SLOTS + n`` (``n < MAX_PARTS``): one id space per
item, so a part maps back to its item without a table, and an item's parts are an id
range."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def parts_of(text: str, words: int = PART_WORDS) -> list[str]:
    """The parts ``text`` is embedded in besides its whole: [] for a short text.

    Sentences are packed in order into windows of at most ``words`` words; a sentence
    longer than that is cut into windows of ``words`` words. A text of at most ``words``
    words has no parts (its whole vector is its only one).
    """
    tokens = text.split()
    if len(tokens) <= max(words, LONG_WORDS):
        return []
    # Two neighbouring parts hold more than ``words`` words, so this keeps <= MAX_PARTS.
    words = max(words, -(-2 * len(tokens) // MAX_PARTS))
    longest = max(words, SENTENCE_WORDS)
    pieces: list[list[str]] = []
    for sentence in _SENTENCE.split(text):
        split = sentence.split()
        for start in range(0, len(split), longest):
            pieces.append(split[start : start + longest])
    parts: list[str] = []
    window: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        if window and len(window) + len(piece) > words:
            parts.append(" ".join(window))
            window = []
        window += piece
    if window:
        parts.append(" ".join(window))
    return parts[:MAX_PARTS]


def part_id(item: int, n: int) -> int:
    """The id of part ``n`` of item ``item`` (see :data:`PART_SLOTS`)."""
    return item * PART_SLOTS + n


def item_of(part: int) -> int:
    """The item a part id belongs to."""
    return part // PART_SLOTS


def embed_parts(embeddings: Embeddings, texts: Sequence[str]) -> list[FloatArray]:
    """The part vectors of each text (an ``(n, d)`` array; ``n`` is 0 for a short text).

    All parts are embedded in one call, so a batch of texts costs one model call.
    """
    split = [parts_of(text) for text in texts]
    flat = [part for parts in split for part in parts]
    if not flat:
        dim = 0
        return [np.zeros((0, dim), dtype=np.float32) for _ in texts]
    vectors = embed_texts(embeddings, flat)
    out: list[FloatArray] = []
    start = 0
    for parts in split:
        out.append(vectors[start : start + len(parts)])
        start += len(parts)
    return out


def keyed_parts(
    items: Sequence[int], per_text: Sequence[FloatArray]
) -> tuple[list[int], FloatArray | None]:
    """Part ids and one stacked array for ``items`` with their :func:`embed_parts`."""
    pairs = zip(items, per_text, strict=True)
    ids = [part_id(item, n) for item, parts in pairs for n in range(len(parts))]
    if not ids:
        return [], None
    return ids, np.ascontiguousarray(np.concatenate([p for p in per_text if len(p)]))


def best_of(*signals: Mapping[int, float]) -> dict[int, float]:
    """Each item's best similarity among ``signals`` (whole vectors, best parts)."""
    best: dict[int, float] = {}
    for signal in signals:
        for item, score in signal.items():
            if score > best.get(item, float("-inf")):
                best[item] = score
    return best


def best_parts(hits: Iterable[tuple[int, float]]) -> dict[int, float]:
    """``{item: best similarity}`` from ``(part id, similarity)`` pairs."""
    best: dict[int, float] = {}
    for part, score in hits:
        item = item_of(part)
        if score > best.get(item, float("-inf")):
            best[item] = score
    return best


def nearest_items(
    whole: Mapping[int, float], parts: Mapping[int, float], k: int
) -> dict[int, float]:
    """The ``k`` items with the best similarity among their whole vector and their parts."""
    merged = best_of(whole, parts)
    return dict(sorted(merged.items(), key=lambda pair: -pair[1])[:k])


__all__ = [
    "MAX_PARTS",
    "PART_SLOTS",
    "PART_WORDS",
    "best_of",
    "best_parts",
    "embed_parts",
    "item_of",
    "keyed_parts",
    "nearest_items",
    "part_id",
    "parts_of",
]
