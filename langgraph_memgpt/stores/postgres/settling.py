"""Recall rows into the HNSW graphs once, when their context is final, beside the turns.

A recorded message's row is rewritten as each of the next two messages of its thread joins
its context window, and every version of a row is an insert into each graph holding it:
at 100k messages a graph insert walks a graph most of which is outside Postgres' buffers,
and three versions per message made a chat turn's writes 3.5x a small agent's. So recall's
graphs hold only *settled* rows (``db.SETTLING_TABLE``): a message is written unsettled,
searched exactly until it settles (``search.vector_scores``: a few hundred rows at most),
and settles once two messages follow it in its thread, or once it is no longer among the
agent's newest `UNSETTLED_CAP` unsettled rows (the last messages of a thread that ended).

Settling is the graph insert, and it is not the turn's work: a `Settler` thread settles
an agent's rows after its writes commit, while the turn goes on (in use, while the model
writes its next reply). Nothing depends on when it runs: an unsettled row is found by the
exact scan, and a row left unsettled by a process that stopped is settled by the next
writer's pass. Several processes settling one agent skip each other's rows
(``FOR UPDATE SKIP LOCKED``), and a settling pass never waits for a writer.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.postgres.recall_rows import TABLE
from langgraph_memgpt.stores.search import CONTEXT_RADIUS

logger = logging.getLogger(__name__)

UNSETTLED_CAP = 256
"""At most this many of an agent's rows wait outside the graphs after a settling pass.

A thread's last messages wait for a next message that may never come; past the cap the
oldest settle as they are (should their thread go on, that rewrite is one more graph
insert, as every rewrite used to be)."""


SETTLE_PAUSE = 0.05
"""Seconds the settler waits after a write before its pass, gathering the turn's others."""


def settle(conn: psycopg.Connection[Any], agent_id: str) -> int:
    """Settle the agent's rows whose context is final, and the oldest past the cap.

    Reads only the unsettled rows (a partial index) and, for each, at most
    `CONTEXT_RADIUS` later messages of its thread (an index range); then updates the
    chosen rows by id. Returns how many rows settled.

    The rows are chosen first and updated by primary key: as one ``UPDATE ... WHERE id IN
    (subquery)`` the planner, taking ``NOT settled`` for a large share of the table (its
    statistics predate the rows, or count the dead entries of settled ones), hashed the
    whole table to join the few ids (~100 ms a pass at 100k).
    """
    final = [
        int(r[0])
        for r in conn.execute(
            f"SELECT u.id FROM {TABLE} AS u WHERE u.agent_id = %s AND NOT u.settled AND "
            f"(SELECT count(*) FROM (SELECT 1 FROM {TABLE} AS n WHERE n.agent_id = u.agent_id "
            "AND n.thread_id = u.thread_id AND n.searchable "
            "AND (n.created_at, n.id) > (u.created_at, u.id) LIMIT %s) AS later) >= %s "
            "FOR UPDATE SKIP LOCKED",
            (agent_id, CONTEXT_RADIUS, CONTEXT_RADIUS),
        )
    ]
    overflow = [
        int(r[0])
        for r in conn.execute(
            f"SELECT id FROM {TABLE} WHERE agent_id = %s AND NOT settled "
            "AND NOT id = ANY(%s) ORDER BY id DESC OFFSET %s FOR UPDATE SKIP LOCKED",
            (agent_id, final, UNSETTLED_CAP),
        )
    ]
    ids = sorted({*final, *overflow})
    if ids:
        conn.execute(f"UPDATE {TABLE} SET settled = true WHERE id = ANY(%s)", (ids,))
    return len(ids)


class Settler:
    """One thread per backend that settles the agents whose recall was written.

    `due` after a write's commit; the thread starts at the first one. `drain` waits for
    it to be idle; `close` settles what is due and stops it.
    """

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self.pool = pool
        self._due: set[str] = set()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._busy = False
        self.seconds = 0.0
        """Time the thread's passes have taken, all told (``per_turn.py`` reports it)."""

    def due(self, agent_id: str) -> None:
        """Settle ``agent_id``'s rows soon (returns at once)."""
        with self._wake:
            if self._closing:
                return
            self._due.add(agent_id)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memgpt-recall-settler", daemon=True
                )
                self._thread.start()
            self._wake.notify()

    def settle_now(self, agent_id: str) -> int:
        """Settle ``agent_id``'s rows in the calling thread; returns how many settled."""
        with self.pool.connection() as conn, conn.transaction():
            return settle(conn, agent_id)

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until no agent is due and no pass runs; False if ``timeout`` passed first."""
        with self._wake:
            return self._wake.wait_for(lambda: not self._due and not self._busy, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Settle what is due, then stop the thread (waits up to ``timeout`` seconds)."""
        with self._wake:
            self._closing = True
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due and not self._closing:
                    self._wake.wait()
                # A turn writes several times; one pass after a short pause settles them
                # all, instead of a pass (two statements, a transaction) per write.
                self._wake.wait_for(lambda: self._closing, SETTLE_PAUSE)
                agents, self._due = sorted(self._due), set()
                if not agents and self._closing:
                    return
                self._busy = True
            try:
                for agent_id in agents:
                    start = time.perf_counter()
                    try:
                        self.settle_now(agent_id)
                    except Exception:  # the rows stay unsettled and searchable; retried later
                        logger.warning("settling recall of %r failed", agent_id, exc_info=True)
                    self.seconds += time.perf_counter() - start
            finally:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()


__all__ = ["SETTLE_PAUSE", "UNSETTLED_CAP", "Settler", "settle"]
