"""The signals of one recall search in SQLite, as ``stores.search`` asks for them.

``SqliteRecallMemory`` searches through the engine-neutral hybrid search (``stores.search``), which
reads its signals from a ``SignalSource``: this is recall's, over FTS5 (words of the message
and of its context) and FAISS (the message's vectors and its context's), plus what the
query names (a day, a participant).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol

import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.base import SearchMode
from langgraph_memgpt.stores.chunks import nearest_items
from langgraph_memgpt.stores.embeddings import FloatArray, embed_query
from langgraph_memgpt.stores.mentions import created_between, mention_signals, topic_of
from langgraph_memgpt.stores.messages import searchable_text
from langgraph_memgpt.stores.search import found_now, split_excluded
from langgraph_memgpt.stores.sqlite.fts import bm25_scores, term_matches
from langgraph_memgpt.stores.sqlite.part_terms import long_share, with_best_parts
from langgraph_memgpt.stores.sqlite.recall_rows import BY_TIME, PAIRS, fetch_by_ids
from langgraph_memgpt.stores.sqlite.recall_vectors import RecallVectors
from langgraph_memgpt.stores.types import Excluded, RecallMessage, SearchPage


class SearchedRecall(Protocol):
    """What a search reads of ``SqliteRecallMemory``: its store, vectors and participants."""

    db: sqlite_utils.Database
    agent_id: str
    embeddings: Embeddings | None
    vectors: RecallVectors | None

    def participants(self) -> list[str]:
        """Names the agent's conversation messages carry (who said them)."""
        ...


