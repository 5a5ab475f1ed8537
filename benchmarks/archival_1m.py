"""Archival vector search at 1M passages: exact (flat) vs approximate (HNSW), our VectorIndex.

Data: N (default 1,000,000) 384-d unit vectors, seeded, shaped like sentence embeddings
(1,000 centres + a 64-d shared subspace + a little isotropic noise; a query's nearest
neighbour has cosine ~0.5, its 10th ~0.4; see ``_common.clustered_vectors``). Uniform
noise would be the worst case for a graph index, tight clusters the best. Queries are
held-out draws of the same distribution.

What is measured, all through ``langgraph_memgpt.stores.sqlite.vectors.VectorIndex``:

1. flat insert: ``upsert`` of all N vectors in chunks of 10,000 into a fresh SQLite
   file (rows are the source of truth, the FAISS ``IndexIDMap(IndexFlatIP)`` a cache),
   cache file writes included.
2. HNSW insert through ``upsert`` at ``--hnsw-upsert-size`` (default 100k; the same path
   at 1M would take most of an hour here), and the HNSW build at N by opening
   ``kind="hnsw"`` over the same SQLite rows (the flat cache does not match, so the index
   is rebuilt from SQLite and written: the path a user takes when switching kinds).
3. search latency p50/p95, one query at a time, k=10: flat vs HNSW (the configured
   efSearch, ``stores.sqlite.vectors._HNSW_EF_SEARCH``), and recall@10 of HNSW against flat.
4. scoped search: ``allowed_ids`` = a random 1% of the items (restriction before ranking).
5. cold open: first search after the process forgets the loaded index (cache file read,
   checksum, deserialise, reconcile with SQLite).
6. FAISS OpenMP threads 1 vs 2 for single queries on the raw FAISS indexes (VectorIndex
   always searches with 1 thread) and for an HNSW build (``--build-threads-size``; the
   rebuild uses FAISS's default, all cores), and an efSearch sweep of the raw HNSW index.

Run: ``.venv/bin/python benchmarks/archival_1m.py [--sizes 1000000] [--quick]``
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from _common import (
    clustered_vectors,
    dir_size,
    load_average,
    ms,
    percentile,
    print_header,
    ratio,
    rss_mib,
    table,
)

from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.vectors import (
    _HNSW_EF_SEARCH,
    VectorIndex,
    forget_loaded_indexes,
)

K = 10
CHUNK = 10_000
MODEL = "bench-clustered-384"


def open_index(root: Path, kind: str, agent: str = "bench") -> VectorIndex:
    db = open_db(root / "memory.sqlite")
    return VectorIndex(
        db,
        tier="archival",
        agent_id=agent,
        cache_dir=root / "faiss",
        model=MODEL,
        dim=384,
        kind=kind,  # type: ignore[arg-type]
    )


def upsert_all(index: VectorIndex, data: np.ndarray, label: str) -> float:
    n = len(data)
    start = time.perf_counter()
    next_report = start + 30
    for i in range(0, n, CHUNK):
        index.upsert(list(range(i, min(n, i + CHUNK))), data[i : i + CHUNK])
        now = time.perf_counter()
        if now > next_report:
            done = min(n, i + CHUNK)
            print(f"    {label}: {done:,}/{n:,} after {now - start:,.0f} s", flush=True)
            next_report = now + 30
    index.close()
    return time.perf_counter() - start


def search_all(
    index: VectorIndex, queries: np.ndarray, allowed: list[int] | None = None
) -> tuple[list[float], list[list[int]]]:
    times: list[float] = []
    found: list[list[int]] = []
    for q in queries:
        start = time.perf_counter()
        hits = index.search(q, K, allowed_ids=allowed)
        times.append(time.perf_counter() - start)
        found.append([item for item, _ in hits])
    return times, found


def recall_at_k(approx: list[list[int]], exact: list[list[int]]) -> float:
    scores = [len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(approx, exact, strict=True)]
    return float(np.mean(scores))


def raw_latency(index: Any, queries: np.ndarray, threads: int) -> list[float]:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        times = []
        for q in queries:
            start = time.perf_counter()
            index.search(q[None, :], K)
            times.append(time.perf_counter() - start)
        return times
    finally:
        faiss.omp_set_num_threads(before)


def raw_hnsw_build(data: np.ndarray, threads: int) -> float:
    """Seconds to build a raw FAISS HNSW (same parameters as VectorIndex) with ``threads``."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        index = faiss.index_factory(384, "IDMap,HNSW32,Flat", faiss.METRIC_INNER_PRODUCT)
        faiss.downcast_index(index.index).hnsw.efConstruction = 80
        ids = np.arange(len(data), dtype=np.int64)
        start = time.perf_counter()
        for i in range(0, len(data), 8192):  # VectorIndex's rebuild chunk
            index.add_with_ids(data[i : i + 8192], ids[i : i + 8192])
        return time.perf_counter() - start
    finally:
        faiss.omp_set_num_threads(before)


