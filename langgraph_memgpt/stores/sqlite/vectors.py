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
"""

from __future__ import annotations

import functools
import json
import secrets
import threading
import weakref
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import sqlite_utils

from langgraph_memgpt.stores.embeddings import FloatArray, normalize
from langgraph_memgpt.stores.sqlite.db import database_id, transaction
from langgraph_memgpt.stores.sqlite.faiss_cache import (
    agent_cache_dir,
    read_cache,
    remove_orphan_temp_files,
    warn_once,
    write_cache,
)
from langgraph_memgpt.stores.sqlite.identity import check_embedding_identity, identity_key


@functools.cache
def _faiss() -> Any:
    """FAISS, imported on first use.

    Importing the package (a server, the CLI, a library caller on Postgres) does not load it.
    """
    import faiss

    return faiss


IndexKind = Literal["flat", "hnsw", "auto"]
Tier = str  # "recall" | "archival"

_HNSW_M = 32
_HNSW_EF_CONSTRUCTION = 80
_HNSW_EF_SEARCH = 128  # chosen with benchmarks/archival_1m.py's efSearch sweep
AUTO_HNSW_MIN_VECTORS = 20_000
"""An ``"auto"`` index turns from exact to HNSW once it holds this many vectors: an exact
scan grows with the vectors, an HNSW walk barely does. Below this an exact scan is as fast
and needs no graph building (``benchmarks/archival_1m.py`` measures both)."""
_BUILD_CHUNK = 8192
# Tombstones (replaced or deleted vectors still inside FAISS) are compacted away once they
# are this large a share of the index.
_TOMBSTONE_FRACTION = 0.1
_TOMBSTONE_MIN = 256
# Write the cache file after every change while it is small; a big index is written once
# enough of it changed (or on persist()/close()), since a stale file is caught up cheaply.
_AUTO_PERSIST_MAX_VECTORS = 5000
_AUTO_PERSIST_FRACTION = 0.1


_SEARCH_THREADS = threading.local()


def _use_one_search_thread() -> None:
    """Give FAISS one OpenMP thread in the calling thread, once per thread.

    One query on busy cores runs faster on one thread than on several fighting over them
    (``benchmarks/archival_1m.py`` compares 1 and 2). OpenMP keeps the count per calling
    thread, and a search usually runs on a worker thread (LangGraph runs each tool call
    on its executor's threads, new ones per tool step): set once per process, from one
    thread, it left the others at the default, each search starting a team of threads that
    spin on the cores the embedding model needs. Setting and restoring the count around
    each search raced instead (one thread's restore undid another's setting mid-search).
    """
    if getattr(_SEARCH_THREADS, "one", False):
        return
    _faiss().omp_set_num_threads(1)
    _SEARCH_THREADS.one = True


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
    folder = agent_cache_dir(cache_dir, agent_id)
    if folder.is_dir():
        for path in folder.glob(f"{tier}.*"):
            try:
                path.unlink(missing_ok=True)
            except OSError as err:
                warn_once(folder, err)


class _IndexState:
    """The loaded FAISS index of one (tier, agent, key).

    Shared by every VectorIndex of a process that points at the same database and cache
    folder, so two stores opened on one agent never hold diverging copies.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.index: Any = None
        self.item_of: dict[int, int] = {}  # live FAISS label -> item id
        self.label_of: dict[int, int] = {}  # item id -> live FAISS label
        self.tombstones: set[int] = set()  # labels inside FAISS that are no longer live
        self.kind: str = "flat"  # what the loaded index is ("flat" or "hnsw")
        self.generation: str | None = None
        self.unsaved = 0  # changes since the cache file was written


_STATES: weakref.WeakValueDictionary[tuple[object, ...], _IndexState] = (
    weakref.WeakValueDictionary()
)
_STATES_GUARD = threading.Lock()


def forget_loaded_indexes() -> None:
    """Drop every FAISS index loaded in this process; the next use reloads from disk.

    For tests and the crash harness, which simulate a fresh process.
    """
    with _STATES_GUARD:
        _STATES.clear()


class VectorIndex:
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

    def __init__(
        self,
        db: sqlite_utils.Database,
        *,
        tier: Tier,
        agent_id: str,
        cache_dir: Path | str,
        model: str,
        dim: int,
        key: str = "text",
        kind: IndexKind = "auto",
    ) -> None:
        if kind not in ("flat", "hnsw", "auto"):
            raise ValueError(f"index kind must be 'flat', 'hnsw' or 'auto', got {kind!r}")
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        self.db = db
        self.tier = tier
        self.agent_id = agent_id
        self.cache_dir = Path(cache_dir)
        self.model = model
        self.dim = dim
        self.key = key
        self.kind: IndexKind = kind
        check_embedding_identity(
            db, tier=tier, agent_id=agent_id, model=model, dim=dim, cache_dir=self.cache_dir
        )
        self.database_id = database_id(db)
        folder = agent_cache_dir(self.cache_dir, agent_id)
        self.path = folder / f"{tier}.{key}.faiss"
        self.sidecar_path = folder / f"{tier}.{key}.faiss.json"
        db_file = self._db_file()
        state_key = (
            db_file if db_file else id(db),
            self.database_id,
            str(self.path.resolve()),
            kind,
            model,
            dim,
        )
        with _STATES_GUARD:
            state = _STATES.get(state_key)
            if state is None:
                state = _STATES[state_key] = _IndexState()
        self._state = state

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
                    state.tombstones.add(old)
            labels = np.array([label_by_item[item] for item in ids], dtype=np.int64)
            state.index.add_with_ids(array, labels)
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
                    state.tombstones.add(old)
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
                    self._scrub(sorted(state.tombstones))
                else:
                    dead = np.array(sorted(state.tombstones), dtype=np.int64)
                    state.index.remove_ids(
                        _faiss().IDSelectorBatch(len(dead), _faiss().swig_ptr(dead))
                    )
                    state.tombstones = set()
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

    def _scrub(self, labels: list[int]) -> None:
        """Overwrite the stored vectors of ``labels`` in an HNSW index with zeros."""
        index = self._state.index
        graph: Any = _faiss().downcast_index(index.index)
        storage: Any = _faiss().downcast_index(graph.storage)
        total = int(storage.ntotal)
        stored = _faiss().rev_swig_ptr(storage.get_xb(), total * self.dim).reshape(total, self.dim)
        positions = np.flatnonzero(np.isin(_faiss().vector_to_array(index.id_map), labels))
        stored[positions] = 0.0

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
        state = self._state
        with state.lock:
            self._sync()
            excluded = {state.label_of[i] for i in excluded_ids if i in state.label_of}
            if allowed_ids is not None:
                labels = [
                    label
                    for label in (state.label_of.get(i) for i in set(allowed_ids))
                    if label is not None and label not in excluded
                ]
                if not labels:
                    return []
                if len(labels) == len(state.label_of):
                    return self._search_all(q, k)
                return self._search_labels(q, min(k, len(labels)), labels)
            if excluded:
                return self._search_excluding(q, k, excluded)
            return self._search_all(q, k)

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

    # ------------------------------------------------------------------ cache file

    def persist(self) -> None:
        """Write the FAISS cache and its sidecar atomically (tmp file, fsync, rename).

        A cache that cannot be written (a read-only or full disk, ``faiss`` being a file)
        is logged once and skipped: SQLite holds every vector, so search and writes go
        on, and the next open catches the cache up (or rebuilds it) from SQLite.
        """
        state = self._state
        with state.lock:
            self._sync()
            self._compact()
            try:
                self._write_cache_files()
            except OSError as err:
                warn_once(self.path.parent, err)
                state.unsaved = 0  # retried after the next changes, not on every read

    def _write_cache_files(self) -> None:
        state = self._state
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = _faiss().serialize_index(state.index).tobytes()
        labels = list(state.item_of)
        sidecar = {
            **self._cache_identity(),
            "kind": state.kind,
            "count": len(labels),
            "max_id": max(labels, default=0),
            "generation": state.generation,
        }
        write_cache(self.path, self.sidecar_path, data, sidecar)
        state.unsaved = 0

    def maybe_persist(self) -> None:
        """Write the cache file if enough changed since it was last written.

        Called after every write; a caller that upserts inside its own transaction calls
        it again after committing (writes inside a transaction are never persisted, as
        the transaction may still roll back). A small index is written after every
        change, a large one once a tenth of it changed: a stale file costs only a
        catch-up from SQLite on next open.
        """
        state = self._state
        with state.lock:
            if state.index is None or not state.unsaved:
                return
            if self.db.conn.in_transaction:
                # The caller may still roll back; the file is written by a later write or
                # close(), and a stale file is reconciled with SQLite on open anyway.
                return
            self._compact()
            live = len(state.label_of)
            if live <= _AUTO_PERSIST_MAX_VECTORS or state.unsaved >= _AUTO_PERSIST_FRACTION * live:
                self.persist()  # never raises for the disk: the cache is optional

    def rebuild(self) -> None:
        """Rebuild the FAISS cache from the vectors in SQLite and write it."""
        with self._state.lock:
            self._build_from_sql()
            self.persist()

    def close(self) -> None:
        """Write unsaved changes to the cache file."""
        with self._state.lock:
            if self._state.index is not None and self._state.unsaved:
                self.persist()

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
        folder = agent_cache_dir(cache_dir, agent_id)
        if folder.is_dir():
            for path in folder.glob(f"{tier}.*"):
                try:
                    path.unlink(missing_ok=True)
                except OSError as err:  # the sidecar no longer matches: never trusted
                    warn_once(folder, err)
        with _STATES_GUARD:
            for state_key, state in list(_STATES.items()):
                if str(state_key[1]).startswith(str(folder.resolve() / f"{tier}.")):
                    with state.lock:
                        state.index = None
                        state.generation = None

    # ------------------------------------------------------------------ internals

    def _db_file(self) -> str | None:
        for _seq, name, file in self.db.conn.execute("PRAGMA database_list").fetchall():
            if name == "main" and file:
                return str(file)
        return None

    def _check_vectors(self, vectors: FloatArray, rows: int) -> FloatArray:
        array = normalize(vectors)
        if array.shape != (rows, self.dim):
            raise ValueError(
                f"expected {rows} vector(s) of dimension {self.dim}, got shape {array.shape}"
            )
        return array

    def _wanted_kind(self, live: int) -> str:
        """The index a store should hold for ``live`` vectors.

        An ``"auto"`` index never turns back: one that shrank below the threshold keeps
        its graph.
        """
        if self.kind != "auto":
            return self.kind
        if live >= AUTO_HNSW_MIN_VECTORS or self._state.kind == "hnsw":
            return "hnsw"
        return "flat"

    def _new_index(self, kind: str) -> Any:
        if kind == "hnsw":
            index: Any = _faiss().index_factory(
                self.dim, f"IDMap,HNSW{_HNSW_M},Flat", _faiss().METRIC_INNER_PRODUCT
            )
            graph: Any = _faiss().downcast_index(index.index)
            graph.hnsw.efConstruction = _HNSW_EF_CONSTRUCTION
            return index
        return _faiss().index_factory(self.dim, "IDMap,Flat", _faiss().METRIC_INNER_PRODUCT)

    def _bump_generation(self) -> str:
        generation = secrets.token_hex(8)
        self.db.conn.execute(
            "INSERT INTO vector_state (tier, agent_id, key, generation) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (tier, agent_id, key) DO UPDATE SET generation = excluded.generation",
            (self.tier, self.agent_id, self.key, generation),
        )
        return generation

    def _db_generation(self) -> str | None:
        row = self.db.conn.execute(
            "SELECT generation FROM vector_state WHERE tier = ? AND agent_id = ? AND key = ?",
            (self.tier, self.agent_id, self.key),
        ).fetchone()
        return None if row is None else str(row[0])

    def _live_labels(self) -> dict[int, int]:
        rows = self.db.conn.execute(
            "SELECT id, item_id FROM vectors WHERE tier = ? AND agent_id = ? AND key = ?",
            (self.tier, self.agent_id, self.key),
        ).fetchall()
        return {int(label): int(item) for label, item in rows}

    def _fetch(self, labels: Sequence[int]) -> tuple[np.ndarray[Any, Any], FloatArray]:
        """Read vectors by label from SQLite, in chunks."""
        found: list[int] = []
        blobs: list[bytes] = []
        for start in range(0, len(labels), _BUILD_CHUNK):
            chunk = labels[start : start + _BUILD_CHUNK]
            for label, blob in self.db.conn.execute(
                "SELECT id, embedding FROM vectors WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(chunk)),),
            ):
                found.append(int(label))
                blobs.append(blob)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(found), self.dim)
        return np.array(found, dtype=np.int64), np.ascontiguousarray(matrix)

    def _sync(self) -> None:
        """Load the cache, or catch up with writes made through another connection.

        Also where an ``"auto"`` index turns HNSW: never inside a transaction, since
        building a graph takes seconds and a transaction holds
        the database's write lock, which other writers wait for only 10 s.
        """
        state = self._state
        if state.index is None:
            self._load()
        elif self._db_generation() != state.generation:
            self._reconcile(self._live_labels())
            state.generation = self._db_generation()
        if self._wanted_kind(len(state.label_of)) != state.kind and self._may_build_graph():
            self._build_from_sql(dict(state.item_of))
            self.maybe_persist()  # the graph is worth keeping; a failed write is not fatal

    def _may_build_graph(self) -> bool:
        return not self.db.conn.in_transaction

    def _load(self) -> None:
        """Open the cache file if it is intact and ours, then reconcile it with SQLite."""
        remove_orphan_temp_files(self.path, self.sidecar_path)
        state = self._state
        generation = self._db_generation()
        live = self._live_labels()
        index = self._read_cache_file()
        if index is None:
            self._build_from_sql(live)
            state.generation = generation
            if state.label_of or self.path.exists():
                self.persist()
            return
        state.index = index
        state.item_of = {}
        state.label_of = {}
        state.tombstones = set()
        for label in _faiss().vector_to_array(index.id_map).tolist():
            if label in live:
                state.item_of[label] = live[label]
                state.label_of[live[label]] = label
            else:
                state.tombstones.add(label)
        changed = self._reconcile(live)
        state.generation = generation
        if changed:
            self.persist()

    def _cache_identity(self) -> dict[str, Any]:
        """What a cache file must be for to be this index's (its sidecar's fields)."""
        return {
            "database_id": self.database_id,
            "tier": self.tier,
            "agent_id": self.agent_id,
            "key": self.key,
            "model": self.model,
            "dim": self.dim,
        }

    def _read_cache_file(self) -> Any:
        """Return the cached index, or None when it is missing, damaged or not for this store."""
        found = read_cache(self.path, self.sidecar_path, self._cache_identity())
        if found is None:
            return None
        data, kind = found
        if self.kind not in (kind, "auto"):
            return None
        try:
            index = _faiss().deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except RuntimeError:
            return None
        if index.d != self.dim or not hasattr(index, "id_map"):
            return None
        if _faiss().vector_to_array(index.id_map).size != index.ntotal:
            return None
        self._state.kind = kind
        return index

    def _reconcile(self, live: dict[int, int]) -> bool:
        """Make the loaded index hold exactly the live vectors; returns whether it changed."""
        state = self._state
        missing = [label for label in live if label not in state.item_of]
        extra = [label for label in state.item_of if label not in live]
        for label in extra:
            item = state.item_of.pop(label)
            if state.label_of.get(item) == label:
                del state.label_of[item]
            state.tombstones.add(label)
        if missing:
            for item in {live[label] for label in missing}:
                old = state.label_of.pop(item, None)
                if old is not None:
                    state.item_of.pop(old, None)
                    state.tombstones.add(old)
            labels, matrix = self._fetch(missing)
            state.index.add_with_ids(matrix, labels)
            for label in labels.tolist():
                state.item_of[label] = live[label]
                state.label_of[live[label]] = label
        changed = bool(missing or extra)
        if changed:
            state.unsaved += len(missing) + len(extra)
        self._compact()
        return changed

    def _build_from_sql(self, live: dict[int, int] | None = None) -> None:
        state = self._state
        live = self._live_labels() if live is None else live
        kind = self._wanted_kind(len(live))
        if kind == "hnsw" and self.kind == "auto" and not self._may_build_graph():
            kind = "flat"  # exact until the next use outside the transaction (see _sync)
        state.kind = kind
        index = self._new_index(state.kind)
        labels = sorted(live)
        for start in range(0, len(labels), _BUILD_CHUNK):
            found, matrix = self._fetch(labels[start : start + _BUILD_CHUNK])
            if len(found):
                index.add_with_ids(matrix, found)
        state.index = index
        state.item_of = dict(live)
        state.label_of = {item: label for label, item in live.items()}
        state.tombstones = set()
        state.unsaved = max(len(live), 1)

    def _compact(self) -> None:
        """Drop tombstones from FAISS once they are a noticeable share of the index."""
        state = self._state
        if not state.tombstones:
            return
        total = int(state.index.ntotal)
        if len(state.tombstones) < max(_TOMBSTONE_MIN, _TOMBSTONE_FRACTION * total):
            return
        if state.kind == "hnsw":  # an HNSW graph cannot delete: rebuild it, but not while
            if self._may_build_graph():  # holding the write lock (dead entries are skipped)
                self._build_from_sql(dict(state.item_of))
            return
        dead = np.array(sorted(state.tombstones), dtype=np.int64)
        state.index.remove_ids(_faiss().IDSelectorBatch(len(dead), _faiss().swig_ptr(dead)))
        state.tombstones = set()

    def _run_search(
        self, q: FloatArray, k: int, selector: Any, keep: list[Any]
    ) -> list[tuple[int, float]]:
        state = self._state
        if state.kind == "hnsw":
            params: Any = getattr(_faiss(), "SearchParametersHNSW")()  # noqa: B009 (no stub)
            params.efSearch = max(_HNSW_EF_SEARCH, 2 * k)
        else:
            params = _faiss().SearchParameters()
        if selector is not None:
            params.sel = selector
        keep.append(params)
        _use_one_search_thread()
        distances, labels = state.index.search(q, k, params=params)
        hits: list[tuple[int, float]] = []
        for label, score in zip(labels[0].tolist(), distances[0].tolist(), strict=True):
            item = state.item_of.get(label)
            if label >= 0 and item is not None:
                hits.append((item, float(score)))
        return hits

    def _search_all(self, q: FloatArray, k: int) -> list[tuple[int, float]]:
        state = self._state
        live = len(state.label_of)
        k = min(k, live)
        if k == 0:
            return []
        keep: list[Any] = []
        selector = None
        if state.tombstones:
            dead = np.array(sorted(state.tombstones), dtype=np.int64)
            batch = _faiss().IDSelectorBatch(len(dead), _faiss().swig_ptr(dead))
            selector = _faiss().IDSelectorNot(batch)
            keep += [dead, batch]
        hits = self._run_search(q, k, selector, keep)
        if len(hits) < k:  # an approximate graph can miss; never return short
            return self._exact(q, k, list(state.item_of))
        return hits

    def _search_excluding(
        self, q: FloatArray, k: int, excluded: set[int]
    ) -> list[tuple[int, float]]:
        """Search every live vector but the ``excluded`` labels.

        The same ranking as :meth:`_search_labels` over the labels left, with a selector
        of the few left out (and the tombstones) instead of the many kept.
        """
        state = self._state
        live = len(state.label_of) - len(excluded)
        if live <= 0:
            return []
        k = min(k, live)
        if state.kind == "hnsw" and live <= max(4096, state.index.ntotal // 20):
            return self._exact(q, k, [i for i in state.item_of if i not in excluded])
        dead = np.array(sorted(state.tombstones | excluded), dtype=np.int64)
        batch = _faiss().IDSelectorBatch(len(dead), _faiss().swig_ptr(dead))
        hits = self._run_search(q, k, _faiss().IDSelectorNot(batch), [dead, batch])
        if len(hits) < k:
            return self._exact(q, k, [i for i in state.item_of if i not in excluded])
        return hits

    def _search_labels(self, q: FloatArray, k: int, labels: list[int]) -> list[tuple[int, float]]:
        state = self._state
        if state.kind == "hnsw" and len(labels) <= max(4096, state.index.ntotal // 20):
            # A narrow filter starves an HNSW walk; scoring a few thousand vectors exactly
            # is both cheaper and complete.
            return self._exact(q, k, labels)
        allowed = np.array(labels, dtype=np.int64)
        batch = _faiss().IDSelectorBatch(len(allowed), _faiss().swig_ptr(allowed))
        hits = self._run_search(q, k, batch, [allowed])
        if len(hits) < k:
            return self._exact(q, k, labels)
        return hits

    def _exact(self, q: FloatArray, k: int, labels: list[int]) -> list[tuple[int, float]]:
        found, matrix = self._fetch(labels)
        if not len(found):
            return []
        sims = matrix @ q[0]
        hits: list[tuple[int, float]] = []
        for i in np.argsort(-sims, kind="stable").tolist():
            item = self._state.item_of.get(int(found[i]))
            if item is not None:
                hits.append((item, float(sims[i])))
                if len(hits) == k:
                    break
        return hits


__all__ = [
    "AUTO_HNSW_MIN_VECTORS",
    "IndexKind",
    "VectorIndex",
    "delete_items_without_model",
    "forget_loaded_indexes",
]
