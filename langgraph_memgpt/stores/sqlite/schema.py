"""The embedded backend's tables, indexes, full-text indexes and triggers, as SQL.

``stores.sqlite.migrations`` runs them: migration 5 creates whatever of `CORE`, `RECALL`,
`ARCHIVAL`, `VECTORS` and `DELETIONS` is missing, 1, 2 and 6 use `ARCHIVAL_COUNTS`,
`RECALL_COLUMNS` and `RETENTION`. The stores query these tables and never create them, so
this module imports nothing and every store may import the migrations. The statements
stay the shape of the version that runs them; a change to a table is a new migration, not
an edit here.
"""

from __future__ import annotations

CORE = (
    """CREATE TABLE IF NOT EXISTS core_blocks (
        agent_id TEXT NOT NULL,
        label TEXT NOT NULL,
        value TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        char_limit INTEGER NOT NULL,
        read_only INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        sections TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (agent_id, label)
    )""",
    """CREATE TABLE IF NOT EXISTS core_block_history (
        id INTEGER PRIMARY KEY,
        agent_id TEXT NOT NULL,
        label TEXT NOT NULL,
        old_value TEXT,
        new_value TEXT NOT NULL,
        actor TEXT NOT NULL,
        op TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS core_block_history_by_block
        ON core_block_history (agent_id, label, id)""",
    """CREATE INDEX IF NOT EXISTS core_block_history_newest
        ON core_block_history (agent_id, id, actor)""",
    """CREATE TABLE IF NOT EXISTS core_block_links (
        agent_id TEXT NOT NULL,
        label TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        PRIMARY KEY (agent_id, label)
    )""",
    "CREATE INDEX IF NOT EXISTS core_block_links_by_owner ON core_block_links (owner_id, label)",
)

# A message is identified by (agent, thread, message id), so ids numbered per thread
# never collide.
RECALL_COLUMNS = """
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
RECALL_COPIED = (
    "id, agent_id, thread_id, message_id, role, name, text, tool_calls, created_at, turn, "
    "searchable, context"
)

RECALL = (
    f"CREATE TABLE IF NOT EXISTS recall ({RECALL_COLUMNS})",
    "CREATE INDEX IF NOT EXISTS recall_by_time ON recall (agent_id, searchable, created_at, id)",
    """CREATE INDEX IF NOT EXISTS recall_by_thread
        ON recall (agent_id, thread_id, searchable, created_at, id)""",
    # Message ids are looked up without their thread (``SqliteRecallMemory.get``, the ids a
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
    # consolidator's "read up to here"): `SqliteRecallMemory.mark` / `set_mark`.
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

SEARCH_ROWS = (
    "CREATE INDEX IF NOT EXISTS recall_search_rows "
    "ON recall (id, agent_id, searchable, created_at, role, thread_id, message_id)",
    "CREATE INDEX IF NOT EXISTS archival_search_rows ON archival (id, agent_id, created_at)",
)
"""What a word search filters its matches by, one small entry per text (migration 10).

