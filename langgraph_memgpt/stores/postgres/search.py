"""The signals of a search in Postgres: word scores (full-text search) and vector scores.

Words: each query term (``stores.words.query_terms``) becomes ``plainto_tsquery('english',
term)`` and the terms are OR-ed, so any text is a valid query (never a tsquery syntax
error); matches are scored with BM25 exactly as SQLite FTS5 scores them
(:func:`bm25_scores`), so both backends rank words alike. Meaning: cosine similarity from
pgvector. Both are computed over the rows that pass the search's filters
(agent, roles, dates, tags), so ranking only ever sees candidates; ``stores.search``
fuses and pages them as it does for the embedded backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import psycopg
from langchain_core.embeddings import Embeddings
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.base import SearchMode
from langgraph_memgpt.stores.bm25 import Corpus, bm25_term, long_text_sql
from langgraph_memgpt.stores.chunks import nearest_items
from langgraph_memgpt.stores.embeddings import embed_query
from langgraph_memgpt.stores.postgres import spare
from langgraph_memgpt.stores.postgres.db import HNSW_TYPE, SETTLING_TABLE
from langgraph_memgpt.stores.postgres.part_terms import (
    SOURCES,
    STALE,
    LongMatches,
    Source,
    long_column,
    with_best_parts,
)
from langgraph_memgpt.stores.postgres.part_terms import TABLE as KEPT
from langgraph_memgpt.stores.postgres.parts import PARTS_OF, nearest_parts
from langgraph_memgpt.stores.postgres.word_stats import TermStats, term_statistics
from langgraph_memgpt.stores.search import RECENT_TEXTS
from langgraph_memgpt.stores.words import TERM_MATCH_CAP

Params = list[object]


def placeholders(conditions: Sequence[str]) -> list[str]:
    """Conditions written with ``?`` (as ``stores.dates`` writes them) in psycopg's ``%s``."""
    return [c.replace("?", "%s") for c in conditions]


WALK_ROW_COST = 1 / 6
"""What testing one row costs walking newest first, against reading one GIN match: the
walk reads the newest rows, contiguous and recently written, the index's matches lie all
over the table (``benchmarks/pg_turn_sql.py`` measures both)."""

WINDOW_FROM_WALK = 4000
"""Walks longer than this many rows read a window of the newest rows instead.

A term of middling frequency in a large agent is the worst case for both other ways: its
GIN matches are too many to read and sort, its newest ``TERM_MATCH_CAP`` too far apart to
walk to. Intersecting its GIN matches with a range of the agent's newest ids (a bitmap AND
of the GIN and ``(agent_id, id)`` indexes) reads only the matches in the range. Shorter
walks stay walks: a common term's window still builds its whole GIN bitmap."""

WINDOW_MARGIN = 2
"""A window spans the rows expected to hold this many times ``TERM_MATCH_CAP`` matches."""

GAP_SAMPLE = 1000
"""The newest rows whose ids tell how far apart ids are (ids have gaps: a re-recorded
queue consumes sequence values), which turns a window's rows into an id range."""


@dataclass(frozen=True)
class Reading:
    """How a term's newest ``TERM_MATCH_CAP`` matches are read.

    ``index``: all its matches through the GIN index, sorted. ``walk``: the agent's rows
    newest first, each tested. ``window``: the GIN matches among the newest ``rows`` rows,
    then in ever longer windows further back while they hold fewer than
    ``TERM_MATCH_CAP`` (the term is rarer lately than overall, or the filter leaves few):
    the result never depends on the choice.
    """

    way: str
    rows: int = 0


def term_reading(df: int, documents: int) -> Reading:
    """The cheapest way to a term's newest matches, from its exact document frequency.

    Read all ``df`` matches through the index, or walk the agent's rows newest first,
    testing each (about ``TERM_MATCH_CAP * documents / df`` rows, at
    :data:`WALK_ROW_COST` each), or, for a walk longer than :data:`WINDOW_FROM_WALK`,
    intersect the matches with the newest rows. The exact ``df`` decides, not the
    planner's estimate, which chose the slow way for both rare and common terms.
    """
    walked = TERM_MATCH_CAP * max(documents, df) / max(df, 1)
    if df <= TERM_MATCH_CAP or walked * WALK_ROW_COST >= df:
        return Reading("index")
    if walked > WINDOW_FROM_WALK:
        return Reading("window", math.ceil(walked * WINDOW_MARGIN))
    return Reading("walk")


