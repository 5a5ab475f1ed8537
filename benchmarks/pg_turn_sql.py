"""Where a Postgres turn's SQL time goes, statement by statement, at two memory sizes.

Runs ``per_turn.py``'s search turns (scripted model: ``conversation_search`` ->
``archival_memory_search`` -> ``send_message``), or its chat turns (``--scenario chat``), on
the databases ``per_turn.py --backend postgres --data-dir DIR`` seeded (its cluster in
``DIR/pg``), the agents of both sizes in rotation, and times every ``execute`` and
``executemany`` of psycopg per statement text. Prints, per size, the turn's p50, its SQL
time, and the statements that cost most per turn; the baseline is the smaller size in the
same run (the ratio column). This is how the 100k search turn's extra time was found (the
middling-frequency terms, ``recall.get`` by message id, the tags in use), and the chat
turn's (a recorded message's row written three times, each write a new row version in
both HNSW graphs).

    python benchmarks/pg_turn_sql.py --data-dir DIR [--sizes 1000 100000] [--embeddings none]
        [--turns 20] [--shared-buffers 2GB] [--scenario search|chat] [--explain 6]

``--explain N`` then runs the N costliest statements of the larger size once more, with the
parameters of their last call, under ``EXPLAIN (ANALYZE, BUFFERS)`` at each size (the HNSW
settings of a vector query set as the store sets them): what a statement reads, from
Postgres' buffers (hit) or from outside them (read), tells a statement that grows because
it reads more rows from one that reads the same rows from a working set that no longer
fits the buffers.
"""

from __future__ import annotations

import argparse
import collections
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import per_turn
import psycopg
from _common import Vocabulary, print_header

