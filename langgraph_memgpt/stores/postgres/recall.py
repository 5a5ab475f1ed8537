"""Recall memory in Postgres: every message, verbatim, idempotent, searched as SQLite searches.

The same four signals as the embedded backend, fused by ``stores.ranking.fuse``: words of
the message and of
its context (the message with its +-2 neighbours of the thread), cosine similarity of the
message's vector and of its context vector (the mean of the window's message vectors), plus
the date and participant a query names. The work is done by one module per job: writes
(``recall_writes``), neighbour contexts (``recall_context``), forgetting
(``recall_forget``), storage order (``recall_feed``), reading rows (``recall_rows``) and
search signals (``recall_signals``); this class is the tier's interface.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

from langgraph_memgpt.stores.embeddings import embedding_identity
from langgraph_memgpt.stores.messages import message_from_row, prepare_message
from langgraph_memgpt.stores.postgres import recall_feed
from langgraph_memgpt.stores.postgres.db import pg_text, pg_texts
from langgraph_memgpt.stores.postgres.recall_forget import delete_where
from langgraph_memgpt.stores.postgres.recall_rows import (
    BY_TIME,
    COLUMNS,
    TABLE,
    excluding,
    filters,
)
from langgraph_memgpt.stores.postgres.recall_signals import PgRecallSignals
from langgraph_memgpt.stores.postgres.recall_writes import write_messages
from langgraph_memgpt.stores.postgres.search import Params
from langgraph_memgpt.stores.postgres.settling import Settler, settle
from langgraph_memgpt.stores.postgres.tier import PgTier
from langgraph_memgpt.stores.search import RecallFilter, SearchesRecall, SignalSource
from langgraph_memgpt.stores.types import Excluded, RecallMessage, SearchPage, check_page


class PgRecallMemory(SearchesRecall, PgTier):
    """The verbatim message history of one agent in Postgres (meets ``RecallStore``).

    Args:
        pool: the backend's connection pool.
        agent_id: the agent; every query is filtered on it.
        embeddings: embedding model for the vector signals; None keeps search to words.
        exact_scan_limit: up to this many vectors an agent's vector search is exact;
            beyond it, the HNSW index with an iterative scan.

    ``settler`` (set by the backend) settles the written rows beside the caller
    (``settling``); without one, each write settles them itself before it returns.
    """

    table = TABLE
    settler: Settler | None = None

    # -- writing ---------------------------------------------------------------------

    def add(self, messages: Sequence[RecallMessage]) -> int:
        """Store messages, ignoring ones already stored (same thread and message id).

        One transaction; refreshes the context of the neighbours the new messages join.

        Raises:
            ValueError: a message belongs to another agent or has an unreadable created_at.
        """
        prepared = [prepare_message(self.agent_id, m) for m in messages]
        if not prepared:
            return 0
        with self.pool.connection() as conn:
            with conn.transaction():
                new = write_messages(
                    conn, self.agent_id, self.embeddings, self._model_identity(), prepared
                )
            # Only a searchable message has vectors, and a context that others complete.
            if not new or not any(p.searchable for p in prepared):
                return new
            if self.settler is not None:
                self.settler.due(self.agent_id)
            else:
                with conn.transaction():
                    settle(conn, self.agent_id)
        return new

    def _model_identity(self) -> tuple[str, int] | None:
        """The embedding model's identity, held while vectors are written (None: no model)."""
        if self.embeddings is not None:
            self._identity = self._identity or embedding_identity(self.embeddings)
        return self._identity if self.embeddings is not None else None

    # -- searching -------------------------------------------------------------------

    @contextmanager
    def _recall_signals(self, chosen: RecallFilter) -> Iterator[SignalSource[RecallMessage]]:
        where, params = filters(
            self.agent_id, chosen.roles, chosen.start_date, chosen.end_date, chosen.exclude_ids
        )
        with self.pool.connection() as conn:
            yield PgRecallSignals(self, conn, where, params)

    def search_date(
        self, start_date: str | None, end_date: str | None, *, page: int = 0, page_size: int = 5
    ) -> SearchPage[RecallMessage]:
        """Searchable messages between two dates (inclusive), oldest first."""
        check_page(page, page_size)
        where, params = filters(self.agent_id, None, start_date, end_date, ())
        with self.pool.connection() as conn:
            return BY_TIME.page(conn, where, params, page, page_size, newest_first=False)

    # -- reading ---------------------------------------------------------------------

    def count(self, exclude_message_ids: Collection[Excluded] = ()) -> int:
        """Number of stored messages of the agent (all roles), minus the excluded ones."""
        clauses, values = excluding("", exclude_message_ids)
        sql = f"SELECT count(*) FROM {TABLE} WHERE agent_id = %s" + "".join(
            f" AND {c}" for c in clauses
        )
        params: Params = [self.agent_id, *values]
        with self.pool.connection() as conn:
            row = conn.execute(sql, params).fetchone()
        return int(row[0]) if row else 0

    def get(
        self, message_ids: Sequence[str], *, thread_id: str | None = None
    ) -> list[RecallMessage]:
        """The agent's messages with these ids, in the order asked (unknown ids skipped).

        Message ids are unique per thread: ``thread_id`` narrows to one thread's.
        """
        if not message_ids:
            return []
        sql = f"SELECT {COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.message_id = ANY(%s)"
        params: Params = [self.agent_id, pg_texts(list(message_ids))]
        if thread_id is not None:
            sql += " AND b.thread_id = %s"
            params.append(pg_text(thread_id))
        with self.pool.connection() as conn:
            rows = conn.execute(sql + " ORDER BY b.created_at DESC, b.id DESC", params).fetchall()
        by_id = {str(row[3]): message_from_row(row) for row in rows}
        return [by_id[m] for m in pg_texts(list(message_ids)) if m in by_id]

    def thread_messages(self, thread_id: str) -> list[RecallMessage]:
        """Every message of one thread of the agent, oldest first."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM {TABLE} AS b "
                "WHERE b.agent_id = %s AND b.thread_id = %s ORDER BY b.created_at, b.id",
                (self.agent_id, pg_text(thread_id)),
            ).fetchall()
        return [message_from_row(row) for row in rows]

    def latest(self, n: int) -> list[RecallMessage]:
        """The agent's ``n`` most recent messages (all roles), oldest first."""
        if n <= 0:
            return []
        with self.pool.connection() as conn:
            where = "b.agent_id = %s"
            newest = BY_TIME.rows(conn, where, [self.agent_id], limit=n, newest_first=True)
        return newest[::-1]

    def threads(self) -> list[str]:
        """Ids of the threads the agent has messages in, sorted."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT DISTINCT thread_id FROM {TABLE} WHERE agent_id = %s ORDER BY thread_id",
                (self.agent_id,),
            ).fetchall()
        return [str(r[0]) for r in rows]

    # -- storage order -------------------------------------------------------------

    def list_messages(
        self, *, after: int = 0, limit: int = 1000
    ) -> list[tuple[int, RecallMessage]]:
        """Every stored message in storage order after position ``after`` (export)."""
        return recall_feed.list_messages(self.pool, self.agent_id, after, limit)

    def since(self, position: int, limit: int = 200) -> list[tuple[int, RecallMessage]]:
        """Up to ``limit`` messages recorded after ``position`` (a row id), oldest first.

        The read waits for the agent's writes in flight (``recall_feed.since``), so a
        reader resuming after the largest id it saw misses nothing.
        """
        return recall_feed.since(self.pool, self.agent_id, position, limit)

    def mark(self, name: str) -> int:
        """The position saved under ``name`` (0 when never saved)."""
        return recall_feed.mark(self.pool, self.agent_id, name)

    def set_mark(self, name: str, position: int) -> int:
        """Save ``position`` under ``name``, never moving it back; returns the mark now."""
        return recall_feed.set_mark(self.pool, self.agent_id, name, position)

    # -- forgetting ------------------------------------------------------------------

    def delete(
        self, message_ids: Sequence[str], *, thread_id: str | None = None, actor: str = "user"
    ) -> list[RecallMessage]:
        """Forget messages as ``SqliteRecallMemory.delete`` does (row, words, vectors)."""
        wanted = list(dict.fromkeys(pg_text(str(m)) for m in message_ids))
        if not wanted:
            return []
        where = "message_id = ANY(%s)"
        params: Params = [wanted]
        if thread_id is not None:
            where += " AND thread_id = %s"
            params.append(pg_text(thread_id))
        return self._delete_where(where, params, actor, None)

    def delete_thread(self, thread_id: str, *, actor: str = "user") -> int:
        """Forget every message of one thread (one log entry, kind ``thread``)."""
        thread = pg_text(thread_id)
        return len(self._delete_where("thread_id = %s", [thread], actor, ("thread", thread)))

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every message of the agent (one log entry, kind ``recall``)."""
        return len(self._delete_where("true", [], actor, ("recall", self.agent_id)))

    def _delete_where(
        self, where: str, params: Params, actor: str, bulk: tuple[str, str] | None
    ) -> list[RecallMessage]:
        with self.pool.connection() as conn, conn.transaction():
            return delete_where(
                conn,
                self.agent_id,
                self.embeddings,
                self._model_identity(),
                where,
                params,
                actor,
                bulk,
            )


__all__ = ["PgRecallMemory"]
