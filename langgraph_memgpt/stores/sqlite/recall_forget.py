"""Forgetting recall messages in SQLite: the rows and everything derived from them.

A forgotten message must leave no trace a search could find: its row, both full-text
entries, every vector, and its words and vector in its neighbours' contexts. Its key is
kept, so re-recording a queue that still holds it adds nothing, and the deletion is
logged without its text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import sqlite_utils

from langgraph_memgpt.stores.context_windows import NewContext
from langgraph_memgpt.stores.messages import message_from_row, row_columns
from langgraph_memgpt.stores.sqlite.db import transaction
from langgraph_memgpt.stores.sqlite.deletions import LogRow, log_deletions, remember_forgotten
from langgraph_memgpt.stores.sqlite.recall_context import refresh_contexts, thread_windows
from langgraph_memgpt.stores.sqlite.recall_vectors import RecallVectors, forget_without_model
from langgraph_memgpt.stores.sqlite.recall_writes import never_reuse
from langgraph_memgpt.stores.types import RecallMessage


class RecallForgetting:
    """Deletes one agent's recall messages (``SqliteRecallMemory.delete`` and its bulk forms).

    Args:
        db: The memory database.
        agent_id: The agent whose messages are deleted.
        vectors: The agent's recall vectors, or None without an embedding model.
        cache_dir: Folder of the FAISS caches (the no-model path edits them directly).
    """

    def __init__(
        self,
        db: sqlite_utils.Database,
        agent_id: str,
        vectors: RecallVectors | None,
        cache_dir: Path,
    ) -> None:
        self.db = db
        self.agent_id = agent_id
        self.vectors = vectors
        self.cache_dir = cache_dir

    def messages(
        self, message_ids: Sequence[str], thread_id: str | None, actor: str
    ) -> list[RecallMessage]:
        """Delete messages by id (in one thread, or every thread), each logged on its own."""
        wanted = list(dict.fromkeys(str(m) for m in message_ids))
        if not wanted:
            return []
        sql = (
            f"SELECT {row_columns()} FROM recall WHERE agent_id = ? "
            "AND message_id IN (SELECT value FROM json_each(?))"
        )
        params: list[object] = [self.agent_id, json.dumps(wanted)]
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        with transaction(self.db):
            rows = self.db.conn.execute(sql + " ORDER BY id", params).fetchall()
            deleted = [message_from_row(row) for row in rows]
            log = [("message", m.message_id, m.thread_id, "") for m in deleted]
            self._delete_rows([int(row[0]) for row in rows], deleted, actor, log)
        self._purge()
        return deleted

    def where(self, where: str, params: list[object], actor: str, kind: str, item: str) -> int:
        """Delete every message matching ``where``, logged as one entry of ``kind``."""
        with transaction(self.db):
            rows = self.db.conn.execute(
                f"SELECT {row_columns()} FROM recall WHERE agent_id = ? AND {where} ORDER BY id",
                [self.agent_id, *params],
            ).fetchall()
            if not rows:
                return 0
            deleted = [message_from_row(row) for row in rows]
            threads = sorted({m.thread_id for m in deleted})
            log = [
                (
                    kind,
                    item,
                    item if kind == "thread" else None,
                    f"{len(rows)} messages"
                    + ("" if kind == "thread" else f" in {len(threads)} threads"),
                )
            ]
            self._delete_rows([int(row[0]) for row in rows], deleted, actor, log)
        self._purge()
        return len(rows)

    def _delete_rows(
        self,
        rowids: list[int],
        deleted: list[RecallMessage],
        actor: str,
        log: Sequence[LogRow],
    ) -> None:
        """Delete rows and everything derived from them (inside the caller's transaction)."""
        if not rowids:
            return
        gone = set(rowids)
        threads = sorted({m.thread_id for m in deleted})
        # Messages whose context window held a deleted message must be recomputed.
        windows = thread_windows(self.db.conn, self.agent_id, threads)
        touched: dict[str, set[int]] = {}
        thread_of = {i: m.thread_id for i, m in zip(rowids, deleted, strict=True)}
        for item_id, window in windows.items():
            if item_id not in gone and gone.intersection(window):
                thread = next(thread_of[i] for i in window if i in gone)
                touched.setdefault(thread, set()).add(item_id)
        self.db.conn.execute(  # triggers remove both full-text entries
            "DELETE FROM recall WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(rowids),),
        )
        never_reuse(self.db, max(rowids))
        remember_forgotten(self.db, self.agent_id, ((m.thread_id, m.message_id) for m in deleted))
        log_deletions(self.db, self.agent_id, actor, log)
        changed: list[NewContext] = []
        for thread, ids in touched.items():
            changed.extend(refresh_contexts(self.db.conn, self.agent_id, thread, ids))
        if self.vectors is not None:
            self.vectors.forget(rowids)
            # A refreshed window may move between the context and the tail index.
            self.vectors.repool({row.id: row.window for row in changed})
        else:
            stale = sorted(i for ids in touched.values() for i in ids)
            forget_without_model(self.db, self.agent_id, self.cache_dir, rowids, stale)

    def _purge(self) -> None:
        if self.vectors is not None:
            self.vectors.purge()


__all__ = ["RecallForgetting"]