WARMUP = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        help="per_turn.py's --data-dir (its cluster is DIR/pg)",
    )
    parser.add_argument("--sizes", type=int, nargs=2, default=[1000, 100_000])
    parser.add_argument("--embeddings", choices=["none", "minilm"], default="none")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--top", type=int, default=12, help="statements shown per size")
    parser.add_argument("--shared-buffers", help="the server's shared_buffers, e.g. 2GB")
    parser.add_argument("--scenario", choices=per_turn.SCENARIOS, default="search")
    parser.add_argument(
        "--explain", type=int, default=0, help="EXPLAIN (ANALYZE, BUFFERS) the N costliest"
    )
    args = parser.parse_args()
    print_header("pg_turn_sql: SQL time of a turn per statement, two sizes")

    times: dict[int, dict[str, list[float]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    last: dict[int, dict[str, tuple[str, Any]]] = collections.defaultdict(dict)
    current: list[int | None] = [None]
    execute = psycopg.Connection.execute

    def timed(self: psycopg.Connection[Any], query: Any, params: Any = None, **kw: Any) -> Any:
        start = time.perf_counter()
        cursor = execute(self, query, params, **kw)
        if current[0] is not None:
            text = query if isinstance(query, str) else str(query)
            key = re.sub(r"\s+", " ", text)[:100]
            times[current[0]][key].append((time.perf_counter() - start) * 1000)
            last[current[0]][key] = (text, params)
        return cursor

    psycopg.Connection.execute = timed  # type: ignore[method-assign]
    executemany = psycopg.Cursor.executemany

    def timed_many(self: psycopg.Cursor[Any], query: Any, params_seq: Any, **kw: Any) -> None:
        start = time.perf_counter()
        executemany(self, query, params_seq, **kw)
        if current[0] is not None:
            text = query if isinstance(query, str) else str(query)
            key = "(many) " + re.sub(r"\s+", " ", text)[:93]
            times[current[0]][key].append((time.perf_counter() - start) * 1000)

    psycopg.Cursor.executemany = timed_many  # type: ignore[method-assign]

    urls, seeded = per_turn.kept_postgres_databases(
        args.sizes, args.data_dir / "pg", args.shared_buffers
    )
    missing = [n for n in args.sizes if n not in seeded]
    if missing:
        raise SystemExit(f"not seeded in {args.data_dir}: {missing} (per_turn.py --seed-only)")
    vocab = Vocabulary()
    total = args.turns + WARMUP
    users = vocab.texts(np.random.default_rng(2024), total, 15, 45)
    queries = vocab.queries(np.random.default_rng(2025), total)
    if args.embeddings == "minilm":
        from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

        MiniLMEmbeddings().embed_query("load the model before timing")
    root = Path(tempfile.mkdtemp(prefix="memgpt-turn-sql-"))
    lanes = {
        n: per_turn.memgpt_lane(
            root / str(n), args.embeddings, args.scenario, users, queries, urls[n]
        )
        for n in args.sizes
    }
    walls: dict[int, list[float]] = collections.defaultdict(list)
    blocks: dict[int, dict[str, tuple[int, int]]] = {}
    for i, text in enumerate(users):
        if i == WARMUP:
            blocks = {n: block_counts(urls[n]) for n in args.sizes}
        for n, lane in lanes.items():
            current[0] = n if i >= WARMUP else None
            start = time.perf_counter()
            lane.invoke(text)
            if i >= WARMUP:
                walls[n].append((time.perf_counter() - start) * 1000)
            current[0] = None
    time.sleep(STATS_FLUSH)  # the servers' statistics reach the counters
    read = {n: block_counts(urls[n]) for n in args.sizes}
    for backend in per_turn._OPEN_BACKENDS:
        backend.close()

    small = args.sizes[0]
    for n in args.sizes:
        turns = len(walls[n])
        sql = sum(sum(v) for v in times[n].values()) / turns
        print(
            f"\nN={n:,}: turn p50 {np.median(walls[n]):.0f} ms "
            f"({np.median(walls[n]) / np.median(walls[small]):.2f}x N={small:,}), "
            f"SQL {sql:.0f} ms a turn"
        )
        ranked = sorted(times[n].items(), key=lambda kv: -sum(kv[1]))[: args.top]
        for statement, spent in ranked:
            base = sum(times[small].get(statement, [])) / len(walls[small])
            print(
                f"  {sum(spent) / turns:6.1f} ms/turn (N={small:,}: {base:5.1f})  "
                f"{len(spent) / turns:4.1f}/turn  p50 {np.median(spent):6.2f} ms  {statement}"
            )
        print("  blocks a turn, by relation (from Postgres' buffers / from outside them):")
        grown = {
            name: (hit - blocks[n].get(name, (0, 0))[0], out - blocks[n].get(name, (0, 0))[1])
            for name, (hit, out) in read[n].items()
        }
        for name, (hit, out) in sorted(grown.items(), key=lambda kv: -sum(kv[1]))[: args.top]:
            if hit + out:
                print(f"    {hit / turns:8.0f} hit {out / turns:8.0f} read  {name}")
    if args.explain:
        large = args.sizes[-1]
        ranked = sorted(times[large].items(), key=lambda kv: -sum(kv[1]))[: args.explain]
        for statement, _ in ranked:
            print(f"\nEXPLAIN {statement}")
            for n in args.sizes:
                if statement in last[n]:
                    print(f"  N={n:,}:")
                    for line in explain(urls[n], *last[n][statement]):
                        print(f"    {line}")


STATS_FLUSH = 1.5
"""Seconds to wait for the server processes' block counters to be published (Postgres
flushes a backend's statistics at most once a second)."""


def block_counts(url: str) -> dict[str, tuple[int, int]]:
    """Each relation's blocks so far, ``{name: (from buffers, from outside)}``.

    Tables' heaps and their TOAST (``name`` and ``name (toast)``) and each index.
    """
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname, coalesce(heap_blks_hit, 0), coalesce(heap_blks_read, 0) "
            "FROM pg_statio_user_tables UNION ALL "
            "SELECT relname || ' (toast)', coalesce(toast_blks_hit, 0) + "
            "coalesce(tidx_blks_hit, 0), coalesce(toast_blks_read, 0) + "
            "coalesce(tidx_blks_read, 0) FROM pg_statio_user_tables UNION ALL "
            "SELECT indexrelname, coalesce(idx_blks_hit, 0), coalesce(idx_blks_read, 0) "
            "FROM pg_statio_user_indexes"
        ).fetchall()
    return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}


def explain(url: str, query: str, params: Any) -> list[str]:
    """The plan of ``query`` run once with ``params``, with its buffers (the notable lines)."""
    from pgvector.psycopg import register_vector

    from langgraph_memgpt.stores.postgres.search import walk_settings

    with psycopg.connect(url) as conn:
        register_vector(conn)
        if "::vector(" in query or "::halfvec(" in query:
            for setting in walk_settings():
                conn.execute(setting)
        rows = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query}", params).fetchall()
        conn.rollback()  # a write explained is not kept
    keep = ("Scan", "Buffers", "Execution Time", "Rows Removed", "Sort", "Limit", "Join", "Heap")
    return [str(r[0]) for r in rows if any(word in str(r[0]) for word in keep)]


if __name__ == "__main__":
    main()
