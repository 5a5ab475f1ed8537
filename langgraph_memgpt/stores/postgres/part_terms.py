"""The words of long texts' parts in Postgres, kept when a text is written (``stores.bm25``).

The design of ``stores.sqlite.part_terms``, in Postgres: a long text scores on words as its
best part (``bm25.best_kept_parts``), which needs each part's length and its lexemes'
frequencies. Counted at search time (``part_words.part_words``), that split every long
match of every query and had Postgres make each part's ``tsvector``: a words search whose
cost grew with the memory (``benchmarks/README.md``, ``beam_scale.py``). They are kept
instead, when the text is written, in ``memgpt_part_terms``: one row per (source, agent,
lexeme, item) holding the parts that have the lexeme, how often, and each such part's length, as
big-endian int32 ``(part, count, length)`` triples (``int4send``), and the lexeme's
frequency in the whole text (``whole``, as the row's ``tsvector`` holds it). A search reads
the rows of its long matches for its own lexemes: one index probe per (lexeme, long
match), in one statement, whatever the memory's size; and the whole text's frequency
with one probe a match (``search.bm25_scores``), where filtering a long text's
``tsvector`` for it cost every match of a common word a re-read of the text.

Sources (:data:`SOURCES`, numbered as SQLite's): a recall message's searchable text
(``search_tsv``), a long message's context (``context_tsv``; a short message's context
has no parts, as at search time before), a passage (``memgpt_archival.tsv``).

Who keeps them: triggers mark every written long text *stale* (``memgpt_part_terms_stale``:
any writer, even one that never imports this package, such as a ``COPY`` or an older
version, leaves a mark; a changed text's rows go with the mark, so no search reads counts
older than the text), the delete triggers remove a text's rows and marks with it, and
:func:`catch_up` turns the marks into rows inside the write's transaction, before it
commits (every write path of the package calls it: ``recall_writes.write_messages``,
``recall_forget.delete_where``, ``archival`` inserts, ``bulk``). The parts are split by
``chunks.parts_of`` in Python and tokenized by Postgres (``memgpt_words``,
``memgpt_token_count``) in the same statement that writes the rows, exactly as a search
tokenized them. A search scores a text still marked stale from its text, as it did
before (``part_words.part_words``), so it is never wrong, only slower, until a write
catches up. Concurrent writers each take the marks no one else holds (``FOR UPDATE SKIP
LOCKED``), so none waits for another's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg

from langgraph_memgpt.stores.bm25 import (
    Corpus,
    best_kept_parts,
    best_part_scores,
    bm25_idf,
    long_text_sql,
    raised_to_parts,
)
from langgraph_memgpt.stores.chunks import parts_of
from langgraph_memgpt.stores.postgres.part_words import part_words
from langgraph_memgpt.stores.postgres.word_stats import TermStats, term_statistics

TABLE = "memgpt_part_terms"
STALE = "memgpt_part_terms_stale"


@dataclass(frozen=True)
class Source:
    """One kind of scored text: the number its rows carry, and where the text is."""

    number: int
    table: str
    column: str
    tsv: str
    """The text's ``tsvector`` column (``memgpt_words`` of ``column``), which search reads."""
    gate: str | None = None
    """The column of the same row whose text must have parts for this one to be split (a
    message's context only for a long message)."""

    @property
    def marks_on(self) -> str:
        """The column whose length decides whether a row may have parts here."""
        return self.gate or self.column


SOURCES: dict[tuple[str, str], Source] = {
    ("memgpt_recall", "search_tsv"): Source(1, "memgpt_recall", "search_text", "search_tsv"),
    ("memgpt_recall", "context_tsv"): Source(
        2, "memgpt_recall", "context", "context_tsv", gate="search_text"
    ),
    ("memgpt_archival", "tsv"): Source(3, "memgpt_archival", "text", "tsv"),
}
"""Each scored ``tsvector`` column (table, column) with parts, and where its texts are."""

BY_NUMBER = {source.number: source for source in SOURCES.values()}

COUNTS = np.dtype(">i4")
"""How ``counts`` are stored: ``int4send``'s big-endian int32."""

CATCH_UP_BATCH = 500
"""Stale items read and tokenized at a time (a migration marks every long text)."""


def long_column(table: str, tsv: str) -> str | None:
    """The column telling whether a row of ``tsv`` may be split (its text or its gate)."""
    source = SOURCES.get((table, tsv))
    return None if source is None else source.marks_on