class NewestIds:
    """Turns "the newest ``rows`` rows of the agent" into an id bound, looked up once.

    From the ids of the agent's newest :data:`GAP_SAMPLE` rows: the newest, and the
    average gap between ids lately. An estimate: the window it gives may hold more or
    fewer rows than asked, which costs time, never a different result (see
    :class:`Reading`).
    """

    def __init__(self, conn: psycopg.Connection[Any], table: str, agent_id: str) -> None:
        self.conn, self.table, self.agent_id = conn, table, agent_id
        self._sample: tuple[int, int, float] | None = None

    def above(self, rows: int) -> int | None:
        """An id below about the newest ``rows`` rows; None when that is every row."""
        if self._sample is None:
            found = self.conn.execute(
                f"SELECT max(b.id), min(b.id), count(*) FROM (SELECT id FROM {self.table} "
                "WHERE agent_id = %s ORDER BY id DESC LIMIT %s) AS b",
                (self.agent_id, GAP_SAMPLE),
            ).fetchone()
            newest, oldest, count = found if found and found[0] is not None else (0, 0, 0)
            gap = (int(newest) - int(oldest)) / (int(count) - 1) if int(count) > 1 else 0.0
            self._sample = (int(newest), int(count), gap)
        newest, count, gap = self._sample
        if count < GAP_SAMPLE and rows >= count:
            return None  # the sample is the whole agent, and the window would hold it all
        bound = newest - math.ceil(rows * gap)
        return bound if bound > 0 else None


def bm25_scores(
    conn: psycopg.Connection[Any],
    table: str,
    columns: tuple[str, str],
    agent_id: str,
    terms: Sequence[str],
    where: str,
    params: Params,
    *,
    reading: Callable[[int, int], Reading] = term_reading,
    matched: dict[str, list[int]] | None = None,
    long: LongMatches | None = None,
    statistics: list[tuple[Corpus, dict[str, TermStats]]] | None = None,
) -> dict[int, float]:
    """``{id: BM25}`` of the rows of ``table`` (alias ``b``) matching any term and ``where``.

    The OR-query's BM25 as SQLite FTS5 computes it (see ``stores.sqlite.fts.bm25_scores``): the
    sum over the terms of :func:`bm25_term`, with the agent's rows as the collection
    (document count, average length, each term's document frequency), whatever the
    search's other filters; FTS5 uses the whole database file, which the embedded backend
    keeps to one agent per benchmark conversation. The collection statistics are looked up
    in the tables ``stores.postgres.word_stats`` keeps (:func:`term_statistics`), not
    counted per search. A term's frequency in a document is
    the number of its positions in the ``tsvector``; a document's length is its count of
    words (``memgpt_token_count``, stop words included, as FTS5 counts them). Each term
    scores at most its ``TERM_MATCH_CAP`` newest matches, as in the embedded backend.

    Args:
        conn: a connection.
        table: the table (a trusted name).
        columns: its ``tsvector`` column and the column holding each row's length.
        agent_id: whose rows the statistics are over.
        terms: words from ``stores.words.query_terms``.
        where: the search's condition over ``b``.
        params: the parameters of ``where``.
        reading: how each term's matches are read (:func:`term_reading`; tests force one).
        matched: filled with each term's matches read, newest first (all of them when
            fewer than ``TERM_MATCH_CAP``): what tells a rare term, with no query more.
        long: filled with what the term queries read of the matches that may have parts
            (``part_terms.LongMatches``: their kept counts and marks, or a flag from
            ``stores.bm25.long_text_sql``), for ``part_terms.with_best_parts``.
        statistics: given, the collection and term statistics used are appended to it
            (``part_terms.with_best_parts`` scores parts with them, no query more).
    """
    if not terms:
        return {}
    tsv, length = columns
    stats, frequencies = term_statistics(conn, table, tsv, agent_id, list(dict.fromkeys(terms)))
    if statistics is not None:
        statistics.append((stats, frequencies))
    newest = NewestIds(conn, table, agent_id)
    flag = "false" if long is None else long_text_sql(f"b.{long.column}", "chr")
    kept = SOURCES.get((table, tsv)) if long is not None else None
    # The newest matches, then their term frequency: the term's positions picked out
    # by C functions (its lexemes weighted A, the rest filtered away), not by
    # unnesting every lexeme of every match. `id + 0` hides the id order from the
    # planner, which then reads the term's matches through its GIN index (within the
    # window, if any) and sorts them; `b.id` lets it walk the rows newest first.
    queries = {
        term: (
            reading(found.documents, stats.documents),
            _TermQuery(
                conn,
                table,
                columns,
                found,
                term,
                where,
                params,
                flag,
                kept if found.single else None,
            ),
        )
        for term, found in frequencies.items()
        if found.documents
    }
    # The terms read in one statement each go to the server at once (one pipeline: one
    # wait for the server, not one a term); windows read on, window by window.
    started = {}
    if any(way.way != "window" for way, _ in queries.values()):
        with conn.pipeline():
            started = {
                term: query.start(way.way, None, None, TERM_MATCH_CAP)
                for term, (way, query) in queries.items()
                if way.way != "window"
            }
    scores: dict[int, float] = {}
    for term, found in frequencies.items():
        if term not in queries:
            if matched is not None:
                matched[term] = []
            continue
        way, query = queries[term]
        if way.way == "window":
            rows = _in_windows(query, newest, way.rows)
        else:
            rows = started[term].fetchall()
        if matched is not None:
            matched[term] = [int(row[0]) for row in rows]
        for item, size, tf, is_long, counts, stale in rows:
            if long is not None:
                long.add(term, int(item), bool(is_long), counts, bool(stale))
            if tf:
                value = bm25_term(float(tf), found.documents, float(size or 0), stats)
                scores[int(item)] = scores.get(int(item), 0.0) + value
    return scores


