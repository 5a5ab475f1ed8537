"""BM25's collection statistics kept in tables, so a word search looks them up.

BM25 needs, per agent and per scored text column ("field": ``memgpt_recall.search_tsv``,
``memgpt_recall.context_tsv``, ``memgpt_archival.tsv``), the number of documents, their
total length, and each term's document frequency. Counting them at query time costs a
scan of the agent's rows per search and per term, growing with the agent; here they are
kept in ``memgpt_word_corpus`` and ``memgpt_word_df`` by triggers, in the transaction that
changes the rows, whatever path changes them (``recall.add`` and its context refreshes,
deletes and forgetting, the bulk loader's ``COPY``, a package version that predates the
tables). Inserts and deletes are counted per statement (transition tables: one pass over a
50k-row ``COPY`` batch); a changed text (a neighbour's context) per row.

Concurrent writers of one agent: each trigger first takes the agent's word-statistics
lock (a transaction advisory lock, until commit), then upserts the corpus row and the
term rows in sorted order. So two writers of one agent never wait for each other's rows in
a cycle; they only queue for the agent's statistics from their first text change to their
commit (other agents are not affected). A term whose count drops to zero is deleted, so a
forgotten text leaves none of its words behind.

The tables are created and filled from the rows already stored by `ensure_word_stats`,
once per database (marked ``word_stats`` in ``memgpt_schema``), with the text tables locked
against writers so no change is counted twice or missed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from langgraph_memgpt.stores.bm25 import Corpus

WORD_STATS_VERSION = 1
_LOCK_CLASS = 0x6D777374  # advisory-lock class of an agent's word statistics ("mwst")

FIELDS: tuple[tuple[str, str, str], ...] = (
    ("memgpt_recall", "search_tsv", "search_len"),
    ("memgpt_recall", "context_tsv", "context_len"),
    ("memgpt_archival", "tsv", "text_len"),
)
"""(table, tsvector column, length column) of every text BM25 scores."""


def field_name(table: str, tsv_column: str) -> str:
    """The statistics' name of a scored text column."""
    return f"{table}.{tsv_column}"


_TABLES = (
    """CREATE TABLE IF NOT EXISTS memgpt_word_corpus (
        agent_id text NOT NULL,
        field text NOT NULL,
        documents bigint NOT NULL,
        tokens bigint NOT NULL,
        PRIMARY KEY (agent_id, field)
    )""",
    """CREATE TABLE IF NOT EXISTS memgpt_word_df (
        agent_id text NOT NULL,
        field text NOT NULL,
        lexeme text NOT NULL,
        documents bigint NOT NULL,
        PRIMARY KEY (agent_id, field, lexeme)
    )""",
)

# Applies signed documents (+1 added, -1 removed): the agents' locks in sorted order, then
# the corpus rows and the term rows, sorted; terms left with no document are deleted.
_APPLY = f"""CREATE OR REPLACE FUNCTION memgpt_word_deltas(
        agents text[], fields text[], tsvs tsvector[], lens integer[], signs integer[]
    ) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        IF coalesce(cardinality(agents), 0) = 0 THEN
            RETURN;
        END IF;
        PERFORM pg_advisory_xact_lock({_LOCK_CLASS}, hashtext(a))
            FROM (SELECT DISTINCT a FROM unnest(agents) AS a ORDER BY a) AS x;
        INSERT INTO memgpt_word_corpus AS c (agent_id, field, documents, tokens)
            SELECT a, f, sum(s), sum(s * l)
            FROM unnest(agents, fields, lens, signs) AS d(a, f, l, s)
            GROUP BY a, f HAVING sum(s) <> 0 OR sum(s * l) <> 0 ORDER BY a, f
            ON CONFLICT (agent_id, field) DO UPDATE SET
                documents = c.documents + excluded.documents,
                tokens = c.tokens + excluded.tokens;
        INSERT INTO memgpt_word_df AS w (agent_id, field, lexeme, documents)
            SELECT a, f, u.lexeme, sum(s)
            FROM unnest(agents, fields, tsvs, signs) AS d(a, f, t, s), unnest(d.t) AS u
            GROUP BY a, f, u.lexeme HAVING sum(s) <> 0 ORDER BY a, f, u.lexeme
            ON CONFLICT (agent_id, field, lexeme) DO UPDATE SET
                documents = w.documents + excluded.documents;
        IF -1 = ANY(signs) THEN
            DELETE FROM memgpt_word_df AS w
            USING (SELECT DISTINCT a, f, u.lexeme
                   FROM unnest(agents, fields, tsvs, signs) AS d(a, f, t, s), unnest(d.t) AS u
                   WHERE s < 0) AS gone
            WHERE w.agent_id = gone.a AND w.field = gone.f AND w.lexeme = gone.lexeme
                AND w.documents <= 0;
        END IF;
    END $$"""


