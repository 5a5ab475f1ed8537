"""Recall's vectors in SQLite: a message's vector, its parts', and its context's.

Recall keeps three FAISS indexes per agent and the parts of its long messages
(``stores.chunks``). These are written only here, so the write path and forgetting state
what changed (message vectors, windows, forgotten rows) and this module keeps the indexes
in step with it, the no-model case included.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings
from sqlite_utils import Database

from langgraph_memgpt.stores.chunks import embed_parts
from langgraph_memgpt.stores.embeddings import FloatArray, embed_texts, normalize
from langgraph_memgpt.stores.embeddings import embedding_identity as _identity
from langgraph_memgpt.stores.search import CONTEXT_RADIUS
from langgraph_memgpt.stores.sqlite.db import transaction
from langgraph_memgpt.stores.sqlite.parts import PartIndex, delete_parts_without_model
from langgraph_memgpt.stores.sqlite.recall_context import TIER, stored_vectors, thread_windows
from langgraph_memgpt.stores.sqlite.vectors import (
    IndexKind,
    VectorIndex,
    delete_items_without_model,
)

_VECTOR_KINDS: dict[str, IndexKind] = {"turn": "auto", "context": "auto", "context_tail": "flat"}
"""Vector indexes of recall, by key. Message vectors ("turn") are written once. A context
vector is the mean of its window, which changes until the message has its two successors:
until then it lives in the small exact "context_tail" index, which deletes cheaply, and
then moves, once and for good, to "context". So the two big indexes only grow and can
turn HNSW (``VectorIndex`` kind "auto"): an HNSW graph cannot delete, and the two dead
entries every append left in it would force rebuilds that stall a turn on a large
history. A thread's last two messages stay in the tail."""


