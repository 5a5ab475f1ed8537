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
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.base import SearchMode
from langgraph_memgpt.stores.chunks import embed_parts
from langgraph_memgpt.stores.dates import date_range_sql
from langgraph_memgpt.stores.embeddings import (
    FloatArray,
    embed_texts,
    normalize,
)
from langgraph_memgpt.stores.embeddings import embedding_identity as _identity
from langgraph_memgpt.stores.mentions import (
    mention_signals,
    topic_of,
)
from langgraph_memgpt.stores.messages import (
    PreparedMessage,
    is_searchable,
    message_from_row,
    prepare_message,
    searchable_text,
)
from langgraph_memgpt.stores.messages import normalise_role as _normalise_role
from langgraph_memgpt.stores.search import (
    CONTEXT_RADIUS,
    RecallFilter,
    SearchesRecall,
    Signals,
)
from langgraph_memgpt.stores.sqlite.db import get_meta, set_meta, transaction
from langgraph_memgpt.stores.sqlite.deletions import (
    LogRow,
    forgotten_among,
    log_deletions,
    remember_forgotten,
)
from langgraph_memgpt.stores.sqlite.parts import PartIndex, delete_parts_without_model
from langgraph_memgpt.stores.sqlite.recall_context import (
    TIER,
    ContextRow,
    neighbours,
    refresh_contexts,
    stored_vectors,
    thread_windows,
)
from langgraph_memgpt.stores.sqlite.recall_signals import RecallSignals, excluding
from langgraph_memgpt.stores.sqlite.vectors import (
    IndexKind,
    VectorIndex,
    delete_items_without_model,
)
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import Excluded, Hit, RecallMessage, SearchPage, check_page

_ID_FLOOR = "recall_id_floor"
"""Meta key: the largest recall row id ever given out, once the newest rows were deleted."""
INGEST_CHUNK = 256
"""Messages per transaction (and per embedding call) in :meth:`RecallMemory.add_many`."""
_VECTOR_KINDS: dict[str, IndexKind] = {"turn": "auto", "context": "auto", "context_tail": "flat"}
"""Vector indexes of recall, by key. Message vectors ("turn") are written once. A context
vector is the mean of its window, which changes until the message has its two successors:
until then it lives in the small exact "context_tail" index, which deletes cheaply, and
then moves, once and for good, to "context". So the two big indexes only grow and can
turn HNSW (``VectorIndex`` kind "auto"): an HNSW graph cannot delete, and the two dead
entries every append left in it forced rebuilds that would stall a turn for about a
minute at 100k messages. A thread's last two messages stay in the tail."""


_COLUMNS = "id, agent_id, thread_id, message_id, role, name, text, tool_calls, created_at, turn"


