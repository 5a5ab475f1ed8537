"""The recall table and its full-text indexes (created by ``stores.migrations``).

A message is identified by (agent, thread, message id), so ids numbered per thread never
collide.
"""

from __future__ import annotations

COLUMNS_SQL = """
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
COPIED = (
    "id, agent_id, thread_id, message_id, role, name, text, tool_calls, created_at, turn, "
    "searchable, context"
)

SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS recall ({COLUMNS_SQL})",
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


__all__ = ["COLUMNS_SQL", "COPIED", "SCHEMA"]