@dataclass(frozen=True)
class _TermQuery:
    """One term's matches in one text column under a search's filter."""

    conn: psycopg.Connection[Any]
    table: str
    columns: tuple[str, str]
    found: TermStats
    term: str
    where: str
    params: Params
    flag: str = "false"
    """A condition over ``b`` returned with each match (trusted SQL): whether it may have
    parts (unless ``kept``)."""
    kept: Source | None = None
    """The column's source of kept words (``part_terms``) when the term is one lexeme:
    its frequency in a long match, the match's parts' counts and its mark are read with
    it."""

    def newest(
        self, way: str, above: int | None, up_to: int | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """The ``limit`` newest matches with an id in ``(above, up_to]``, read ``way``.

        Rows of ``(id, length, term frequency, flag, kept counts, marked stale)``; a None
        bound is no bound.
        """
        return self.start(way, above, up_to, limit).fetchall()

    def start(
        self, way: str, above: int | None, up_to: int | None, limit: int
    ) -> psycopg.Cursor[Any]:
        """:meth:`newest`'s statement, sent (in a pipeline, its rows come at the sync)."""
        tsv, length = self.columns
        order = "b.id" if way == "walk" else "b.id + 0"
        bounds, extra = "", list[int]()
        if above is not None:
            bounds, extra = bounds + " AND b.id > %s", [*extra, above]
        if up_to is not None:
            bounds, extra = bounds + " AND b.id <= %s", [*extra, up_to]
        tf = (
            "(SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) "
            f"FROM unnest(ts_filter(setweight(b.{tsv}, 'A', %s::text[]), '{{a}}')) AS u)"
        )
        flag, counts, stale = self.flag, "NULL::bytea", "false"
        args: list[object] = [self.found.lexemes]
        if self.kept is not None:
            # A long text's frequency as counted when it was written (`part_terms`): one
            # index probe, where filtering its large `tsvector` costs a match far more; its
            # parts' counts with it; a long text that holds the term has its row, or is
            # marked not yet counted: no need to measure the text.
            probe = (
                f"FROM {KEPT} AS k WHERE k.source = {self.kept.number} "
                "AND k.agent_id = b.agent_id AND k.lexeme = %s AND k.item = b.id"
            )
            tf = f"coalesce((SELECT k.whole {probe}), {tf})"
            flag, counts = "false", f"(SELECT k.counts {probe})"
            stale = (
                f"EXISTS (SELECT 1 FROM {STALE} AS s WHERE s.source = {self.kept.number} "
                "AND s.item = b.id)"
            )
            args = [self.found.lexemes[0], *args, self.found.lexemes[0]]
        return self.conn.execute(
            f"SELECT b.id, b.{length}, {tf}, {flag}, {counts}, {stale} FROM {self.table} AS b "
            f"WHERE b.{tsv} @@ plainto_tsquery('english', %s) AND ({self.where}){bounds} "
            f"ORDER BY {order} DESC LIMIT %s",
            (*args, self.term, *self.params, *extra, limit),
        )


WINDOW_GROWTH = 4
"""Each further window reaches this many times further back than the one before."""


def _in_windows(query: _TermQuery, newest: NewestIds, rows: int) -> list[tuple[Any, ...]]:
    """A term's newest matches read window by window, newest first, until the cap.

    The first window spans ``rows`` rows; when the filter or the term's history leaves
    fewer matches there, the next reaches :data:`WINDOW_GROWTH` times further back
    (without re-reading the first), and the last has no lower bound: the matches are
    those of one unwindowed read, in a few index reads however the term is spread.
    """
    found: list[tuple[Any, ...]] = []
    up_to: int | None = None
    while len(found) < TERM_MATCH_CAP:
        above = newest.above(rows)
        found += query.newest("index", above, up_to, TERM_MATCH_CAP - len(found))
        if above is None:
            break
        up_to, rows = above, rows * WINDOW_GROWTH
    return found


def vector_scores(
    conn: psycopg.Connection[Any],
    table: str,
    column: str,
    vector: np.ndarray[Any, Any],
    k: int,
    where: str,
    params: Params,
    *,
    approximate: bool,
) -> dict[int, float]:
    """The ``k`` rows passing ``where`` nearest to ``vector``: ``{id: cosine similarity}``.

    Exact (``approximate`` False): the filter picks the agent's rows through its btree index
    and every candidate's distance is computed, so a narrow filter is never starved (a plain
    HNSW scan filters only the candidates its walk visits, so a selective filter can leave
    fewer than ``k`` of them). Approximate: the HNSW index of the vector's dimension, with
    pgvector's iterative scan so filtered-out neighbours make it look further instead of
    returning fewer rows; for large agents. A table whose graphs hold settled rows only
    (`db.SETTLING_TABLE`) adds its unsettled rows (a few hundred at most) scanned exactly,
    in the same statement, and the nearest ``k`` of both are returned.
    """
    if k <= 0:
        return {}
    dims = int(vector.shape[0])
    select = f"SELECT b.id, 1 - (b.{column} <=> %s) FROM {table} AS b WHERE ({where})"
    nearest = f"ORDER BY b.{column} <=> %s LIMIT %s"
    args = (vector, *params, vector, k)
    if not approximate:
        rows = conn.execute(f"{select} AND b.{column} IS NOT NULL {nearest}", args).fetchall()
        return {int(r[0]): float(r[1]) for r in rows}
    # The graph's order (half precision, `db.HNSW_TYPE`) picks the rows; the similarity
    # returned is the stored vector's, as an exact scan returns it.
    settling = table == SETTLING_TABLE
    sql = (
        f"{select} AND vector_dims(b.{column}) = {dims}{' AND b.settled' if settling else ''} "
        f"ORDER BY b.{column}::{HNSW_TYPE}({dims}) <=> %s::{HNSW_TYPE}({dims}) LIMIT %s"
    )
    if settling:
        unsettled = f"{select} AND NOT b.settled AND b.{column} IS NOT NULL {nearest}"
        sql, args = f"({sql}) UNION ALL ({unsettled})", (*args, *args)
    return walk_scores(conn, sql, args, k)


def walk_scores(
    conn: psycopg.Connection[Any], sql: str, args: Sequence[object], k: int
) -> dict[int, float]:
    """Run a graph walk ``sql`` returning ``(id, similarity)`` rows; the ``k`` most similar.

    The walk's settings are local to its transaction: pgvector's iterative scan (a filter
    that drops neighbours makes it look further), and ``ef_search`` (`HNSW_EF_SEARCH`).
    """
    # One pipeline: the transaction, its two settings and the walk reach the server in one
    # flush, not four round trips (each a wait for the server on a busy machine).
    with conn.pipeline():
        with conn.transaction():
            for setting in walk_settings():
                conn.execute(setting)
            walked = conn.execute(sql, args)
        rows = walked.fetchall()
    best = sorted(rows, key=lambda r: -float(r[1]))[:k]
    return {int(r[0]): float(r[1]) for r in best}


def walk_settings(ef_search: int | None = None) -> tuple[str, ...]:
    """The statements that set a transaction's graph walks up as the stores run them.

    pgvector's iterative scan in strict order and ``ef_search`` candidates (``HNSW_EF_SEARCH``
    unless given, read when called: a benchmark that changes it for a run changes every
    walk). Benchmarks that explain or time a walk set it up with these, so what they measure
    is the stores' walk.
    """
    ef = HNSW_EF_SEARCH if ef_search is None else int(ef_search)
    return ("SET LOCAL hnsw.iterative_scan = strict_order", f"SET LOCAL hnsw.ef_search = {ef}")


HNSW_EF_SEARCH = 256
"""The HNSW candidate list per search (pgvector's ``hnsw.ef_search``; its default is 40).

Larger lists find more of the exact top 10 and cost every scan, and a recall turn runs
several: 256 was chosen with ``benchmarks/archival_pg.py`` (recall@10 at 1M passages) and
``benchmarks/per_turn.py --backend postgres`` (the turn's cost). On real MiniLM vectors at
100k (``benchmarks/hnsw_recall.py``: LoCoMo dev turns among filler, its questions as
queries) a shorter list keeps less of the evidence the exact top 50 holds (the figures:
``benchmarks/README.md``, docs/scale.md): less would be a trade of what large agents find."""


def has_more_than(
    conn: psycopg.Connection[Any], table: str, column: str, agent_id: str, limit: int
) -> bool:
    """Whether the agent has more than ``limit`` rows with a vector (costs at most limit+1)."""
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE agent_id = %s "
        f"AND {column} IS NOT NULL LIMIT %s) AS x",
        (agent_id, limit + 1),
    ).fetchone()
    return row is not None and int(row[0]) > limit