class RecallMemory(SearchesRecall):
    """The verbatim message history of one agent.

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
        self._turn_index: VectorIndex | None = None
        self._context_index: VectorIndex | None = None
        self._tail_index: VectorIndex | None = None
        self._parts: PartIndex | None = None
        if embeddings is not None:
            identity = _identity(embeddings)
            self._turn_index, self._context_index, self._tail_index = (
                VectorIndex.for_tier(
                    db,
                    tier=TIER,
                    agent_id=agent_id,
                    cache_dir=self.cache_dir,
                    identity=identity,
                    key=key,
                    kind=kind,
                )
                for key, kind in _VECTOR_KINDS.items()
            )
            # Parts of long messages (``stores.chunks``): the message vector is its best part's.
            self._parts = PartIndex(self._turn_index)

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
        prepared = self._not_forgotten([self._prepare(m) for m in messages])
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
        prepared = self._not_forgotten([self._prepare(m) for m in messages])
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
        if self._turn_index is None or self.embeddings is None:
            return 0
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
                self._store_vectors(ids, vectors, {})
                assert self._parts is not None
                self._parts.store(ids, parts)
            if progress is not None:
                progress(start + len(chunk), len(rows))
        # Context vectors are means of message vectors: pool once every message has one.
        windows = thread_windows(self.db.conn, self.agent_id, sorted({str(r[2]) for r in rows}))
        with transaction(self.db):
            self._store_vectors([], None, windows)
        self.close()
        return len(rows)

    def close(self) -> None:
        """Write the FAISS caches (they are also brought up to date on next open)."""
        for index in (self._turn_index, self._context_index, self._tail_index):
            if index is not None:
                index.close()
        if self._parts is not None:
            self._parts.close()

    # -- searching -------------------------------------------------------------------

    def _recall_signals(self, chosen: RecallFilter) -> Signals[RecallMessage]:
        where, params = self._filters(
            chosen.roles, chosen.start_date, chosen.end_date, chosen.exclude_ids
        )
        narrowed = len(self._filters(chosen.roles, chosen.start_date, chosen.end_date, ())[1]) > 1
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
        where, params = self._filters(None, start_date, end_date, ())
        return self._listing(where, params, page, page_size, newest_first=False)

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
            f"SELECT {_COLUMNS} FROM recall WHERE agent_id = ? "
            "AND message_id IN (SELECT value FROM json_each(?))"
        )
        params: list[object] = [self.agent_id, json.dumps(list(message_ids))]
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        rows = self.db.conn.execute(sql + " ORDER BY created_at DESC, id DESC", params)
        by_id = {str(row[3]): _message(row) for row in rows.fetchall()}
        return [by_id[m] for m in message_ids if m in by_id]

    def thread_messages(self, thread_id: str) -> list[RecallMessage]:
        """Return every message of one thread of the agent, oldest first."""
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM recall WHERE agent_id = ? AND thread_id = ? "
            "ORDER BY created_at, id",
            (self.agent_id, thread_id),
        ).fetchall()
        return [_message(row) for row in rows]

    def latest(self, n: int) -> list[RecallMessage]:
        """Return the agent's ``n`` most recent messages (all roles), oldest first."""
        if n <= 0:
            return []
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM recall WHERE agent_id = ? "
            "ORDER BY created_at DESC, id DESC LIMIT ?",
            (self.agent_id, n),
        ).fetchall()
        return [_message(row) for row in reversed(rows)]

    def threads(self) -> list[str]:
        """Ids of the threads the agent has messages in, sorted."""
        rows = self.db.conn.execute(
            "SELECT DISTINCT thread_id FROM recall WHERE agent_id = ? ORDER BY thread_id",
            (self.agent_id,),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def list_messages(
        self, *, after: int = 0, limit: int = 1000
    ) -> list[tuple[int, RecallMessage]]:
        """Every stored message in storage order after position ``after`` (export).

        ``searchable`` is set as stored, so an import makes the same messages searchable.
        """
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS}, searchable FROM recall WHERE agent_id = ? AND id > ? "
            "ORDER BY id LIMIT ?",
            (self.agent_id, int(after), max(1, limit)),
        ).fetchall()
        return [(int(r[0]), replace(_message(r[:-1]), searchable=bool(r[-1]))) for r in rows]

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
        wanted = list(dict.fromkeys(str(m) for m in message_ids))
        if not wanted:
            return []
        sql = (
            f"SELECT {_COLUMNS} FROM recall WHERE agent_id = ? "
            "AND message_id IN (SELECT value FROM json_each(?))"
        )
        params: list[object] = [self.agent_id, json.dumps(wanted)]
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        with transaction(self.db):
            rows = self.db.conn.execute(sql + " ORDER BY id", params).fetchall()
            deleted = [_message(row) for row in rows]
            log = [("message", m.message_id, m.thread_id, "") for m in deleted]
            self._delete_rows([int(row[0]) for row in rows], deleted, actor, log)
        self._purge_vectors()
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
        with transaction(self.db):
            rows = self.db.conn.execute(
                f"SELECT {_COLUMNS} FROM recall WHERE agent_id = ? AND {where} ORDER BY id",
                [self.agent_id, *params],
            ).fetchall()
            if not rows:
                return 0
            deleted = [_message(row) for row in rows]
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
        self._purge_vectors()
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
        self._never_reuse(max(rowids))
        remember_forgotten(self.db, self.agent_id, ((m.thread_id, m.message_id) for m in deleted))
        log_deletions(self.db, self.agent_id, actor, log)
        changed: list[ContextRow] = []
        for thread, ids in touched.items():
            changed.extend(refresh_contexts(self.db.conn, self.agent_id, thread, ids))
        if self.embeddings is not None:
            assert self._context_index is not None and self._tail_index is not None
            self._forget_vectors(rowids)
            # A refreshed window may move between the context and the tail index.
            moved = [row.id for row in changed]
            self._context_index.delete(moved)
            self._tail_index.delete(moved)
            self._store_vectors([], None, {row.id: row.window for row in changed})
        else:
            # Without a model the neighbours' context vectors (means that include the
            # deleted message's vector) cannot be recomputed: they go, and the neighbours
            # are found by their own vector and words until `reembed` pools them again.
            stale = sorted(i for ids in touched.values() for i in ids)
            delete_parts_without_model(
                self.db,
                tier=TIER,
                agent_id=self.agent_id,
                cache_dir=self.cache_dir,
                item_ids=rowids,
                key="turn",
            )
            for items, keys in ((rowids, None), (stale, ["context", "context_tail"])):
                delete_items_without_model(
                    self.db,
                    tier=TIER,
                    agent_id=self.agent_id,
                    cache_dir=self.cache_dir,
                    item_ids=items,
                    keys=keys,
                )
        self._names = None  # a participant may be gone

    def _purge_vectors(self) -> None:
        """Drop deleted vectors from FAISS and its cache files (after the commit)."""
        for index in (self._turn_index, self._context_index, self._tail_index):
            if index is not None:
                index.purge()
        if self._parts is not None:
            self._parts.purge()

    def _not_forgotten(self, prepared: list[PreparedMessage]) -> list[PreparedMessage]:
        """The messages that were never deleted (a deleted one is never recorded again)."""
        forgotten = forgotten_among(self.db, self.agent_id, [_key(p) for p in prepared])
        return [p for p in prepared if _key(p) not in forgotten] if forgotten else prepared

    def since(self, position: int, limit: int = 200) -> list[tuple[int, RecallMessage]]:
        """Up to ``limit`` messages recorded after ``position`` (a row id), oldest first.

        Row ids grow with every insert, and SQLite has one writer at a time, so a reader
        that resumes after the largest id it saw misses nothing recorded since.
        """
        if limit <= 0:
            return []
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM recall WHERE agent_id = ? AND id > ? ORDER BY id LIMIT ?",
            (self.agent_id, int(position), int(limit)),
        ).fetchall()
        return [(int(row[0]), _message(row)) for row in rows]

    def mark(self, name: str) -> int:
        """The position saved under ``name`` (0 when never saved)."""
        row = self.db.conn.execute(
            "SELECT position FROM recall_marks WHERE agent_id = ? AND name = ?",
            (self.agent_id, valid_text(name)),
        ).fetchone()
        return 0 if row is None else int(row[0])

    def set_mark(self, name: str, position: int) -> int:
        """Save ``position`` under ``name``, never moving it back; returns the mark now.

        Never back: two readers finishing out of order (an older run last) must not make
        the next run read everything again.
        """
        with transaction(self.db):
            self.db.conn.execute(
                "INSERT INTO recall_marks (agent_id, name, position) VALUES (?, ?, ?) "
                "ON CONFLICT (agent_id, name) DO UPDATE SET "
                "position = MAX(position, excluded.position)",
                (self.agent_id, valid_text(name), int(position)),
            )
        return self.mark(name)

    # -- internals: writing ----------------------------------------------------------

    def _prepare(self, message: RecallMessage) -> PreparedMessage:
        return prepare_message(self.agent_id, message)

    def _ingest(self, batch: Sequence[PreparedMessage]) -> int:
        """Write a batch: new messages are inserted, re-recorded ones with new content updated.

        A message is (thread, message id): the same id in another thread is another
        message. Re-recording a message as it is stored changes nothing (a retried or
        replayed step adds nothing); re-recording it with new content (an edit and rerun)
        updates its row, its full-text entries and its vectors, keeping its time and turn.
        Messages are embedded before the write transaction, so the write lock is never
        held for a model call.
        """
        stored = self._stored(batch)
        wanted = {
            item.text
            for item in batch
            if item.searchable and _differs(stored.get(_key(item)), item)
        }
        vectors = self._embed(wanted)
        parts = self._embed_parts(wanted)
        with transaction(self.db):
            # Read again under the write lock: another writer may have come in between.
            stored = self._stored(batch)
            written: list[tuple[int, PreparedMessage]] = []
            dropped: list[tuple[int, str]] = []  # (id, thread) of messages no longer searchable
            for item in batch:
                old = stored.get(_key(item))
                if not _differs(old, item):
                    continue
                if old is None:
                    rowid = self._insert_row(item)
                else:
                    rowid = self._update_row(old, item)
                    if old.searchable and not item.searchable:
                        dropped.append((rowid, item.message.thread_id))
                stored[_key(item)] = _Stored.of(rowid, item)
                written.append((rowid, item))
            searchable = [(rowid, item) for rowid, item in written if item.searchable]
            self.db.conn.executemany(
                "INSERT INTO recall_fts (rowid, text) VALUES (?, ?)",
                [(rowid, item.text) for rowid, item in searchable],
            )
            by_thread: dict[str, set[int]] = {}
            for rowid, item in searchable:
                by_thread.setdefault(item.message.thread_id, set()).add(rowid)
            for rowid, thread_id in dropped:
                by_thread.setdefault(thread_id, set()).update(
                    neighbours(self.db.conn, self.agent_id, thread_id, rowid)
                )
            changed: list[ContextRow] = []
            for thread_id, rowids in by_thread.items():
                if rowids:
                    changed.extend(refresh_contexts(self.db.conn, self.agent_id, thread_id, rowids))
            if self.embeddings is not None:
                self._forget_vectors([rowid for rowid, _ in dropped])
                missing = {item.text for _, item in searchable} - set(vectors)
                vectors.update(self._embed(missing))  # only when another writer raced us
                parts.update(self._embed_parts(missing))
                self._store_vectors(
                    [rowid for rowid, _ in searchable],
                    np.stack([vectors[item.text] for _, item in searchable])
                    if searchable
                    else None,
                    {row.id: row.window for row in changed},
                )
                assert self._parts is not None
                self._parts.store(
                    [rowid for rowid, _ in searchable], [parts[item.text] for _, item in searchable]
                )
            if self._names is not None:
                # Extend the cached participants instead of re-reading every message:
                # a DISTINCT scan per search would grow with the agent's messages.
                for _, item in searchable:
                    name = item.message.name
                    if name and item.message.role in ("user", "assistant"):
                        if name not in self._names:
                            self._names.append(name)
            return len(written)

    def _stored(self, batch: Sequence[PreparedMessage]) -> dict[tuple[str, str], _Stored]:
        """What is stored for the batch's (thread, message id) keys."""
        keys = sorted({_key(item) for item in batch})
        if not keys:
            return {}
        # CROSS JOIN keeps the keys as the outer loop, each one a lookup in the unique
        # (agent, thread, message id) index. Left to the planner, it walked the agent's
        # messages once per key: re-importing 1k messages took twice the first import.
        rows = self.db.conn.execute(
            "SELECT r.id, r.thread_id, r.message_id, r.role, r.name, r.text, r.tool_calls, "
            "r.searchable FROM json_each(?) AS k CROSS JOIN recall AS r "
            "ON r.agent_id = ? AND r.thread_id = json_extract(k.value, '$[0]') "
            "AND r.message_id = json_extract(k.value, '$[1]')",
            (json.dumps(keys), self.agent_id),
        ).fetchall()
        return {
            (str(r[1]), str(r[2])): _Stored(
                int(r[0]), str(r[3]), r[4], str(r[5]), str(r[6]), bool(r[7])
            )
            for r in rows
        }

    def _embed(self, texts: Collection[str]) -> dict[str, FloatArray]:
        """Embed ``texts`` (none without an embedding model), keyed by text."""
        if self.embeddings is None or not texts:
            return {}
        ordered = sorted(texts)
        vectors = embed_texts(self.embeddings, ordered)
        return dict(zip(ordered, vectors, strict=True))

    def _embed_parts(self, texts: Collection[str]) -> dict[str, FloatArray]:
        """The part vectors of ``texts`` (``stores.chunks.embed_parts``), keyed by text."""
        if self.embeddings is None or not texts:
            return {}
        ordered = sorted(texts)
        return dict(zip(ordered, embed_parts(self.embeddings, ordered), strict=True))

    def _never_reuse(self, deleted_top: int) -> None:
        """Keep row ids growing after the newest rows were deleted.

        SQLite gives a new row the largest id + 1, so deleting the newest rows would hand
        their ids out again: a reader resuming after a position (`since`, the sleep-time
        watermark) would skip the new message, and a vector cache keyed by id could hold a
        stale entry for it. The largest id ever given out is kept as a floor instead.
        """
        if deleted_top > self._top_id():
            set_meta(self.db, _ID_FLOOR, str(max(deleted_top, self._id_floor())))

    def _top_id(self) -> int:
        row = self.db.conn.execute("SELECT COALESCE(MAX(id), 0) FROM recall").fetchone()
        return int(row[0])

    def _id_floor(self) -> int:
        return int(get_meta(self.db, _ID_FLOOR) or 0)

    def _insert_row(self, item: PreparedMessage) -> int:
        m = item.message
        floor = self._id_floor()
        # Above the floor of deleted ids (see `_never_reuse`); NULL: SQLite's own next id.
        explicit = floor + 1 if floor and floor >= self._top_id() else None
        cursor = self.db.conn.execute(
            "INSERT INTO recall (id, agent_id, thread_id, message_id, role, name, "
            "text, tool_calls, created_at, turn, searchable) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                explicit,
                self.agent_id,
                m.thread_id,
                m.message_id,
                m.role,
                m.name,
                m.text,
                _calls_json(m.tool_calls),
                item.created_at,
                m.turn,
                int(item.searchable),
            ),
        )
        assert cursor.lastrowid is not None
        return int(cursor.lastrowid)

    def _update_row(self, old: _Stored, item: PreparedMessage) -> int:
        """Give a stored message its new content; its time and turn stay as first recorded."""
        m = item.message
        self.db.conn.execute(
            "UPDATE recall SET role = ?, name = ?, text = ?, tool_calls = ?, searchable = ? "
            "WHERE id = ?",
            (m.role, m.name, m.text, _calls_json(m.tool_calls), int(item.searchable), old.id),
        )
        self.db.conn.execute("DELETE FROM recall_fts WHERE rowid = ?", (old.id,))
        if not item.searchable:
            self.db.conn.execute("UPDATE recall SET context = NULL WHERE id = ?", (old.id,))
        return old.id

    def _forget_vectors(self, rowids: Sequence[int]) -> None:
        """Drop every vector of messages that are no longer searchable."""
        if rowids:
            for index in (self._turn_index, self._context_index, self._tail_index):
                assert index is not None
                index.delete(rowids)
            assert self._parts is not None
            self._parts.delete(rowids)

    def _store_vectors(
        self,
        turn_ids: Sequence[int],
        turn_vectors: FloatArray | None,
        windows: Mapping[int, Sequence[int]],
    ) -> None:
        """Store message vectors; a context vector is the mean of its window's message vectors.

        The message vectors come embedded already: the caller embeds before taking the
        write lock, which a hosted embedding call would otherwise hold for its round trip.

        Averaging vectors already computed costs no model call, where embedding each
        "date: context" text cost five messages' worth of tokens per message, again for
        each refreshed neighbour on every append.
        """
        assert self.embeddings is not None
        assert self._turn_index is not None
        assert self._context_index is not None and self._tail_index is not None
        fresh: dict[int, FloatArray] = {}
        if turn_ids and turn_vectors is not None:
            self._turn_index.upsert(list(turn_ids), turn_vectors)
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
        for complete, index in ((True, self._context_index), (False, self._tail_index)):
            if pooled[complete]:
                vectors = normalize(np.stack(list(pooled[complete].values())))
                index.upsert(list(pooled[complete]), vectors)
        # A window that just became complete leaves the tail.
        self._tail_index.delete(pooled[True])

    def _mention_scores(
        self, query: str, where: str, params: Sequence[object], candidates: Collection[int]
    ) -> list[dict[int, float]]:
        """Signals from what the query names: a day or month, and one participant.

        A signal is only added when the query names such a thing, so other queries rank
        exactly as before.
        """
        conn = self.db.conn
        return mention_signals(
            query,
            lambda low, high: conn.execute(
                f"SELECT b.id, b.created_at FROM recall AS b WHERE {where} "
                "AND b.created_at >= ? AND b.created_at < ?",
                (*params, low, high),
            ).fetchall(),
            self._participants() if candidates else (),
            lambda name: (
                r[0]
                for r in conn.execute(
                    "SELECT id FROM recall WHERE +agent_id = ? AND name = ? "
                    "AND id IN (SELECT value FROM json_each(?))",
                    (self.agent_id, name, json.dumps(sorted(candidates))),
                )
            ),
        )

    def _topic_query(self, query: str, mode: SearchMode) -> str:
        """The text to embed: in hybrid mode, the query without the participants it names.

        The names stay in the words signals, and one named participant still lifts their
        own messages (:meth:`_mention_scores`); the embedding is left with what the query
        is about. Vector mode keeps the names, since no other signal would carry who is
        asked about; a query that is nothing but names is embedded as it is.
        """
        if mode != "hybrid":
            return query
        return topic_of(query, self._participants())

    def _participants(self) -> list[str]:
        """Names the agent's conversation messages carry (who said them), cached."""
        if self._names is None:
            rows = self.db.conn.execute(
                "SELECT DISTINCT name FROM recall WHERE agent_id = ? AND searchable = 1 "
                "AND name IS NOT NULL AND role IN ('user', 'assistant')",
                (self.agent_id,),
            ).fetchall()
            self._names = [str(r[0]) for r in rows]
        return self._names

    # -- internals: reading ----------------------------------------------------------

    def _filters(
        self,
        roles: Sequence[str] | None,
        start_date: str | None,
        end_date: str | None,
        exclude_ids: Collection[Excluded],
    ) -> tuple[str, list[object]]:
        """SQL condition (over alias ``b``) selecting the searchable candidates."""
        clauses = ["b.agent_id = ?", "b.searchable = 1"]
        params: list[object] = [self.agent_id]
        if roles:
            wanted = sorted({_normalise_role(r) for r in roles})
            clauses.append("b.role IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(wanted))
        conditions, values = date_range_sql("b.created_at", start_date, end_date)
        clauses += conditions
        params += values
        left_out, values = excluding("b.", exclude_ids)
        clauses += left_out
        params += values
        return " AND ".join(clauses), params

    def _count(self, where: str, params: Sequence[object]) -> int:
        row = self.db.conn.execute(f"SELECT COUNT(*) FROM recall AS b WHERE {where}", params)
        return int(row.fetchone()[0])

    def _listing(
        self,
        where: str,
        params: Sequence[object],
        page: int,
        page_size: int,
        *,
        newest_first: bool,
    ) -> SearchPage[RecallMessage]:
        order = "DESC" if newest_first else "ASC"
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM recall AS b WHERE {where} "
            f"ORDER BY b.created_at {order}, b.id {order} LIMIT ? OFFSET ?",
            (*params, page_size, page * page_size),
        ).fetchall()
        hits = [Hit(_message(row), 0.0) for row in rows]
        return SearchPage(
            hits=hits, total=self._count(where, params), page=page, page_size=page_size
        )

    def _fetch_by_ids(self, ids: Sequence[int]) -> dict[int, RecallMessage]:
        if not ids:
            return {}
        rows = self.db.conn.execute(
            # "+agent_id": keep SQLite on the primary key; with the agent index it scanned
            # every message of the agent to fetch one page.
            f"SELECT {_COLUMNS} FROM recall WHERE +agent_id = ? "
            "AND id IN (SELECT value FROM json_each(?))",
            (self.agent_id, json.dumps(list(ids))),
        ).fetchall()
        return {int(row[0]): _message(row) for row in rows}


