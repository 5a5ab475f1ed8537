"""The signals of one archival search in SQLite, as ``stores.search`` asks for them.

``SqliteArchivalMemory`` searches through the engine-neutral hybrid search (``stores.search``),
which reads its signals from a ``SignalSource``: this is archival's, over FTS5 (words of the
passage) and FAISS (the passage's vectors, whole and parts), plus what the query names (a
day, a tag) and a passage's neighbours in its thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol

import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.base import SearchMode
from langgraph_memgpt.stores.chunks import nearest_items
from langgraph_memgpt.stores.embeddings import embed_query
from langgraph_memgpt.stores.mentions import (
    TagNaming,
    created_between,
    mention_signals,
    topic_of,
)
from langgraph_memgpt.stores.sqlite.archival_rows import BY_TIME
from langgraph_memgpt.stores.sqlite.fts import term_matches
from langgraph_memgpt.stores.sqlite.part_terms import bm25_with_parts, long_share
from langgraph_memgpt.stores.sqlite.parts import PartIndex
from langgraph_memgpt.stores.sqlite.vectors import VectorIndex
from langgraph_memgpt.stores.types import Hit, Passage, SearchPage


class SearchedArchive(Protocol):
    """What a search reads of ``SqliteArchivalMemory``: its store, indexes and row helpers."""

    db: sqlite_utils.Database
    agent_id: str
    embeddings: Embeddings | None
    index: VectorIndex | None
    parts: PartIndex | None

    def _count_with_vector(self, where: str, params: Sequence[object]) -> int: ...

    def _hits(self, ranked: Sequence[tuple[int, float]]) -> list[Hit[Passage]]: ...


class ArchivalSignals:
    """The signals of one archival search in SQLite (``stores.search.SignalSource``).

    Words: FTS5 BM25 over the passage. Meaning: FAISS cosine of its best vector, the
    whole passage's or one of its parts' (``stores.chunks``).
    """

    def __init__(self, memory: SearchedArchive, where: str, params: list[object]) -> None:
        self.memory = memory
        self.db = memory.db
        self.where = where
        self.params = params
        self.has_vectors = memory.index is not None
        self._word_matches: set[int] = set()
        self._names_a_tag = TagNaming(self._agent_tags)

    def word_signals(self, terms: Sequence[str], neighbours: bool = True) -> list[dict[int, float]]:
        """BM25 of the passage, a long one's raised to its best part's (``stores.bm25``)."""
        scores = bm25_with_parts(
            self.db,
            "archival_fts",
            "archival",
            self.memory.agent_id,
            terms,
            self.where,
            self.params,
        )
        self._word_matches = set(scores)
        return [scores]

    def long_share(self) -> float:
        """The share of long passages among the agent's newest (``part_terms.long_share``)."""
        return long_share(self.db.conn, "archival_fts", self.memory.agent_id)

    def term_matches(self, terms: Sequence[str], limit: int) -> dict[str, set[int]]:
        """The candidates holding each term, from the passages' full-text index."""
        return term_matches(
            self.db, "archival_fts", "archival", terms, self.where, self.params, limit=limit
        )

    def vectors_wait_for_words(self, query: str, mode: SearchMode) -> bool:
        """In hybrid mode, when the query names one of the agent's tags (or it has many).

        :meth:`vector_text` leaves out the tags of the word matches that the query names
        (``mentions.may_name_a_tag``); a query naming none of the agent's tags is embedded
        as it is whatever the words match, so its graph walk starts first and runs beside
        them.
        """
        return mode == "hybrid" and self._names_a_tag(query)

    def _agent_tags(self, limit: int) -> list[str]:
        """Up to ``limit`` of the agent's distinct tags, one index seek each.

        A ``DISTINCT`` would read every tag row of the agent (one per tagged passage);
        stepping from each tag to the next one in the ``(agent_id, tag)`` index does not.
        """
        rows = self.db.conn.execute(
            "WITH RECURSIVE t(tag) AS ("
            "SELECT min(tag) FROM archival_tags WHERE agent_id = ?1 "
            "UNION ALL SELECT (SELECT min(tag) FROM archival_tags "
            "WHERE agent_id = ?1 AND tag > t.tag) FROM t WHERE t.tag IS NOT NULL LIMIT ?2"
            ") SELECT tag FROM t WHERE tag IS NOT NULL",
            (self.memory.agent_id, limit),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def vector_text(self, query: str, mode: SearchMode) -> str:
        """In hybrid mode, the query without the tags it names (``mentions.topic_of``).

        A named tag is left to the words and the tag signal (:meth:`named_signals`), as
        recall leaves a named participant to its words and speaker signals; only the tags
        of the word matches are looked at (an agent may have thousands).
        """
        if mode != "hybrid":
            return query
        return topic_of(query, self._tags_of(self._word_matches))

    def _tags_of(self, ids: Collection[int]) -> list[str]:
        """The tags these passages carry (a search's candidates: never every tag)."""
        if not ids:
            return []
        rows = self.db.conn.execute(
            "SELECT DISTINCT tag FROM archival_tags "
            "WHERE passage_id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(ids)),),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def embed(self, text: str) -> Any:
        """The query vector."""
        assert self.memory.embeddings is not None
        return embed_query(self.memory.embeddings, text)

    def _index(self) -> VectorIndex:
        assert self.memory.index is not None
        return self.memory.index

    def begin_nearest(self, vector: Any, k: int) -> Callable[[], list[dict[int, float]]]:
        """The passage signal: the ``k`` best of whole passages and their parts.

        The passages' graph walk runs beside the word signals
        (``VectorIndex.begin_search``); the filter is read here.
        """
        # The index holds this agent's vectors only: with no filter beyond the agent
        # (its one parameter) there is nothing to restrict.
        allowed = None
        if len(self.params) > 1:
            rows = self.db.conn.execute(
                f"SELECT b.id FROM archival AS b WHERE {self.where}", self.params
            )
            allowed = [int(row[0]) for row in rows]
        whole = self._index().begin_search(vector, k, allowed_ids=allowed)
        assert self.memory.parts is not None
        parts = self.memory.parts.begin_nearest(vector, k, allowed)
        # A passage's similarity is its best part's (``stores.chunks``).
        return lambda: [nearest_items(dict(whole()), parts(), k)]

    def vector_total(self, at_most: int) -> int:
        """How many candidates have a vector, up to ``at_most``."""
        return min(at_most, self.memory._count_with_vector(self.where, self.params))

    def askers_own(self, candidates: Collection[int]) -> list[int]:
        """None: a passage has no author among the conversation's speakers."""
        return []

    def named_signals(self, query: str, candidates: Collection[int]) -> list[dict[int, float]]:
        """A day the query names (``created_at``) and one tag it names, as recall's are.

        The tag lifts only passages another signal found, as recall's speaker does.
        """
        holders = (
            "SELECT passage_id FROM archival_tags WHERE agent_id = ? AND tag = ? "
            "AND passage_id IN (SELECT value FROM json_each(?))"
        )
        among = json.dumps(sorted(candidates))
        conn = self.db.conn
        return mention_signals(
            query,
            created_between(conn.execute, "archival", self.where, self.params, "?"),
            self._tags_of(candidates) if self._names_a_tag(query) else [],
            lambda tag: (r[0] for r in conn.execute(holders, (self.memory.agent_id, tag, among))),
        )

    def sequences(self, ids: Sequence[int], reach: int) -> dict[int, list[int]]:
        """One statement per passage with a thread: two index range reads.

        SQLite runs statements in-process: many small ones cost less than one large join.
        The ``turn <=`` / ``turn >=`` bound is what lets the thread index seek to the
        passage instead of scanning the thread from its end.
        """
        conn = self.db.conn
        places = conn.execute(
            "SELECT id, thread_id, turn FROM archival WHERE id IN (SELECT value FROM json_each(?)) "
            "AND thread_id IS NOT NULL AND turn IS NOT NULL",
            (json.dumps(list(ids)),),
        ).fetchall()
        near = (
            f"SELECT * FROM (SELECT b.turn, b.id FROM archival AS b WHERE {self.where} "
            "AND b.thread_id = ? AND b.turn {0}= ? AND (b.turn {0} ? OR b.id {0} ?) "
            "ORDER BY b.turn {1}, b.id {1} LIMIT ?)"
        )
        both = f"{near.format('<', 'DESC')} UNION ALL {near.format('>', 'ASC')}"
        out: dict[int, list[int]] = {}
        for item, thread, turn in places:
            side = (*self.params, thread, turn, turn, item, reach)
            rows = conn.execute(both, (*side, *side)).fetchall()
            ordered = sorted([(int(turn), int(item)), *((int(t), int(i)) for t, i in rows)])
            out[int(item)] = [i for _, i in ordered]
        return out

    def fetch(self, ids: Sequence[int]) -> dict[int, Passage]:
        """The passages of these ids."""
        return {hit.item.id: hit.item for hit in self.memory._hits([(i, 0.0) for i in ids])}

    def text_of(self, item: Passage) -> str:
        """What a passage is searched by: its text."""
        return item.text

    def thread_of(self, item: Passage) -> str | None:
        """The thread the passage came from."""
        return item.thread_id

    def listing(self, page: int, page_size: int) -> SearchPage[Passage]:
        """The candidates newest first, for an empty query."""
        return BY_TIME.page(
            self.db.conn, self.where, self.params, page, page_size, newest_first=True
        )


__all__ = ["ArchivalSignals", "SearchedArchive"]
