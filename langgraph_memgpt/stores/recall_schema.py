"""The recall table, its full-text indexes, and the migration to its current key.

A message is identified by (agent, thread, message id). Until 2026-12 the key was (agent,
message id): a client numbering messages per thread ("1", "2", ...) lost every thread's
messages but the first one's, silently (``INSERT OR IGNORE``). Opening an older database
rebuilds the table once with the new key, keeping every row id, so the full-text indexes
and the vectors (both keyed by row id) stay valid.
"""

from __future__ import annotations

import sqlite_utils

from langgraph_memgpt.stores.db import is_read_only, transaction

_COLUMNS_SQL = """
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    role TEXT NOT NULL,
    name TEXT,
    text TEXT NOT NULL,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    turn INTEGER NOT NULL DEFAULT 0,
    searchable INTEGER NOT NULL,
    context TEXT,
    UNIQUE (agent_id, thread_id, message_id)
"""
_COPIED = (
    "id, agent_id, thread_id, message_id, role, name, text, tool_calls, created_at, turn, "
    "searchable, context"
)

SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS recall ({_COLUMNS_SQL})",
    "CREATE INDEX IF NOT EXISTS recall_by_time ON recall (agent_id, searchable, created_at, id)",
    """CREATE INDEX IF NOT EXISTS recall_by_thread
        ON recall (agent_id, thread_id, searchable, created_at, id)""",
    # Message ids are looked up without their thread (``RecallMemory.get``, the ids a
    # search leaves out): without this index each lookup read every message of the agent.
    "CREATE INDEX IF NOT EXISTS recall_by_message ON recall (agent_id, message_id)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS recall_fts USING fts5(text, tokenize='porter unicode61')",
    """CREATE VIRTUAL TABLE IF NOT EXISTS recall_context_fts
        USING fts5(context, content='recall', content_rowid='id', tokenize='porter unicode61')""",
    """CREATE TRIGGER IF NOT EXISTS recall_context_insert AFTER INSERT ON recall
        WHEN new.context IS NOT NULL BEGIN
        INSERT INTO recall_context_fts (rowid, context) VALUES (new.id, new.context);
    END""",
    """CREATE TRIGGER IF NOT EXISTS recall_context_update AFTER UPDATE OF context ON recall BEGIN
        INSERT INTO recall_context_fts (recall_context_fts, rowid, context)
            SELECT 'delete', old.id, old.context WHERE old.context IS NOT NULL;
        INSERT INTO recall_context_fts (rowid, context)
            SELECT new.id, new.context WHERE new.context IS NOT NULL;
    END""",
    # Named positions in the agent's recall (a reader's watermark, e.g. the sleep-time
    # consolidator's "read up to here"): `RecallMemory.mark` / `set_mark`.
    """CREATE TABLE IF NOT EXISTS recall_marks (
        agent_id TEXT NOT NULL,
        name TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (agent_id, name)
    )""",
    """CREATE TRIGGER IF NOT EXISTS recall_delete AFTER DELETE ON recall BEGIN
        INSERT INTO recall_context_fts (recall_context_fts, rowid, context)
            SELECT 'delete', old.id, old.context WHERE old.context IS NOT NULL;
        DELETE FROM recall_fts WHERE rowid = old.id;
    END""",
)
"""``recall_fts`` holds the searchable text of a message (its text plus what it said
through ``send_message``), only for searchable messages. ``recall_context_fts`` indexes
``recall.context`` (external content, kept in step by the triggers: one update trigger,
so the old entry is always removed before the new one is added). ``created_at`` is
stored as ISO-8601 UTC with microseconds, so text order is time order whatever offset or
precision a timestamp was written with."""


def ensure_recall_schema(db: sqlite_utils.Database) -> None:
    """Create the recall tables, or bring an older database's key up to date.

    Idempotent and safe with several processes: the check runs under the write lock, so
    the second process to open an old database finds it already migrated.
    """
    if is_read_only(db):
        return  # read as it is (``inspect``); the next writable open migrates it
    with transaction(db):
        if _keyed_without_thread(db):
            _rekey(db)
        for statement in SCHEMA:
            db.conn.execute(statement)


def _keyed_without_thread(db: sqlite_utils.Database) -> bool:
    """Whether the recall table is unique on (agent_id, message_id), the old key."""
    for row in db.conn.execute("PRAGMA index_list(recall)").fetchall():
        name, unique = str(row[1]), bool(row[2])
        if not unique:
            continue
        columns = [str(r[2]) for r in db.conn.execute(f'PRAGMA index_info("{name}")')]
        if columns == ["agent_id", "message_id"]:
            return True
    return False


def _rekey(db: sqlite_utils.Database) -> None:
    """Rebuild the recall table with the (agent, thread, message id) key, row ids kept.

    Dropping the old table drops its indexes and triggers; :data:`SCHEMA` recreates them
    in the same transaction. The content-less ``recall_fts`` and the external-content
    ``recall_context_fts`` are keyed by row id, which is kept, so neither is rebuilt.
    """
    conn = db.conn
    conn.execute(f"CREATE TABLE recall_rekeyed ({_COLUMNS_SQL})")
    conn.execute(f"INSERT INTO recall_rekeyed ({_COPIED}) SELECT {_COPIED} FROM recall")
    conn.execute("DROP TABLE recall")
    conn.execute("ALTER TABLE recall_rekeyed RENAME TO recall")


__all__ = ["SCHEMA", "ensure_recall_schema"]
