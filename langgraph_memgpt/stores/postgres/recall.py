"""Recall memory in Postgres: every message, verbatim, idempotent, searched as SQLite searches.

The same four signals as the embedded backend, fused by ``stores.ranking.fuse``: words of
the message and of
its context (the message with its +-2 neighbours of the thread), cosine similarity of the
message's vector and of its context vector (the mean of the window's message vectors), plus
the date and participant a query names. Writes of one thread are serialised by a
transaction-scoped advisory lock, so two processes adding to a thread at once cannot
compute a neighbour's context from half of the other's messages.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import psycopg

from langgraph_memgpt.stores.base import SearchMode
from langgraph_memgpt.stores.chunks import embed_parts
from langgraph_memgpt.stores.contexts import Neighbour, changed_contexts
from langgraph_memgpt.stores.dates import date_range_sql
from langgraph_memgpt.stores.embeddings import (
    FloatArray,
    embed_texts,
    embedding_identity,
    normalize,
)
from langgraph_memgpt.stores.mentions import (
    mention_signals,
    topic_of,
)
from langgraph_memgpt.stores.messages import (
    PreparedMessage,
    message_from_row,
    normalise_role,
    prepare_message,
    searchable_text,
)
from langgraph_memgpt.stores.postgres.db import pg_text, pg_texts
from langgraph_memgpt.stores.postgres.deletions import (
    LogRow,
    forgotten_among,
    log_deletions,
    remember_forgotten,
)
from langgraph_memgpt.stores.postgres.models import hold_model
from langgraph_memgpt.stores.postgres.parts import store_parts
from langgraph_memgpt.stores.postgres.search import (
    Params,
    TableSignals,
    placeholders,
)
from langgraph_memgpt.stores.postgres.tier import PgTier
from langgraph_memgpt.stores.search import (
    CONTEXT_RADIUS,
    RecallFilter,
    SearchesRecall,
    SignalSource,
    split_excluded,
)
from langgraph_memgpt.stores.types import Excluded, Hit, RecallMessage, SearchPage, check_page

TABLE = "memgpt_recall"
_COLUMNS = (
    "b.id, b.agent_id, b.thread_id, b.message_id, b.role, b.name, b.text, b.tool_calls, "
    "b.created_at, b.turn"
)


@dataclass(frozen=True)
class Context:
    """A message's new context text and the ids of its window (itself and +-2)."""

    text: str
    window: tuple[int, ...]


