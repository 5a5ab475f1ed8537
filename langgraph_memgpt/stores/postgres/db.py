"""The Postgres database behind the memory tiers: schema, pool, and text Postgres can hold.

Every table is prefixed ``memgpt_`` so the memory can share a database with LangGraph's
checkpoint tables. The schema is one ordered list of numbered migrations (`MIGRATIONS`); the
version a database has had is the ``memory`` row of ``memgpt_schema``. `ensure_schema` runs
the missing ones under an advisory lock, so two processes starting at once do not race.
Timestamps are stored as ISO-8601 UTC text with microseconds, exactly as the embedded backend
stores them, so both return the same strings and the shared date filters (``stores.dates``)
compare them as text.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.duplicates import fact_key
from langgraph_memgpt.stores.migration import Migration, latest_version, pending
from langgraph_memgpt.stores.postgres import part_terms, tag_counts, word_stats
from langgraph_memgpt.stores.postgres.parts import SCHEMA as PARTS_SCHEMA
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import MemoryStoreError

_SCHEMA_LOCK = 7_305_912_514  # pg_advisory_xact_lock key of schema creation (any constant)

SCHEMA: tuple[str, ...] = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    # The words of a text as search sees them: ASCII punctuation is a separator, as in the
    # embedded backend's tokenizer and in stores.words.query_words (Postgres' own parser reads
    # "XK-4471" as the word "xk" and the signed integer "-4471", which "4471" never finds).
    """CREATE OR REPLACE FUNCTION memgpt_words(text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        RETURN to_tsvector(
            'english', regexp_replace(coalesce($1, ''), '[[:punct:]]+', ' ', 'g')
        )""",
    # A text's length in words as SQLite FTS5 counts it for BM25 (every run of letters and
    # digits, stop words included; NULL for no text), kept per row (`search.bm25_scores`).
    """CREATE OR REPLACE FUNCTION memgpt_token_count(text) RETURNS integer
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        RETURN regexp_count($1, '[^[:space:][:punct:]]+')""",
    """CREATE TABLE IF NOT EXISTS memgpt_schema (
        name text PRIMARY KEY,
        version integer NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS memgpt_core_blocks (
        id bigserial NOT NULL,
        agent_id text NOT NULL,
        label text NOT NULL,
        value text NOT NULL,
        description text NOT NULL DEFAULT '',
        char_limit integer NOT NULL,
        read_only boolean NOT NULL DEFAULT false,
        updated_at text NOT NULL,
        PRIMARY KEY (agent_id, label)
    )""",
    """CREATE TABLE IF NOT EXISTS memgpt_core_block_history (
        id bigserial PRIMARY KEY,
        agent_id text NOT NULL,
        label text NOT NULL,
        old_value text,
        new_value text NOT NULL,
        actor text NOT NULL,
        op text NOT NULL,
        created_at text NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS memgpt_core_block_history_by_block
        ON memgpt_core_block_history (agent_id, label, id)""",
    # The newest change by someone else (`PgCoreMemory.latest_change_id`, every step): a
    # backward index-only walk over the agent's changes, stopping at the first such one.
    """CREATE INDEX IF NOT EXISTS memgpt_core_block_history_newest
        ON memgpt_core_block_history (agent_id, id DESC) INCLUDE (actor)""",
    # Shared blocks: agent_id sees owner_id's block `label` (`PgCoreMemory.attach`).
    """CREATE TABLE IF NOT EXISTS memgpt_core_block_links (
        id bigserial NOT NULL,
        agent_id text NOT NULL,
        label text NOT NULL,
        owner_id text NOT NULL,
        PRIMARY KEY (agent_id, label)
    )""",
    """CREATE INDEX IF NOT EXISTS memgpt_core_block_links_by_owner
        ON memgpt_core_block_links (owner_id, label)""",
    # Recall: one row per (agent, thread, message id). search_text is what search finds a
    # searchable message by (NULL for tool results and search calls); context is it with
    # its +-2 neighbours of the thread. Vectors have no fixed dimension here (agents may use
    # different models); each agent's identity is in memgpt_embeddings.
    """CREATE TABLE IF NOT EXISTS memgpt_recall (
        id bigserial PRIMARY KEY,
        agent_id text NOT NULL,
        thread_id text NOT NULL,
        message_id text NOT NULL,
        role text NOT NULL,
        name text,
        text text NOT NULL,
        tool_calls text NOT NULL DEFAULT '[]',
        created_at text NOT NULL,
        turn integer NOT NULL DEFAULT 0,
        searchable boolean NOT NULL,
        search_text text,
        context text,
        search_tsv tsvector GENERATED ALWAYS AS (memgpt_words(search_text)) STORED,
        context_tsv tsvector GENERATED ALWAYS AS (memgpt_words(context)) STORED,
        embedding vector,
        context_embedding vector,
        UNIQUE (agent_id, thread_id, message_id)
    )""",
    """CREATE INDEX IF NOT EXISTS memgpt_recall_by_time
        ON memgpt_recall (agent_id, searchable, created_at, id)""",
    """CREATE INDEX IF NOT EXISTS memgpt_recall_by_thread
        ON memgpt_recall (agent_id, thread_id, searchable, created_at, id)""",
    "CREATE INDEX IF NOT EXISTS memgpt_recall_search_tsv ON memgpt_recall USING gin (search_tsv)",
    "CREATE INDEX IF NOT EXISTS memgpt_recall_context_tsv ON memgpt_recall USING gin (context_tsv)",
    # BM25's document lengths (their sums per agent are kept by `word_stats`).
    """ALTER TABLE memgpt_recall ADD COLUMN IF NOT EXISTS search_len integer
        GENERATED ALWAYS AS (memgpt_token_count(search_text)) STORED""",
    """ALTER TABLE memgpt_recall ADD COLUMN IF NOT EXISTS context_len integer
        GENERATED ALWAYS AS (memgpt_token_count(context)) STORED""",
    # Summed the lengths per search before `word_stats` kept them; nothing reads it now.
    "DROP INDEX IF EXISTS memgpt_recall_lengths",
    # A term's newest matches, walked newest first within the agent (`search.term_reading`).
    "CREATE INDEX IF NOT EXISTS memgpt_recall_newest ON memgpt_recall (agent_id, id)",
    # Messages by id whatever their thread (`recall.get`, every turn): the unique key puts
    # the thread first, so without this each lookup probed every thread of the agent.
    """CREATE INDEX IF NOT EXISTS memgpt_recall_by_message
        ON memgpt_recall (agent_id, message_id)""",
    # The agent's named participants (`PgRecallMemory._participants`, every search): a
    # handful of index probes, one per name, instead of reading every searchable row.
    """CREATE INDEX IF NOT EXISTS memgpt_recall_speakers ON memgpt_recall (agent_id, name)
        WHERE searchable AND name IS NOT NULL AND role IN ('user', 'assistant')""",
    """CREATE TABLE IF NOT EXISTS memgpt_archival (
        id bigserial PRIMARY KEY,
        agent_id text NOT NULL,
        text text NOT NULL,
        tags text[] NOT NULL DEFAULT '{}',
        thread_id text,
        turn integer,
        created_at text NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (memgpt_words(text)) STORED,
        embedding vector
    )""",
    """CREATE INDEX IF NOT EXISTS memgpt_archival_by_time
        ON memgpt_archival (agent_id, created_at, id)""",
    "CREATE INDEX IF NOT EXISTS memgpt_archival_tsv ON memgpt_archival USING gin (tsv)",
    "CREATE INDEX IF NOT EXISTS memgpt_archival_tags ON memgpt_archival USING gin (tags)",
    """ALTER TABLE memgpt_archival ADD COLUMN IF NOT EXISTS text_len integer
        GENERATED ALWAYS AS (memgpt_token_count(text)) STORED""",
    "DROP INDEX IF EXISTS memgpt_archival_lengths",
    "CREATE INDEX IF NOT EXISTS memgpt_archival_newest ON memgpt_archival (agent_id, id)",
    # A passage's neighbours in its thread (archival search reads them, ``stores.search``).
    """CREATE INDEX IF NOT EXISTS memgpt_archival_by_thread
        ON memgpt_archival (agent_id, thread_id, turn, id)""",
    # Idempotency key of a passage (a replayed tool call or eviction finds its passage).
    "ALTER TABLE memgpt_archival ADD COLUMN IF NOT EXISTS key text",
    """CREATE UNIQUE INDEX IF NOT EXISTS memgpt_archival_key
        ON memgpt_archival (agent_id, key) WHERE key IS NOT NULL""",
    # Named positions in an agent's recall (a reader's watermark, e.g. the sleep-time
    # consolidator's "read up to here"): PgRecallMemory.mark / set_mark.
    """CREATE TABLE IF NOT EXISTS memgpt_recall_marks (
        agent_id text NOT NULL,
        name text NOT NULL,
        position bigint NOT NULL,
        PRIMARY KEY (agent_id, name)
    )""",
    """CREATE TABLE IF NOT EXISTS memgpt_embeddings (
        agent_id text PRIMARY KEY,
        model text NOT NULL,
        dims integer NOT NULL
    )""",
    # What was forgotten (never the content), and the ids of deleted messages, so a queue
    # re-recorded at the next turn cannot bring one back (see stores.sqlite.deletions).
    """CREATE TABLE IF NOT EXISTS memgpt_deletions (
        id bigserial PRIMARY KEY,
        agent_id text NOT NULL,
        kind text NOT NULL,
        item_id text NOT NULL,
        thread_id text,
        actor text NOT NULL,
        detail text NOT NULL DEFAULT '',
        deleted_at text NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS memgpt_deletions_by_agent ON memgpt_deletions (agent_id, id)",
    """CREATE TABLE IF NOT EXISTS memgpt_recall_forgotten (
        agent_id text NOT NULL,
        thread_id text NOT NULL,
        message_id text NOT NULL,
        PRIMARY KEY (agent_id, thread_id, message_id)
    )""",
    # Labelled sections a core block declares (a JSON list, '' for none: stores.sections).
    "ALTER TABLE memgpt_core_blocks ADD COLUMN IF NOT EXISTS sections text NOT NULL DEFAULT ''",
    # Archival retention rules, stored with the agent (stores.postgres.retention).
    """CREATE TABLE IF NOT EXISTS memgpt_archival_retention (
        agent_id text NOT NULL,
        tag text NOT NULL,
        source text NOT NULL DEFAULT '',
        max_age_seconds bigint NOT NULL,
        created_at text NOT NULL,
        PRIMARY KEY (agent_id, tag, source)
    )""",
)

VECTOR_COLUMNS = (
    ("memgpt_recall", "embedding"),
    ("memgpt_recall", "context_embedding"),
    ("memgpt_archival", "embedding"),
)
"""Vector columns; each gets an HNSW index per dimension in use (see `ensure_hnsw`)."""

SETTLING_TABLE = "memgpt_recall"
"""The table whose graphs hold only its ``settled`` rows (``settling``).

A recorded message's row is rewritten as each of the next messages of its thread joins
its context window, and every version of a row is an insert into each graph that holds
it: keeping a row out of the graphs until its window is complete makes one insert of
three. The rows not settled yet (a thread's newest few) are searched exactly beside the
walk (``search.vector_scores``)."""


class SchemaVersionError(MemoryStoreError):
    """The database was made by a newer version of this package."""


def pg_text(text: str) -> str:
    """``text`` as Postgres can hold it: no lone surrogate, and U+FFFD for NUL (U+0000)."""
    text = valid_text(text)
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def pg_texts(texts: Sequence[str]) -> list[str]:
    """`pg_text` of each."""
    return [pg_text(t) for t in texts]


def _tables(conn: psycopg.Connection[Any]) -> None:
    for statement in (*SCHEMA, *PARTS_SCHEMA):
        conn.execute(statement)


def _secrets(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memgpt_secrets (name text PRIMARY KEY, value text NOT NULL)"
    )


def store_secret(conn: psycopg.Connection[Any], name: str) -> bytes:
    """The store's random secret ``name``, made on first use (never leaves the database)."""
    conn.execute(
        "INSERT INTO memgpt_secrets (name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
        (name, secrets.token_hex(32)),
    )
    row = conn.execute("SELECT value FROM memgpt_secrets WHERE name = %s", (name,)).fetchone()
    assert row is not None
    return bytes.fromhex(str(row[0]))


def _archival_sources(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        """CREATE TABLE IF NOT EXISTS memgpt_archival_sources (
            passage_id bigint NOT NULL REFERENCES memgpt_archival (id) ON DELETE CASCADE,
            agent_id text NOT NULL,
            thread_id text NOT NULL,
            message_id text NOT NULL,
            PRIMARY KEY (passage_id, thread_id, message_id)
        )"""
    )
    conn.execute(
        """CREATE INDEX IF NOT EXISTS memgpt_archival_sources_message
            ON memgpt_archival_sources (agent_id, thread_id, message_id)"""
    )


def _settled(conn: psycopg.Connection[Any]) -> None:
    # Rows stored before this column existed are in the graphs already: settled.
    conn.execute(
        "ALTER TABLE memgpt_recall ADD COLUMN IF NOT EXISTS settled boolean NOT NULL DEFAULT true"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memgpt_recall_unsettled ON memgpt_recall (agent_id, id) "
        "WHERE NOT settled"
    )


def _words_inline(conn: psycopg.Connection[Any]) -> None:
    # A recall row with its context window is over the 2 kB at which Postgres moves values
    # out of the row, and the largest left after the vectors was `context_tsv`: half the
    # rows kept it in TOAST, and every match a word statement scored cost a TOAST index
    # lookup more. MAIN moves the vectors and the context text out first (the rows written
    # from now on; an older row keeps its layout until it is rewritten). The columns are
    # named here, not taken from the search code: a migration's statements never change.
    words = {"memgpt_recall": ("search_tsv", "context_tsv"), "memgpt_archival": ("tsv",)}
    for table, columns in words.items():
        conn.execute(
            f"ALTER TABLE {table} "
            + ", ".join(f"ALTER COLUMN {column} SET STORAGE MAIN" for column in columns)
        )


def _archival_facts(conn: psycopg.Connection[Any]) -> None:
    # The fact key (``stores.duplicates``) of every passage, the ones already held too, and
    # the passage a passage replaces. The key is computed in Python, a batch at a time.
    conn.execute(
        "ALTER TABLE memgpt_archival ADD COLUMN IF NOT EXISTS fact_key text, "
        "ADD COLUMN IF NOT EXISTS replaces bigint"
    )
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, text FROM memgpt_archival WHERE id > %s AND fact_key IS NULL "
            "ORDER BY id LIMIT 1000",
            (last,),
        ).fetchall()
        if not rows:
            break
        conn.cursor().executemany(
            "UPDATE memgpt_archival SET fact_key = %s WHERE id = %s",
            [(fact_key(str(text)), int(i)) for i, text in rows],
        )
        last = int(rows[-1][0])
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memgpt_archival_fact ON memgpt_archival (agent_id, fact_key)"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memgpt_archival_replaces ON memgpt_archival "
        "(agent_id, replaces) WHERE replaces IS NOT NULL"
    )


UNNUMBERED = 1
"""The ``memory`` version of every database made before numbered migrations, whatever its
shape: the first numbered migration is 2."""
MIGRATIONS: tuple[Migration[psycopg.Connection[Any]], ...] = (
    Migration(2, "the memory tables, functions and indexes; long texts' parts", _tables),
    Migration(3, "BM25 statistics kept in tables by triggers", word_stats.ensure_word_stats),
    Migration(4, "the tags in use kept by triggers", tag_counts.ensure_tag_counts),
    Migration(5, "the store's secrets (the key that signs an export's shared blocks)", _secrets),
    Migration(6, "the messages a passage was made from", _archival_sources),
    Migration(7, "recall rows out of the graphs until their context is final", _settled),
    Migration(8, "the word columns kept in their rows, out of TOAST", _words_inline),
    Migration(9, "passages with their fact key and the passage they replace", _archival_facts),
    Migration(10, "long texts' part words kept when written", part_terms.ensure_part_terms),
)
"""Each runs inside `ensure_schema`'s transaction, under its advisory lock. A new database,
and one made before numbering (version `UNNUMBERED`), runs them all: each brings any older
shape up (``IF NOT EXISTS``, marks of its own). A schema change is a new migration at the
end; the statements of the existing ones stay as they are."""
SCHEMA_VERSION = latest_version(MIGRATIONS, first=UNNUMBERED + 1)


def ensure_schema(url: str) -> None:
    """Run the migrations the database at ``url`` has not had; safe from many processes.

    A database at `SCHEMA_VERSION` runs no DDL at all: ``ALTER TABLE ... IF NOT EXISTS`` and
    ``CREATE INDEX IF NOT EXISTS`` lock their tables even when they change nothing, so a
    worker starting beside others' writes would stall them (and deadlocked with a writer
    that had read the table, with four processes writing one database).

    Raises:
        SchemaVersionError: the database holds a newer schema than this package knows.
    """
    with psycopg.connect(url, autocommit=True) as conn:
        if _pending(conn) is None:
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            done = _pending(conn)  # another process may have migrated it meanwhile
            if done is None:
                return
            for migration in pending(MIGRATIONS, done):
                migration.apply(conn)
            conn.execute(
                "INSERT INTO memgpt_schema (name, version) VALUES ('memory', %s) "
                "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                (SCHEMA_VERSION,),
            )
            # The fingerprint of the DDL that unnumbered versions kept: nothing reads it now.
            conn.execute("DELETE FROM memgpt_schema WHERE name = 'ddl'")


def _pending(conn: psycopg.Connection[Any]) -> int | None:
    """The version the database has (`UNNUMBERED` when new), or None when it needs nothing.

    Raises:
        SchemaVersionError: the database holds a newer schema than this package knows.
    """
    version = _stored_version(conn, "memory")
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the memory schema in this database is version {version}, newer than this "
            f"package's {SCHEMA_VERSION}: upgrade langgraph-memgpt"
        )
    if version is None:
        return UNNUMBERED
    return None if version == SCHEMA_VERSION else version