@dataclass(frozen=True)
class _Stored:
    """The stored content of a message, to tell a replay from an edit."""

    id: int
    role: str
    name: str | None
    text: str
    tool_calls: str  # JSON, as stored
    searchable: bool

    @classmethod
    def of(cls, rowid: int, item: PreparedMessage) -> _Stored:
        m = item.message
        return cls(rowid, m.role, m.name, m.text, _calls_json(m.tool_calls), item.searchable)


def _key(item: PreparedMessage) -> tuple[str, str]:
    return item.message.thread_id, item.message.message_id


def _calls_json(tool_calls: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(tool_calls, default=str)


def _differs(stored: _Stored | None, item: PreparedMessage) -> bool:
    """Whether writing ``item`` changes anything: new, or its content was edited.

    A cut copy (``partial``) only counts when nothing is stored. Time and turn are left
    out: a message re-recorded after a crash carries the time of
    the retry, and is still the same message.
    """
    if stored is None:
        return True
    m = item.message
    if m.partial:  # a cut copy never replaces the whole message
        return False
    return (stored.role, stored.name, stored.text, stored.tool_calls, stored.searchable) != (
        m.role,
        m.name,
        m.text,
        _calls_json(m.tool_calls),
        item.searchable,
    )


def _message(row: Sequence[Any]) -> RecallMessage:
    return message_from_row(row)


__all__ = [
    "RecallMessage",
    "RecallMemory",
    "SearchMode",
    "is_searchable",
    "searchable_text",
]
