"""A Postgres search runs its vector statements on spare connections, beside its words.

Behaviour, not timings: the statements given to ``spare.begin`` run in other server
sessions while the caller goes on (one of them waits on a lock the caller holds, and the
caller sees it waiting); with no spare connection they run on the caller's own, in order;
an error reaches whoever collects; every connection goes back to the pool. A search finds
the same page whether its pool has connections to spare or not, and whether its vector
statements start before its words or after them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg
import pytest
from langchain_core.embeddings import Embeddings
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.postgres import PostgresBackend
from langgraph_memgpt.stores.postgres.archival import _PgArchivalSignals
from langgraph_memgpt.stores.postgres.search import TableSignals
from langgraph_memgpt.stores.postgres.spare import begin
from langgraph_memgpt.stores.types import Passage, RecallMessage

LOCK = 730_001


def backend_pid(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def lock_then_pid(conn: psycopg.Connection[Any]) -> int:
    """Waits for the caller's advisory lock, then says which session it ran in."""
    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
    conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
    return backend_pid(conn)


def opened(pool: ConnectionPool[Any], size: int) -> ConnectionPool[Any]:
    """The pool with ``size`` connections open (it opens more only as they are asked for)."""
    with ExitStack() as held:
        for _ in range(size):
            held.enter_context(pool.connection())
    return pool


@contextmanager
def pool_of(url: str, size: int) -> Iterator[ConnectionPool[Any]]:
    """A backend's connection pool of ``size`` connections, all open (the pool opens one
    at first and more as they are asked for: a spare is one it has at once)."""
    backend = PostgresBackend(url, embedding_model="none", pool_size=size)
    try:
        yield opened(backend.pool(), size)
    finally:
        backend.close()


def key(item: RecallMessage | Passage) -> str:
    return item.message_id if isinstance(item, RecallMessage) else str(item.id)


def waiting_on_the_lock(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s AND NOT granted",
        (LOCK,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_statements_run_in_other_sessions_while_the_caller_goes_on(postgres_url: str) -> None:
    with pool_of(postgres_url, 4) as pool:
        with pool.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
            collect = begin(pool, conn, [lock_then_pid, backend_pid])
            # begin returned while the first statement waits on the caller's lock: it
            # runs in another session, and it is still running.
            for _ in range(200):
                if waiting_on_the_lock(conn) == 1:
                    break
                conn.execute("SELECT pg_sleep(0.01)")
            assert waiting_on_the_lock(conn) == 1
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
            first, second = collect()
            assert backend_pid(conn) not in (first, second)
            assert first != second


def test_with_no_spare_connection_they_run_on_the_callers_in_order(postgres_url: str) -> None:
    with pool_of(postgres_url, 1) as pool:
        with pool.connection() as conn:
            order: list[str] = []

            def named(name: str) -> Any:
                def task(c: psycopg.Connection[Any]) -> tuple[str, int]:
                    order.append(name)
                    return name, backend_pid(c)

                return task

            collect = begin(pool, conn, [named("a"), named("b"), named("c")])
            assert order == ["a", "b", "c"]  # already run, here
            own = backend_pid(conn)
            assert collect() == [("a", own), ("b", own), ("c", own)]


def test_an_error_reaches_the_collector_and_every_connection_returns(postgres_url: str) -> None:
    with pool_of(postgres_url, 3) as pool:
        with pool.connection() as conn:

            def broken(c: psycopg.Connection[Any]) -> int:
                c.execute("SELECT no_such_column FROM pg_class")
                return 0

            collect = begin(pool, conn, [broken, backend_pid])
            with pytest.raises(psycopg.errors.UndefinedColumn):
                collect()
        # Every connection is back and usable: three at once, each answering.
        with pool.connection() as a, pool.connection() as b, pool.connection() as c:
            assert len({backend_pid(a), backend_pid(b), backend_pid(c)}) == 3


@pytest.mark.parametrize("tier", ["recall", "archival"])
def test_a_search_finds_the_same_with_or_without_connections_to_spare(
    postgres_url: str, embeddings: Embeddings, tier: str
) -> None:
    """Graph walks (``exact_scan_limit=0``) and exact scans, hybrid and vector mode."""
    texts = [f"note {i}: the garden needs {i} litres of water on day {i % 7}" for i in range(40)]
    found: dict[tuple[int, int, str], list[tuple[str, float]]] = {}
    for pool_size in (8, 1):
        for limit in (0, 10_000):
            backend = PostgresBackend(
                postgres_url, embeddings=embeddings, exact_scan_limit=limit, pool_size=pool_size
            )
            try:
                opened(backend.pool(), pool_size)
                memory = backend.open("ada")
                if pool_size == 8 and limit == 0:  # written once, through the first backend
                    if tier == "recall":
                        memory.recall.add(
                            [
                                RecallMessage(
                                    "ada", "t", f"m{i}", "user", text, "2026-01-01T09:00:00Z"
                                )
                                for i, text in enumerate(texts)
                            ]
                        )
                        assert memory.recall.settler is not None
                        assert memory.recall.settler.drain()
                    else:
                        memory.archival.insert_many(texts)
                store = memory.recall if tier == "recall" else memory.archival
                for mode in ("hybrid", "vector"):
                    page = store.search("how much water does the garden need?", mode=mode)
                    found[(pool_size, limit, mode)] = [(key(h.item), h.score) for h in page.hits]
            finally:
                backend.close()
    for limit in (0, 10_000):
        for mode in ("hybrid", "vector"):
            assert found[(8, limit, mode)], (limit, mode)
            assert found[(8, limit, mode)] == found[(1, limit, mode)]


def test_archival_vectors_start_first_unless_the_query_names_a_tag(
    postgres_url: str, embeddings: Embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Archival's hybrid text leaves out the tags of its word matches that the query
    names: a query naming one of the agent's tags waits for its words, any other starts
    its vectors first; either way the page is the one the words-first order finds."""
    backend = PostgresBackend(postgres_url, embeddings=embeddings, exact_scan_limit=0)
    try:
        opened(backend.pool(), 4)
        archival = backend.open("ada").archival
        for i in range(30):
            archival.insert(
                f"note {i}: the plants need {i} litres of water", tags=["garden", f"week{i % 4}"]
            )
        calls: list[str] = []
        begin_nearest = TableSignals.begin_nearest
        word_signals = _PgArchivalSignals.word_signals

        def logged_nearest(self: TableSignals, vector: Any, k: int) -> Any:
            calls.append("vectors")
            return begin_nearest(self, vector, k)

        def logged_words(self: _PgArchivalSignals, terms: Any, neighbours: bool = True) -> Any:
            calls.append("words")
            return word_signals(self, terms, neighbours)

        monkeypatch.setattr(TableSignals, "begin_nearest", logged_nearest)
        monkeypatch.setattr(_PgArchivalSignals, "word_signals", logged_words)
        queries = {
            "how much water do the garden plants need?": ["words", "vectors"],
            "how much water do the plants need?": ["vectors", "words"],
        }
        found = {}
        for query, order in queries.items():
            calls.clear()
            page = archival.search(query)
            assert calls == order, query
            found[query] = [(h.item.id, h.score) for h in page.hits]
        monkeypatch.setattr(_PgArchivalSignals, "vectors_wait_for_words", lambda *_: True)
        for query in queries:
            page = archival.search(query)
            assert found[query] and found[query] == [(h.item.id, h.score) for h in page.hits]
    finally:
        backend.close()
