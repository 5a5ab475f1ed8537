"""Reading archival rows in SQLite: a passage's columns, and the condition a search applies.

The archival store, its forgetting and its search signals all read passages this way: the
columns a :class:`~langgraph_memgpt.stores.types.Passage` is made from, and the filters of
a search or listing (agent, tags, dates) as one SQL condition over the alias ``b``, so
every filter is applied before ranking.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph_memgpt.stores.base import TagMatch
from langgraph_memgpt.stores.dates import date_range_sql
from langgraph_memgpt.stores.pages import ByTime
from langgraph_memgpt.stores.passages import (
    normalize_tags,
    not_replaced,
    passage_columns,
    passage_of,
)
from langgraph_memgpt.stores.types import Passage

TIER = "archival"
"""The tier name of archival vectors (``vectors.tier``)."""

VECTOR_KEY = "text"
"""The key of a passage's whole-text vector (its parts' key derives from it)."""

COLUMNS = passage_columns("archival")
"""A passage's columns (over the alias ``b``), as :func:`passage_from_row` reads them."""

CURRENT = not_replaced("archival")
"""The condition over ``b`` that a passage has not been replaced."""


def passage_from_row(row: Sequence[Any]) -> Passage:
    """The passage in a row of :data:`COLUMNS` (tags stored as a JSON list)."""
    return passage_of(row, json.loads(row[3] or "[]"))


BY_TIME = ByTime("archival", COLUMNS, "?", passage_from_row)
"""The agent's passages read by time: an empty query's listing, the most recent."""


def filters(
    agent_id: str,
    tags: Iterable[str] | str | None,
    tag_match: TagMatch,
    start_date: str | None,
    end_date: str | None,
) -> tuple[str, list[object]]:
    """A parameterised WHERE over ``b`` (the archival table); the agent always first."""
    conditions = ["b.agent_id = ?"]
    params: list[object] = [agent_id]
    wanted = normalize_tags(tags)
    if wanted:
        if tag_match == "all" and len(wanted) > 1:
            conditions.append(
                "b.id IN (SELECT passage_id FROM archival_tags WHERE agent_id = ? "
                "AND tag IN (SELECT value FROM json_each(?)) "
                "GROUP BY passage_id HAVING count(DISTINCT tag) = ?)"
            )
            params += [agent_id, json.dumps(wanted), len(wanted)]
        else:
            conditions.append(
                "b.id IN (SELECT passage_id FROM archival_tags WHERE agent_id = ? "
                "AND tag IN (SELECT value FROM json_each(?)))"
            )
            params += [agent_id, json.dumps(wanted)]
    date_conditions, date_params = date_range_sql("b.created_at", start_date, end_date)
    conditions += date_conditions
    params += date_params
    return " AND ".join(conditions), params


__all__ = [
    "BY_TIME",
    "COLUMNS",
    "CURRENT",
    "TIER",
    "VECTOR_KEY",
    "filters",
    "passage_from_row",
]
