"""The signals of one recall search in Postgres, as ``stores.search`` asks for them.

Words: BM25 over the message's and the context's ``tsvector``. Meaning: pgvector cosine
of the message vector (its best: whole or one of its parts, ``stores.postgres.parts``) and
of the context vector. Named: the day and the participant a query names, as the embedded
backend's recall signals.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import psycopg

from langgraph_memgpt.stores.base import SearchMode
from langgraph_memgpt.stores.mentions import created_between, mention_signals, topic_of
from langgraph_memgpt.stores.messages import searchable_text
from langgraph_memgpt.stores.postgres.recall_rows import BY_TIME, TABLE, fetch_by_ids
from langgraph_memgpt.stores.postgres.search import TableSignals
from langgraph_memgpt.stores.types import RecallMessage, SearchPage


class PgRecallSignals(TableSignals):
    """The signals of one recall search in Postgres (``stores.search.SignalSource``)."""

    table = TABLE
    words = (("search_tsv", "search_len"), ("context_tsv", "context_len"))
    vectors = ("embedding", "context_embedding")

    def vector_text(self, query: str, mode: SearchMode) -> str:
        """In hybrid mode, the query without the participants it names (as the embedded one)."""
        if mode != "hybrid":
            return query
        return topic_of(query, participants(self.conn, self.agent_id))

    def named_signals(self, query: str, candidates: Collection[int]) -> list[dict[int, float]]:
        """Signals from a day or month and one participant the query names."""
        conn = self.conn
        holders = f"SELECT id FROM {TABLE} WHERE agent_id = %s AND name = %s AND id = ANY(%s)"
        among = sorted(candidates)
        return mention_signals(
            query,
            created_between(conn.execute, TABLE, self.where, self.params, "%s"),
            participants(conn, self.agent_id) if candidates else (),
            lambda name: (r[0] for r in conn.execute(holders, (self.agent_id, name, among))),
        )

    def askers_own(self, candidates: Collection[int]) -> list[int]:
        """The user's messages among the candidates."""
        rows = self.conn.execute(
            f"SELECT id FROM {TABLE} WHERE agent_id = %s AND id = ANY(%s) AND role = 'user'",
            (self.agent_id, sorted(candidates)),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def sequences(self, ids: Sequence[int], reach: int) -> dict[int, list[int]]:
        """Never asked: recall indexes each message's context when it is written."""
        return {}

    def fetch(self, ids: Sequence[int]) -> dict[int, RecallMessage]:
        """The messages of these row ids."""
        return fetch_by_ids(self.conn, self.agent_id, ids)

    def text_of(self, item: RecallMessage) -> str:
        """What a message is searched by (its text and what it said through tools)."""
        return searchable_text(item)

    def thread_of(self, item: RecallMessage) -> str | None:
        """The thread the message came from."""
        return item.thread_id

    def listing(self, page: int, page_size: int) -> SearchPage[RecallMessage]:
        """The candidates newest first, for an empty query."""
        return BY_TIME.page(self.conn, self.where, self.params, page, page_size, newest_first=True)


def participants(conn: psycopg.Connection[Any], agent_id: str) -> list[str]:
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
        (agent_id, agent_id),
    ).fetchall()
    return [str(r[0]) for r in rows]


__all__ = ["PgRecallSignals", "participants"]
