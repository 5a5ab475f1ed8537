"""The embedded backend's schema versions: one ordered list of numbered migrations.

A memory database records its version in ``PRAGMA user_version`` and is recognised by
``PRAGMA application_id`` (`APPLICATION_ID`). Opening a file for writing (`db.open_db`)
runs the migrations it has not had, in order, in one write transaction, then stamps both
pragmas; a second process opening it meanwhile waits and finds it migrated. A file of a
later version than this package knows is refused, never written.

Files made before numbering are version 0, in any of their historic shapes: migrations 1-4
bring each up (each a no-op where its change is already there), and 5 creates whatever
tier tables, indexes and triggers are missing. A change to the schema is a new migration at
the end of `MIGRATIONS`; the tables' SQL (``stores.sqlite.schema``) that migration 5 runs stays the
shape of version 5.
``tests/stores/test_migrations.py`` opens a file of every earlier version (``tests/fixtures``).
"""

from __future__ import annotations

import sqlite3

from langgraph_memgpt.stores.duplicates import fact_key
from langgraph_memgpt.stores.migration import Migration, latest_version, pending
from langgraph_memgpt.stores.sqlite import part_terms
from langgraph_memgpt.stores.sqlite.schema import (
    ARCHIVAL,
    ARCHIVAL_COUNTS,
    ARCHIVAL_SOURCES,
    CORE,
    DELETIONS,
    RECALL,
    RECALL_COLUMNS,
    RECALL_COPIED,
    RETENTION,
    SEARCH_ROWS,
    VECTORS,
)

APPLICATION_ID = 0x4D656D47
"""``PRAGMA application_id`` of a memory database: "MemG" in ASCII."""


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")')}


def _archival_counts(conn: sqlite3.Connection) -> None:
    """Per-agent passage counts, filled from the passages a file already holds."""
    tables = _tables(conn)
    if "archival_counts" in tables:
        return
    conn.execute(ARCHIVAL_COUNTS)
    if "archival" in tables:
        conn.execute(
            "INSERT INTO archival_counts (agent_id, passages) "
            "SELECT agent_id, count(*) FROM archival GROUP BY agent_id"
        )


def _recall_thread_key(conn: sqlite3.Connection) -> None:
    """Key recall by (agent, thread, message id), row ids kept.

    The old key (agent, message id) lost every thread's messages but the first one's when a
    client numbered messages per thread. Row ids are kept, so the full-text indexes and the
    vectors (keyed by row id) stay valid; dropping the old table drops its indexes and
    triggers, which migration 5 creates again.
    """
    if "recall" not in _tables(conn):
        return
    old_key = False
    for row in conn.execute("PRAGMA index_list(recall)").fetchall():
        if bool(row[2]):
            columns = [str(r[2]) for r in conn.execute(f'PRAGMA index_info("{row[1]}")')]
            old_key = old_key or columns == ["agent_id", "message_id"]
    if old_key:
        conn.execute(f"CREATE TABLE recall_rekeyed ({RECALL_COLUMNS})")
        conn.execute(
            f"INSERT INTO recall_rekeyed ({RECALL_COPIED}) SELECT {RECALL_COPIED} FROM recall"
        )
        conn.execute("DROP TABLE recall")
        conn.execute("ALTER TABLE recall_rekeyed RENAME TO recall")


def _archival_keys(conn: sqlite3.Connection) -> None:
    """Passages carry the idempotency key a replayed insert finds them by."""
    if "archival" in _tables(conn) and "key" not in _columns(conn, "archival"):
        conn.execute("ALTER TABLE archival ADD COLUMN key TEXT")


def _core_sections(conn: sqlite3.Connection) -> None:
    """Core blocks may declare labelled sections (none in a block made before)."""
    if "core_blocks" in _tables(conn) and "sections" not in _columns(conn, "core_blocks"):
        conn.execute("ALTER TABLE core_blocks ADD COLUMN sections TEXT NOT NULL DEFAULT ''")


