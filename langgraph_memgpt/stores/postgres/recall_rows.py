"""Reading recall rows in Postgres: the candidates' condition, a listing page, rows by id.

The recall store and its search signals both read messages this way: the filters a
search or a date listing applies, as one SQL condition over the alias ``b``, and the
rows that condition selects.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import psycopg

from langgraph_memgpt.stores.dates import date_range_sql
from langgraph_memgpt.stores.messages import message_from_row, normalise_role, row_columns
from langgraph_memgpt.stores.pages import ByTime
from langgraph_memgpt.stores.postgres.db import pg_texts
from langgraph_memgpt.stores.postgres.search import Params, placeholders
from langgraph_memgpt.stores.search import split_excluded
from langgraph_memgpt.stores.types import Excluded, RecallMessage

TABLE = "memgpt_recall"
COLUMNS = row_columns("b.")
"""A message's columns over the alias ``b``, as ``message_from_row`` reads them."""


def filters(
    agent_id: str,
    roles: Sequence[str] | None,
    start_date: str | None,
    end_date: str | None,
    exclude_ids: Collection[Excluded],
) -> tuple[str, Params]:
    """SQL condition (over alias ``b``) selecting the agent's searchable candidates."""
    clauses = ["b.agent_id = %s", "b.searchable"]
    params: Params = [agent_id]
    if roles:
        clauses.append("b.role = ANY(%s)")
        params.append(sorted({normalise_role(r) for r in roles}))
    conditions, values = date_range_sql("b.created_at", start_date, end_date)
    clauses += placeholders(conditions)
    params += values
    left_out, values = excluding("b.", exclude_ids)
    clauses += left_out
    params += values
    return " AND ".join(clauses), params


def excluding(alias: str, items: Collection[Excluded]) -> tuple[list[str], Params]:
    """SQL conditions (over ``alias``) leaving out excluded messages: bare ids, then pairs."""
    bare, pairs = split_excluded(items)
    clauses: list[str] = []
    params: Params = []
    if bare:
        clauses.append(f"NOT ({alias}message_id = ANY(%s))")
        params.append(pg_texts(bare))
    if pairs:
        clauses.append(
            f"({alias}thread_id, {alias}message_id) NOT IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[]))"
        )
        params += [pg_texts([t for t, _ in pairs]), pg_texts([m for _, m in pairs])]
    return clauses, params


BY_TIME = ByTime(TABLE, COLUMNS, "%s", message_from_row)
"""The agent's messages read by time: a listing's page, the latest few."""


def fetch_by_ids(
    conn: psycopg.Connection[Any], agent_id: str, ids: Sequence[int]
) -> dict[int, RecallMessage]:
    """The agent's messages of these row ids, by id."""
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM {TABLE} AS b WHERE b.agent_id = %s AND b.id = ANY(%s)",
        (agent_id, list(ids)),
    ).fetchall()
    return {int(row[0]): message_from_row(row) for row in rows}


__all__ = ["BY_TIME", "COLUMNS", "TABLE", "excluding", "fetch_by_ids", "filters"]