class RecallVectors:
    """One agent's recall vectors: messages, their parts, and their contexts.

    Args:
        db: The memory database.
        agent_id: The agent whose indexes these are.
        embeddings: The agent's embedding model.
        cache_dir: Folder of the FAISS caches.

    Raises:
        EmbeddingMismatchError: Recall vectors of this agent were made by another model.
    """

    def __init__(
        self, db: Database, agent_id: str, embeddings: Embeddings, cache_dir: Path
    ) -> None:
        self.db = db
        self.agent_id = agent_id
        self.embeddings = embeddings
        identity = _identity(embeddings)
        opens = partial(VectorIndex.for_tier, db, tier=TIER, agent_id=agent_id, cache_dir=cache_dir)
        self.turn, self.context, self.tail = (
            opens(identity=identity, key=key, kind=kind) for key, kind in _VECTOR_KINDS.items()
        )
        # Parts of long messages (``stores.chunks``): the message vector is its best part's.
        self.parts = PartIndex(self.turn)

    def embed(self, texts: Collection[str]) -> dict[str, FloatArray]:
        """Embed ``texts``, keyed by text."""
        if not texts:
            return {}
        ordered = sorted(texts)
        return dict(zip(ordered, embed_texts(self.embeddings, ordered), strict=True))

    def embed_parts(self, texts: Collection[str]) -> dict[str, FloatArray]:
        """The part vectors of ``texts`` (``stores.chunks.embed_parts``), keyed by text."""
        if not texts:
            return {}
        ordered = sorted(texts)
        return dict(zip(ordered, embed_parts(self.embeddings, ordered), strict=True))

    def store(
        self,
        turn_ids: Sequence[int],
        turn_vectors: FloatArray | None,
        windows: Mapping[int, Sequence[int]],
    ) -> None:
        """Store message vectors; a context vector is the mean of its window's message vectors.

        The message vectors come embedded already: the caller embeds before taking the
        write lock, which a hosted embedding call would otherwise hold for its round trip.

        Averaging vectors already computed costs no model call, where embedding each
        "date: context" text would cost five messages' worth of tokens per message, again
        for each refreshed neighbour on every append.
        """
        fresh: dict[int, FloatArray] = {}
        if turn_ids and turn_vectors is not None:
            self.turn.upsert(list(turn_ids), turn_vectors)
            fresh = {int(i): v for i, v in zip(turn_ids, turn_vectors, strict=True)}
        if not windows:
            return
        wanted = sorted({i for w in windows.values() for i in w} - set(fresh))
        known = {**stored_vectors(self.db.conn, self.agent_id, wanted), **fresh}
        pooled: dict[bool, dict[int, FloatArray]] = {True: {}, False: {}}
        for item_id, window in windows.items():
            parts = [known[i] for i in window if i in known]
            if parts:
                complete = len(window) - 1 - window.index(item_id) >= CONTEXT_RADIUS
                pooled[complete][item_id] = np.mean(parts, axis=0)
        for complete, index in ((True, self.context), (False, self.tail)):
            if pooled[complete]:
                vectors = normalize(np.stack(list(pooled[complete].values())))
                index.upsert(list(pooled[complete]), vectors)
        # A window that just became complete leaves the tail.
        self.tail.delete(pooled[True])

    def store_parts(self, item_ids: Sequence[int], parts: Sequence[FloatArray]) -> None:
        """Store the part vectors of these messages (none for a short one)."""
        self.parts.store(item_ids, parts)

    def repool(self, windows: Mapping[int, Sequence[int]]) -> None:
        """Pool again the context vectors of refreshed windows, in whichever index fits now."""
        moved = list(windows)
        self.context.delete(moved)
        self.tail.delete(moved)
        self.store([], None, windows)

    def forget(self, rowids: Sequence[int]) -> None:
        """Drop every vector of messages that are gone or no longer searchable."""
        if rowids:
            for index in (self.turn, self.context, self.tail):
                index.delete(rowids)
            self.parts.delete(rowids)

    def purge(self) -> None:
        """Drop deleted vectors from FAISS and its cache files (after the commit)."""
        for index in (self.turn, self.context, self.tail):
            index.purge()
        self.parts.purge()

    def close(self) -> None:
        """Write the FAISS caches (they are also brought up to date on next open)."""
        for index in (self.turn, self.context, self.tail):
            index.close()
        self.parts.close()

    def embed_missing(
        self,
        chunk_size: int,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Embed searchable messages that have no vectors yet, then pool their contexts.

        Returns:
            How many messages were embedded.
        """
        rows = self.db.conn.execute(
            "SELECT r.id, f.text, r.thread_id FROM recall AS r "
            "JOIN recall_fts AS f ON f.rowid = r.id "
            "WHERE r.agent_id = ? AND r.searchable = 1 AND r.id NOT IN ("
            "  SELECT item_id FROM vectors WHERE tier = ? AND agent_id = ? AND key = 'turn')"
            " ORDER BY r.id",
            (self.agent_id, TIER, self.agent_id),
        ).fetchall()
        for start in range(0, len(rows), chunk_size):
            chunk = rows[start : start + chunk_size]
            ids = [int(r[0]) for r in chunk]
            texts = [str(r[1]) for r in chunk]
            vectors = embed_texts(self.embeddings, texts)
            parts = embed_parts(self.embeddings, texts)
            with transaction(self.db):
                self.store(ids, vectors, {})
                self.parts.store(ids, parts)
            if progress is not None:
                progress(start + len(chunk), len(rows))
        # Context vectors are means of message vectors: pool once every message has one.
        windows = thread_windows(self.db.conn, self.agent_id, sorted({str(r[2]) for r in rows}))
        with transaction(self.db):
            self.store([], None, windows)
        self.close()
        return len(rows)


def forget_without_model(
    db: Database,
    agent_id: str,
    cache_dir: Path,
    rowids: list[int],
    stale: list[int],
) -> None:
    """Drop the vectors of forgotten messages when no embedding model is at hand.

    The neighbours' context vectors (``stale``: means that include a forgotten message's
    vector) cannot be recomputed without the model: they go, and the neighbours are found
    by their own vector and words until ``reembed`` pools them again.
    """
    delete_parts_without_model(
        db, tier=TIER, agent_id=agent_id, cache_dir=cache_dir, item_ids=rowids, key="turn"
    )
    for items, keys in ((rowids, None), (stale, ["context", "context_tail"])):
        delete_items_without_model(
            db, tier=TIER, agent_id=agent_id, cache_dir=cache_dir, item_ids=items, keys=keys
        )


__all__ = ["RecallVectors", "forget_without_model"]
