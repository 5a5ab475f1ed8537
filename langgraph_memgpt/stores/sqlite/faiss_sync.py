"""The loaded FAISS copy of one vector index, kept in step with SQLite and its cache file.

SQLite is the source of truth; the FAISS index a process searches is a copy of its rows,
and the cache file (``faiss_cache``) a copy of that copy, kept only to save rebuilding it
on open. :class:`SyncedIndex` is that lifecycle, the base of ``VectorIndex``:

- **Shared per process.** Every index of one database, cache folder, key, kind and model
  in a process uses one :class:`~langgraph_memgpt.stores.sqlite.faiss_index.IndexState`,
  so two stores opened on one agent never hold diverging copies.
- **Loaded, never trusted blindly.** The first use reads the cache file if it is intact
  and this index's, then reconciles it with the rows; anything else is rebuilt from SQLite.
- **Caught up by generation.** Every write through any connection stamps a new random
  generation in ``vector_state``; a copy whose generation differs reconciles with the rows
  before it is searched or written on, so it never misses another process's writes.
- **Compacted and persisted when worth it.** Tombstones are dropped once they are a
  noticeable share of the index; the cache file is written after every change while the
  index is small, once enough changed when it is big, and never inside a transaction
  that may still roll back. A cache that cannot be written is skipped: SQLite holds
  every vector.
- **HNSW built outside transactions.** An ``"auto"`` index turns HNSW (or an HNSW graph
  is rebuilt) only outside a transaction, which would hold the database's write lock
  for the whole build.
"""

from __future__ import annotations

import json
import secrets
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from langgraph_memgpt.stores.embeddings import FloatArray
from langgraph_memgpt.stores.sqlite import faiss_pending as pending
from langgraph_memgpt.stores.sqlite.db import database_id
from langgraph_memgpt.stores.sqlite.faiss_cache import (
    agent_cache_dir,
    read_cache,
    remove_orphan_temp_files,
    warn_once,
    write_cache,
)
from langgraph_memgpt.stores.sqlite.faiss_index import (
    IndexKind,
    IndexState,
    deserialize,
    labels_in,
    new_index,
    remove_tombstones,
    serialize,
    wanted_kind,
)
from langgraph_memgpt.stores.sqlite.identity import check_embedding_identity

Tier = str  # "recall" | "archival"

_BUILD_CHUNK = 8192
# Tombstones (replaced or deleted vectors still inside FAISS) are compacted away once they
# are this large a share of the index.
_TOMBSTONE_FRACTION = 0.1
_TOMBSTONE_MIN = 256
# Write the cache file after every change while it is small; a big index is written once
# enough of it changed (or on persist()/close()), since a stale file is caught up cheaply.
_AUTO_PERSIST_MAX_VECTORS = 5000
_AUTO_PERSIST_FRACTION = 0.1


_STATES: weakref.WeakValueDictionary[tuple[object, ...], IndexState] = weakref.WeakValueDictionary()
_STATES_GUARD = threading.Lock()


def forget_loaded_indexes() -> None:
    """Drop every FAISS index loaded in this process; the next use reloads from disk.

    For tests and the crash harness, which simulate a fresh process.
    """
    with _STATES_GUARD:
        _STATES.clear()


def unload_tier(folder: Path, tier: Tier) -> None:
    """Mark the loaded indexes of a tier in ``folder`` unloaded (its vectors were dropped)."""
    prefix = str(folder.resolve() / f"{tier}.")
    with _STATES_GUARD:
        for state_key, state in list(_STATES.items()):
            _db, _database_id, path, *_rest = state_key  # as SyncedIndex.__init__ makes it
            if str(path).startswith(prefix):
                with state.lock:
                    state.index = None
                    state.generation = None


class SyncedIndex:
    """One (tier, agent, key)'s FAISS copy: loaded, caught up, compacted and persisted.

    The base of ``VectorIndex``, which documents the arguments and adds the writes and
    searches; each of those first calls :meth:`_sync` under the state's lock.

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
                state = _STATES[state_key] = IndexState()
        self._state = state

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
        pending.flush(state)  # a cache file holds every live vector its sidecar counts
        data = serialize(state.index)
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

    # ------------------------------------------------------------------ internals

    def _db_file(self) -> str | None:
        for _seq, name, file in self.db.conn.execute("PRAGMA database_list").fetchall():
            if name == "main" and file:
                return str(file)
        return None

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
        wanted = wanted_kind(self.kind, len(state.label_of), state.kind)
        if wanted != state.kind and self._may_build_graph():
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
        state.pending = {}
        for label in labels_in(index):
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
        index = deserialize(data, self.dim)
        if index is None:
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
            pending.drop(state, label)
        if missing:
            for item in {live[label] for label in missing}:
                old = state.label_of.pop(item, None)
                if old is not None:
                    state.item_of.pop(old, None)
                    pending.drop(state, old)
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
        kind = wanted_kind(self.kind, len(live), state.kind)
        if kind == "hnsw" and self.kind == "auto" and not self._may_build_graph():
            kind = "flat"  # exact until the next use outside the transaction (see _sync)
        state.kind = kind
        index = new_index(self.dim, state.kind)
        labels = sorted(live)
        for start in range(0, len(labels), _BUILD_CHUNK):
            found, matrix = self._fetch(labels[start : start + _BUILD_CHUNK])
            if len(found):
                index.add_with_ids(matrix, found)
        state.index = index
        state.item_of = dict(live)
        state.label_of = {item: label for label, item in live.items()}
        state.tombstones = set()
        state.pending = {}  # the graph was built from every live vector
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
        remove_tombstones(state)


__all__ = ["SyncedIndex", "Tier", "forget_loaded_indexes", "unload_tier"]
