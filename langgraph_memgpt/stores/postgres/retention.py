"""Retention rules of archival memory on Postgres (as ``stores.sqlite.retention`` on SQLite).

The table, ``memgpt_archival_retention``, is created with the rest (``postgres.db.SCHEMA``).
"""

from __future__ import annotations

from typing import Any

import psycopg

from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.postgres.db import pg_text
from langgraph_memgpt.stores.types import RetentionRule


def rules(conn: psycopg.Connection[Any], agent_id: str) -> list[RetentionRule]:
    """The agent's rules, by tag then source."""
    rows = conn.execute(
        "SELECT tag, max_age_seconds, source FROM memgpt_archival_retention "
        "WHERE agent_id = %s ORDER BY tag, source",
        (agent_id,),
    ).fetchall()
    return [RetentionRule(str(t), int(age), str(s) or None) for t, age, s in rows]


def put(conn: psycopg.Connection[Any], agent_id: str, rule: RetentionRule) -> None:
    """Add the rule, or change the age of the rule with the same tag and source."""
    conn.execute(
        "INSERT INTO memgpt_archival_retention "
        "(agent_id, tag, source, max_age_seconds, created_at) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (agent_id, tag, source) DO UPDATE SET max_age_seconds = "
        "excluded.max_age_seconds",
        (
            agent_id,
            pg_text(rule.tag),
            pg_text(rule.source or ""),
            int(rule.max_age_seconds),
            to_utc_iso(),
        ),
    )


def remove(conn: psycopg.Connection[Any], agent_id: str, tag: str, source: str | None) -> bool:
    """Drop the rule with this tag and source; whether there was one."""
    cursor = conn.execute(
        "DELETE FROM memgpt_archival_retention WHERE agent_id = %s AND tag = %s AND source = %s",
        (agent_id, pg_text(tag), pg_text(source or "")),
    )
    return cursor.rowcount > 0


def expired(
    conn: psycopg.Connection[Any],
    agent_id: str,
    tag: str,
    source_tag: str | None,
    before: str,
    limit: int,
) -> list[int]:
    """Ids of the agent's passages holding ``tag`` (and ``source_tag``) made before ``before``."""
    wanted = [pg_text(tag)] + ([pg_text(source_tag)] if source_tag is not None else [])
    rows = conn.execute(
        "SELECT id FROM memgpt_archival WHERE agent_id = %s AND tags @> %s::text[] "
        "AND created_at < %s ORDER BY id LIMIT %s",
        (agent_id, wanted, before, max(1, limit)),
    ).fetchall()
    return [int(r[0]) for r in rows]
