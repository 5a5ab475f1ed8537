"""Retention rules of archival memory on SQLite: stored with the agent, found by tag and age.

The rules are data in the memory file (table ``archival_retention``), so they travel
with the agent (export, import) and apply on every machine that opens it; which passages
a rule reaches is one indexed query (``archival_tags_agent_tag``). Forgetting them is
``SqliteArchivalMemory.delete``'s job, the same path ``forget --passage`` takes.
"""

from __future__ import annotations

import sqlite3

import sqlite_utils

from langgraph_memgpt.osutil import utc_now
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import RetentionRule


def rules(db: sqlite_utils.Database, agent_id: str) -> list[RetentionRule]:
    """The agent's rules, by tag then source (none in a file made before rules existed)."""
    try:
        rows = db.conn.execute(
            "SELECT tag, max_age_seconds, source FROM archival_retention "
            "WHERE agent_id = ? ORDER BY tag, source",
            (agent_id,),
        ).fetchall()
    except sqlite3.OperationalError as err:  # a read-only file that predates the table
        if "no such table" in str(err):
            return []
        raise
    return [RetentionRule(str(t), int(age), str(s) or None) for t, age, s in rows]


def put(db: sqlite_utils.Database, agent_id: str, rule: RetentionRule) -> None:
    """Add the rule, or change the age of the rule with the same tag and source."""
    db.conn.execute(
        "INSERT INTO archival_retention (agent_id, tag, source, max_age_seconds, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, tag, source) "
        "DO UPDATE SET max_age_seconds = excluded.max_age_seconds",
        (
            agent_id,
            valid_text(rule.tag),
            valid_text(rule.source or ""),
            int(rule.max_age_seconds),
            utc_now(),
        ),
    )


def remove(db: sqlite_utils.Database, agent_id: str, tag: str, source: str | None) -> bool:
    """Drop the rule with this tag and source; whether there was one."""
    cursor = db.conn.execute(
        "DELETE FROM archival_retention WHERE agent_id = ? AND tag = ? AND source = ?",
        (agent_id, valid_text(tag), valid_text(source or "")),
    )
    return cursor.rowcount > 0


def expired(
    db: sqlite_utils.Database,
    agent_id: str,
    tag: str,
    source_tag: str | None,
    before: str,
    limit: int,
) -> list[int]:
    """Ids of the agent's passages tagged ``tag`` (and ``source_tag``) created before ``before``."""
    sql = (
        "SELECT b.id FROM archival_tags AS t JOIN archival AS b ON b.id = t.passage_id "
        "WHERE t.agent_id = ? AND t.tag = ? AND b.agent_id = ? AND b.created_at < ?"
    )
    params: list[object] = [agent_id, tag, agent_id, before]
    if source_tag is not None:
        sql += (
            " AND EXISTS (SELECT 1 FROM archival_tags AS s WHERE s.passage_id = b.id "
            "AND s.agent_id = ? AND s.tag = ?)"
        )
        params += [agent_id, source_tag]
    rows = db.conn.execute(sql + " ORDER BY b.id LIMIT ?", [*params, max(1, limit)])
    return [int(r[0]) for r in rows.fetchall()]


__all__ = ["expired", "put", "remove", "rules"]
