"""Whether the order a graph's vectors are written in changes what its walks read from outside
128MB of buffers: three 100k graphs walked in rotation, as a 100k search turn walks them.

pgvector writes a graph built in memory to its pages in the order it read the table, so a
table loaded in arrival order gives each page vectors from all over the space, and a walk
(a few thousand vectors close to the query) touches nearly one page per vector. Loaded in
the order of a k-means clustering, a page holds neighbours and a walk's vectors share pages.
This measures both layouts over the same vectors, real MiniLM: three tables per layout (a
message's own vector, a context-like mean of it and its two neighbours, and a shuffled
noisy copy standing for archival), each with the package's graph (``halfvec``, cosine,
pgvector's defaults), on a throwaway pgserver at its default settings; queries are the
LoCoMo dev questions, each walked in the three graphs of one layout in turn, as the stores
walk them (``search.walk_settings``, the recall pool of 50). Baseline: the arrival layout
in the same run. Per round and layout: the three walks' p50, the graph pages a question
reads from Postgres' buffers and from outside them, and overlap@50 with the exact scan
(the order must not change what a walk finds).

The filler vectors are ``hnsw_recall.py``'s (cached in ``--data-dir``).

    python benchmarks/pg_graph_layout.py --data ../shared/bench/locomo-dev.json --data-dir DIR
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from _common import SEED_BUILD_MEMORY, print_header, table, throwaway_vector_db
from bench.locomo import load_locomo
from hnsw_recall import filler_vectors

from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.postgres.search import walk_settings

POOL = 50
WALK = "SELECT id FROM {t} ORDER BY embedding::halfvec(384) <=> %s::halfvec(384) LIMIT %s"


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (float32)."""
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def vector_sets(own: np.ndarray) -> list[np.ndarray]:
    """Three 100k sets from one: own, a +-1 window mean (context-like), a shuffled noisy copy."""
    rng = np.random.default_rng(1)
    context = unit(own + np.roll(own, 1, 0) + np.roll(own, -1, 0))
    noise = rng.standard_normal(own.shape).astype(np.float32)
    other = unit(own[rng.permutation(len(own))] + 0.3 * unit(noise))
    return [own, context, other]


def clustered(vectors: np.ndarray, cells: int) -> np.ndarray:
    """The rows in the order of their k-means cell (spherical, ``cells`` centroids)."""
    kmeans = faiss.Kmeans(vectors.shape[1], cells, niter=10, seed=1, spherical=True)
    kmeans.train(vectors)
    _, cell = kmeans.index.search(vectors, 1)
    return np.argsort(cell[:, 0], kind="stable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--cells", type=int, default=1024, help="k-means cells of the layout")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print_header("pg_graph_layout: arrival against clustered graph pages, three 100k graphs")

    embeddings = MiniLMEmbeddings()
    conversations = load_locomo(args.data)
    asked = np.asarray(
        [embeddings.embed_query(q.question) for c in conversations for q in c.questions],
        dtype=np.float32,
    )
    turns = sum(len(s.turns) for c in conversations for s in c.sessions)
    own = filler_vectors(embeddings, args.size - turns, args.data_dir)
    sets = vector_sets(unit(own))
    orders = {
        "arrival": [np.arange(len(v)) for v in sets],
        "clustered": [clustered(v, args.cells) for v in sets],
    }
    with throwaway_vector_db("memgpt-graph-layout-") as conn:
        names = {lay: [f"{lay}_{j}" for j in range(len(sets))] for lay in orders}
        for lay, tables in names.items():
            for name, vectors, order in zip(tables, sets, orders[lay], strict=True):
                build(conn, name, vectors, order)
        exact = {
            name: [set(nearest(conn, name, q, exact=True)) for q in asked]
            for tables in names.values()
            for name in tables
        }
        rows: list[list[object]] = []
        means: dict[str, list[tuple[float, float]]] = {lay: [] for lay in orders}
        for round_ in range(1, args.rounds + 1):
            for lay, tables in names.items():
                before = graph_blocks(conn)
                times, overlap = [], []
                for qi, q in enumerate(asked):
                    started = time.perf_counter()
                    for name in tables:
                        found = nearest(conn, name, q, exact=False)
                        overlap.append(len(exact[name][qi] & set(found)) / POOL)
                    times.append((time.perf_counter() - started) * 1000)
                after = graph_blocks(conn)
                hit, read = (
                    sum(after[f"{t}_graph"][i] - before[f"{t}_graph"][i] for t in tables)
                    / len(asked)
                    for i in (0, 1)
                )
                means[lay].append((statistics.median(times), read))
                rows.append(
                    [
                        lay,
                        round_,
                        f"{statistics.median(times):.1f} ms",
                        f"{hit:.0f}",
                        f"{read:.0f}",
                        f"{statistics.mean(overlap):.3f}",
                    ]
                )
        print()
        print(
            table(
                rows,
                [
                    "layout",
                    "round",
                    "three walks p50",
                    "graph pages in buffers",
                    "from outside",
                    "overlap@50",
                ],
            )
        )
        base_ms, base_read = (statistics.mean(v[i] for v in means["arrival"]) for i in (0, 1))
        for lay, values in means.items():
            ms, read = (statistics.mean(v[i] for v in values) for i in (0, 1))
            print(
                f"{lay:9s} mean of rounds: {read:.0f} pages from outside a question "
                f"({read / base_read if base_read else float('nan'):.2f}x arrival), "
                f"three walks {ms:.1f} ms "
                f"({ms / base_ms:.2f}x arrival)"
            )


def build(conn: Any, name: str, vectors: np.ndarray, order: np.ndarray) -> None:
    """A table of ``vectors`` written in ``order`` (ids keep their index), and its graph."""
    conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, embedding vector(384))")
    with conn.cursor().copy(f"COPY {name} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "vector"])
        for i in order:
            copy.write_row((int(i), vectors[i]))
    started = time.perf_counter()
    conn.execute(f"SET maintenance_work_mem = '{SEED_BUILD_MEMORY}'")
    conn.execute(
        f"CREATE INDEX {name}_graph ON {name} USING hnsw "
        "((embedding::halfvec(384)) halfvec_cosine_ops)"
    )
    conn.execute("RESET maintenance_work_mem")
    conn.execute(f"VACUUM ANALYZE {name}")
    size = conn.execute(f"SELECT pg_size_pretty(pg_relation_size('{name}_graph'))").fetchone()
    print(f"{name}: graph built in {time.perf_counter() - started:.0f} s, {size[0]}", flush=True)


def nearest(conn: Any, name: str, q: np.ndarray, *, exact: bool) -> list[int]:
    """The pool nearest ``q``: an exact scan, or a walk as the stores walk."""
    if exact:
        sql = f"SELECT id FROM {name} ORDER BY embedding <=> %s LIMIT %s"
        return [int(r[0]) for r in conn.execute(sql, (q, POOL)).fetchall()]
    with conn.transaction():
        for setting in walk_settings():
            conn.execute(setting)
        rows = conn.execute(WALK.format(t=name), (q, POOL)).fetchall()
    return [int(r[0]) for r in rows]


def graph_blocks(conn: Any) -> dict[str, tuple[int, int]]:
    """Each index's blocks so far, (from the buffers, from outside), once published."""
    time.sleep(1.2)  # a backend publishes its counters at most once a second
    found = conn.execute(
        "SELECT indexrelname, idx_blks_hit, idx_blks_read FROM pg_statio_user_indexes"
    ).fetchall()
    return {str(r[0]): (int(r[1]), int(r[2])) for r in found}


if __name__ == "__main__":
    main()
