"""Telling a memory database from another application's SQLite file.

A memory database carries ``PRAGMA application_id`` `migrations.APPLICATION_ID`; another
non-zero id is another application's. A file made before the id was stamped (id 0) is
recognised by its tables and their columns, as below.

``memory.sqlite`` is a common name. Opening another program's file with tables called
``recall`` or ``core_blocks`` once failed deep inside a query with ``no such column:
agent_id``, naming no file; and a file with none of our tables would silently have had
ours added to it. Both are refused up front, with the path and what to do.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph_memgpt.stores.sqlite.migrations import APPLICATION_ID

REQUIRED_COLUMNS: dict[str, frozenset[str]] = {
    "meta": frozenset({"key", "value"}),
    "core_blocks": frozenset({"agent_id", "label", "value", "char_limit", "read_only"}),
    "core_block_history": frozenset({"agent_id", "label", "new_value", "actor", "op"}),
    "recall": frozenset(
        {"agent_id", "thread_id", "message_id", "role", "text", "created_at", "searchable"}
    ),
    "archival": frozenset({"agent_id", "text", "tags", "created_at"}),
    "archival_tags": frozenset({"passage_id", "agent_id", "tag"}),
    "archival_counts": frozenset({"agent_id", "passages"}),
    "vectors": frozenset({"tier", "agent_id", "key", "item_id", "embedding"}),
    "vector_state": frozenset({"tier", "agent_id", "key", "generation"}),
}
"""The columns the stores' queries need, per table of ours."""


def foreign_schema(conn: sqlite3.Connection, path: Path) -> str | None:
    """Why the database at ``path`` is not a memory database, or None if it may be one.

    An empty database may become one. One that holds tables must hold ``meta`` (every
    memory database has it from its first open), and each of our tables it holds must
    have the columns the stores use.
    """
    application = int(conn.execute("PRAGMA application_id").fetchone()[0])
    if application == APPLICATION_ID:
        return None
    if application:
        return (
            f"{path} is not a langgraph-memgpt memory database (its application id is "
            f"{application:#x}); choose another data directory, or move the file aside"
        )
    tables = {
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    if not tables:
        return None
    advice = "choose another data directory, or move the file aside to start fresh"
    if "meta" not in tables:
        shown = ", ".join(sorted(tables)[:5])
        return (
            f"{path} is not a langgraph-memgpt memory database (it holds the tables {shown} "
            f"of another application); {advice}"
        )
    for table in sorted(tables & REQUIRED_COLUMNS.keys()):
        columns = {str(row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")')}
        missing = sorted(REQUIRED_COLUMNS[table] - columns)
        if missing:
            return (
                f"{path} is not a langgraph-memgpt memory database: its table {table!r} has "
                f"no column {missing[0]!r} (another application's file?); {advice}"
            )
    return None


__all__ = ["REQUIRED_COLUMNS", "foreign_schema"]