def p(times: list[float]) -> str:
    return f"{ms(percentile(times, 50))} / {ms(percentile(times, 95))}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--hnsw-upsert-size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--build-threads-size", type=int, default=30_000)
    parser.add_argument("--quick", action="store_true", help="20k vectors, < 1 minute")
    parser.add_argument("--tmp", default=None, help="folder for the databases (default: /tmp)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.hnsw_upsert_size, args.queries = [20_000], 5_000, 30
        args.build_threads_size = 5_000

    print_header("archival_1m: flat vs HNSW through VectorIndex")
    for n in args.sizes:
        need = n * 384 * 4
        print(
            f"N={n:,}: vectors {need / 1024**3:.2f} GiB as float32; SQLite blobs about the same,\n"
            "plus one FAISS cache file per kind; RAM peak about 4x (index + serialised copy)."
        )
    tmp_parent = args.tmp or tempfile.gettempdir()
    usage = shutil.disk_usage(tmp_parent)
    print(f"free disk in {tmp_parent}: {usage.free / 1024**3:,.1f} GiB\n", flush=True)

    for n in args.sizes:
        run_size(n, args, tmp_parent)
    print(f"\npeak RSS {rss_mib():,.0f} MiB; load avg at end {load_average()}")


def run_size(n: int, args: argparse.Namespace, tmp_parent: str) -> None:
    print(f"--- N = {n:,} (queries: {args.queries}, k = {K})", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="memgpt-bench-1m-", dir=tmp_parent))
    rows: list[list[object]] = []
    notes: list[str] = []
    try:
        start = time.perf_counter()
        data = clustered_vectors(n, seed=1)
        queries = clustered_vectors(args.queries, seed=2)
        print(f"  generated data in {time.perf_counter() - start:.1f} s", flush=True)
        rng = np.random.default_rng(3)
        allowed = sorted(rng.choice(n, size=max(1, n // 100), replace=False).tolist())

        # 1. flat through upsert, at N
        flat = open_index(tmp, "flat")
        flat_insert = upsert_all(flat, data, "flat upsert")
        del data
        gc.collect()
        db_bytes = (tmp / "memory.sqlite").stat().st_size
        print(
            f"  flat upsert: {n:,} in {flat_insert:,.1f} s; SQLite {db_bytes / 1024**3:.2f} GiB, "
            f"FAISS cache {dir_size(tmp / 'faiss') / 1024**3:.2f} GiB",
            flush=True,
        )
        rows.append(["flat insert (upsert, SQLite + FAISS)", f"{n / flat_insert:,.0f} /s", "", ""])

        flat.search(queries[0], K)
        flat_t, flat_found = search_all(flat, queries)
        rows.append(["flat search k=10 (VectorIndex)", p(flat_t), "1 (exact)", "1x"])
        flat_scoped_t, flat_scoped = search_all(flat, queries, allowed)
        rows.append(
            [
                f"flat scoped search ({len(allowed):,} allowed ids)",
                p(flat_scoped_t),
                "1 (exact)",
                "",
            ]
        )
        raw_flat = flat._state.index
        thread_rows = []
        for threads in (1, 2):
            t = raw_latency(raw_flat, queries, threads)
            thread_rows.append([f"raw FAISS flat, omp threads={threads}", p(t)])
        # cold open of the flat index
        flat.db.conn.close()
        del flat, raw_flat
        forget_loaded_indexes()
        gc.collect()
        cold = open_index(tmp, "flat")
        start = time.perf_counter()
        cold.search(queries[0], K)
        cold_flat = time.perf_counter() - start
        notes.append(f"cold open + first flat search: {cold_flat:.1f} s")
        cold.db.conn.close()
        del cold
        forget_loaded_indexes()
        gc.collect()

        # 2. HNSW through upsert at a smaller size (its own agent, same database file)
        m = min(n, args.hnsw_upsert_size)
        small = clustered_vectors(m, seed=1)
        b = min(m, args.build_threads_size)
        for threads in (1, 2):
            seconds = raw_hnsw_build(small[:b], threads)
            thread_rows.append(
                [f"raw FAISS hnsw build of {b:,}, omp threads={threads}", f"{b / seconds:,.0f} /s"]
            )
        hnsw_small = open_index(tmp, "hnsw", agent="hnsw-upsert")
        small_insert = upsert_all(hnsw_small, small, "hnsw upsert")
        hnsw_small.db.conn.close()
        del hnsw_small, small
        forget_loaded_indexes()
        gc.collect()
        print(f"  hnsw upsert: {m:,} in {small_insert:,.1f} s", flush=True)
        rows.append([f"hnsw insert (upsert) at {m:,}", f"{m / small_insert:,.0f} /s", "", ""])

        # 2b. HNSW at N: rebuilt from the SQLite rows on first use
        hnsw = open_index(tmp, "hnsw")
        start = time.perf_counter()
        hnsw.search(queries[0], K)
        build = time.perf_counter() - start
        print(f"  hnsw build from SQLite at {n:,}: {build:,.1f} s", flush=True)
        rows.append(
            [f"hnsw build from SQLite at {n:,} (incl. cache write)", f"{build:,.1f} s", "", ""]
        )
        rows.append(
            [
                "  = hnsw insert rate at N",
                f"{n / build:,.0f} /s",
                "",
                f"{ratio(n / build, n / flat_insert)} of flat",
            ]
        )

        hnsw_t, hnsw_found = search_all(hnsw, queries)
        rows.append(
            [
                f"hnsw search k=10 (VectorIndex, efSearch {_HNSW_EF_SEARCH})",
                p(hnsw_t),
                f"{recall_at_k(hnsw_found, flat_found):.3f}",
                ratio(percentile(hnsw_t, 50), percentile(flat_t, 50)),
            ]
        )
        hnsw_scoped_t, hnsw_scoped = search_all(hnsw, queries, allowed)
        rows.append(
            [
                f"hnsw scoped search ({len(allowed):,} allowed ids)",
                p(hnsw_scoped_t),
                f"{recall_at_k(hnsw_scoped, flat_scoped):.3f}",
                ratio(percentile(hnsw_scoped_t, 50), percentile(flat_scoped_t, 50)),
            ]
        )
        raw_hnsw = hnsw._state.index
        graph = faiss.downcast_index(raw_hnsw.index)
        graph.hnsw.efSearch = 64
        for threads in (1, 2):
            t = raw_latency(raw_hnsw, queries, threads)
            thread_rows.append([f"raw FAISS hnsw (efSearch 64), omp threads={threads}", p(t)])
        sweep = []
        for ef in (16, 32, 64, 128, 256):
            graph.hnsw.efSearch = ef
            t = raw_latency(raw_hnsw, queries, 1)
            labels = [raw_hnsw.search(q[None, :], K)[1][0].tolist() for q in queries]
            items = [[hnsw._state.item_of.get(lab, -1) for lab in row] for row in labels]
            sweep.append([f"efSearch {ef}", p(t), f"{recall_at_k(items, flat_found):.3f}"])
        hnsw.db.conn.close()
        del hnsw, raw_hnsw, graph
        forget_loaded_indexes()
        gc.collect()
        cold = open_index(tmp, "hnsw")
        start = time.perf_counter()
        cold.search(queries[0], K)
        notes.append(f"cold open + first hnsw search: {time.perf_counter() - start:.1f} s")
        cold.db.conn.close()
        del cold
        forget_loaded_indexes()
        notes.append(
            f"disk: SQLite {(tmp / 'memory.sqlite').stat().st_size / 1024**3:.2f} GiB, "
            f"FAISS caches {dir_size(tmp / 'faiss') / 1024**3:.2f} GiB"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        gc.collect()

    print()
    print(table(rows, ["N = " + f"{n:,}", "p50 / p95 (or rate)", "recall@10", "vs flat"]))
    print()
    print(table(thread_rows, ["raw FAISS, OpenMP threads", "p50 / p95 (or rate)"]))
    print()
    print(table(sweep, ["raw FAISS hnsw, 1 thread", "p50 / p95", "recall@10 vs flat"]))
    print()
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