class PgRecallMemory(SearchesRecall, PgTier):
    """The verbatim message history of one agent in Postgres (meets ``RecallStore``).

    Args:
        pool: the backend's connection pool.
        agent_id: the agent; every query is filtered on it.
        embeddings: embedding model for the vector signals; None keeps search to words.
        exact_scan_limit: up to this many vectors an agent's vector search is exact;
            beyond it, the HNSW index with an iterative scan.
    """

    table = TABLE

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
        threads = sorted({pg_text(p.message.thread_id) for p in prepared})
        with self.pool.connection() as conn, conn.transaction():
            # The lock the inserts take, taken before the reads below: a read first and a
            # schema change queued between it and the insert deadlock (the insert's lock
            # waits for the change, which waits for the read).
            conn.execute(f"LOCK TABLE {TABLE} IN ROW EXCLUSIVE MODE")
            # Shared: writers of one agent run side by side; `since` waits for them all.
            conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (self._writers_key(),))
            self._hold_model(conn)
            self._lock_threads(conn, threads)
            keys = [(pg_text(p.message.thread_id), pg_text(p.message.message_id)) for p in prepared]
            # A deleted message is never recorded again (a re-recorded queue still holds it).
            # Nor is a stored one offered again: every turn re-records the whole queue (the
            # write-ahead's repair), and one lookup spares an INSERT per queued message
            # and the ids they would burn.
            # The threads are locked, so no other writer adds these keys meanwhile.
            skip = forgotten_among(conn, self.agent_id, keys) | self._stored_among(conn, keys)
            new: list[tuple[int, PreparedMessage]] = []
            for item, key in zip(prepared, keys, strict=True):
                if key in skip:
                    continue
                row = conn.execute(
                    f"INSERT INTO {TABLE} ({', '.join(MESSAGE_COLUMNS)}) "
                    f"VALUES ({', '.join(['%s'] * len(MESSAGE_COLUMNS))}) "
                    "ON CONFLICT (agent_id, thread_id, message_id) DO NOTHING RETURNING id",
                    message_row(self.agent_id, item),
                ).fetchone()
                if row is not None:
                    new.append((int(row[0]), item))
            searchable = [(rowid, item) for rowid, item in new if item.searchable]
            if not searchable:
                return len(new)
            by_thread: dict[str, list[tuple[int, str]]] = {}
            for rowid, item in searchable:
                by_thread.setdefault(pg_text(item.message.thread_id), []).append(
                    (rowid, item.created_at)
                )
            contexts: dict[int, Context] = {}
            for thread_id, rows in by_thread.items():
                contexts.update(self._new_contexts(conn, thread_id, rows))
            vectors: dict[int, FloatArray] = {}
            pooled: dict[int, FloatArray] = {}
            if self.embeddings is not None:
                vectors, pooled = self._embed(conn, searchable, contexts)
            _write_rows(conn, contexts, vectors, pooled)
            return len(new)

    def _stored_among(
        self, conn: psycopg.Connection[Any], keys: Sequence[tuple[str, str]]
    ) -> set[tuple[str, str]]:
        """Which of these (thread, message id) keys the agent has stored."""
        rows = conn.execute(
            f"SELECT r.thread_id, r.message_id FROM {TABLE} AS r "
            "JOIN unnest(%s::text[], %s::text[]) AS k (thread_id, message_id) "
            "ON r.thread_id = k.thread_id AND r.message_id = k.message_id WHERE r.agent_id = %s",
            ([k[0] for k in keys], [k[1] for k in keys], self.agent_id),
        ).fetchall()
        return {(str(r[0]), str(r[1])) for r in rows}

    # -- searching -------------------------------------------------------------------

    @contextmanager
    def _recall_signals(self, chosen: RecallFilter) -> Iterator[SignalSource[RecallMessage]]:
        where, params = self._filters(
            chosen.roles, chosen.start_date, chosen.end_date, chosen.exclude_ids
        )
        with self.pool.connection() as conn:
            yield _PgRecallSignals(self, conn, where, params)

    def search_date(
        self, start_date: str | None, end_date: str | None, *, page: int = 0, page_size: int = 5
    ) -> SearchPage[RecallMessage]:
        """Searchable messages between two dates (inclusive), oldest first."""
        check_page(page, page_size)
        where, params = self._filters(None, start_date, end_date, ())
        with self.pool.connection() as conn:
            return self._listing(conn, where, params, page, page_size, newest_first=False)

    # -- reading ---------------------------------------------------------------------

    def count(self, exclude_message_ids: Collection[Excluded] = ()) -> int:
        """Number of stored messages of the agent (all roles), minus the excluded ones."""
        clauses, values = _excluding("", exclude_message_ids)
        sql = f"SELECT count(*) FROM {TABLE} WHERE agent_id = %s" + "".join(
            f" AND {c}" for c in clauses
        )
        params: Params = [self.agent_id, *values]
        with self.pool.connection() as conn:
            row = conn.execute(sql, params).fetchone()
        return int(row[0]) if row else 0

    def get(self, message_ids: Sequence[str]) -> list[RecallMessage]:
        """The agent's messages with these ids, in the order asked (unknown ids skipped)."""
        if not message_ids:
            return []
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {TABLE} AS b "
                "WHERE b.agent_id = %s AND b.message_id = ANY(%s)",
                (self.agent_id, pg_texts(list(message_ids))),
            ).fetchall()
        by_id = {str(row[3]): _message(row) for row in rows}
        return [by_id[m] for m in pg_texts(list(message_ids)) if m in by_id]

    def thread_messages(self, thread_id: str) -> list[RecallMessage]:
        """Every message of one thread of the agent, oldest first."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {TABLE} AS b "
                "WHERE b.agent_id = %s AND b.thread_id = %s ORDER BY b.created_at, b.id",
                (self.agent_id, pg_text(thread_id)),
            ).fetchall()
        return [_message(row) for row in rows]

    def latest(self, n: int) -> list[RecallMessage]:
        """The agent's ``n`` most recent messages (all roles), oldest first."""
        if n <= 0:
            return []
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s "
                "ORDER BY b.created_at DESC, b.id DESC LIMIT %s",
                (self.agent_id, n),
            ).fetchall()
        return [_message(row) for row in reversed(rows)]

    def threads(self) -> list[str]:
        """Ids of the threads the agent has messages in, sorted."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT DISTINCT thread_id FROM {TABLE} WHERE agent_id = %s ORDER BY thread_id",
                (self.agent_id,),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def list_messages(
        self, *, after: int = 0, limit: int = 1000
    ) -> list[tuple[int, RecallMessage]]:
        """Every stored message in storage order after position ``after`` (export)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS}, b.searchable FROM {TABLE} AS b "
                "WHERE b.agent_id = %s AND b.id > %s ORDER BY b.id LIMIT %s",
                (self.agent_id, int(after), max(1, limit)),
            ).fetchall()
        return [(int(r[0]), replace(_message(r[:-1]), searchable=bool(r[-1]))) for r in rows]

    # -- forgetting ------------------------------------------------------------------

    def delete(
        self, message_ids: Sequence[str], *, thread_id: str | None = None, actor: str = "user"
    ) -> list[RecallMessage]:
        """Forget messages as the SQLite ``RecallMemory.delete`` does (row, words, vectors)."""
        wanted = list(dict.fromkeys(pg_text(str(m)) for m in message_ids))
        if not wanted:
            return []
        where = "message_id = ANY(%s)"
        params: Params = [wanted]
        if thread_id is not None:
            where += " AND thread_id = %s"
            params.append(pg_text(thread_id))
        with self.pool.connection() as conn, conn.transaction():
            deleted = self._delete_where(conn, where, params, actor, None)
        return deleted

    def delete_thread(self, thread_id: str, *, actor: str = "user") -> int:
        """Forget every message of one thread (one log entry, kind ``thread``)."""
        thread = pg_text(thread_id)
        with self.pool.connection() as conn, conn.transaction():
            deleted = self._delete_where(
                conn, "thread_id = %s", [thread], actor, ("thread", thread)
            )
        return len(deleted)

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every message of the agent (one log entry, kind ``recall``)."""
        with self.pool.connection() as conn, conn.transaction():
            deleted = self._delete_where(conn, "true", [], actor, ("recall", self.agent_id))
        return len(deleted)

    def _hold_model(self, conn: psycopg.Connection[Any]) -> None:
        """Writing vectors: keep the agent's model from switching until commit, and check it."""
        if self.embeddings is not None:
            self._identity = self._identity or embedding_identity(self.embeddings)
            hold_model(conn, self.agent_id, self._identity)

    def _lock_threads(self, conn: psycopg.Connection[Any], threads: Sequence[str]) -> None:
        for thread_id in sorted(threads):  # sorted: two writers never wait in a cycle
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (json.dumps([self.agent_id, thread_id]),),
            )

    def _delete_where(
        self,
        conn: psycopg.Connection[Any],
        where: str,
        params: Params,
        actor: str,
        bulk: tuple[str, str] | None,
    ) -> list[RecallMessage]:
        """Delete the agent's rows matching ``where`` and re-context their neighbours.

        ``bulk`` (kind, item) logs one entry for all of them; None logs each message.
        """
        self._hold_model(conn)  # context vectors are re-pooled below
        found = conn.execute(
            f"SELECT DISTINCT thread_id FROM {TABLE} WHERE agent_id = %s AND {where}",
            [self.agent_id, *params],
        ).fetchall()
        threads = sorted(str(r[0]) for r in found)
        if not threads:
            return []
        self._lock_threads(conn, threads)
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND {where} ORDER BY b.id",
            [self.agent_id, *params],
        ).fetchall()
        gone = {int(r[0]) for r in rows}
        deleted = [_message(r) for r in rows]
        # Messages whose +-2 window held a deleted one, by thread (read before deleting).
        touched: dict[str, list[int]] = {}
        for thread in threads:
            ids = [
                int(r[0])
                for r in conn.execute(
                    f"SELECT id FROM {TABLE} WHERE agent_id = %s AND thread_id = %s "
                    "AND searchable ORDER BY created_at, id",
                    (self.agent_id, thread),
                )
            ]
            for i, row_id in enumerate(ids):
                window = ids[max(0, i - CONTEXT_RADIUS) : i + CONTEXT_RADIUS + 1]
                if row_id not in gone and gone.intersection(window):
                    touched.setdefault(thread, []).append(row_id)
        conn.execute(f"DELETE FROM {TABLE} WHERE id = ANY(%s)", (sorted(gone),))
        remember_forgotten(conn, self.agent_id, ((m.thread_id, m.message_id) for m in deleted))
        log: list[LogRow]
        if bulk is None:
            log = [("message", m.message_id, m.thread_id, "") for m in deleted]
        else:
            kind, item = bulk
            detail = f"{len(deleted)} messages" + (
                "" if kind == "thread" else f" in {len(threads)} threads"
            )
            log = [(kind, item, item if kind == "thread" else None, detail)]
        log_deletions(conn, self.agent_id, actor, log)
        contexts: dict[int, Context] = {}
        for thread, ids in touched.items():
            at = conn.execute(
                f"SELECT id, created_at FROM {TABLE} WHERE id = ANY(%s)", (ids,)
            ).fetchall()
            contexts.update(self._new_contexts(conn, thread, [(int(r[0]), str(r[1])) for r in at]))
        if contexts:
            # A window left with no message vector, or no model to pool with: the stale
            # context vector goes.
            pooled: dict[int, FloatArray | None] = dict.fromkeys(contexts)
            if self.embeddings is not None:
                pooled.update(self._pool_contexts(conn, contexts, {}))
            _write_rows(conn, contexts, {}, pooled)
        return deleted

    def _pool_contexts(
        self,
        conn: psycopg.Connection[Any],
        contexts: Mapping[int, Context],
        known: Mapping[int, FloatArray],
    ) -> dict[int, FloatArray]:
        """Context vectors of ``contexts``' windows: the mean of their message vectors.

        ``known``: message vectors not stored yet (new rows); the others are read.
        """
        wanted = sorted({i for c in contexts.values() for i in c.window} - set(known))
        found = dict(known)
        if wanted:
            rows = conn.execute(
                f"SELECT id, embedding FROM {TABLE} WHERE id = ANY(%s) AND embedding IS NOT NULL",
                (wanted,),
            ).fetchall()
            found.update({int(r[0]): np.asarray(r[1].to_numpy(), dtype=np.float32) for r in rows})
        pooled: dict[int, FloatArray] = {}
        for item_id, context in contexts.items():
            parts = [found[i] for i in context.window if i in found]
            if parts:
                pooled[item_id] = normalize(np.mean(parts, axis=0))[0]
        return pooled

    def since(self, position: int, limit: int = 200) -> list[tuple[int, RecallMessage]]:
        """Up to ``limit`` messages recorded after ``position`` (a row id), oldest first.

        Row ids come from one sequence, but two threads of one agent recording at once may
        commit out of id order: a reader seeing id 11 before id 10 commits would resume
        after 11 and never see 10. So the read first takes the agent's writers' lock
        exclusively: it waits until every write in flight has committed, and an id given
        out after that is larger than any the reader can see.
        """
        if limit <= 0:
            return []
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._writers_key(),))
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.id > %s "
                "ORDER BY b.id LIMIT %s",
                (self.agent_id, int(position), int(limit)),
            ).fetchall()
        return [(int(row[0]), _message(row)) for row in rows]

    def _writers_key(self) -> int:
        """The advisory lock key of this agent's recall writers (see `since`)."""
        return writers_key(self.agent_id)

    def mark(self, name: str) -> int:
        """The position saved under ``name`` (0 when never saved)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT position FROM memgpt_recall_marks WHERE agent_id = %s AND name = %s",
                (self.agent_id, pg_text(name)),
            ).fetchone()
        return 0 if row is None else int(row[0])

    def set_mark(self, name: str, position: int) -> int:
        """Save ``position`` under ``name``, never moving it back; returns the mark now."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "INSERT INTO memgpt_recall_marks (agent_id, name, position) VALUES (%s, %s, %s) "
                "ON CONFLICT (agent_id, name) DO UPDATE SET "
                "position = GREATEST(memgpt_recall_marks.position, excluded.position) "
                "RETURNING position",
                (self.agent_id, pg_text(name), int(position)),
            ).fetchone()
        assert row is not None
        return int(row[0])

    # -- internals: writing ----------------------------------------------------------

    def _new_contexts(
        self, conn: psycopg.Connection[Any], thread_id: str, new: Sequence[tuple[int, str]]
    ) -> dict[int, Context]:
        """The contexts that change around new messages: theirs and their +-2 neighbours'.

        Reads the thread between the first and last new message plus four searchable
        messages on each side: an append reads a handful of rows. Writes nothing: each
        changed row is then updated once, with its vectors (`_write_rows`).
        """
        low = (min(at for _, at in new), min(i for i, _ in new))
        high = (max(at for _, at in new), max(i for i, _ in new))
        base = (
            f"SELECT id, search_text, context FROM {TABLE} WHERE agent_id = %s "
            "AND thread_id = %s AND searchable "
        )
        reach = 2 * CONTEXT_RADIUS
        key = (self.agent_id, thread_id)
        before = conn.execute(
            base + "AND (created_at, id) < (%s, %s) ORDER BY created_at DESC, id DESC LIMIT %s",
            (*key, *low, reach),
        ).fetchall()
        span = conn.execute(
            base + "AND (created_at, id) >= (%s, %s) AND (created_at, id) <= (%s, %s) "
            "ORDER BY created_at, id",
            (*key, *low, *high),
        ).fetchall()
        after = conn.execute(
            base + "AND (created_at, id) > (%s, %s) ORDER BY created_at, id LIMIT %s",
            (*key, *high, reach),
        ).fetchall()
        sequence = [
            Neighbour(int(r[0]), str(r[1]), r[2]) for r in [*reversed(before), *span, *after]
        ]
        return {
            c.id: Context(c.text, c.window) for c in changed_contexts(sequence, {i for i, _ in new})
        }

    def _embed(
        self,
        conn: psycopg.Connection[Any],
        new: Sequence[tuple[int, PreparedMessage]],
        contexts: Mapping[int, Context],
    ) -> tuple[dict[int, FloatArray], dict[int, FloatArray]]:
        """Message vectors of the new rows (their parts stored) and the changed contexts'.

        A context vector is the mean of its window's message vectors.
        """
        assert self.embeddings is not None
        vectors = embed_texts(self.embeddings, [item.text for _, item in new])
        store_parts(
            conn,
            TABLE,
            self.agent_id,
            [rowid for rowid, _ in new],
            embed_parts(self.embeddings, [item.text for _, item in new]),
        )
        fresh: dict[int, FloatArray] = {
            rowid: v for (rowid, _), v in zip(new, vectors, strict=True)
        }
        return fresh, self._pool_contexts(conn, contexts, fresh)

    # -- internals: reading ----------------------------------------------------------

    def _filters(
        self,
        roles: Sequence[str] | None,
        start_date: str | None,
        end_date: str | None,
        exclude_ids: Collection[Excluded],
    ) -> tuple[str, Params]:
        """SQL condition (over alias ``b``) selecting the searchable candidates."""
        clauses = ["b.agent_id = %s", "b.searchable"]
        params: Params = [self.agent_id]
        if roles:
            clauses.append("b.role = ANY(%s)")
            params.append(sorted({normalise_role(r) for r in roles}))
        conditions, values = date_range_sql("b.created_at", start_date, end_date)
        clauses += placeholders(conditions)
        params += values
        excluding, values = _excluding("b.", exclude_ids)
        clauses += excluding
        params += values
        return " AND ".join(clauses), params

    def _listing(
        self,
        conn: psycopg.Connection[Any],
        where: str,
        params: Params,
        page: int,
        page_size: int,
        *,
        newest_first: bool,
    ) -> SearchPage[RecallMessage]:
        order = "DESC" if newest_first else "ASC"
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE {where} "
            f"ORDER BY b.created_at {order}, b.id {order} LIMIT %s OFFSET %s",
            (*params, page_size, page * page_size),
        ).fetchall()
        hits = [Hit(_message(row), 0.0) for row in rows]
        return SearchPage(
            hits=hits, total=self._count(conn, where, params), page=page, page_size=page_size
        )

    def _fetch_by_ids(
        self, conn: psycopg.Connection[Any], ids: Sequence[int]
    ) -> dict[int, RecallMessage]:
        if not ids:
            return {}
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.id = ANY(%s)",
            (self.agent_id, list(ids)),
        ).fetchall()
        return {int(row[0]): _message(row) for row in rows}

    def _participants(self, conn: psycopg.Connection[Any]) -> list[str]:
        """The agent's distinct speaker names: a skip scan of ``memgpt_recall_speakers``.

        Each step asks the index for the first name after the previous one, so the cost
        is one probe per name, not one read per message (``SELECT DISTINCT`` grows with
        the messages).
        """
        speakers = (
            f"FROM {TABLE} WHERE agent_id = %s AND searchable AND name IS NOT NULL "
            "AND role IN ('user', 'assistant')"
        )
        rows = conn.execute(
            f"WITH RECURSIVE n(name) AS (SELECT min(name) {speakers} UNION ALL "
            f"SELECT (SELECT min(name) {speakers} AND name > n.name) FROM n "
            "WHERE n.name IS NOT NULL) SELECT name FROM n WHERE name IS NOT NULL",
            (self.agent_id, self.agent_id),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def _topic_query(self, conn: psycopg.Connection[Any], query: str, mode: SearchMode) -> str:
        """In hybrid mode, the query without the participants it names (as the embedded one)."""
        if mode != "hybrid":
            return query
        return topic_of(query, self._participants(conn))

    def _mention_scores(
        self,
        conn: psycopg.Connection[Any],
        query: str,
        where: str,
        params: Params,
        candidates: Collection[int],
    ) -> list[dict[int, float]]:
        """Signals from a day or month and one participant the query names."""
        return mention_signals(
            query,
            lambda low, high: conn.execute(
                f"SELECT b.id, b.created_at FROM {TABLE} AS b WHERE {where} "
                "AND b.created_at >= %s AND b.created_at < %s",
                (*params, low, high),
            ).fetchall(),
            self._participants(conn) if candidates else (),
            lambda name: (
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM {TABLE} WHERE agent_id = %s AND name = %s AND id = ANY(%s)",
                    (self.agent_id, name, sorted(candidates)),
                )
            ),
        )


