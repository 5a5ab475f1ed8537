"""Recall rows into the HNSW graphs once, when their context is final, beside the turns.

A recorded message's row is rewritten as each of the next two messages of its thread joins
its context window, and every version of a row is an insert into each graph holding it:
at 100k messages a graph insert walks a graph most of which is outside Postgres' buffers,
and three versions per message made a large agent's chat turn write far more than a small
agent's (``benchmarks/README.md``, ``pg_turn_sql.py``). So recall's
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
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.beside import Beside
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
    whole table to join the few ids, a pass growing with the table.
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


class Settler(Beside[str]):
    """One thread per backend that settles the agents whose recall was written.

    `due` after a write's commit; the thread starts at the first one. `drain` waits for
    it to be idle; `close` settles what is due and stops it.
    """

    name = "memgpt-recall-settler"
    # A turn writes several times; one pass after a short pause settles them all, instead
    # of a pass (two statements, a transaction) per write.
    pause = SETTLE_PAUSE

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        super().__init__()
        self.pool = pool

    def due(self, agent_id: str) -> None:
        """Settle ``agent_id``'s rows soon (returns at once)."""
        self.mark_due(agent_id, agent_id)

    def settle_now(self, agent_id: str) -> int:
        """Settle ``agent_id``'s rows in the calling thread; returns how many settled."""
        with self.pool.connection() as conn, conn.transaction():
            return settle(conn, agent_id)

    def work(self, agent_id: str) -> None:
        """Settle the agent's rows (if it fails they stay unsettled and searchable)."""
        try:
            self.settle_now(agent_id)
        except Exception:  # retried at the agent's next write
            logger.warning("settling recall of %r failed", agent_id, exc_info=True)


__all__ = ["SETTLE_PAUSE", "UNSETTLED_CAP", "Settler", "settle"]
