"""Rows by time, the same SQL on every engine: a listing's page, the newest few.

A listing (an empty query, the memory page, ``conversation_search_date``) reads the rows a
filter selects ordered by ``created_at`` then ``id``, one page of them, and how many there
are; ``recent`` and ``latest`` read the newest few. Each engine names its table, columns,
placeholder (``?`` or ``%s``) and row converter once, in a `ByTime`; the ordering and
paging are written here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

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


@dataclass(frozen=True)
class ByTime(Generic[T]):
    """One engine's table read by time (``created_at``, then ``id``).

    Args:
        table: the table, named ``b`` in every ``where`` (a trusted name).
        columns: what ``item`` reads of a row (trusted SQL over ``b``).
        mark: the engine's parameter placeholder (``?`` or ``%s``).
        item: the item of one row.
    """

    table: str
    columns: str
    mark: str
    item: Callable[[Sequence[Any]], T]

    def rows(
        self,
        conn: Executes,
        where: str,
        params: Sequence[object],
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool,
    ) -> list[T]:
        """At most ``limit`` of the rows ``where`` (over ``b``) selects, from ``offset``."""
        order = "DESC" if newest_first else "ASC"
        rows = conn.execute(
            f"SELECT {self.columns} FROM {self.table} AS b WHERE {where} "
            f"ORDER BY b.created_at {order}, b.id {order} LIMIT {self.mark} OFFSET {self.mark}",
            [*params, limit, offset],
        ).fetchall()
        return [self.item(row) for row in rows]

    def page(
        self,
        conn: Executes,
        where: str,
        params: Sequence[object],
        page: int,
        page_size: int,
        *,
        newest_first: bool,
    ) -> SearchPage[T]:
        """Page ``page`` (zero-based) of the rows ``where`` selects, and how many there are."""
        items = self.rows(
            conn,
            where,
            params,
            limit=page_size,
            offset=page * page_size,
            newest_first=newest_first,
        )
        total = conn.execute(
            f"SELECT count(*) FROM {self.table} AS b WHERE {where}", params
        ).fetchone()
        hits = [Hit(item=item, score=0.0) for item in items]
        return SearchPage(
            hits=hits, total=int(total[0]) if total else 0, page=page, page_size=page_size
        )


__all__ = ["ByTime", "Executes"]