def _write_rows(
    conn: psycopg.Connection[Any],
    contexts: Mapping[int, Context],
    vectors: Mapping[int, FloatArray],
    pooled: Mapping[int, FloatArray | None],
) -> None:
    """One UPDATE per changed row: its new context, message vector, context vector.

    A row's update is a new row version in every index of the table, the two HNSW graphs
    included (a vector column changes, so it is never a HOT update): writing the context
    and each vector in separate statements made up to three versions of each new message
    and two of each neighbour, and the graph inserts grow with the agent. An absent value
    keeps the stored one; a context vector given as None is cleared.
    """
    rows = sorted(set(contexts) | set(vectors) | set(pooled))
    if not rows:
        return
    with conn.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {TABLE} SET context = coalesce(%s, context), "
            "embedding = coalesce(%s, embedding), "
            "context_embedding = CASE WHEN %s THEN %s::vector ELSE context_embedding END "
            "WHERE id = %s",
            [
                (
                    None if i not in contexts else pg_text(contexts[i].text),
                    vectors.get(i),
                    i in pooled,
                    pooled.get(i),
                    i,
                )
                for i in rows
            ],
        )


MESSAGE_COLUMNS = (
    "agent_id",
    "thread_id",
    "message_id",
    "role",
    "name",
    "text",
    "tool_calls",
    "created_at",
    "turn",
    "searchable",
    "search_text",
)
"""The columns of a recorded message that ``add`` and the bulk loader both write."""


