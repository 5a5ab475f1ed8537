"""Other graphs for the Postgres vector walks, swapped in at run time (pg_turn_calls.py).

``pg_turn_calls.py --graph binary|side-binary``.

A probe of what a 100k search turn would cost with a smaller graph than the package's
``halfvec`` HNSW (112 MB each at 100k, three of them against 128MB of buffers), never a
figure of the package:

``binary``: an HNSW graph over the vectors' signs (``binary_quantize(v)::bit(384)``,
Hamming distance; 33 MB at 100k) on the main tables, its ``--candidates`` re-ranked by the
stored vectors (read from the row, or from TOAST for recall's).

``side-binary``: the same graph in a narrow side table per vector column (``item_id``,
``agent_id``, the signs, a ``halfvec`` copy: ~870 bytes a row, no TOAST), its candidates
re-ranked by the side row's ``halfvec`` (read with the row the walk fetches anyway), then
filtered against the main table. Built after the seeding; the settler adds the rows it
settles. Similarities are the ``halfvec``'s, not the stored vector's.

Both replace ``ensure_hnsw`` (no ``halfvec`` graph is built) and
``search.vector_scores``' walk; exact scans (small agents) are unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import per_turn
import psycopg
from _common import SEED_BUILD_MEMORY

import langgraph_memgpt.stores.postgres as pg
from langgraph_memgpt.stores.postgres import db, search, settling

SIDES = (
    ("memgpt_recall", "embedding"),
    ("memgpt_recall", "context_embedding"),
    ("memgpt_archival", "embedding"),
)


def side(table: str, column: str) -> str:
    """The side table of ``table.column``."""
    return f"probe_vec_{table}_{column}"


def settled_only(table: str) -> str:
    return " AND settled" if table == db.SETTLING_TABLE else ""


def install(graph: str, candidates: int) -> None:
    """Swap the walks for ``graph``'s (``binary`` or ``side-binary``)."""

    def no_graphs(pool: Any, dims: int) -> None:
        with pool.connection() as conn, conn.transaction():
            for table, column in SIDES:
                if graph == "binary":
                    conn.execute(
                        f"CREATE INDEX IF NOT EXISTS {table}_{column}_probe_bits ON {table} "
                        f"USING hnsw ((binary_quantize({column})::bit({dims})) bit_hamming_ops) "
                        f"WHERE vector_dims({column}) = {dims}{settled_only(table)}"
                    )

    search.HNSW_EF_SEARCH = max(candidates, 40)  # every walk of the run is the probe's
    pg.ensure_hnsw = no_graphs  # type: ignore[assignment]
    db.ensure_hnsw = no_graphs
    if graph == "side-binary":
        _side_tables()
    exact = search.vector_scores

    def vector_scores(
        conn: psycopg.Connection[Any],
        table: str,
        column: str,
        vector: np.ndarray[Any, Any],
        k: int,
        where: str,
        params: list[object],
        *,
        approximate: bool,
    ) -> dict[int, float]:
        if k <= 0 or not approximate:
            return exact(conn, table, column, vector, k, where, params, approximate=approximate)
        dims = int(vector.shape[0])
        bits = f"binary_quantize(%s::vector)::bit({dims})"
        if graph == "binary":
            walk = (
                f"SELECT c.id, 1 - (c.v <=> %s) FROM (SELECT b.id, b.{column} AS v FROM {table} "
                f"AS b WHERE ({where}) AND vector_dims(b.{column}) = {dims}"
                f"{settled_only(table).replace('settled', 'b.settled')} ORDER BY "
                f"binary_quantize(b.{column})::bit({dims}) <~> {bits} LIMIT {candidates}) AS c "
                "ORDER BY c.v <=> %s LIMIT %s"
            )
            args: tuple[object, ...] = (vector, *params, vector, vector, k)
        else:
            assert where.lstrip("(").startswith("b.agent_id = %s"), (
                where
            )  # the side table's one filter
            walk = (
                f"WITH c AS (SELECT s.item_id, 1 - (s.v <=> %s::halfvec({dims})) AS sim "
                f"FROM {side(table, column)} AS s WHERE s.agent_id = %s "
                f"ORDER BY s.bits <~> {bits} LIMIT {candidates}), "
                "top AS (SELECT item_id, sim FROM c ORDER BY sim DESC LIMIT %s) "
                f"SELECT b.id, t.sim FROM top AS t JOIN {table} AS b ON b.id = t.item_id "
                f"WHERE ({where}) ORDER BY t.sim DESC LIMIT %s"
            )
            args = (vector, params[0], vector, 3 * k, *params, k)
        if table == db.SETTLING_TABLE:
            unsettled = (
                f"SELECT b.id, 1 - (b.{column} <=> %s) FROM {table} AS b WHERE ({where}) "
                f"AND NOT b.settled AND b.{column} IS NOT NULL ORDER BY b.{column} <=> %s LIMIT %s"
            )
            walk, args = f"({walk}) UNION ALL ({unsettled})", (*args, vector, *params, vector, k)
        return search.walk_scores(conn, walk, args, k)

    search.vector_scores = vector_scores  # type: ignore[assignment]


def _side_tables() -> None:
    """Build the side tables after each seeding; the settler adds what it settles."""
    seed = per_turn.seed_postgres

    def seeded(url: str, *args: Any, **kwargs: Any) -> float:
        seconds = seed(url, *args, **kwargs)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"SET maintenance_work_mem = {SEED_BUILD_MEMORY!r}")
            for table, column in SIDES:
                conn.execute(
                    f"CREATE TABLE {side(table, column)} AS SELECT id AS item_id, agent_id, "
                    f"binary_quantize({column})::bit(384) AS bits, {column}::halfvec(384) AS v "
                    f"FROM {table} WHERE vector_dims({column}) = 384{settled_only(table)}"
                )
                conn.execute(
                    f"CREATE INDEX ON {side(table, column)} USING hnsw (bits bit_hamming_ops)"
                )
                conn.execute(f"VACUUM ANALYZE {side(table, column)}")
        return seconds

    per_turn.seed_postgres = seeded
    settle = settling.settle

    def settle_and_add(conn: psycopg.Connection[Any], agent_id: str) -> int:
        waiting = conn.execute(
            "SELECT coalesce(array_agg(id), '{}') FROM memgpt_recall "
            "WHERE agent_id = %s AND NOT settled",
            (agent_id,),
        ).fetchone()
        count = settle(conn, agent_id)
        if count and waiting is not None:
            for table, column in SIDES[:2]:
                conn.execute(
                    f"INSERT INTO {side(table, column)} SELECT id, agent_id, "
                    f"binary_quantize({column})::bit(384), {column}::halfvec(384) FROM {table} "
                    f"WHERE id = ANY(%s) AND settled AND {column} IS NOT NULL",
                    (waiting[0],),
                )
        return count

    settling.settle = settle_and_add