class RecallSignals:
    """The signals of one recall search in SQLite (``stores.search.SignalSource``).

    Words: FTS5 BM25 over the message and over its context. Meaning: FAISS cosine of the
    message (its best vector: whole or one of its parts, ``stores.chunks``) and of the
    context vector (the context and tail indexes together).
    Named: the day and the participant a query names.
    """

    def __init__(
        self,
        memory: SearchedRecall,
        where: str,
        params: list[object],
        *,
        narrowed: bool = True,
        excluded: Collection[Excluded] = (),
    ) -> None:
        """``narrowed``: a filter beyond the agent and ``excluded`` (message ids) applies."""
        self.memory = memory
        self.db = memory.db
        self.where = where
        self.params = params
        self.narrowed = narrowed
        self.excluded = excluded
        self.has_vectors = memory.embeddings is not None
        self._allowed: list[int] | None = None
        self._allowed_read = False
        self._excluded_rows: list[int] | None = None

    def word_signals(self, terms: Sequence[str], neighbours: bool = True) -> list[dict[int, float]]:
        """BM25 of the message and of its context, a long message's raised to its best part's.

        Where that is higher (``stores.bm25``); so is a long message's context. The parts'
        words were counted when the message was written (``part_terms``). The context only
        when ``neighbours``.
        """
        by_message: dict[str, list[int]] = {}
        by_context: dict[str, list[int]] = {}
        message = bm25_scores(
            self.db, "recall_fts", "recall", terms, self.where, self.params, matched=by_message
        )
        own = with_best_parts(self.db, "recall_fts", self.memory.agent_id, message, by_message)
        if not neighbours:
            return [own]
        context = bm25_scores(
            self.db,
            "recall_context_fts",
            "recall",
            terms,
            self.where,
            self.params,
            matched=by_context,
        )
        return [
            own,
            with_best_parts(
                self.db, "recall_context_fts", self.memory.agent_id, context, by_context
            ),
        ]

    def long_share(self) -> float:
        """The share of long messages among the agent's newest (``part_terms.long_share``)."""
        return long_share(self.db.conn, "recall_fts", self.memory.agent_id)

    def term_matches(self, terms: Sequence[str], limit: int) -> dict[str, set[int]]:
        """The candidates holding each term, from the message's full-text index."""
        return term_matches(
            self.db, "recall_fts", "recall", terms, self.where, self.params, limit=limit
        )

    def vectors_wait_for_words(self, query: str, mode: SearchMode) -> bool:
        """Never: the text to embed leaves out participants, not anything words found."""
        return False

    def vector_text(self, query: str, mode: SearchMode) -> str:
        """The text to embed: in hybrid mode, the query without the participants it names.

        The names stay in the words signals, and one named participant still lifts their
        own messages (:meth:`named_signals`); the embedding is left with what the query
        is about. Vector mode keeps the names, since no other signal would carry who is
        asked about; a query that is nothing but names is embedded as it is.
        """
        if mode != "hybrid":
            return query
        return topic_of(query, self.memory.participants())

    def embed(self, text: str) -> FloatArray:
        """The query vector."""
        assert self.memory.embeddings is not None
        return embed_query(self.memory.embeddings, text)

    def _vectors(self) -> RecallVectors:
        assert self.memory.vectors is not None
        return self.memory.vectors

    def allowed(self) -> list[int] | None:
        """Ids passing the filters, or None when only the agent filter applies.

        The vector indexes hold only this agent's searchable messages, so without other
        filters (``params[0]`` is the agent id) every vector is a candidate and FAISS
        needs no id list; nor when the only other filter leaves out a few messages
        (those in the prompt): :meth:`excluded_rows` are then left out instead.
        """
        if not self._allowed_read and self.narrowed and len(self.params) > 1:
            rows = self.db.conn.execute(
                f"SELECT b.id FROM recall AS b WHERE {self.where}", self.params
            )
            self._allowed = [int(r[0]) for r in rows]
        self._allowed_read = True
        return self._allowed

    def excluded_rows(self) -> list[int]:
        """Row ids of the excluded messages, when they are the only filter but the agent.

        Listing the allowed ids instead would read every message of the agent, and the part
        lookup would take every id: a cost that grows with the history, where the excluded
        messages are the few in the prompt.
        """
        if self._excluded_rows is None:
            self._excluded_rows = []
            if not self.narrowed and self.excluded:
                bare, pairs = split_excluded(self.excluded)
                # Two index probes joined by UNION: one ``OR`` of the two made SQLite read
                # every row of the agent instead.
                rows = self.db.conn.execute(
                    "SELECT id FROM recall WHERE agent_id = ? "
                    "AND message_id IN (SELECT value FROM json_each(?)) "
                    "UNION SELECT id FROM recall WHERE agent_id = ? "
                    f"AND (thread_id, message_id) IN ({PAIRS})",
                    (
                        self.memory.agent_id,
                        json.dumps(bare),
                        self.memory.agent_id,
                        json.dumps(pairs),
                    ),
                )
                self._excluded_rows = sorted(int(r[0]) for r in rows)
        return self._excluded_rows

    def begin_nearest(self, vector: Any, k: int) -> Callable[[], list[dict[int, float]]]:
        """The message signal (best of whole and parts) and the context signal, ``k`` each.

        The big indexes' graph walks run beside the word signals
        (``VectorIndex.begin_search``); the filters and the small indexes are read here.
        """
        allowed = self.allowed()
        if allowed is not None and not allowed:
            return found_now([{}, {}])
        excluded = self.excluded_rows()
        vectors = self._vectors()
        turn = vectors.turn.begin_search(vector, k, allowed_ids=allowed, excluded_ids=excluded)
        context = vectors.context.begin_search(
            vector, k, allowed_ids=allowed, excluded_ids=excluded
        )
        parts = vectors.parts.begin_nearest(vector, k, allowed, excluded)
        tail = vectors.tail.search(vector, k, allowed_ids=allowed, excluded_ids=excluded)

        def collect() -> list[dict[int, float]]:
            # A message's similarity is its best part's (``stores.chunks``).
            turns = nearest_items(dict(turn()), parts(), k)
            # One context signal over both context indexes (the tail's newer vector wins
            # for a message a database from before the split holds in both).
            contexts = dict(context())
            contexts.update(tail)
            best = sorted(contexts.items(), key=lambda pair: -pair[1])[:k]
            return [turns, dict(best)]

        return collect

    def vector_total(self, at_most: int) -> int:
        """How many candidates have a vector, up to ``at_most``."""
        allowed = self.allowed()
        if allowed is not None:
            return min(at_most, len(allowed))
        if len(self.params) > 1:  # a few left out: the candidates, counted up to at_most
            row = self.db.conn.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM recall AS b WHERE {self.where} LIMIT ?)",
                (*self.params, at_most),
            ).fetchone()
            return int(row[0])
        return min(at_most, self._vectors().turn.count())

    def named_signals(self, query: str, candidates: Collection[int]) -> list[dict[int, float]]:
        """Signals from what the query names: a day or month, and one participant.

        A signal is only added when the query names such a thing, so other queries rank
        exactly as before.
        """
        conn = self.db.conn
        holders = (
            "SELECT id FROM recall WHERE +agent_id = ? AND name = ? "
            "AND id IN (SELECT value FROM json_each(?))"
        )
        among = json.dumps(sorted(candidates))
        return mention_signals(
            query,
            created_between(conn.execute, "recall", self.where, self.params, "?"),
            self.memory.participants() if candidates else (),
            lambda name: (r[0] for r in conn.execute(holders, (self.memory.agent_id, name, among))),
        )

    def askers_own(self, candidates: Collection[int]) -> list[int]:
        """The user's messages among the candidates."""
        rows = self.db.conn.execute(
            "SELECT id FROM recall WHERE id IN (SELECT value FROM json_each(?)) AND role = 'user'",
            (json.dumps(sorted(candidates)),),
        )
        return [int(r[0]) for r in rows]

    def sequences(self, ids: Sequence[int], reach: int) -> dict[int, list[int]]:
        """Never asked: recall indexes each message's context when it is written."""
        return {}

    def fetch(self, ids: Sequence[int]) -> dict[int, RecallMessage]:
        """The messages of these row ids."""
        return fetch_by_ids(self.db.conn, self.memory.agent_id, ids)

    def text_of(self, item: RecallMessage) -> str:
        """What a message is searched by (its text and what it said through tools)."""
        return searchable_text(item)

    def thread_of(self, item: RecallMessage) -> str | None:
        """The thread the message came from."""
        return item.thread_id

    def listing(self, page: int, page_size: int) -> SearchPage[RecallMessage]:
        """The candidates newest first, for an empty query."""
        return BY_TIME.page(
            self.db.conn, self.where, self.params, page, page_size, newest_first=True
        )


__all__ = ["RecallSignals", "SearchedRecall"]