def _tier_tables(conn: sqlite3.Connection) -> None:
    """Every tier's tables, indexes, full-text indexes and triggers that are missing."""
    for statement in (*CORE, *RECALL, *ARCHIVAL, *VECTORS, *DELETIONS):
        conn.execute(statement)


def _retention_rules(conn: sqlite3.Connection) -> None:
    """Archival retention rules, stored with the agent (``stores.sqlite.retention``)."""
    conn.execute(RETENTION)


def _archival_sources(conn: sqlite3.Connection) -> None:
    """The messages a passage was made from (``archival_sources``)."""
    for statement in ARCHIVAL_SOURCES:
        conn.execute(statement)


def _part_terms(conn: sqlite3.Connection) -> None:
    """Long texts' parts counted when written (``part_terms``), for the texts already held."""
    for statement in part_terms.SCHEMA:
        conn.execute(statement)
    part_terms.mark_all_stale(conn)
    part_terms.catch_up(conn)


def _archival_facts(conn: sqlite3.Connection) -> None:
    """Passages carry their fact key (``stores.duplicates``) and the passage they replace.

    The key of every passage already held is computed here, so a near-duplicate of an old
    passage is found like one of a new passage.
    """
    if "archival" not in _tables(conn):
        return
    columns = _columns(conn, "archival")
    if "fact_key" not in columns:
        conn.execute("ALTER TABLE archival ADD COLUMN fact_key TEXT")
    if "replaces" not in columns:
        conn.execute("ALTER TABLE archival ADD COLUMN replaces INTEGER")
    last = 0
    while True:
        rows = conn.execute(
            "SELECT id, text FROM archival WHERE id > ? AND fact_key IS NULL "
            "ORDER BY id LIMIT 1000",
            (last,),
        ).fetchall()
        if not rows:
            break
        conn.executemany(
            "UPDATE archival SET fact_key = ? WHERE id = ?",
            [(fact_key(str(text)), int(i)) for i, text in rows],
        )
        last = int(rows[-1][0])
    conn.execute("CREATE INDEX IF NOT EXISTS archival_agent_fact ON archival (agent_id, fact_key)")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS archival_agent_replaces ON archival (agent_id, replaces) "
        "WHERE replaces IS NOT NULL"
    )


def _search_rows(conn: sqlite3.Connection) -> None:
    """Each tier's covering index for a word search's filter (``schema.SEARCH_ROWS``).

    Both tables exist by now (migration 5 creates what is missing).
    """
    for statement in SEARCH_ROWS:
        conn.execute(statement)


MIGRATIONS: tuple[Migration[sqlite3.Connection], ...] = (
    Migration(1, "archival counts per agent", _archival_counts),
    Migration(2, "recall keyed by (agent, thread, message id)", _recall_thread_key),
    Migration(3, "archival passages keyed for replays", _archival_keys),
    Migration(4, "core blocks with sections", _core_sections),
    Migration(5, "every tier's tables, indexes and triggers", _tier_tables),
    Migration(6, "archival retention rules", _retention_rules),
    Migration(7, "the messages a passage was made from", _archival_sources),
    Migration(8, "long texts' parts counted when written", _part_terms),
    Migration(9, "passages with their fact key and the passage they replace", _archival_facts),
    Migration(10, "search rows indexed apart from their texts", _search_rows),
)
LATEST = latest_version(MIGRATIONS)


class NewerSchemaError(Exception):
    """The file was written by a later version of the package."""


def version_of(conn: sqlite3.Connection) -> int:
    """The schema version a file records (0: made before numbering, or empty)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the file up to `LATEST`; return the version it had.

    Raises:
        NewerSchemaError: the file records a later version than this package knows.
    """
    found = version_of(conn)
    if found == LATEST:
        return found
    if found > LATEST:
        raise NewerSchemaError(f"schema version {found}; this package knows up to {LATEST}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = version_of(conn)  # another process may have migrated it while we waited
        for migration in pending(MIGRATIONS, found):
            migration.apply(conn)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {LATEST}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found


__all__ = ["APPLICATION_ID", "LATEST", "MIGRATIONS", "Migration", "NewerSchemaError", "migrate"]
