"""Reading recall rows in SQLite: the candidates' condition, a listing page, rows by id.

The recall store and its search signals both read messages this way: the filters a
search or a date listing applies, as one SQL condition over the alias ``b``, and the
rows that condition selects.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence

from langgraph_memgpt.stores.dates import date_range_sql
from langgraph_memgpt.stores.messages import message_from_row, normalise_role, row_columns
from langgraph_memgpt.stores.pages import ByTime
from langgraph_memgpt.stores.search import split_excluded
from langgraph_memgpt.stores.types import Excluded, RecallMessage

COLUMNS = row_columns()
"""A message's columns, as ``message_from_row`` reads them."""

IDS = "SELECT value FROM json_each(?)"
"""The ids of a JSON list (one parameter)."""

PAIRS = "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
"""The ``(thread id, message id)`` pairs of a JSON list of pairs (one parameter)."""


def filters(
    agent_id: str,
    roles: Sequence[str] | None,
    start_date: str | None,
    end_date: str | None,
    exclude_ids: Collection[Excluded],
) -> tuple[str, list[object]]:
    """SQL condition (over alias ``b``) selecting the agent's searchable candidates."""
    clauses = ["b.agent_id = ?", "b.searchable = 1"]
    params: list[object] = [agent_id]
    if roles:
        wanted = sorted({normalise_role(r) for r in roles})
        clauses.append("b.role IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(wanted))
    conditions, values = date_range_sql("b.created_at", start_date, end_date)
    clauses += conditions
    params += values
    left_out, values = excluding("b.", exclude_ids)
    clauses += left_out
    params += values
    return " AND ".join(clauses), params


def excluding(alias: str, items: Collection[Excluded]) -> tuple[list[str], list[object]]:
    """SQL conditions (over ``alias``) leaving out excluded messages: bare ids, then pairs."""
    bare, pairs = split_excluded(items)
    clauses: list[str] = []
    params: list[object] = []
    if bare:
        clauses.append(f"{alias}message_id NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(bare))
    if pairs:
        clauses.append(f"({alias}thread_id, {alias}message_id) NOT IN ({PAIRS})")
        params.append(json.dumps(pairs))
    return clauses, params


BY_TIME = ByTime("recall", COLUMNS, "?", message_from_row)
"""The agent's messages read by time: a listing's page, the latest few."""


def fetch_by_ids(
    conn: sqlite3.Connection, agent_id: str, ids: Sequence[int]
) -> dict[int, RecallMessage]:
    """The agent's messages of these row ids, by id."""
    # "+agent_id": keep SQLite on the primary key; with the agent index it scanned every
    # message of the agent to fetch one page.
    sql = f"SELECT {COLUMNS} FROM recall WHERE +agent_id = ? AND id IN ({IDS})"
    rows = conn.execute(sql, (agent_id, json.dumps(list(ids)))).fetchall() if ids else []
    return {int(row[0]): message_from_row(row) for row in rows}


__all__ = ["BY_TIME", "COLUMNS", "PAIRS", "excluding", "fetch_by_ids", "filters"]
