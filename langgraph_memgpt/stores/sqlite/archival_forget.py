"""Forgetting archival passages in SQLite: the rows and everything derived from them.

A forgotten passage must leave no trace a search could find: its row (triggers drop its
tags, words and counts), its vectors whole and in parts, and their bytes in the FAISS
cache files (purged once the deletion committed). Each deletion is logged without its
text. Retention rules and ``forget`` delete through here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from langgraph_memgpt.stores.passages import deletion_kind
from langgraph_memgpt.stores.sqlite.archival_rows import (
    COLUMNS,
    TIER,
    VECTOR_KEY,
    passage_from_row,
)
from langgraph_memgpt.stores.sqlite.db import transaction
from langgraph_memgpt.stores.sqlite.deletions import LogRow, log_deletions
from langgraph_memgpt.stores.sqlite.parts import PartIndex, delete_parts_without_model
from langgraph_memgpt.stores.sqlite.vectors import VectorIndex, delete_items_without_model
from langgraph_memgpt.stores.types import Passage


@dataclass(frozen=True)
class ArchivalForgetting:
    """Deletes one agent's archival passages (``SqliteArchivalMemory.delete`` and ``delete_all``).

    Args:
        db: The memory database.
        agent_id: The agent whose passages are deleted.
        index: The agent's archival vectors, or None without an embedding model.
        parts: The vectors of long passages' parts, or None without an embedding model.
        cache_dir: Folder of the FAISS caches (the no-model path edits them directly).
    """

    db: sqlite_utils.Database
    agent_id: str
    index: VectorIndex | None
    parts: PartIndex | None
    cache_dir: Path

    def passages(self, ids: list[int], actor: str, detail: str) -> list[Passage]:
        """Delete these passages (sorted ids) of the agent, each logged; returns them."""
        with transaction(self.db):
            rows = self.db.conn.execute(
                f"SELECT {COLUMNS} FROM archival AS b WHERE b.agent_id = ? "
                "AND b.id IN (SELECT value FROM json_each(?)) ORDER BY b.id",
                (self.agent_id, json.dumps(ids)),
            ).fetchall()
            deleted = [passage_from_row(row) for row in rows]
            log = [(deletion_kind(p), str(p.id), p.thread_id, detail) for p in deleted]
            self._delete_rows([p.id for p in deleted], actor, log)
        self._purge()
        return deleted

    def everything(self, actor: str) -> int:
        """Delete every passage of the agent (one log entry, kind ``archival``)."""
        with transaction(self.db):
            ids = [
                int(r[0])
                for r in self.db.conn.execute(
                    "SELECT id FROM archival WHERE agent_id = ?", (self.agent_id,)
                )
            ]
            if not ids:
                return 0
            log = [("archival", self.agent_id, None, f"{len(ids)} passages")]
            self._delete_rows(ids, actor, log)
        self._purge()
        return len(ids)

    def _purge(self) -> None:
        """Drop deleted vectors (whole and parts) from FAISS and its files, after the commit."""
        if self.index is not None and self.parts is not None:
            self.index.purge()
            self.parts.purge()

    def _delete_rows(self, ids: list[int], actor: str, log: Sequence[LogRow]) -> None:
        """Delete passages in the caller's transaction (triggers drop words and counts)."""
        if not ids:
            return
        self.db.conn.execute(
            "DELETE FROM archival WHERE agent_id = ? AND id IN (SELECT value FROM json_each(?))",
            (self.agent_id, json.dumps(ids)),
        )
        if self.index is not None and self.parts is not None:
            self.index.delete(ids)
            self.parts.delete(ids)
        else:
            # Parts first: they are found through the whole vectors' key.
            delete_parts_without_model(
                self.db,
                tier=TIER,
                agent_id=self.agent_id,
                cache_dir=self.cache_dir,
                item_ids=ids,
                key=VECTOR_KEY,
            )
            delete_items_without_model(
                self.db, tier=TIER, agent_id=self.agent_id, cache_dir=self.cache_dir, item_ids=ids
            )
        log_deletions(self.db, self.agent_id, actor, log)


__all__ = ["ArchivalForgetting"]
