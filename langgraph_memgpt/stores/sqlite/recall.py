"""Recall memory: every message of an agent, verbatim, searchable by words, meaning and date.

Messages are written ahead of the checkpoint and idempotently (one row per thread and
message id), so a retried step never duplicates history and an edited message is
updated. Search fuses four signals (``stores.ranking.fuse``: words min-max scaled, vectors by
similarity): BM25 over
the message, BM25 over the message with its ±2 neighbours of the same thread
("context"), and cosine similarity of the message's embedding and of the embedded
"date: context". The context lets an answer such as "Biscuit!" be found by the question
that preceded it ("what is your puppy's name?").

Tool results, and messages recorded with ``searchable=False`` (the model's own search
calls: ``main_context.to_recall`` marks them), are stored but never searchable, so a
search cannot find the results of earlier searches (recursive echoes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import nullcontext
from pathlib import Path

import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.base import SearchMode
from langgraph_memgpt.stores.messages import (
    PreparedMessage,
    is_searchable,
    message_from_row,
    prepare_message,
    searchable_text,
)
from langgraph_memgpt.stores.search import RecallFilter, SearchesRecall, Signals
from langgraph_memgpt.stores.sqlite import recall_feed
from langgraph_memgpt.stores.sqlite.db import texts
from langgraph_memgpt.stores.sqlite.recall_forget import RecallForgetting
from langgraph_memgpt.stores.sqlite.recall_rows import BY_TIME, COLUMNS, excluding, filters
from langgraph_memgpt.stores.sqlite.recall_signals import RecallSignals
from langgraph_memgpt.stores.sqlite.recall_vectors import RecallVectors
from langgraph_memgpt.stores.sqlite.recall_writes import ingest, not_forgotten
from langgraph_memgpt.stores.types import Excluded, RecallMessage, SearchPage, check_page

INGEST_CHUNK = 256
"""Messages per transaction (and per embedding call) in :meth:`SqliteRecallMemory.add_many`."""


class SqliteRecallMemory(SearchesRecall):
    """The verbatim message history of one agent.

    The work is done by one module per job: writes (``recall_writes``), vector upkeep
    (``recall_vectors``), forgetting (``recall_forget``), storage order (``recall_feed``),
    neighbour contexts (``recall_context``) and search signals (``recall_signals``); this
    class is the tier's interface and reads messages back.

    Args:
        db: The memory database (:func:`~langgraph_memgpt.stores.sqlite.db.open_db`).
        agent_id: The agent whose messages this object reads and writes; every query is
            filtered on it, and its vectors live in its own FAISS indexes.
        embeddings: Embedding model for the vector signals; None keeps search to words only.
        cache_dir: Folder of the FAISS caches (``<data_dir>/faiss``).

    Raises:
        EmbeddingMismatchError: Recall vectors of this agent were made by another model.
    """

    def __init__(
        self,
        db: sqlite_utils.Database,
        agent_id: str,
        embeddings: Embeddings | None,
        cache_dir: Path | str,
    ) -> None:
        self.db = db
        self.agent_id = agent_id
        self.embeddings = embeddings
        self.cache_dir = Path(cache_dir)
        self._names: list[str] | None = None
        self.vectors = (
            None if embeddings is None else RecallVectors(db, agent_id, embeddings, self.cache_dir)
        )
        self._forgetting = RecallForgetting(db, agent_id, self.vectors, self.cache_dir)

    # -- writing ---------------------------------------------------------------------

    def add(self, messages: Sequence[RecallMessage]) -> int:
        """Store messages in one transaction; a message is its (thread, message id).

        A message stored with the same content is left alone, so re-recording after a
        crash or a retry adds nothing; one stored with other content (an edited and rerun
        message) is updated, words and vectors too. Also refreshes the context (words and
        vector) of the neighbours the messages join, so a message is found by what was
        said after it too.

        Args:
            messages: Messages of this agent, any threads.

        Returns:
            How many messages were new or changed.

        Raises:
            ValueError: A message belongs to another agent or has an unreadable created_at.
        """
        prepared = self._prepared(messages)
        if not prepared:
            return 0
        return self._ingest(prepared)

    def add_many(
        self,
        messages: Iterable[RecallMessage],
        *,
        chunk_size: int = INGEST_CHUNK,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Bulk-ingest a history (thousands of messages), idempotently.

        Messages are ordered by thread and time, then written in chunks of
        ``chunk_size``: one transaction and one embedding call per chunk, contexts
        computed in one pass per thread. A crash loses at most the current chunk, and
        running the ingest again skips what is stored.

        Args:
            messages: Messages of this agent.
            chunk_size: Messages per transaction and embedding batch.
            progress: Called with the number of messages processed after each chunk.

        Returns:
            How many messages were new or changed.
        """
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        prepared = self._prepared(messages)
        # Stable sort: messages with equal timestamps keep their given order.
        prepared.sort(key=lambda p: (p.message.thread_id, p.created_at))
        added = 0
        for start in range(0, len(prepared), chunk_size):
            chunk = prepared[start : start + chunk_size]
            added += self._ingest(chunk)
            if progress is not None:
                progress(start + len(chunk))
        # Vectors were added inside transactions, where the FAISS files are not written
        # (a rollback would make them wrong); write them once now that all is committed.
        self.close()
        return added

    def embed_missing(
        self,
        chunk_size: int = INGEST_CHUNK,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Embed searchable messages that have no vectors yet (after a re-embed or FTS-only use).

        Args:
            chunk_size: Messages per transaction and embedding batch.
            progress: Called with (messages embedded so far, messages to embed) after each
                chunk.

        Returns:
            How many messages were embedded.
        """
        if self.vectors is None:
            return 0
        return self.vectors.embed_missing(chunk_size, progress)

    def close(self) -> None:
        """Write the FAISS caches (they are also brought up to date on next open)."""
        if self.vectors is not None:
            self.vectors.close()

    def _prepared(self, messages: Iterable[RecallMessage]) -> list[PreparedMessage]:
        """The messages checked and made storable, less those forgotten before."""
        prepared = [prepare_message(self.agent_id, m) for m in messages]
        return not_forgotten(self.db, self.agent_id, prepared)

    def _ingest(self, batch: Sequence[PreparedMessage]) -> int:
        written = ingest(self.db, self.agent_id, self.vectors, batch)
        if self._names is not None:
            # Extend the cached participants instead of re-reading every message:
            # a DISTINCT scan per search would grow with the agent's messages.
            for _, item in written:
                name = item.message.name
                if item.searchable and name and item.message.role in ("user", "assistant"):
                    if name not in self._names:
                        self._names.append(name)
        return len(written)

    # -- searching -------------------------------------------------------------------

    def _recall_signals(self, chosen: RecallFilter) -> Signals[RecallMessage]:
        where, params = filters(
            self.agent_id, chosen.roles, chosen.start_date, chosen.end_date, chosen.exclude_ids
        )
        narrowed = (
            len(filters(self.agent_id, chosen.roles, chosen.start_date, chosen.end_date, ())[1]) > 1
        )
        return nullcontext(
            RecallSignals(self, where, params, narrowed=narrowed, excluded=chosen.exclude_ids)
        )

    def search_date(
        self,
        start_date: str | None,
        end_date: str | None,
        *,
        page: int = 0,
        page_size: int = 5,
    ) -> SearchPage[RecallMessage]:
        """List searchable messages between two dates (inclusive), oldest first.

        Raises:
            ValueError: A date is not "YYYY-MM-DD" or ISO-8601, or start is after end.
        """
        check_page(page, page_size)
        where, params = filters(self.agent_id, None, start_date, end_date, ())
        return BY_TIME.page(self.db.conn, where, params, page, page_size, newest_first=False)

    def participants(self) -> list[str]:
        """Names the agent's conversation messages carry (who said them), cached."""
        if self._names is None:
            self._names = texts(
                self.db,
                "SELECT DISTINCT name FROM recall WHERE agent_id = ? AND searchable = 1 "
                "AND name IS NOT NULL AND role IN ('user', 'assistant')",
                (self.agent_id,),
            )
        return self._names

    # -- reading ---------------------------------------------------------------------

    def count(self, exclude_message_ids: Collection[Excluded] = ()) -> int:
        """Number of stored messages of the agent (all roles), minus the excluded ones."""
        clauses, params = excluding("", exclude_message_ids)
        sql = "SELECT COUNT(*) FROM recall WHERE agent_id = ?" + "".join(
            f" AND {c}" for c in clauses
        )
        return int(self.db.conn.execute(sql, [self.agent_id, *params]).fetchone()[0])

    def get(
        self, message_ids: Sequence[str], *, thread_id: str | None = None
    ) -> list[RecallMessage]:
        """Return the agent's messages with these ids, in the order asked (unknown ids skipped).

        Message ids are unique per thread: without ``thread_id``, an id used in several
        threads returns its oldest message.
        """
        if not message_ids:
            return []
        sql = (
            f"SELECT {COLUMNS} FROM recall WHERE agent_id = ? "
            "AND message_id IN (SELECT value FROM json_each(?))"
        )
        params: list[object] = [self.agent_id, json.dumps(list(message_ids))]
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        rows = self.db.conn.execute(sql + " ORDER BY created_at DESC, id DESC", params)
        by_id = {str(row[3]): message_from_row(row) for row in rows.fetchall()}
        return [by_id[m] for m in message_ids if m in by_id]

    def thread_messages(self, thread_id: str) -> list[RecallMessage]:
        """Return every message of one thread of the agent, oldest first."""
        rows = self.db.conn.execute(
            f"SELECT {COLUMNS} FROM recall WHERE agent_id = ? AND thread_id = ? "
            "ORDER BY created_at, id",
            (self.agent_id, thread_id),
        ).fetchall()
        return [message_from_row(row) for row in rows]

    def latest(self, n: int) -> list[RecallMessage]:
        """Return the agent's ``n`` most recent messages (all roles), oldest first."""
        if n <= 0:
            return []
        where = "b.agent_id = ?"
        newest = BY_TIME.rows(self.db.conn, where, [self.agent_id], limit=n, newest_first=True)
        return newest[::-1]

    def threads(self) -> list[str]:
        """Ids of the threads the agent has messages in, sorted."""
        sql = "SELECT DISTINCT thread_id FROM recall WHERE agent_id = ? ORDER BY thread_id"
        return texts(self.db, sql, (self.agent_id,))

    # -- storage order -------------------------------------------------------------

    def list_messages(
        self, *, after: int = 0, limit: int = 1000
    ) -> list[tuple[int, RecallMessage]]:
        """Every stored message in storage order after position ``after`` (export).

        ``searchable`` is set as stored, so an import makes the same messages searchable.
        """
        return recall_feed.list_messages(self.db, self.agent_id, after, limit)

    def since(self, position: int, limit: int = 200) -> list[tuple[int, RecallMessage]]:
        """Up to ``limit`` messages recorded after ``position`` (a row id), oldest first.

        Row ids grow with every insert, and SQLite has one writer at a time, so a reader
        that resumes after the largest id it saw misses nothing recorded since.
        """
        return recall_feed.since(self.db, self.agent_id, position, limit)

    def mark(self, name: str) -> int:
        """The position saved under ``name`` (0 when never saved)."""
        return recall_feed.mark(self.db, self.agent_id, name)

    def set_mark(self, name: str, position: int) -> int:
        """Save ``position`` under ``name``, never moving it back; returns the mark now.

        Never back: two readers finishing out of order (an older run last) must not make
        the next run read everything again.
        """
        return recall_feed.set_mark(self.db, self.agent_id, name, position)

    # -- forgetting ------------------------------------------------------------------

    def delete(
        self, message_ids: Sequence[str], *, thread_id: str | None = None, actor: str = "user"
    ) -> list[RecallMessage]:
        """Forget messages: rows, both full-text indexes, every vector, neighbours' context.

        Each deleted message is logged (kind ``message``, never its text) and its (thread,
        message id) kept, so re-recording a queue that still holds it adds nothing. The
        messages whose context (the ±2 window) held a deleted one get their context words
        and vectors recomputed without it. Without ``thread_id``, the message with that
        id in every thread is deleted.

        Returns:
            The deleted messages (unknown ids are skipped).
        """
        deleted = self._forgetting.messages(message_ids, thread_id, actor)
        self._names = None  # a participant may be gone
        return deleted

    def delete_thread(self, thread_id: str, *, actor: str = "user") -> int:
        """Forget every message of one thread (one log entry, kind ``thread``)."""
        return self._delete_where("thread_id = ?", [thread_id], actor, "thread", thread_id)

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every message of the agent (one log entry, kind ``recall``)."""
        return self._delete_where("1", [], actor, "recall", self.agent_id)

    def _delete_where(
        self, where: str, params: list[object], actor: str, kind: str, item: str
    ) -> int:
        deleted = self._forgetting.where(where, params, actor, kind, item)
        self._names = None  # a participant may be gone
        return deleted


__all__ = [
    "RecallMessage",
    "SqliteRecallMemory",
    "SearchMode",
    "is_searchable",
    "searchable_text",
]
