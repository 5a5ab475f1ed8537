"""Statements run on spare connections of the pool, beside the caller's own.

A search's vector walks and its word scoring are independent statements, each taking a
few to tens of milliseconds in the server at 100k rows. On one connection they run one
after another; on spare connections of the same pool the server runs them at once, each
in its own backend process, and the search waits for the slowest instead of their sum
(`search.TableSignals.begin_nearest`). What is read and returned is the same.

A spare connection is one the pool can give at once (or within :data:`SPARE_WAIT`, while
it opens one it has room for): a busy pool never makes a search wait for another's
connection, it runs the statements on the caller's connection instead, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from langgraph_memgpt.stores.per_process import PerProcess

R = TypeVar("R")
Task = Callable[[psycopg.Connection[Any]], R]

SPARE_WAIT = 0.005
"""Seconds to wait for a spare connection before running a statement on the caller's."""

_THREADS = PerProcess(
    lambda: ThreadPoolExecutor(max_workers=4, thread_name_prefix="memgpt-pg-spare")
)
"""Where the statements on spare connections wait for their rows (the server does the work);
a forked child makes its own."""


def begin(
    pool: ConnectionPool[Any], conn: psycopg.Connection[Any], tasks: Sequence[Task[R]]
) -> Callable[[], list[R]]:
    """Start each task on a spare connection; calling the result waits for all, in order.

    Tasks with no spare connection left run here and now on ``conn``, one after another.
    A task's error is raised by the call that collects it. Each spare connection goes back
    to the pool when its task ends, whether or not anyone collects the result.
    """
    started: list[Future[R]] = []
    for task in tasks:
        spare = _spare(pool)
        if spare is None:
            break
        started.append(_THREADS.get().submit(_on, pool, spare, task))
    here = [task(conn) for task in tasks[len(started) :]]
    return lambda: [future.result() for future in started] + here


def _spare(pool: ConnectionPool[Any]) -> psycopg.Connection[Any] | None:
    try:
        conn: psycopg.Connection[Any] = pool.getconn(timeout=SPARE_WAIT)
    except PoolTimeout:
        return None
    return conn


def _on(pool: ConnectionPool[Any], conn: psycopg.Connection[Any], task: Task[R]) -> R:
    try:
        return task(conn)
    finally:
        pool.putconn(conn)


__all__ = ["SPARE_WAIT", "begin"]
