"""What one graph walk of a 100k Postgres agent costs: pages and time, per ef_search and pool.

The walk statements of a search (``stores.postgres.search.vector_scores``: recall's graph
of settled messages, archival's), as the store runs them (iterative scan in strict order,
the exact similarity from the stored vector), on the database ``per_turn.py --backend
postgres --data-dir DIR --seed-only`` keeps, each under ``EXPLAIN (ANALYZE, BUFFERS)``,
for each ``ef_search`` and ``LIMIT`` (recall's pool is 50, archival's 100), with a few
MiniLM-embedded questions. Each setting runs ``--rounds`` times in a row; the first round
meets whatever the buffers held, the last mostly its own pages: the time of a walk whose
pages are all in the buffers is its CPU, what two cores share with the rest of a turn.

The seeded vectors are ``_common.LookupEmbeddings``': a random unit vector per text, the
hardest data for a graph (no clusters), so a walk here touches about twice the pages a
walk among real MiniLM vectors does (``hnsw_recall.py``'s pages column).

    python benchmarks/pg_walks.py --data-dir DIR [--size 100000] [--ef 100 256] [--limit 50 100]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
import per_turn
import psycopg
from _common import AGENT, print_header, table, walk_plan
from pgvector.psycopg import register_vector

from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.postgres.search import walk_settings

QUESTIONS = (
    "what did we plan for the garden trip",
    "my sister's birthday present ideas",
    "the book about mountains",
    "the job interview next week",
    "a favourite recipe with lentils",
    "the car broke down again",
)

WALKS = {
    "recall (settled)": "SELECT b.id, 1 - (b.embedding <=> %(q)s) FROM memgpt_recall AS b "
    "WHERE b.agent_id = %(agent)s AND vector_dims(b.embedding) = 384 AND b.settled "
    "ORDER BY b.embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(limit)s",
    "archival": "SELECT b.id, 1 - (b.embedding <=> %(q)s) FROM memgpt_archival AS b "
    "WHERE b.agent_id = %(agent)s AND vector_dims(b.embedding) = 384 "
    "ORDER BY b.embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(limit)s",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="per_turn.py's --data-dir")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--ef", type=int, nargs="+", default=[100, 256])
    parser.add_argument("--limit", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print_header("pg_walks: one graph walk's pages and time, kept per_turn database")
    urls, seeded = per_turn.kept_postgres_databases([args.size], args.data_dir / "pg", None)
    if args.size not in seeded:
        raise SystemExit(f"not seeded in {args.data_dir}: run per_turn.py --seed-only first")
    embeddings = MiniLMEmbeddings()
    questions = [np.asarray(embeddings.embed_query(q), dtype=np.float32) for q in QUESTIONS]
    rows = []
    with psycopg.connect(urls[args.size]) as conn:
        register_vector(conn)
        for name, sql in WALKS.items():
            for limit in args.limit:
                for ef in args.ef:
                    for round_ in range(1, args.rounds + 1):
                        runs = []
                        for q in questions:
                            params = {"q": q, "agent": AGENT, "limit": limit}
                            plan = walk_plan(conn, sql, params, walk_settings(ef))
                            top = plan.get("Plan", {})
                            hit = int(top.get("Shared Hit Blocks", 0))
                            read = int(top.get("Shared Read Blocks", 0))
                            runs.append((float(plan.get("Execution Time", 0.0)), hit + read, read))
                        rows.append(
                            [
                                name,
                                limit,
                                ef,
                                round_,
                                f"{statistics.median(r[0] for r in runs):.1f} ms",
                                f"{statistics.median(r[1] for r in runs):.0f}",
                                f"{statistics.median(r[2] for r in runs):.0f}",
                            ]
                        )
    print(
        table(
            rows,
            ["walk", "LIMIT", "ef_search", "round", "p50", "pages p50", "from outside p50"],
        )
    )


if __name__ == "__main__":
    main()
