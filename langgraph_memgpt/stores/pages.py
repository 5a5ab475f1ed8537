"""One page of rows by time, the same SQL on every engine: what a listing shows.

A listing (an empty query, the memory page, ``conversation_search_date``) reads the rows a
filter selects ordered by ``created_at`` then ``id``, one page of them, and how many there
are. Each engine gives its connection, its placeholder (``?`` or ``%s``) and its row
converter (bound once, e.g. ``functools.partial(page_by_time, table=..., ...)``); the
paging itself is written once here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from langgraph_memgpt.stores.types import Hit, SearchPage

T = TypeVar("T")


class _Rows(Protocol):
    def fetchall(self) -> list[Any]: ...

    def fetchone(self) -> Any: ...


class Executes(Protocol):
    """A DB-API connection that runs one statement (``sqlite3`` and ``psycopg`` do)."""

    def execute(self, query: str, params: Sequence[Any], /) -> _Rows:
        """The rows of ``query`` run with ``params``."""
        ...


def page_by_time(
    conn: Executes,
    where: str,
    params: Sequence[object],
    page: int,
    page_size: int,
    *,
    table: str,
    columns: str,
    mark: str,
    item: Callable[[Sequence[Any]], T],
    newest_first: bool,
) -> SearchPage[T]:
    """Page ``page`` of the rows ``where`` selects, by time, and how many there are.

    Args:
        conn: the engine's connection.
        where: a parameterised condition over ``b``.
        params: the parameters of ``where``.
        page: zero-based page number.
        page_size: rows per page.
        table: the table, named ``b`` in ``where`` (a trusted name).
        columns: what ``item`` reads of a row (trusted SQL).
        mark: the engine's parameter placeholder (``?`` or ``%s``).
        item: the item of one row.
        newest_first: newest first (a search's listing) or oldest first (a date listing).
    """
    order = "DESC" if newest_first else "ASC"
    rows = conn.execute(
        f"SELECT {columns} FROM {table} AS b WHERE {where} "
        f"ORDER BY b.created_at {order}, b.id {order} LIMIT {mark} OFFSET {mark}",
        [*params, page_size, page * page_size],
    ).fetchall()
    total = conn.execute(f"SELECT count(*) FROM {table} AS b WHERE {where}", params).fetchone()
    hits = [Hit(item=item(row), score=0.0) for row in rows]
    return SearchPage(
        hits=hits, total=int(total[0]) if total else 0, page=page, page_size=page_size
    )


__all__ = ["Executes", "page_by_time"]
