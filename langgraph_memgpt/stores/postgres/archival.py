"""Archival memory in Postgres: tagged passages, searched as ``stores.sqlite.archival`` searches.

Words (full-text search over the text) and meaning (pgvector cosine) are fused by
``stores.ranking.fuse``; every
filter (agent, tags, dates) applies before ranking. Tags are a ``text[]`` with a GIN index.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import psycopg

from langgraph_memgpt.stores.base import SearchMode, TagMatch
from langgraph_memgpt.stores.chunks import embed_parts
from langgraph_memgpt.stores.dates import date_range_sql
from langgraph_memgpt.stores.duplicates import NEAREST, fact_key, same_fact
from langgraph_memgpt.stores.embeddings import embed_texts, embedding_identity
from langgraph_memgpt.stores.mentions import (
    TagNaming,
    mention_signals,
    topic_of,
)
from langgraph_memgpt.stores.pages import ByTime
from langgraph_memgpt.stores.passages import (
    InsertsPassages,
    PreparedPassage,
    Writing,
    deletion_kind,
    normalize_tags,
    not_replaced,
    passage_columns,
    passage_of,
    replace_refusal,
)
from langgraph_memgpt.stores.postgres import part_terms, retention
from langgraph_memgpt.stores.postgres.db import pg_text, pg_texts
from langgraph_memgpt.stores.postgres.deletions import log_deletions
from langgraph_memgpt.stores.postgres.models import hold_model
from langgraph_memgpt.stores.postgres.parts import store_parts
from langgraph_memgpt.stores.postgres.search import (
    Params,
    TableSignals,
    placeholders,
)
from langgraph_memgpt.stores.postgres.tier import PgTier
from langgraph_memgpt.stores.search import ArchivalFilter, SignalSource
from langgraph_memgpt.stores.supersession import SearchesCurrentFirst
from langgraph_memgpt.stores.types import Hit, Passage, RetentionRule, SearchPage

TABLE = "memgpt_archival"
_COLUMNS = passage_columns(TABLE)
"""A passage's columns, then the passage that replaced it and when (``supersession``)."""
_CURRENT = not_replaced(TABLE)