def _stored_version(conn: psycopg.Connection[Any], name: str) -> int | None:
    """``memgpt_schema``'s version of ``name``; None when absent (or no schema yet)."""
    exists = conn.execute("SELECT to_regclass('memgpt_schema') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return None
    row = conn.execute("SELECT version FROM memgpt_schema WHERE name = %s", (name,)).fetchone()
    return int(row[0]) if row else None


HNSW_TYPE = "halfvec"
"""What the HNSW graphs hold of each vector: its half-precision copy (pgvector ``halfvec``).

A graph walk reads thousands of index pages spread over the whole graph; half-precision
copies make the graphs half the size, so more of their pages stay in Postgres' buffers
beside the tables. The graph only chooses candidates: their similarity is computed from
the stored single-precision vector (``search.vector_scores``)."""


def hnsw_index_name(table: str, column: str, dims: int) -> str:
    """The name of ``table.column``'s HNSW index over vectors of ``dims`` dimensions."""
    kind = "hnsws" if table == SETTLING_TABLE else "hnswh"
    return f"{table}_{column}_{kind}_{int(dims)}"


def _older_graphs(table: str, column: str, dims: int) -> list[str]:
    """The names earlier versions gave ``table.column``'s graph (dropped once it is rebuilt).

    ``hnsw``: single-precision; ``hnswh``: half-precision over every row, settled or not.
    """
    current = hnsw_index_name(table, column, dims)
    names = [f"{table}_{column}_{kind}_{int(dims)}" for kind in ("hnsw", "hnswh")]
    return [name for name in names if name != current]


def ensure_hnsw(pool: ConnectionPool[Any], dims: int) -> None:
    """HNSW indexes (cosine) over the vectors of dimension ``dims``, created once.

    An expression index on ``embedding::halfvec(dims)`` (`HNSW_TYPE`), partial on that
    dimension: the plain ``embedding <=> q`` of an exact scan never matches it, so only the
    searches that ask for it (large agents, `VectorSearch`) walk the graph. The
    graphs of earlier versions are dropped once these exist: every write of a vector is an
    insert into each graph of its column. Recall's graphs hold its settled rows only
    (`SETTLING_TABLE`).
    """
    names = [hnsw_index_name(table, column, dims) for table, column in VECTOR_COLUMNS]
    older = [name for t, c in VECTOR_COLUMNS for name in _older_graphs(t, c, dims)]
    with pool.connection() as conn:
        # Checked first: CREATE INDEX IF NOT EXISTS locks the table against writers even
        # when the index exists, and every process opening an agent comes here.
        found = conn.execute(
            "SELECT count(*) FILTER (WHERE n = ANY(%s)), count(*) FROM unnest(%s::text[]) "
            "AS n WHERE to_regclass(n) IS NOT NULL",
            (names, names + older),
        ).fetchone()
        if found and int(found[0]) == int(found[1]) == len(names):
            return
    with pool.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        for (table, column), name in zip(VECTOR_COLUMNS, names, strict=True):
            settled = " AND settled" if table == SETTLING_TABLE else ""
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw "
                f"(({column}::{HNSW_TYPE}({int(dims)})) {HNSW_TYPE}_cosine_ops) "
                f"WHERE vector_dims({column}) = {int(dims)}{settled}"
            )
            for old in _older_graphs(table, column, dims):
                conn.execute(f"DROP INDEX IF EXISTS {old}")


