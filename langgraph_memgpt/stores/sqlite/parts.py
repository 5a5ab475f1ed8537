"""Part vectors of long messages and passages in SQLite + FAISS (``stores.chunks`` says why).

A tier's parts are a second ``VectorIndex`` beside its whole-text one, keyed ``<key>.parts``,
whose items are part ids (``chunks.part_id``); search maps the parts back to their items.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import sqlite_utils

from langgraph_memgpt.stores.chunks import PART_SLOTS, best_parts, keyed_parts
from langgraph_memgpt.stores.embeddings import FloatArray
from langgraph_memgpt.stores.sqlite.vectors import VectorIndex, delete_items_without_model


class PartIndex:
    """The part vectors of one tier of one agent in SQLite + FAISS (key ``<key>.parts``).

    A ``VectorIndex`` whose items are part ids (``chunks.part_id``), opened beside the tier's
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

    def begin_nearest(
        self,
        vector: FloatArray,
        k: int,
        allowed: Collection[int] | None,
        excluded: Collection[int] = (),
    ) -> Callable[[], dict[int, float]]:
        """``{item: best part similarity}`` of the items among the ``2k`` nearest parts, begun.

        ``2k`` parts, since several parts of one item may be near: the items are then
        fewer than the parts. ``allowed``: only these items (None: all); ``excluded``:
        never these (``VectorIndex.search``'s ``excluded_ids``, for a few items). The part
        ids are read here; the walk may run beside the caller (``VectorIndex.begin_search``).
        """
        allowed_parts = None
        if allowed is not None:
            allowed_parts = part_ids(self.db, self.tier, self.agent_id, self.key, allowed)
            if not allowed_parts:
                return lambda: {}
        excluded_parts = part_ids(self.db, self.tier, self.agent_id, self.key, excluded)
        found = self.index.begin_search(
            vector, 2 * k, allowed_ids=allowed_parts, excluded_ids=excluded_parts
        )
        return lambda: best_parts(found())

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


__all__ = ["PartIndex", "delete_parts_without_model", "part_ids"]