def message_row(agent_id: str, item: PreparedMessage) -> tuple[Any, ...]:
    """One message's values for :data:`MESSAGE_COLUMNS` (text made storable: no NUL)."""
    m = item.message
    return (
        agent_id,
        pg_text(m.thread_id),
        pg_text(m.message_id),
        m.role,
        None if m.name is None else pg_text(m.name),
        pg_text(m.text),
        pg_text(json.dumps(m.tool_calls, default=str)),
        item.created_at,
        m.turn,
        item.searchable,
        pg_text(item.text) if item.searchable else None,
    )


def writers_key(agent_id: str) -> int:
    """The advisory lock key of an agent's recall writers (see `PgRecallMemory.since`)."""
    digest = hashlib.blake2b(f"memgpt-recall-writers:{agent_id}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


class _PgRecallSignals(TableSignals):
    """The signals of one recall search in Postgres (``stores.search.SignalSource``).

    Words: BM25 over the message's and the context's ``tsvector``. Meaning: pgvector
    cosine of the message vector (its best: whole or one of its parts,
    ``stores.postgres.parts``) and of the context vector. Named: the day and the
    participant a query names.
    """

    table = TABLE
    words = (("search_tsv", "search_len"), ("context_tsv", "context_len"))
    vectors = ("embedding", "context_embedding")

    def __init__(
        self, memory: PgRecallMemory, conn: psycopg.Connection[Any], where: str, params: Params
    ) -> None:
        super().__init__(memory, conn, where, params)
        self.memory = memory

    def vector_text(self, query: str, mode: SearchMode) -> str:
        return self.memory._topic_query(self.conn, query, mode)

    def named_signals(self, query: str, candidates: Collection[int]) -> list[dict[int, float]]:
        return self.memory._mention_scores(self.conn, query, self.where, self.params, candidates)

    def sequences(self, ids: Sequence[int], reach: int) -> dict[int, list[int]]:
        """Never asked: recall indexes each message's context when it is written."""
        return {}

    def fetch(self, ids: Sequence[int]) -> dict[int, RecallMessage]:
        return self.memory._fetch_by_ids(self.conn, ids)

    def text_of(self, item: RecallMessage) -> str:
        return searchable_text(item)

    def listing(self, page: int, page_size: int) -> SearchPage[RecallMessage]:
        return self.memory._listing(
            self.conn, self.where, self.params, page, page_size, newest_first=True
        )


def _message(row: Sequence[Any]) -> RecallMessage:
    return message_from_row(row)


def _excluding(alias: str, items: Collection[Excluded]) -> tuple[list[str], Params]:
    """SQL conditions (over ``alias``) leaving out excluded messages: bare ids, then pairs."""
    bare, pairs = split_excluded(items)
    clauses: list[str] = []
    params: Params = []
    if bare:
        clauses.append(f"NOT ({alias}message_id = ANY(%s))")
        params.append(pg_texts(bare))
    if pairs:
        clauses.append(
            f"({alias}thread_id, {alias}message_id) NOT IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[]))"
        )
        params += [pg_texts([t for t, _ in pairs]), pg_texts([m for _, m in pairs])]
    return clauses, params
