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
(``stores.bm25``, computed from the part texts at search time, nothing stored).

Part vectors live beside the whole-text vectors of the same tier, in a vector store keyed
``<key>.parts`` (SQLite + FAISS: :class:`PartIndex`, with ids :func:`part_id`; Postgres:
``stores.postgres.parts``). Everything that removes a text removes its parts too. Parts
are made when a text is written, bulk-loaded or re-embedded: a memory written before them
gets them from ``langgraph-memgpt reembed``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.embeddings import FloatArray, embed_texts
from langgraph_memgpt.stores.vectors import VectorIndex, delete_items_without_model

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


class PartIndex:
    """The part vectors of one tier of one agent in SQLite + FAISS (key ``<key>.parts``).

    A ``VectorIndex`` whose items are part ids (:func:`part_id`), opened beside the tier's
    whole-text index with the same model and kind; search maps parts back to items.
    """

    def __init__(self, whole: VectorIndex) -> None:
        self.db = whole.db
        self.tier = whole.tier
        self.agent_id = whole.agent_id
        self.key = f"{whole.key}.parts"
        self.index = VectorIndex(
            whole.db,
            tier=whole.tier,
            agent_id=whole.agent_id,
            cache_dir=whole.cache_dir,
            model=whole.model,
            dim=whole.dim,
            key=self.key,
            kind=whole.kind,
        )

    def store(self, items: Sequence[int], per_text: Sequence[FloatArray]) -> None:
        """Replace the parts of ``items`` with their :func:`embed_parts` vectors.

        Joins the caller's transaction, like ``VectorIndex.upsert``.
        """
        ids, vectors = keyed_parts(items, per_text)
        self.delete(items)
        if ids and vectors is not None:
            self.index.upsert(ids, vectors)

    def delete(self, items: Collection[int]) -> None:
        """Remove every part of ``items``."""
        found = part_ids(self.db, self.tier, self.agent_id, self.key, items)
        if found:
            self.index.delete(found)

    def nearest(
        self,
        vector: FloatArray,
        k: int,
        allowed: Collection[int] | None,
        excluded: Collection[int] = (),
    ) -> dict[int, float]:
        """``{item: best part similarity}`` of the items among the ``2k`` nearest parts.

        ``2k`` parts, since several parts of one item may be near: the items are then
        fewer than the parts. ``allowed``: only these items (None: all); ``excluded``:
        never these (``VectorIndex.search``'s ``excluded_ids``, for a few items).
        """
        allowed_parts = None
        if allowed is not None:
            allowed_parts = part_ids(self.db, self.tier, self.agent_id, self.key, allowed)
            if not allowed_parts:
                return {}
        excluded_parts = part_ids(self.db, self.tier, self.agent_id, self.key, excluded)
        return best_parts(
            self.index.search(vector, 2 * k, allowed_ids=allowed_parts, excluded_ids=excluded_parts)
        )

    def purge(self) -> None:
        """Drop deleted part vectors from FAISS and its cache files (after the commit)."""
        self.index.purge()

    def close(self) -> None:
        """Write unsaved cache changes."""
        self.index.close()

    def maybe_persist(self) -> None:
        """Write the cache file if enough changed (after the caller's commit)."""
        self.index.maybe_persist()


def part_ids(
    db: sqlite_utils.Database, tier: str, agent_id: str, key: str, items: Collection[int]
) -> list[int]:
    """The stored part ids of ``items`` (one range lookup per item)."""
    if not items:
        return []
    rows = db.conn.execute(
        "SELECT v.item_id FROM json_each(?) AS j CROSS JOIN vectors AS v "
        "ON v.tier = ? AND v.agent_id = ? AND v.key = ? "
        "AND v.item_id >= j.value * ? AND v.item_id < (j.value + 1) * ?",
        (json.dumps(sorted(int(i) for i in items)), tier, agent_id, key, PART_SLOTS, PART_SLOTS),
    ).fetchall()
    return [int(r[0]) for r in rows]


def delete_parts_without_model(
    db: sqlite_utils.Database,
    *,
    tier: str,
    agent_id: str,
    cache_dir: Path | str,
    item_ids: Sequence[int],
    key: str,
) -> None:
    """``vectors.delete_items_without_model`` for the parts of ``item_ids`` under ``key``."""
    exists = db.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'"
    ).fetchone()
    if not exists or not item_ids:
        return
    parts_key = f"{key}.parts"
    found = part_ids(db, tier, agent_id, parts_key, item_ids)
    delete_items_without_model(
        db, tier=tier, agent_id=agent_id, cache_dir=cache_dir, item_ids=found, keys=[parts_key]
    )


__all__ = [
    "MAX_PARTS",
    "PART_SLOTS",
    "PART_WORDS",
    "PartIndex",
    "best_of",
    "best_parts",
    "delete_parts_without_model",
    "embed_parts",
    "item_of",
    "keyed_parts",
    "nearest_items",
    "part_ids",
    "part_id",
    "parts_of",
]