class PgArchivalMemory(InsertsPassages, SearchesCurrentFirst, PgTier):
    """The archival passages of one agent in Postgres (meets ``ArchivalStore``).

    Args:
        pool: the backend's connection pool.
        agent_id: the agent; every query is scoped to it.
        embeddings: the embedding model, or None for words-only search.
        exact_scan_limit: up to this many passages vector search is exact; beyond it,
            the HNSW index with an iterative scan.
    """

    table = TABLE

    # -- writing ---------------------------------------------------------------------

    def _insert_batch(self, batch: list[PreparedPassage], writing: list[Writing]) -> list[Passage]:
        # Embed before the transaction: the model is the slow part.
        vectors = (
            embed_texts(self.embeddings, [text for text, *_ in batch])
            if self.embeddings is not None
            else None
        )
        parts = (
            embed_parts(self.embeddings, [text for text, *_ in batch])
            if self.embeddings is not None
            else None
        )
        keys = [fact_key(text) for text, *_ in batch]
        passages: list[Passage] = []
        with self.pool.connection() as conn, conn.transaction():
            if self.embeddings is not None:  # the model cannot switch before this commits
                self._identity = self._identity or embedding_identity(self.embeddings)
                hold_model(conn, self.agent_id, self._identity)
            merging = [k for k, (merge, _) in zip(keys, writing, strict=True) if merge]
            if merging:
                # Two writers of one agent's facts take turns, so neither misses the other's.
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s))", ("memgpt_facts:" + self.agent_id,)
                )
            held = self._current_facts(conn, merging)
            for n, (text, tags, thread_id, turn, created_at, key) in enumerate(batch):
                merge, replaces = writing[n]
                text, tags = pg_text(text), pg_texts(tags)
                thread_id = None if thread_id is None else pg_text(thread_id)
                key = None if key is None else pg_text(key)
                if key is not None:
                    replayed = self._stored_under(conn, key)
                    if replayed is not None:  # a replay: the passage under this key
                        passages.append(replayed)
                        continue
                same = held.get(keys[n]) if merge else None
                if same is None and merge and vectors is not None:
                    same = self._nearest_same(conn, text, vectors[n])
                if same is not None:
                    passages.append(replace(same, duplicate=True))
                    continue
                if replaces is not None:
                    older = self._get(conn, replaces)
                    if older is None or older.replaced_by is not None:
                        raise replace_refusal(
                            replaces, None if older is None else older.replaced_by
                        )
                row = conn.execute(
                    f"INSERT INTO {TABLE} (agent_id, text, tags, thread_id, turn, created_at, "
                    "embedding, key, fact_key, replaces) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (agent_id, key) WHERE key IS NOT NULL DO NOTHING RETURNING id",
                    (
                        self.agent_id,
                        text,
                        tags,
                        thread_id,
                        turn,
                        created_at,
                        None if vectors is None else vectors[n],
                        key,
                        keys[n],
                        replaces,
                    ),
                ).fetchone()
                if row is None:  # another writer stored this key meanwhile
                    stored = self._stored_under(conn, key or "")
                    assert stored is not None
                    passages.append(stored)
                    continue
                passage = Passage(
                    int(row[0]),
                    self.agent_id,
                    text,
                    tags,
                    created_at,
                    thread_id,
                    turn,
                    replaces=replaces,
                )
                passages.append(passage)
                held = {k: p for k, p in held.items() if p.id != replaces}  # no longer current
                held.setdefault(keys[n], passage)
                if parts is not None:
                    store_parts(conn, TABLE, self.agent_id, [int(row[0])], [parts[n]])
            part_terms.catch_up(conn)  # the long passages' part words, before the commit
        return passages

    def _stored_under(self, conn: psycopg.Connection[Any], key: str) -> Passage | None:
        """The agent's passage stored under idempotency key ``key``, if any."""
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.key = %s",
            (self.agent_id, key),
        ).fetchone()
        return None if row is None else _passage(row)

    def _nearest_same(
        self, conn: psycopg.Connection[Any], text: str, vector: Any
    ) -> Passage | None:
        """The current passage closest in meaning to ``text`` that it duplicates, if any.

        The agent's `NEAREST` passages by cosine (this batch's earlier ones included: the
        transaction sees them), checked by ``stores.duplicates.same_fact``.
        """
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s "
            f"AND b.embedding IS NOT NULL AND {_CURRENT} "
            "ORDER BY b.embedding <=> %s LIMIT %s",
            (self.agent_id, vector, NEAREST),
        ).fetchall()
        return next((p for p in map(_passage, rows) if same_fact(text, p.text)), None)

    def _current_facts(
        self, conn: psycopg.Connection[Any], keys: Sequence[str]
    ) -> dict[str, Passage]:
        """The agent's passages not replaced by another, by fact key (the oldest of each)."""
        if not keys:
            return {}
        rows = conn.execute(
            f"SELECT b.fact_key, {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s "
            f"AND b.fact_key = ANY(%s) AND {_CURRENT} ORDER BY b.id",
            (self.agent_id, sorted(set(keys))),
        ).fetchall()
        held: dict[str, Passage] = {}
        for row in rows:
            held.setdefault(str(row[0]), _passage(row[1:]))
        return held

    # -- reading ---------------------------------------------------------------------

    @contextmanager
    def _archival_signals(self, chosen: ArchivalFilter) -> Iterator[SignalSource[Passage]]:
        where, params = self._filters(
            chosen.tags, chosen.tag_match, chosen.start_date, chosen.end_date
        )
        with self.pool.connection() as conn:
            yield _PgArchivalSignals(self, conn, where, params)

    def count(self) -> int:
        """How many passages the agent has."""
        with self.pool.connection() as conn:
            return self._count(conn, "b.agent_id = %s", [self.agent_id])

    def tags(self) -> list[str]:
        """Every tag the agent's passages carry, sorted (``stores.postgres.tag_counts``)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT tag FROM memgpt_archival_tag_counts WHERE agent_id = %s ORDER BY tag",
                (self.agent_id,),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def last_modified(self) -> str | None:
        """Timestamp of the agent's newest passage, or None for an empty archive."""
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT max(created_at) FROM {TABLE} WHERE agent_id = %s",
                (self.agent_id,),
            ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def recent(self, n: int = 5) -> list[Passage]:
        """The ``n`` newest passages, newest first."""
        with self.pool.connection() as conn:
            where = "b.agent_id = %s"
            return _BY_TIME.rows(conn, where, [self.agent_id], limit=max(0, n), newest_first=True)

    def get(self, passage_id: int) -> Passage | None:
        """One of the agent's passages by id (None if absent or another agent's)."""
        with self.pool.connection() as conn:
            return self._get(conn, passage_id)

    def _get(self, conn: psycopg.Connection[Any], passage_id: int) -> Passage | None:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.id = %s",
            (self.agent_id, int(passage_id)),
        ).fetchone()
        return None if row is None else _passage(row)

    def keyed(self, keys: Iterable[str]) -> dict[str, Passage]:
        """This agent's passages stored under any of ``keys`` (idempotency keys), by key."""
        wanted = pg_texts(list(keys))
        if not wanted:
            return {}
        sql = (
            f"SELECT b.key, {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.key = ANY(%s)"
        )
        return {str(row[0]): _passage(row[1:]) for row in self._rows(sql, (self.agent_id, wanted))}

    def keys_of(self, passage_ids: Iterable[int]) -> dict[int, str]:
        """The keys of those of these passages that have one, by passage id."""
        ids = sorted({int(i) for i in passage_ids})
        if not ids:
            return {}
        sql = (
            f"SELECT id, key FROM {TABLE} WHERE agent_id = %s AND key IS NOT NULL AND id = ANY(%s)"
        )
        return {int(row[0]): str(row[1]) for row in self._rows(sql, (self.agent_id, ids))}

    def list_passages(
        self, *, after: int = 0, limit: int = 1000, thread_id: str | None = None
    ) -> list[tuple[Passage, str | None]]:
        """Passages with their idempotency key, in id order after ``after`` (export, forget)."""
        sql = f"SELECT {_COLUMNS}, b.key FROM {TABLE} AS b WHERE b.agent_id = %s AND b.id > %s"
        params: Params = [self.agent_id, int(after)]
        if thread_id is not None:
            sql += " AND b.thread_id = %s"
            params.append(pg_text(thread_id))
        with self.pool.connection() as conn:
            rows = conn.execute(sql + " ORDER BY b.id LIMIT %s", [*params, max(1, limit)])
            return [(_passage(row[:-1]), row[-1]) for row in rows.fetchall()]

    def delete(
        self, passage_ids: Sequence[int], *, actor: str = "user", detail: str = ""
    ) -> list[Passage]:
        """Forget passages (row, words and vector live in one row), each deletion logged."""
        ids = sorted({int(i) for i in passage_ids})
        if not ids:
            return []
        with self.pool.connection() as conn, conn.transaction():
            rows = conn.execute(
                f"DELETE FROM {TABLE} AS b WHERE b.agent_id = %s AND b.id = ANY(%s) "
                f"RETURNING {_COLUMNS}",
                (self.agent_id, ids),
            ).fetchall()
            deleted = sorted((_passage(row) for row in rows), key=lambda p: p.id)
            log_deletions(
                conn,
                self.agent_id,
                actor,
                [(deletion_kind(p), str(p.id), p.thread_id, detail) for p in deleted],
            )
        return deleted

    def add_sources(self, passage_id: int, sources: Sequence[tuple[str, str]]) -> None:
        """Record the messages (thread, message id) a passage was made from (as SQLite)."""
        if not sources:
            return
        with self.pool.connection() as conn, conn.transaction():
            conn.cursor().executemany(
                "INSERT INTO memgpt_archival_sources (passage_id, agent_id, thread_id, "
                "message_id) SELECT id, agent_id, %s, %s FROM memgpt_archival "
                "WHERE id = %s AND agent_id = %s ON CONFLICT DO NOTHING",
                [(pg_text(t), pg_text(m), int(passage_id), self.agent_id) for t, m in sources],
            )

    def derived_from(self, thread_id: str, message_ids: Sequence[str] | None = None) -> list[int]:
        """Ids of the passages made from these messages of ``thread_id`` (None: any of its)."""
        sql = (
            "SELECT DISTINCT passage_id FROM memgpt_archival_sources WHERE agent_id = %s "
            "AND thread_id = %s"
        )
        params: list[object] = [self.agent_id, pg_text(thread_id)]
        if message_ids is not None:
            sql += " AND message_id = ANY(%s)"
            params.append([pg_text(m) for m in message_ids])
        with self.pool.connection() as conn:
            rows = conn.execute(sql + " ORDER BY 1", params).fetchall()
        return [int(r[0]) for r in rows]

    def retention_rules(self) -> list[RetentionRule]:
        """The agent's retention rules, by tag then source."""
        with self.pool.connection() as conn:
            return retention.rules(conn, self.agent_id)

    def set_retention_rule(self, rule: RetentionRule) -> None:
        """Add a rule, or change the age of the rule with the same tag and source."""
        with self.pool.connection() as conn:
            retention.put(conn, self.agent_id, rule)

    def remove_retention_rule(self, tag: str, source: str | None = None) -> bool:
        """Drop the rule with this tag and source; whether there was one."""
        with self.pool.connection() as conn:
            return retention.remove(conn, self.agent_id, tag, source)

    def expired(
        self, tag: str, *, source_tag: str | None, before: str, limit: int = 500
    ) -> list[int]:
        """Ids of passages tagged ``tag`` (and ``source_tag``) created before ``before``."""
        with self.pool.connection() as conn:
            return retention.expired(conn, self.agent_id, tag, source_tag, before, limit)

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every passage of the agent (one log entry, kind ``archival``)."""
        with self.pool.connection() as conn, conn.transaction():
            count = conn.execute(
                f"DELETE FROM {TABLE} WHERE agent_id = %s", (self.agent_id,)
            ).rowcount
            if count:
                log = [("archival", self.agent_id, None, f"{count} passages")]
                log_deletions(conn, self.agent_id, actor, log)
        return int(count)

    # -- internals -------------------------------------------------------------------

    def _filters(
        self,
        tags: Iterable[str] | str | None,
        tag_match: TagMatch,
        start_date: str | None,
        end_date: str | None,
    ) -> tuple[str, Params]:
        conditions = ["b.agent_id = %s"]
        params: Params = [self.agent_id]
        wanted = pg_texts(normalize_tags(tags))
        if wanted:
            conditions.append("b.tags @> %s" if tag_match == "all" else "b.tags && %s")
            params.append(wanted)
        date_conditions, date_params = date_range_sql("b.created_at", start_date, end_date)
        conditions += placeholders(date_conditions)
        params += date_params
        return " AND ".join(conditions), params

    def _hits(
        self, conn: psycopg.Connection[Any], ranked: Sequence[tuple[int, float]]
    ) -> list[Hit[Passage]]:
        if not ranked:
            return []
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.id = ANY(%s)",
            (self.agent_id, [i for i, _ in ranked]),
        ).fetchall()
        by_id = {int(row[0]): _passage(row) for row in rows}
        return [Hit(item=by_id[i], score=score) for i, score in ranked if i in by_id]


class _PgArchivalSignals(TableSignals):
    """The signals of one archival search in Postgres (``stores.search.SignalSource``).

    Words: BM25 over the passage's ``tsvector``. Meaning: pgvector cosine of its best
    vector, the whole passage's or one of its parts' (``stores.postgres.parts``).
    """

    table = TABLE
    words = (("tsv", "text_len"),)
    vectors = ("embedding",)

    def __init__(
        self, memory: PgArchivalMemory, conn: psycopg.Connection[Any], where: str, params: Params
    ) -> None:
        super().__init__(memory, conn, where, params)
        self.memory = memory
        self._word_matches: set[int] = set()
        self._names_a_tag = TagNaming(self._agent_tags)

    def word_signals(self, terms: Sequence[str], neighbours: bool = True) -> list[dict[int, float]]:
        signals = super().word_signals(terms, neighbours)
        self._word_matches = set(signals[0])
        return signals

    def vectors_wait_for_words(self, query: str, mode: SearchMode) -> bool:
        """In hybrid mode, when the query names one of the agent's tags (or it has many).

        :meth:`vector_text` leaves out the tags of the word matches that the query names;
        a query naming none of the agent's tags is embedded as it is whatever the words
        match, so its vector statements start first and run beside them.
        """
        return mode == "hybrid" and self._names_a_tag(query)

    def _agent_tags(self, limit: int) -> list[str]:
        """Up to ``limit`` of the agent's tags in use (``tag_counts``)."""
        rows = self.conn.execute(
            "SELECT tag FROM memgpt_archival_tag_counts WHERE agent_id = %s LIMIT %s",
            (self.agent_id, limit),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def vector_text(self, query: str, mode: SearchMode) -> str:
        """As SQLite's: in hybrid mode, without the word matches' tags the query names."""
        return topic_of(query, self._tags_of(self._word_matches)) if mode == "hybrid" else query

    def _tags_of(self, ids: Collection[int]) -> list[str]:
        if not ids:
            return []
        rows = self.conn.execute(
            f"SELECT DISTINCT unnest(tags) FROM {TABLE} WHERE agent_id = %s AND id = ANY(%s)",
            (self.agent_id, sorted(ids)),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def askers_own(self, candidates: Collection[int]) -> list[int]:
        """None: a passage has no author among the conversation's speakers."""
        return []

    def named_signals(self, query: str, candidates: Collection[int]) -> list[dict[int, float]]:
        """As SQLite's: a day the query names, and one tag it names among the candidates'."""
        return mention_signals(
            query,
            lambda low, high: self.conn.execute(
                f"SELECT b.id, b.created_at FROM {TABLE} AS b WHERE {self.where} "
                "AND b.created_at >= %s AND b.created_at < %s",
                (*self.params, low, high),
            ).fetchall(),
            self._tags_of(candidates) if self._names_a_tag(query) else [],
            lambda tag: (
                r[0]
                for r in self.conn.execute(
                    f"SELECT id FROM {TABLE} WHERE agent_id = %s AND id = ANY(%s) "
                    "AND tags @> ARRAY[%s]::text[]",
                    (self.agent_id, sorted(candidates), tag),
                )
            ),
        )

    def sequences(self, ids: Sequence[int], reach: int) -> dict[int, list[int]]:
        """One query: each seed's neighbours before and after it (a LATERAL index read each)."""
        if not ids:
            return {}
        near = (
            f"(SELECT b.id, b.turn FROM {TABLE} AS b WHERE {self.where} "
            "AND b.thread_id = s.thread_id AND (b.turn, b.id) {0} (s.turn, s.id) "
            "ORDER BY b.turn {1}, b.id {1} LIMIT %s)"
        )
        rows = self.conn.execute(
            f"SELECT s.id, s.turn, n.id, n.turn FROM {TABLE} AS s LEFT JOIN LATERAL ("
            f"{near.format('<', 'DESC')} UNION ALL {near.format('>', 'ASC')}"
            ") AS n ON true WHERE s.agent_id = %s AND s.id = ANY(%s) "
            "AND s.thread_id IS NOT NULL AND s.turn IS NOT NULL",
            (*self.params, reach, *self.params, reach, self.agent_id, list(ids)),
        ).fetchall()
        places: dict[int, list[tuple[int, int]]] = {}
        for seed, seed_turn, item, turn in rows:
            places.setdefault(int(seed), [(int(seed_turn), int(seed))])
            if item is not None:
                places[int(seed)].append((int(turn), int(item)))
        return {seed: [item for _, item in sorted(found)] for seed, found in places.items()}

    def fetch(self, ids: Sequence[int]) -> dict[int, Passage]:
        hits = self.memory._hits(self.conn, [(i, 0.0) for i in ids])
        return {hit.item.id: hit.item for hit in hits}

    def text_of(self, item: Passage) -> str:
        return item.text

    def thread_of(self, item: Passage) -> str | None:
        """The thread the passage came from."""
        return item.thread_id

    def listing(self, page: int, page_size: int) -> SearchPage[Passage]:
        return _BY_TIME.page(self.conn, self.where, self.params, page, page_size, newest_first=True)


def _passage(row: Sequence[Any]) -> Passage:
    return passage_of(row, row[3] or [])


_BY_TIME = ByTime(TABLE, _COLUMNS, "%s", _passage)
"""The agent's passages read by time: an empty query's listing, the most recent."""