def term_matches(
    conn: psycopg.Connection[Any],
    table: str,
    tsv_column: str,
    terms: Sequence[str],
    where: str,
    params: Params,
    *,
    limit: int,
) -> dict[str, set[int]]:
    """For each term, the ids (at most ``limit + 1``) of the rows that hold it and pass ``where``.

    As ``stores.sqlite.fts.term_matches``: what tells a rare term from a common one.
    """
    out: dict[str, set[int]] = {}
    for term in dict.fromkeys(terms):
        rows = conn.execute(
            f"SELECT b.id FROM {table} AS b WHERE b.{tsv_column} @@ plainto_tsquery('english', %s) "
            f"AND ({where}) LIMIT %s",
            (term, *params, limit + 1),
        ).fetchall()
        out[term] = {int(r[0]) for r in rows}
    return out


class SearchedTier(Protocol):
    """What a search needs of a Postgres tier (``PgRecallMemory``, ``PgArchivalMemory``)."""

    agent_id: str
    embeddings: Embeddings | None
    pool: ConnectionPool[Any]

    def _approximate(self, conn: psycopg.Connection[Any]) -> bool: ...


class TableSignals:
    """The engine part of one search of one table: BM25 words and pgvector meaning.

    Subclasses (one per tier) name their table and columns and add what only the tier
    knows (the text to embed, named signals, fetching, listing); ``stores.search`` does
    the rest.

    Args:
        memory: the tier searched: its agent (BM25 statistics are over the agent's rows),
            embedding model, and whether its vector search goes through HNSW.
        conn: the search's connection.
        where: the search's condition over ``b`` (filters).
        params: the parameters of ``where``.
    """

    table: str
    words: tuple[tuple[str, str], ...]
    """(tsvector column, length column) of each word signal; the first finds rare terms."""
    vectors: tuple[str, ...]
    """The vector column of each vector signal."""

    def __init__(
        self, memory: SearchedTier, conn: psycopg.Connection[Any], where: str, params: Params
    ) -> None:
        self.conn = conn
        self.pool = memory.pool
        self.agent_id = memory.agent_id
        self.embeddings = memory.embeddings
        self.has_vectors = memory.embeddings is not None
        self.where = where
        self.params = params
        self.approximate = memory._approximate
        self._matched: dict[str, list[int]] | None = None

    def word_signals(self, terms: Sequence[str], neighbours: bool = True) -> list[dict[int, float]]:
        """BM25 of each word signal's column, a long text's raised to its best part's.

        See ``stores.bm25`` and ``part_terms.with_best_parts``. The first column is scored
        on the search's connection (its matches tell the rare terms, :meth:`term_matches`),
        the others (the neighbours', only when ``neighbours``) beside it on spare
        connections (``spare.begin``).
        """
        first: dict[str, list[int]] = {}
        self._matched = first

        def column_signal(
            i: int, columns: tuple[str, str]
        ) -> Callable[[psycopg.Connection[Any]], dict[int, float]]:
            def scores(conn: psycopg.Connection[Any]) -> dict[int, float]:
                matched: dict[str, list[int]] = first if i == 0 else {}
                statistics: list[tuple[Corpus, dict[str, TermStats]]] = []
                text = long_column(self.table, columns[0])
                long = None if text is None else LongMatches(text)
                whole = bm25_scores(
                    conn,
                    self.table,
                    columns,
                    self.agent_id,
                    terms,
                    self.where,
                    self.params,
                    matched=matched,
                    long=long,
                    statistics=statistics,
                )
                if long is None:
                    return whole
                return with_best_parts(
                    conn,
                    self.table,
                    columns[0],
                    self.agent_id,
                    whole,
                    matched,
                    long,
                    statistics[0] if statistics else None,
                )

            return scores

        columns = self.words if neighbours else self.words[:1]
        tasks = [column_signal(i, column) for i, column in enumerate(columns)]
        others = spare.begin(self.pool, self.conn, tasks[1:])
        return [tasks[0](self.conn), *others()]

    def long_share(self) -> float:
        """The share of long texts (with parts) among the agent's ``RECENT_TEXTS`` newest.

        Read from the kept counts (a long text has rows), one index probe a text: a text
        written but not yet counted, rare outside a writing transaction, counts as short.
        """
        source = SOURCES[(self.table, self.words[0][0])]
        only = " AND searchable" if self.table == "memgpt_recall" else ""
        row = self.conn.execute(
            f"SELECT count(*), count(*) FILTER (WHERE EXISTS (SELECT 1 FROM {KEPT} AS p "
            "WHERE p.source = %s AND p.item = n.id)) "
            f"FROM (SELECT id FROM {self.table} WHERE agent_id = %s{only} "
            "ORDER BY created_at DESC, id DESC LIMIT %s) AS n",
            (source.number, self.agent_id, RECENT_TEXTS),
        ).fetchone()
        assert row is not None
        total, long = int(row[0]), int(row[1])
        return long / total if total else 0.0

    def term_matches(self, terms: Sequence[str], limit: int) -> dict[str, set[int]]:
        """The rows holding each term, in the first word column.

        Taken from the matches its word signal read when it has run (a term read in full
        below ``TERM_MATCH_CAP``, or more than ``limit`` anyway), else looked up.
        """
        known = self._matched or {}
        if limit < TERM_MATCH_CAP and all(term in known for term in terms):
            return {term: set(known[term][: limit + 1]) for term in dict.fromkeys(terms)}
        tsv = self.words[0][0]
        return term_matches(self.conn, self.table, tsv, terms, self.where, self.params, limit=limit)

    def vectors_wait_for_words(self, query: str, mode: SearchMode) -> bool:
        """Never, unless a tier's :meth:`vector_text` reads the word matches (archival)."""
        return False

    def embed(self, text: str) -> Any:
        """The query vector."""
        assert self.embeddings is not None
        return embed_query(self.embeddings, text)

    def begin_nearest(self, vector: Any, k: int) -> Callable[[], list[dict[int, float]]]:
        """The ``k`` nearest candidates of each vector column, begun on spare connections.

        Each column's statement (and the parts') runs on a connection of its own
        (``spare.begin``) while the caller goes on, e.g. to the word signals; the result
        waits for them. The first column is the row's own vector: a long text's similarity
        there is its best vector's, the whole text's or one of its parts'
        (``stores.chunks``).
        """
        approximate = self.approximate(self.conn)
        where, params = self.where, self.params

        def column_scores(column: str) -> Callable[[psycopg.Connection[Any]], dict[int, float]]:
            return lambda conn: vector_scores(
                conn, self.table, column, vector, k, where, params, approximate=approximate
            )

        tasks = [column_scores(column) for column in self.vectors]
        has_parts = self.table in PARTS_OF
        if has_parts:
            tasks.append(lambda conn: nearest_parts(conn, self.table, vector, k, where, params))
        collect = spare.begin(self.pool, self.conn, tasks)

        def signals() -> list[dict[int, float]]:
            found = collect()
            columns = found[: len(self.vectors)]
            if has_parts:
                columns[0] = nearest_items(columns[0], found[-1], k)
            return columns

        return signals

    def vector_total(self, at_most: int) -> int:
        """Candidates with a vector (in the first vector column), counted up to ``at_most``."""
        row = self.conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {self.table} AS b WHERE ({self.where}) "
            f"AND b.{self.vectors[0]} IS NOT NULL LIMIT %s) AS capped",
            [*self.params, at_most],
        ).fetchone()
        return int(row[0]) if row else 0
