"""Vector search for the memory tiers: vectors live in SQLite, FAISS is a rebuildable cache.

SQLite is the source of truth (table ``vectors``: one row per (tier, agent, item, key)), so
a lost, truncated, corrupt or out-of-date FAISS file is never a data loss: it is detected
when the index is opened or searched and rebuilt (or brought up to date) from SQLite.

Each (tier, agent, key) has its own FAISS index, so one agent's search never even looks at
another agent's vectors. FAISS labels are the ``vectors.id`` row ids (never reused thanks
to AUTOINCREMENT), not the item ids: a re-embedded item gets a new label and its old
vector becomes a tombstone, which an HNSW graph (that cannot delete) needs.

Filtered search (``allowed_ids``) restricts FAISS *before* ranking with an ID selector,
so a narrow filter never comes back empty because closer vectors outside it crowded the
top k.

This module is the interface: :class:`VectorIndex` writes the rows and answers searches.
The rest is one module per job: the embedding model a tier's vectors were made with
(``identity``), keeping the loaded FAISS copy in step with the rows and its cache file
(``faiss_sync``), the cache files themselves (``faiss_cache``), and FAISS's index kinds
and searches by label (``faiss_index``).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path

import numpy as np
import sqlite_utils

from langgraph_memgpt.stores.embeddings import FloatArray, normalize
from langgraph_memgpt.stores.sqlite import faiss_pending as pending
from langgraph_memgpt.stores.sqlite.db import transaction
from langgraph_memgpt.stores.sqlite.faiss_beside import begin_walk
from langgraph_memgpt.stores.sqlite.faiss_cache import remove_tier_files, warn_once
from langgraph_memgpt.stores.sqlite.faiss_index import (
    AUTO_HNSW_MIN_VECTORS,
    IndexKind,
    remove_tombstones,
    scrub,
    search_all,
    search_excluding,
    search_labels,
    walks_all,
)
from langgraph_memgpt.stores.sqlite.faiss_index import (  # noqa: F401 (benchmarks/archival_1m.py)
    HNSW_EF_SEARCH as _HNSW_EF_SEARCH,
)
from langgraph_memgpt.stores.sqlite.faiss_sync import (
    SyncedIndex,
    Tier,
    forget_loaded_indexes,
    unload_tier,
)
from langgraph_memgpt.stores.sqlite.identity import identity_key


def _blob(vector: FloatArray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def delete_items_without_model(
    db: sqlite_utils.Database,
    *,
    tier: Tier,
    agent_id: str,
    cache_dir: Path | str,
    item_ids: list[int],
    keys: Sequence[str] | None = None,
) -> None:
    """Delete the vectors of items for a store opened without an embedding model.

    The vectors an earlier model made still go (every key, or only ``keys``), and the
    tier's FAISS cache files are removed (rebuilt from SQLite when a model is configured
    again): a forgotten item leaves no vector behind. Call inside the deletion's
    transaction.
    """
    if not item_ids:
        return
    exists = db.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'"
    ).fetchone()
    if not exists:
        return
    cursor = db.conn.execute(
        "DELETE FROM vectors WHERE tier = ? AND agent_id = ? "
        "AND item_id IN (SELECT value FROM json_each(?)) "
        "AND (? IS NULL OR key IN (SELECT value FROM json_each(?)))",
        (tier, agent_id, json.dumps(item_ids), None if keys is None else 1, json.dumps(keys or [])),
    )
    if cursor.rowcount <= 0:
        return
    db.conn.execute(
        "UPDATE vector_state SET generation = ? WHERE tier = ? AND agent_id = ?",
        (secrets.token_hex(8), tier, agent_id),
    )
    remove_tier_files(cache_dir, agent_id, tier)


class VectorIndex(SyncedIndex):
    """Vectors of one (tier, agent, key): stored in SQLite, searched through a FAISS cache.

    Args:
        db: the memory database (``stores.sqlite.db.open_db``).
        tier: ``"recall"`` or ``"archival"`` (any short name works).
        agent_id: whose vectors these are; the index never holds another agent's.
        cache_dir: root folder of FAISS caches (``<data_dir>/faiss``).
        model: embedding model name recorded with the vectors.
        dim: vector dimension.
        key: which vector of an item (recall keeps ``"turn"`` and ``"context"``).
        kind: ``"flat"`` (exact inner product), ``"hnsw"`` (approximate, for big stores) or
            ``"auto"``: exact until it holds :data:`AUTO_HNSW_MIN_VECTORS`, then rebuilt
            once as HNSW (a one-off pause that grows with the vectors held), so search cost
            stays flat as memory grows.

    Raises:
        EmbeddingMismatchError: the tier was built with another model or dimension.
    """

    @classmethod
    def for_tier(
        cls,
        db: sqlite_utils.Database,
        *,
        tier: Tier,
        agent_id: str,
        cache_dir: Path | str,
        identity: tuple[str, int],
        key: str = "text",
        kind: IndexKind = "auto",
    ) -> VectorIndex:
        """Open the index of one tier/key of an agent, given ``embedding_identity(emb)``."""
        model, dim = identity
        return cls(
            db,
            tier=tier,
            agent_id=agent_id,
            cache_dir=cache_dir,
            model=model,
            dim=dim,
            key=key,
            kind=kind,
        )

    # ------------------------------------------------------------------ writes

    def upsert(self, item_ids: Sequence[int], vectors: FloatArray) -> None:
        """Store (or replace) the vectors of ``item_ids`` in SQLite and in the FAISS cache.

        Joins the caller's transaction when there is one (``stores.sqlite.db.transaction``), so an
        item row and its vector commit together. Vectors are re-normalised.

        Raises:
            ValueError: lengths or the dimension do not match.
        """
        if len(item_ids) == 0:
            return
        array = self._check_vectors(vectors, len(item_ids))
        ids = [int(i) for i in item_ids]
        if len(set(ids)) != len(ids):
            raise ValueError("upsert got the same item id twice")
        state = self._state
        # Always the database lock first, then the index lock (as a caller's transaction
        # that calls upsert does), so two threads cannot deadlock.
        with transaction(self.db), state.lock:
            # Catch up first: writing on top of a copy that missed another process's
            # writes would stamp it current and hide them.
            self._sync()
            conn = self.db.conn
            conn.execute(
                "DELETE FROM vectors WHERE tier = ? AND agent_id = ? AND key = ? "
                "AND item_id IN (SELECT value FROM json_each(?))",
                (self.tier, self.agent_id, self.key, json.dumps(ids)),
            )
            conn.executemany(
                "INSERT INTO vectors (tier, agent_id, key, item_id, embedding) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (self.tier, self.agent_id, self.key, item, _blob(array[n]))
                    for n, item in enumerate(ids)
                ],
            )
            rows = conn.execute(
                "SELECT id, item_id FROM vectors WHERE tier = ? AND agent_id = ? AND key = ? "
                "AND item_id IN (SELECT value FROM json_each(?))",
                (self.tier, self.agent_id, self.key, json.dumps(ids)),
            ).fetchall()
            generation = self._bump_generation()
            label_by_item = {int(item): int(label) for label, item in rows}
            for item in ids:
                old = state.label_of.pop(item, None)
                if old is not None:
                    state.item_of.pop(old, None)
                    pending.drop(state, old)
            labels = np.array([label_by_item[item] for item in ids], dtype=np.int64)
            pending.add(state, labels, array)  # an HNSW graph gets them beside the turn
            for item, label in zip(ids, labels.tolist(), strict=True):
                state.item_of[label] = item
                state.label_of[item] = label
            state.generation = generation
            state.unsaved += len(ids)
        self.maybe_persist()

    def delete(self, item_ids: Iterable[int]) -> int:
        """Remove the vectors of ``item_ids``; returns how many existed."""
        ids = [int(i) for i in item_ids]
        if not ids:
            return 0
        state = self._state
        with transaction(self.db), state.lock:
            # Catch up first: writing on top of a copy that missed another process's
            # writes would stamp it current and hide them.
            self._sync()
            cursor = self.db.conn.execute(
                "DELETE FROM vectors WHERE tier = ? AND agent_id = ? AND key = ? "
                "AND item_id IN (SELECT value FROM json_each(?))",
                (self.tier, self.agent_id, self.key, json.dumps(ids)),
            )
            removed = cursor.rowcount
            if removed <= 0 and not any(item in state.label_of for item in ids):
                return 0  # nothing to delete: no new generation, nothing to write
            state.generation = self._bump_generation()
            for item in ids:
                old = state.label_of.pop(item, None)
                if old is not None:
                    state.item_of.pop(old, None)
                    pending.drop(state, old)
            state.unsaved += max(removed, 1)
        self.maybe_persist()
        return int(removed)

    def purge(self) -> None:
        """Remove deleted vectors from the FAISS index itself and rewrite its cache file.

        After a deletion the removed vectors are tombstones: never returned by a search,
        but their bytes stay inside FAISS (and its cache file) until a compaction. A
        forgotten vector must not stay on disk, so an exact index drops them at once, and
        an HNSW graph (which cannot delete, and is slow to rebuild) has their stored
        vectors overwritten with zeros: the node stays a skipped tombstone for the graph's
        navigation, holding nothing. When the cache cannot be written, its file is removed
        instead (rebuilt on next open). Call after the deletion committed.
        """
        state = self._state
        with state.lock:
            self._sync()
            if state.tombstones:
                if state.kind == "hnsw":
                    scrub(state, self.dim, sorted(state.tombstones))
                else:
                    remove_tombstones(state)
                state.unsaved = max(state.unsaved, 1)
            if not state.unsaved:
                return
            try:
                self._write_cache_files()
            except OSError as err:
                warn_once(self.path.parent, err)
                for path in (self.path, self.sidecar_path):
                    try:
                        path.unlink(missing_ok=True)
                    except OSError:
                        pass  # a sidecar that does not match its index is never trusted

    # ------------------------------------------------------------------ reads

    def count(self) -> int:
        """Number of items with a vector."""
        with self._state.lock:
            self._sync()
            return len(self._state.label_of)

    def search(
        self,
        query: FloatArray,
        k: int,
        allowed_ids: Collection[int] | None = None,
        excluded_ids: Collection[int] = (),
    ) -> list[tuple[int, float]]:
        """Return up to ``k`` ``(item_id, cosine)`` pairs, most similar first.

        Args:
            query: one vector (shape ``(d,)`` or ``(1, d)``); it is normalised here.
            k: how many results at most.
            allowed_ids: when given, only these items are ranked. The restriction is
                applied inside FAISS before ranking, so it never returns fewer than
                ``min(k, allowed items with a vector)`` results.
            excluded_ids: items never ranked (applied inside FAISS as well). Every item
                but a few (a search leaving out the messages in the prompt) is passed
                as these few: listing every allowed id would cost a read of the agent's
                rows and a selector over all of them, growing with the history.
        """
        q = self._check_vectors(query, 1)
        if k <= 0:
            return []
        with self._state.lock:
            self._sync()
            return self._search_synced(q, k, allowed_ids, self._labels(excluded_ids))

    def _labels(self, item_ids: Collection[int]) -> set[int]:
        """The live labels of these items (hold the lock, the index caught up)."""
        label_of = self._state.label_of
        return {label_of[i] for i in item_ids if i in label_of}

    def _search_synced(
        self,
        q: FloatArray,
        k: int,
        allowed_ids: Collection[int] | None,
        excluded: set[int],
    ) -> list[tuple[int, float]]:
        """:meth:`search`'s ranking, ``excluded`` as labels (hold the lock, caught up)."""
        state = self._state
        if allowed_ids is not None:
            labels = [
                label
                for label in (state.label_of.get(i) for i in set(allowed_ids))
                if label is not None and label not in excluded
            ]
            if not labels:
                return []
            if len(labels) == len(state.label_of):
                return search_all(state, q, k, self._fetch)
            return search_labels(state, q, min(k, len(labels)), labels, self._fetch)
        if excluded:
            return search_excluding(state, q, k, excluded, self._fetch)
        return search_all(state, q, k, self._fetch)

    def begin_search(
        self,
        query: FloatArray,
        k: int,
        allowed_ids: Collection[int] | None = None,
        excluded_ids: Collection[int] = (),
    ) -> Callable[[], list[tuple[int, float]]]:
        """:meth:`search`, begun: calling the result returns what ``search`` would.

        A search of every vector (or all but a few excluded) of an HNSW graph walks it on
        a search thread while the caller goes on (``faiss_beside``): the hybrid search
        scores its words meanwhile. Every other search (an exact index, a filter, the few
        left of a graph) is done here and now, as ``search`` does it, since it reads SQLite.
        """
        q = self._check_vectors(query, 1)
        if k <= 0:
            return lambda: []
        state = self._state
        with state.lock:
            self._sync()  # once: the searches found here and now rank on this catch-up
            excluded = self._labels(excluded_ids)
            if allowed_ids is not None or state.kind != "hnsw" or not walks_all(state, excluded):
                hits = self._search_synced(q, k, allowed_ids, excluded)
                return lambda: hits
        walked = begin_walk(state, q, k, excluded)

        def collect() -> list[tuple[int, float]]:
            found = walked()
            # Short (the graph missed some): scored exactly here, where SQLite may be read.
            return self.search(query, k, allowed_ids, excluded_ids) if found is None else found

        return collect

    def scores(self, query: FloatArray, item_ids: Collection[int]) -> dict[int, float]:
        """Exact cosine of ``query`` with each of ``item_ids`` that has a vector."""
        q = self._check_vectors(query, 1)[0]
        ids = sorted({int(i) for i in item_ids})
        if not ids:
            return {}
        rows = self.db.conn.execute(
            "SELECT item_id, embedding FROM vectors WHERE tier = ? AND agent_id = ? AND key = ? "
            "AND item_id IN (SELECT value FROM json_each(?))",
            (self.tier, self.agent_id, self.key, json.dumps(ids)),
        ).fetchall()
        if not rows:
            return {}
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
        sims = matrix.reshape(len(rows), self.dim) @ q
        return {int(row[0]): float(s) for row, s in zip(rows, sims.tolist(), strict=True)}

    @classmethod
    def drop_tier(
        cls, db: sqlite_utils.Database, *, tier: Tier, agent_id: str, cache_dir: Path | str
    ) -> None:
        """Delete every vector, the model record and the cache files of a tier of an agent.

        Used before re-embedding a tier with another model.
        """
        with transaction(db):
            db.conn.execute("DELETE FROM vectors WHERE tier = ? AND agent_id = ?", (tier, agent_id))
            db.conn.execute(
                "DELETE FROM vector_state WHERE tier = ? AND agent_id = ?", (tier, agent_id)
            )
            db.conn.execute("DELETE FROM meta WHERE key = ?", (identity_key(tier, agent_id),))
        unload_tier(remove_tier_files(cache_dir, agent_id, tier), tier)

    # ------------------------------------------------------------------ internals

    def _check_vectors(self, vectors: FloatArray, rows: int) -> FloatArray:
        array = normalize(vectors)
        if array.shape != (rows, self.dim):
            raise ValueError(
                f"expected {rows} vector(s) of dimension {self.dim}, got shape {array.shape}"
            )
        return array


__all__ = [
    "AUTO_HNSW_MIN_VECTORS",
    "IndexKind",
    "VectorIndex",
    "delete_items_without_model",
    "forget_loaded_indexes",
]