def _rows_sql(rows: str, sign: int, table: str) -> str:
    """The documents of transition table ``rows``, one array per argument of the apply."""
    parts = [
        f"SELECT agent_id AS a, '{field_name(table, tsv)}' AS f, {tsv} AS t, {length} AS l, "
        f"{sign} AS s FROM {rows} WHERE {length} IS NOT NULL"
        for t, tsv, length in FIELDS
        if t == table
    ]
    union = " UNION ALL ".join(parts)
    return (
        f"memgpt_word_deltas(array_agg(a), array_agg(f), array_agg(t), array_agg(l), "
        f"array_agg(s)) FROM ({union}) AS docs"
    )


def _trigger_functions(table: str) -> list[str]:
    fields = [(tsv, length) for t, tsv, length in FIELDS if t == table]
    changed_rows = " UNION ALL ".join(
        f"SELECT NEW.agent_id, '{field_name(table, tsv)}', NEW.{tsv}, NEW.{length}, 1 "
        f"WHERE NEW.{length} IS NOT NULL "
        f"UNION ALL SELECT OLD.agent_id, '{field_name(table, tsv)}', OLD.{tsv}, OLD.{length}, -1 "
        f"WHERE OLD.{length} IS NOT NULL"
        for tsv, length in fields
    )
    return [
        f"""CREATE OR REPLACE FUNCTION {table}_words_inserted() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM {_rows_sql("new_rows", 1, table)};
                RETURN NULL;
            END $$""",
        f"""CREATE OR REPLACE FUNCTION {table}_words_deleted() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM {_rows_sql("old_rows", -1, table)};
                RETURN NULL;
            END $$""",
        f"""CREATE OR REPLACE FUNCTION {table}_words_changed() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM memgpt_word_deltas(array_agg(a), array_agg(f), array_agg(t),
                    array_agg(l), array_agg(s))
                FROM ({changed_rows}) AS docs(a, f, t, l, s);
                RETURN NULL;
            END $$""",
    ]


def _triggers(table: str) -> list[str]:
    sources = {"memgpt_recall": "search_text, context", "memgpt_archival": "text"}[table]
    distinct = {
        "memgpt_recall": "OLD.search_text IS DISTINCT FROM NEW.search_text "
        "OR OLD.context IS DISTINCT FROM NEW.context OR OLD.agent_id <> NEW.agent_id",
        "memgpt_archival": "OLD.text <> NEW.text OR OLD.agent_id <> NEW.agent_id",
    }[table]
    return [
        f"""CREATE TRIGGER {table}_words_inserted AFTER INSERT ON {table}
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
            EXECUTE FUNCTION {table}_words_inserted()""",
        f"""CREATE TRIGGER {table}_words_deleted AFTER DELETE ON {table}
            REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
            EXECUTE FUNCTION {table}_words_deleted()""",
        f"""CREATE TRIGGER {table}_words_changed AFTER UPDATE OF {sources}, agent_id ON {table}
            FOR EACH ROW WHEN ({distinct})
            EXECUTE FUNCTION {table}_words_changed()""",
    ]


def _backfill() -> list[str]:
    corpus = " UNION ALL ".join(
        f"SELECT agent_id, '{field_name(table, tsv)}', count({length}), "
        f"coalesce(sum({length}), 0) FROM {table} WHERE {length} IS NOT NULL GROUP BY agent_id"
        for table, tsv, length in FIELDS
    )
    df = " UNION ALL ".join(
        f"SELECT agent_id, '{field_name(table, tsv)}', u.lexeme, count(*) "
        f"FROM {table}, unnest({tsv}) AS u GROUP BY agent_id, u.lexeme"
        for table, tsv, _ in FIELDS
    )
    return [
        "DELETE FROM memgpt_word_corpus",
        "DELETE FROM memgpt_word_df",
        f"INSERT INTO memgpt_word_corpus (agent_id, field, documents, tokens) {corpus}",
        f"INSERT INTO memgpt_word_df (agent_id, field, lexeme, documents) {df}",
    ]


def ddl() -> str:
    """Every statement `ensure_word_stats` may run, as one text (the schema's fingerprint)."""
    tables = sorted({table for table, _, _ in FIELDS})
    functions = [f for t in tables for f in _trigger_functions(t)]
    triggers = [t for table in tables for t in _triggers(table)]
    return "\n".join([*_TABLES, _APPLY, *functions, *triggers, *_backfill()])