@dataclass
class LongMatches:
    """What a column's term queries (``search.bm25_scores``) tell of its long matches.

    For a term of one lexeme in a column with :data:`SOURCES`, each match's kept row is
    read with it (``counts``; one probe a match, in the same statement), or its mark
    (``stale``); for any other term, whether its text is long enough for parts
    (``column``, ``bm25.long_text_sql``). :func:`with_best_parts` scores from them.
    """

    column: str
    """The column whose length tells a match that may have parts (:func:`long_column`)."""
    items: set[int] = field(default_factory=set)
    """Matches that may have parts."""
    counts: dict[str, dict[int, bytes]] = field(default_factory=dict)
    """Per term read with kept rows: each long match's ``counts`` of the term's lexeme."""
    stale: set[int] = field(default_factory=set)
    """Matches marked not yet counted (scored from their text)."""

    def add(self, term: str, item: int, flagged: bool, counts: bytes | None, stale: bool) -> None:
        """One match of ``term`` as its query returned it."""
        if counts is not None:
            self.counts.setdefault(term, {})[item] = counts
        if stale:
            self.stale.add(item)
        if flagged or counts is not None or stale:
            self.items.add(item)


# -- schema (migration 10) -----------------------------------------------------------


_TABLES = (
    # Keyed lexeme then item: a search probes (lexeme, item) pairs of its long matches.
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        source smallint NOT NULL,
        agent_id text NOT NULL,
        lexeme text NOT NULL,
        item bigint NOT NULL,
        counts bytea NOT NULL,
        whole integer NOT NULL,
        PRIMARY KEY (source, agent_id, lexeme, item)
    )""",
    # A text's rows, to replace or delete them.
    f"CREATE INDEX IF NOT EXISTS {TABLE}_items ON {TABLE} (source, item)",
    f"""CREATE TABLE IF NOT EXISTS {STALE} (
        source smallint NOT NULL,
        item bigint NOT NULL,
        PRIMARY KEY (source, item)
    )""",
)


def _long(row: str, column: str) -> str:
    return f"({long_text_sql(f'{row}.{column}', 'chr')})"


def _functions(table: str) -> list[str]:
    sources = [s for s in SOURCES.values() if s.table == table]
    numbers = ", ".join(str(s.number) for s in sources)
    inserted = " UNION ALL ".join(
        f"SELECT {s.number}::smallint, n.id FROM new_rows AS n WHERE {_long('n', s.marks_on)}"
        for s in sources
    )
    changed = "\n".join(
        f"""IF (OLD.{s.column} IS DISTINCT FROM NEW.{s.column}{
            f" OR OLD.{s.gate} IS DISTINCT FROM NEW.{s.gate}" if s.gate else ""
        } OR OLD.agent_id <> NEW.agent_id)
                AND ({_long("OLD", s.marks_on)} OR {_long("NEW", s.marks_on)}) THEN
            INSERT INTO {STALE} (source, item) VALUES ({s.number}, NEW.id)
                ON CONFLICT DO NOTHING;
            DELETE FROM {TABLE} WHERE source = {s.number} AND item = NEW.id;
        END IF;"""
        for s in sources
    )
    return [
        f"""CREATE OR REPLACE FUNCTION {table}_part_terms_inserted() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO {STALE} (source, item) SELECT * FROM ({inserted}) AS m
                    ORDER BY 1, 2 ON CONFLICT DO NOTHING;
                RETURN NULL;
            END $$""",
        f"""CREATE OR REPLACE FUNCTION {table}_part_terms_changed() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                {changed}
                RETURN NULL;
            END $$""",
        f"""CREATE OR REPLACE FUNCTION {table}_part_terms_deleted() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                DELETE FROM {TABLE} AS p USING old_rows AS o
                    WHERE p.source IN ({numbers}) AND p.item = o.id;
                DELETE FROM {STALE} AS s USING old_rows AS o
                    WHERE s.source IN ({numbers}) AND s.item = o.id;
                RETURN NULL;
            END $$""",
    ]


def _triggers(table: str) -> list[str]:
    sources = [s for s in SOURCES.values() if s.table == table]
    columns = sorted({c for s in sources for c in (s.column, s.gate) if c} | {"agent_id"})
    may_change = " OR ".join(
        f"{_long('OLD', c)} OR {_long('NEW', c)}" for c in sorted({s.marks_on for s in sources})
    )
    return [
        f"""CREATE TRIGGER {table}_part_terms_inserted AFTER INSERT ON {table}
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
            EXECUTE FUNCTION {table}_part_terms_inserted()""",
        f"""CREATE TRIGGER {table}_part_terms_changed AFTER UPDATE OF {", ".join(columns)}
            ON {table} FOR EACH ROW WHEN ({may_change})
            EXECUTE FUNCTION {table}_part_terms_changed()""",
        f"""CREATE TRIGGER {table}_part_terms_deleted AFTER DELETE ON {table}
            REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
            EXECUTE FUNCTION {table}_part_terms_deleted()""",
    ]


def mark_all_stale(conn: psycopg.Connection[Any], agent_id: str | None = None) -> None:
    """Mark every long text (of ``agent_id``, or of every agent) as not yet counted.

    Their rows go: a marked text never has any (the triggers keep that too), so no search
    reads a count older than its text.
    """
    agent, params = ("", ()) if agent_id is None else (" AND agent_id = %s", (agent_id,))
    for source in SOURCES.values():
        conn.execute(
            f"INSERT INTO {STALE} (source, item) SELECT {source.number}, id "
            f"FROM {source.table} WHERE {long_text_sql(source.marks_on, 'chr')}{agent} "
            "ORDER BY id ON CONFLICT DO NOTHING",
            params,
        )
        conn.execute(f"DELETE FROM {TABLE} WHERE source = {source.number}{agent}", params)


def ensure_part_terms(conn: psycopg.Connection[Any]) -> None:
    """Migration 10: the tables and triggers, and the counts of every long text held.

    Inside ``db.ensure_schema``'s transaction: creating the triggers locks the text tables
    against writers until it commits, so no text is written unmarked meanwhile.
    """
    for statement in _TABLES:
        conn.execute(statement)
    for table in sorted({s.table for s in SOURCES.values()}):
        for statement in _functions(table):
            conn.execute(statement)
        for name in ("inserted", "changed", "deleted"):
            conn.execute(f"DROP TRIGGER IF EXISTS {table}_part_terms_{name} ON {table}")
        for statement in _triggers(table):
            conn.execute(statement)
    mark_all_stale(conn)
    catch_up(conn)


# -- writing -------------------------------------------------------------------------


def texts_with_parts(
    conn: psycopg.Connection[Any], source: Source, ids: Collection[int]
) -> dict[int, tuple[str, str]]:
    """``{id: (agent id, text)}`` of the rows among ``ids`` whose ``source`` text has parts.

    The database leaves out most short texts itself (``bm25.long_text_sql``), then
    ``chunks.parts_of`` decides; a gated source (a context) only for rows whose gate text
    has parts too.
    """
    if not ids:
        return {}
    gate = "NULL" if source.gate is None else source.gate
    rows = conn.execute(
        f"SELECT id, agent_id, {source.column}, {gate} FROM {source.table} "
        f"WHERE id = ANY(%s) AND {long_text_sql(source.marks_on, 'chr')}",
        (sorted(ids),),
    ).fetchall()
    return {
        int(item): (str(agent), str(text))
        for item, agent, text, gated in rows
        if text is not None
        and (source.gate is None or (gated is not None and parts_of(str(gated))))
        and parts_of(str(text))
    }


def _count_sql(source: Source) -> str:
    """The statement writing the rows of texts of ``source``, from their parts and row.

    Each part's lexemes counted as a search counts them (``part_words.part_words``: a
    lexeme's positions in the part's ``memgpt_words``, the part's ``memgpt_token_count``),
    and each lexeme's frequency in the whole text as the row's ``tsvector`` holds it
    (``whole``: what ``search.bm25_scores`` reads instead of filtering the ``tsvector``).
    """
    return f"""WITH p AS MATERIALIZED (
            SELECT x.item, x.n, memgpt_words(x.part) AS w,
                coalesce(memgpt_token_count(x.part), 0) AS len
            FROM unnest(%s::bigint[], %s::int[], %s::text[]) AS x(item, n, part)
        ), c AS (
            SELECT p.item, u.lexeme, string_agg(int4send(p.n)
                || int4send(coalesce(array_length(u.positions, 1), 1)) || int4send(p.len),
                ''::bytea ORDER BY p.n) AS counts
            FROM p, unnest(p.w) AS u GROUP BY p.item, u.lexeme
        ), w AS (
            SELECT b.id AS item, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
            FROM {source.table} AS b, unnest(b.{source.tsv}) AS u WHERE b.id = ANY(%s)
        )
        INSERT INTO {TABLE} (source, agent_id, lexeme, item, counts, whole)
        SELECT {source.number}, a.agent_id, coalesce(w.lexeme, c.lexeme), a.item,
            coalesce(c.counts, ''::bytea), coalesce(w.tf, 0)
        FROM w FULL JOIN c ON c.item = w.item AND c.lexeme = w.lexeme
        JOIN unnest(%s::bigint[], %s::text[]) AS a(item, agent_id)
            ON a.item = coalesce(w.item, c.item)
        ORDER BY 2, 3, 4"""


def catch_up(conn: psycopg.Connection[Any]) -> int:
    """Turn the stale marks this transaction can take into rows; returns the rows written.

    Inside the caller's write transaction, before it commits. Marks another transaction
    holds (it is counting them) are left to it.
    """
    counted = 0
    while True:
        marks = conn.execute(
            f"DELETE FROM {STALE} WHERE (source, item) IN (SELECT source, item FROM {STALE} "
            "ORDER BY source, item LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING source, item",
            (CATCH_UP_BATCH,),
        ).fetchall()
        if not marks:
            return counted
        conn.execute(
            f"DELETE FROM {TABLE} AS p USING unnest(%s::smallint[], %s::bigint[]) "
            "AS m(source, item) WHERE p.source = m.source AND p.item = m.item",
            ([int(m[0]) for m in marks], [int(m[1]) for m in marks]),
        )
        by_source: dict[int, list[int]] = {}
        for number, item in marks:
            by_source.setdefault(int(number), []).append(int(item))
        for number, items in sorted(by_source.items()):
            source = BY_NUMBER[number]
            texts = texts_with_parts(conn, source, items)
            if not texts:
                continue
            parts = [
                (item, n, part)
                for item, (_, text) in sorted(texts.items())
                for n, part in enumerate(parts_of(text))
            ]
            owners = sorted((item, agent) for item, (agent, _) in texts.items())
            written = conn.execute(
                _count_sql(source),
                (
                    *[list(column) for column in zip(*parts, strict=True)],
                    [item for item, _ in owners],
                    [item for item, _ in owners],
                    [agent for _, agent in owners],
                ),
            )
            counted += max(written.rowcount, 0)


# -- searching -----------------------------------------------------------------------


def with_best_parts(
    conn: psycopg.Connection[Any],
    table: str,
    tsv: str,
    agent_id: str,
    whole: dict[int, float],
    matched: Mapping[str, Sequence[int]],
    long: LongMatches,
    statistics: tuple[Corpus, Mapping[str, TermStats]] | None = None,
) -> dict[int, float]:
    """``whole`` (``search.bm25_scores`` of ``tsv``) with each long text's best part's score.

    ``matched``: each term's matches ``whole`` was scored for; ``long``: what the term
    queries read of the long ones (:class:`LongMatches`): with none, as for a memory of
    short texts, this costs no query. ``statistics``: the column's and terms' that
    ``whole`` was scored with (looked up when not given). Each part scores as one more row
    of the column would (its statistics, the part's own length and counts): from the kept
    rows the term queries read; the texts not counted yet are split and tokenized here
    (``part_words.part_words``), as is every text when a term was read without kept rows
    (a term of several lexemes: its frequency needs the part's ``tsquery`` match, which
    the rows do not keep).
    """
    source = SOURCES.get((table, tsv))
    ids = {item for item in long.items if item in whole}
    if source is None or not ids:
        return whole
    corpus, terms = statistics or term_statistics(conn, table, tsv, agent_id, list(matched))
    used = {term: found for term, found in terms.items() if found.documents}
    holders = {term: ids.intersection(matched.get(term, ())) for term in used}
    holders = {term: items for term, items in holders.items() if items}
    if not holders:
        return whole
    best: dict[int, float] = {}
    if all(used[term].single for term in holders):  # read with their kept rows
        stale = long.stale & ids
        found = [
            (item, bytes(packed), bm25_idf(used[term].documents, corpus))
            for term, items in holders.items()
            for item in sorted(items - stale)
            if (packed := long.counts.get(term, {}).get(item))
        ]
        best = best_kept_parts(found, COUNTS, corpus)
    else:
        stale = ids
    if stale:
        texts = texts_with_parts(conn, source, stale)
        parts = part_words(conn, {item: text for item, (_, text) in texts.items()}, used)
        documents = {term: found.documents for term, found in terms.items()}
        best.update(best_part_scores({}, matched, parts, corpus, documents))
    return raised_to_parts(whole, best)


__all__ = [
    "BY_NUMBER",
    "LongMatches",
    "SOURCES",
    "STALE",
    "TABLE",
    "Source",
    "catch_up",
    "ensure_part_terms",
    "long_column",
    "mark_all_stale",
    "texts_with_parts",
    "with_best_parts",
]
