"""Word search alone on Postgres at several memory sizes: recall and archival p50.

A search turn of ``per_turn.py`` is mostly the graph; this times only the stores' search
calls (``recall.search`` and ``archival.search``, hybrid mode without an embedding model:
the word signals, the rare-term matches and the named participants), 20 queries of the
per-turn benchmark each, on the databases ``per_turn.py --backend postgres --data-dir DIR``
seeded. Run it once per code version to compare them on the same data (the package is
whatever ``PYTHONPATH`` points at), alternating, since the machine is shared.

Run: ``.venv/bin/python benchmarks/pg_search_sizes.py --data-dir DIR [--sizes 1000 100000]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import AGENT, Vocabulary, load_average, ms, percentile
from per_turn import kept_postgres_databases


def main() -> None:
    from langgraph_memgpt.stores.postgres import PostgresBackend

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    urls, seeded = kept_postgres_databases(args.sizes, args.data_dir / "pg")
    queries = Vocabulary().queries(np.random.default_rng(2025), args.queries)
    for n in args.sizes:
        if n not in seeded:
            raise SystemExit(f"N={n:,} is not seeded in {args.data_dir}: run per_turn.py first")
        backend = PostgresBackend(urls[n], embedding_model="none")
        memory = backend.open(AGENT)
        memory.recall.search(queries[0], page_size=5)  # warm the connection and caches
        memory.archival.search(queries[0], page_size=5)
        recall, archival = [], []
        for query in queries:
            start = time.perf_counter()
            memory.recall.search(query, page_size=5)
            recall.append(time.perf_counter() - start)
            start = time.perf_counter()
            memory.archival.search(query, page_size=5)
            archival.append(time.perf_counter() - start)
        backend.close()
        print(
            f"N={n:,}: recall.search p50 {ms(percentile(recall, 50))}, "
            f"archival.search p50 {ms(percentile(archival, 50))} "
            f"(load {load_average()})",
            flush=True,
        )


if __name__ == "__main__":
    main()
