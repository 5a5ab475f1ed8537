"""The deletion log and the forgotten-message ids of the embedded (SQLite) backend.

``deletions`` records what was forgotten (kind, id, thread, who, when, how many), never
the content. ``recall_forgotten`` keeps the (thread, message id) of every deleted message,
ids only: the graph re-records its queue at the start of each turn (write-ahead,
idempotent), so without it a deleted message still in a thread's queue would come back
on the next turn.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import sqlite_utils

from langgraph_memgpt.osutil import utc_now
from langgraph_memgpt.stores.sqlite.db import DB_FILENAME, open_db, transaction
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import Deletion

LogRow = tuple[str, str, str | None, str]
"""(kind, item id, thread id, detail) of one deletion."""


def log_deletions(
    db: sqlite_utils.Database, agent_id: str, actor: str, rows: Iterable[LogRow]
) -> None:
    """Add entries to the log; call inside the deletion's transaction, so both or neither land."""
    now = utc_now()
    db.conn.executemany(
        "INSERT INTO deletions (agent_id, kind, item_id, thread_id, actor, detail, deleted_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (agent_id, kind, valid_text(item), thread, valid_text(actor), detail, now)
            for kind, item, thread, detail in rows
        ],
    )


def remember_forgotten(
    db: sqlite_utils.Database, agent_id: str, keys: Iterable[tuple[str, str]]
) -> None:
    """Keep the (thread, message id) of deleted messages, so they are never recorded again."""
    db.conn.executemany(
        "INSERT OR IGNORE INTO recall_forgotten (agent_id, thread_id, message_id) VALUES (?, ?, ?)",
        [(agent_id, thread, message) for thread, message in keys],
    )


def forgotten_among(
    db: sqlite_utils.Database, agent_id: str, keys: Sequence[tuple[str, str]]
) -> set[tuple[str, str]]:
    """Which of these (thread, message id) keys were deleted before."""
    if not keys:
        return set()
    rows = db.conn.execute(
        # Keys outer, each a primary-key lookup (see SqliteRecallMemory._stored).
        "SELECT f.thread_id, f.message_id FROM json_each(?) AS k "
        "CROSS JOIN recall_forgotten AS f ON f.agent_id = ? "
        "AND f.thread_id = json_extract(k.value, '$[0]') "
        "AND f.message_id = json_extract(k.value, '$[1]')",
        (json.dumps([list(k) for k in keys]), agent_id),
    ).fetchall()
    return {(str(r[0]), str(r[1])) for r in rows}


def forgotten_agents(data_dir: str | Path) -> list[str]:
    """Ids of the agents with entries in the deletion log under ``data_dir`` (reads only)."""
    path = Path(data_dir).expanduser() / DB_FILENAME
    if not path.is_file():
        return []
    db = open_db(path, read_only=True)
    try:
        rows = db.conn.execute("SELECT DISTINCT agent_id FROM deletions ORDER BY 1").fetchall()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return []
        raise
    finally:
        db.conn.close()
    return [str(r[0]) for r in rows]


class SqliteDeletionLog:
    """The deletion log of one agent (meets ``stores.base.DeletionLog``)."""

    def __init__(self, db: sqlite_utils.Database, agent_id: str) -> None:
        self.db = db
        self.agent_id = agent_id

    def entries(self, limit: int = 50) -> list[Deletion]:
        """The newest ``limit`` deletions, newest first (none in a database without a log)."""
        try:
            rows = self.db.conn.execute(
                "SELECT kind, item_id, actor, deleted_at, thread_id, detail FROM deletions "
                "WHERE agent_id = ? ORDER BY id DESC LIMIT ?",
                (self.agent_id, max(0, limit)),
            ).fetchall()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):  # an older database, opened read-only
                return []
            raise
        return [Deletion(str(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], str(r[5])) for r in rows]

    def record(
        self, kind: str, item_id: str, *, actor: str, thread_id: str | None = None, detail: str = ""
    ) -> None:
        """Log a deletion made outside the stores (a thread's checkpoint, a whole agent)."""
        with transaction(self.db):
            log_deletions(self.db, self.agent_id, actor, [(kind, item_id, thread_id, detail)])


__all__ = [
    "LogRow",
    "SqliteDeletionLog",
    "forgotten_agents",
    "forgotten_among",
    "log_deletions",
    "remember_forgotten",
]