def ensure_word_stats(conn: psycopg.Connection[Any]) -> None:
    """Create the tables, functions and triggers, and fill the tables once per database.

    Runs inside ``db.ensure_schema``'s transaction (under its advisory lock), after the
    text tables exist. The functions are replaced at every start (cheap, no table lock);
    the triggers and the backfill happen once, with both text tables locked against
    writers (``SHARE ROW EXCLUSIVE``) until the schema transaction commits.
    """
    for statement in _TABLES:
        conn.execute(statement)
    conn.execute(_APPLY)
    tables = sorted({table for table, _, _ in FIELDS})
    for table in tables:
        for statement in _trigger_functions(table):
            conn.execute(statement)
    row = conn.execute("SELECT version FROM memgpt_schema WHERE name = 'word_stats'").fetchone()
    if row is not None and int(row[0]) >= WORD_STATS_VERSION:
        return
    conn.execute(f"LOCK TABLE {', '.join(tables)} IN SHARE ROW EXCLUSIVE MODE")
    for table in tables:
        for name in ("inserted", "deleted", "changed"):
            conn.execute(f"DROP TRIGGER IF EXISTS {table}_words_{name} ON {table}")
        for statement in _triggers(table):
            conn.execute(statement)
    for statement in _backfill():
        conn.execute(statement)
    conn.execute(
        "INSERT INTO memgpt_schema (name, version) VALUES ('word_stats', %s) "
        "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
        (WORD_STATS_VERSION,),
    )


@dataclass(frozen=True)
class TermStats:
    """A query term as one text column of one agent holds it."""

    documents: int
    """Its document frequency."""
    lexemes: list[str]
    """Its lexemes (``memgpt_words``): what its frequency in a document counts."""
    single: bool = False
    """It matches as its one lexeme: a document holds it exactly when it holds the lexeme,
    as often as the lexeme's positions (nearly every word; ``part_terms`` keeps those)."""


def term_statistics(
    conn: psycopg.Connection[Any], table: str, tsv: str, agent_id: str, terms: Sequence[str]
) -> tuple[Corpus, dict[str, TermStats]]:
    """The agent's corpus of one text column and each term's document frequency.

    Looked up in the tables ``stores.postgres.word_stats`` keeps (one query, whatever the
    agent's size). A term is matched as ``plainto_tsquery('english', term)``: one lexeme
    (nearly every word) is a row of ``memgpt_word_df``; none (a stop word) matches nothing;
    several (a word Postgres' parser splits) are counted in the agent's rows, as before
    the tables existed.
    """
    field = field_name(table, tsv)
    rows = conn.execute(
        "WITH t AS (SELECT x.term, x.n, plainto_tsquery('english', x.term) AS q, "
        "array(SELECT lexeme FROM unnest(memgpt_words(x.term))) AS lexemes "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS x(term, n)) "
        "SELECT t.term, t.lexemes, numnode(t.q) = 0, cardinality(t.lexemes) = 1 "
        "AND t.q = quote_literal(t.lexemes[1])::tsquery, "
        "(SELECT w.documents FROM memgpt_word_df AS w WHERE w.agent_id = %s "
        "AND w.field = %s AND w.lexeme = t.lexemes[1]), "
        "(SELECT c.documents FROM memgpt_word_corpus AS c WHERE c.agent_id = %s "
        "AND c.field = %s), "
        "(SELECT c.tokens FROM memgpt_word_corpus AS c WHERE c.agent_id = %s AND c.field = %s) "
        "FROM t ORDER BY t.n",
        (list(terms), agent_id, field, agent_id, field, agent_id, field),
    ).fetchall()
    stats = Corpus(0, 0)
    frequencies: dict[str, TermStats] = {}
    for term, lexemes, empty, single, documents, total_documents, total_tokens in rows:
        stats = Corpus(int(total_documents or 0), int(total_tokens or 0))
        if empty:
            df = 0
        elif single:
            df = int(documents or 0)
        else:
            row = conn.execute(
                f"SELECT count(*) FROM {table} AS b "
                f"WHERE b.agent_id = %s AND b.{tsv} @@ plainto_tsquery('english', %s)",
                (agent_id, term),
            ).fetchone()
            df = 0 if row is None else int(row[0])
        frequencies[term] = TermStats(df, list(lexemes), bool(single) and not empty)
    return stats, frequencies