GRAPHS_WORTH_A_WARNING = 64 * 2**20
"""Graphs smaller than this (bytes, all told) never warn: a small memory is fast anywhere."""


def graphs_and_buffers(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """(bytes of the memory's HNSW graphs, bytes of the server's ``shared_buffers``)."""
    row = conn.execute(
        "SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0), "
        "pg_size_bytes(current_setting('shared_buffers')) FROM pg_index AS i "
        "JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_am AS a ON a.oid = c.relam "
        "WHERE a.amname = 'hnsw' AND i.indrelid = ANY(%s::regclass[])",
        (sorted({table for table, _ in VECTOR_COLUMNS}),),
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def graphs_outgrow_buffers(graphs: int, buffers: int) -> bool:
    """Whether a search's graph walks will read most of their pages from outside the buffers.

    A walk touches pages all over its graph, so graphs larger than ``shared_buffers``
    leave a large agent's search turn waiting on pages the buffers keep losing, and a
    search turn walks three of them (the figures at the default 128MB and with more:
    docs/scale.md, "What a Postgres server must be given").
    """
    return graphs >= GRAPHS_WORTH_A_WARNING and graphs > buffers


STATISTICS_TABLES = (
    "memgpt_recall",
    "memgpt_archival",
    "memgpt_recall_parts",
    "memgpt_archival_parts",
    "memgpt_word_df",
    "memgpt_word_corpus",
    "memgpt_archival_tag_counts",
    "memgpt_part_terms",
)
"""The tables whose planner statistics decide a turn's plans (`refresh_statistics`)."""

LOADED_SHARE = 0.1
"""A load of more rows than this share of what a table's statistics know of: VACUUM ANALYZE."""


def refresh_statistics(
    pool: ConnectionPool[Any], loaded: Mapping[str, int] | None = None
) -> list[str]:
    """Do what autovacuum would do later for the memory tables that need it; returns them.

    A table holding rows but no planner statistics (a bulk load or a restore autovacuum has
    not reached yet, as on a server that has just loaded its data) is ANALYZEd: without
    statistics the planner takes an agent's filter to match a few hundred rows and, for a
    large agent, picks an exact scan of every vector over the HNSW index, a cost that grows
    with the agent's history (the figures: ``benchmarks/README.md``, ``per_turn.py``: both
    backends at 100k). So is a table with a column that has none: one a migration added to
    a table holding rows (migration 7's ``settled``: taken for true in half the rows, the
    settling pass's few unsettled rows were looked for by reading the whole table, every
    heap page through the buffers, until autovacuum's next ANALYZE,
    10% of the table's rows of writes later). With ``loaded`` ({table: rows just
    written}), a table that took more than `LOADED_SHARE` of the rows its statistics
    counted is VACUUMed and ANALYZEd: the vacuum also sets the loaded rows' visibility and
    moves the GIN indexes' pending entries into the index, which autovacuum would otherwise
    do while the first turns run. A table the connecting role does not own is skipped by
    Postgres with a warning.
    """
    grown = loaded or {}
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT c.relname, c.reltuples, NOT EXISTS (SELECT 1 FROM pg_attribute AS a "
            "WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
            "AND NOT EXISTS (SELECT 1 FROM pg_stats AS s WHERE s.schemaname = n.nspname "
            "AND s.tablename = c.relname AND s.attname = a.attname)) "
            "FROM unnest(%s::text[]) AS t JOIN pg_class AS c ON c.oid = to_regclass(t) "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE pg_relation_size(c.oid) > 0",
            (list(STATISTICS_TABLES),),
        ).fetchall()
        done = []
        for name, known, has_stats in rows:
            table = str(name)  # a name of STATISTICS_TABLES, never input
            if grown.get(table, 0) > LOADED_SHARE * max(float(known), 0.0):
                conn.execute(f"VACUUM (ANALYZE) {table}")
            elif not has_stats:
                conn.execute(f"ANALYZE {table}")
            else:
                continue
            done.append(table)
    return done


def open_pool(url: str, *, max_size: int = 8) -> ConnectionPool[Any]:
    """A connection pool whose connections know the ``vector`` type (autocommit on)."""

    def configure(conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)

    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True},
        configure=configure,
        open=True,
        name="memgpt-memory",
    )
    pool.wait(timeout=30)
    return pool