A word search looks each FTS5 match up by id to apply its filter (agent, searchable,
dates, roles, messages left out; a passage's agent and dates). Through the table, each
lookup reads a row that holds the text (and a message's context: about 15 kB a long
message, several pages); through these indexes, which cover every column a filter names
but the tags (matched by id in their own table), it reads a few dozen bytes. At 1M tokens
of long messages that was about a quarter of a word search's time
(``benchmarks/results/history.md``). ``fts.SEARCH_ROW_INDEXES`` names them for the
searches."""


ARCHIVAL = (
    """CREATE TABLE IF NOT EXISTS archival (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        agent_id TEXT NOT NULL,
        text TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        thread_id TEXT,
        turn INTEGER,
        created_at TEXT NOT NULL,
        key TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS archival_agent_created ON archival (agent_id, created_at, id)",
    # A passage's neighbours in its thread (search reads them, ``stores.search``).
    "CREATE INDEX IF NOT EXISTS archival_agent_thread ON archival (agent_id, thread_id, turn, id)",
    # One passage per key and agent: a replayed tool call or eviction finds its passage.
    "CREATE UNIQUE INDEX IF NOT EXISTS archival_agent_key ON archival (agent_id, key) "
    "WHERE key IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS archival_tags (
        passage_id INTEGER NOT NULL REFERENCES archival (id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL,
        tag TEXT NOT NULL,
        PRIMARY KEY (passage_id, tag)
    )""",
    "CREATE INDEX IF NOT EXISTS archival_tags_agent_tag ON archival_tags (agent_id, tag)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS archival_fts USING fts5 (
        text, content='archival', content_rowid='id', tokenize='porter unicode61'
    )""",
    """CREATE TRIGGER IF NOT EXISTS archival_fts_insert AFTER INSERT ON archival BEGIN
        INSERT INTO archival_fts (rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS archival_fts_delete AFTER DELETE ON archival BEGIN
        INSERT INTO archival_fts (archival_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS archival_fts_update AFTER UPDATE OF text ON archival BEGIN
        INSERT INTO archival_fts (archival_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO archival_fts (rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER IF NOT EXISTS archival_count_insert AFTER INSERT ON archival BEGIN
        INSERT INTO archival_counts (agent_id, passages) VALUES (new.agent_id, 1)
            ON CONFLICT (agent_id) DO UPDATE SET passages = passages + 1;
    END""",
    """CREATE TRIGGER IF NOT EXISTS archival_count_delete AFTER DELETE ON archival BEGIN
        UPDATE archival_counts SET passages = passages - 1 WHERE agent_id = old.agent_id;
    END""",
)
ARCHIVAL_COUNTS = """CREATE TABLE archival_counts (
    agent_id TEXT PRIMARY KEY,
    passages INTEGER NOT NULL
)"""
"""Passages per agent, kept by triggers: counting the agent's index entries twice per
search made a search turn grow with the archive."""

VECTORS = (
    """CREATE TABLE IF NOT EXISTS vectors (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tier TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        item_id INTEGER NOT NULL,
        embedding BLOB NOT NULL,
        UNIQUE (tier, agent_id, key, item_id)
    )""",
    """CREATE TABLE IF NOT EXISTS vector_state (
        tier TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        generation TEXT NOT NULL,
        PRIMARY KEY (tier, agent_id, key)
    )""",
)

DELETIONS = (
    """CREATE TABLE IF NOT EXISTS deletions (
        id INTEGER PRIMARY KEY,
        agent_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        item_id TEXT NOT NULL,
        thread_id TEXT,
        actor TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '',
        deleted_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS deletions_by_agent ON deletions (agent_id, id)",
    """CREATE TABLE IF NOT EXISTS recall_forgotten (
        agent_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        PRIMARY KEY (agent_id, thread_id, message_id)
    ) WITHOUT ROWID""",
)

ARCHIVAL_SOURCES = (
    """CREATE TABLE IF NOT EXISTS archival_sources (
        passage_id INTEGER NOT NULL REFERENCES archival (id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        PRIMARY KEY (passage_id, thread_id, message_id)
    )""",
    """CREATE INDEX IF NOT EXISTS archival_sources_message
        ON archival_sources (agent_id, thread_id, message_id)""",
)
"""The recall messages a passage was made from (the sleep-time consolidator's facts), so
forgetting a message forgets what was made from it; a passage's rows go with it."""

RETENTION = """CREATE TABLE IF NOT EXISTS archival_retention (
    agent_id TEXT NOT NULL,
    tag TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    max_age_seconds INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, tag, source)
)"""


__all__ = [
    "ARCHIVAL",
    "ARCHIVAL_COUNTS",
    "CORE",
    "DELETIONS",
    "RECALL",
    "SEARCH_ROWS",
    "RECALL_COLUMNS",
    "RECALL_COPIED",
    "RETENTION",
    "VECTORS",
]
