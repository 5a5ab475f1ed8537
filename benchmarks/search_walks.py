"""SQLite hybrid searches with their graph walks beside the word scores, and on the caller.

``stores/sqlite/faiss_beside.py`` runs a search's FAISS graph walks on a search thread
while the caller's thread scores the words in SQLite. This measures what that buys, in one
process on the same memory: recall and archival hybrid searches of the same queries,
alternating query by query between the walks beside (the package) and the walks on the
caller's thread (the baseline, ``faiss_beside.begin_walk_here``, as before), and prints
each tier's p50 and the ratio. The queries are embedded once beforehand (real MiniLM),
so what is timed is the stores' work; ``per_turn.py`` has the turns. ``--embed`` embeds
each query in each search instead, as a turn does; ``--onnx-spinning`` then makes the
MiniLM session as before ``session.force_spinning_stop`` (its threads spin after a run, on
the cores the walks need), the baseline that option was measured against.

The memory is ``per_turn.py``'s seed (N messages in recall, N passages in archival, with
seeded vectors under MiniLM's identity), made here or copied from ``--data-dir``.

Run: ``.venv/bin/python benchmarks/search_walks.py [--sizes 1000 100000] [--queries 80]
[--data-dir DIR] [--embed [--onnx-spinning]]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import AGENT, Vocabulary, load_average, print_header
from per_turn import prepare_sqlite

from langgraph_memgpt.stores import embeddings as embeddings_module
from langgraph_memgpt.stores.embeddings import get_embeddings
from langgraph_memgpt.stores.sqlite import archival_signals, faiss_beside, recall_signals
from langgraph_memgpt.stores.sqlite import vectors as vectors_module
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory

WAYS: dict[str, Callable[..., Any]] = {
    "walks here (baseline)": faiss_beside.begin_walk_here,
    "walks beside": faiss_beside.begin_walk,
}


def embed_once() -> None:
    """Each query text is embedded once; later searches of it reuse the vector."""
    embed = embeddings_module.embed_query
    vectors: dict[str, Any] = {}

    def cached(model: Any, text: str) -> Any:
        if text not in vectors:
            vectors[text] = embed(model, text)
        return vectors[text]

    recall_signals.embed_query = cached  # type: ignore[assignment]
    archival_signals.embed_query = cached  # type: ignore[assignment]


def spin_after_runs() -> None:
    """MiniLM's session made as before: ONNX Runtime's threads spin after each run."""
    import onnxruntime

    made = onnxruntime.InferenceSession.__init__

    def spinning(session: Any, path: Any, sess_options: Any = None, **kwargs: Any) -> None:
        if sess_options is not None:
            sess_options.add_session_config_entry("session.force_spinning_stop", "0")
        made(session, path, sess_options=sess_options, **kwargs)

    onnxruntime.InferenceSession.__init__ = spinning  # type: ignore[method-assign]


def measure(root: Path, queries: list[str], rounds: int) -> dict[str, dict[str, list[float]]]:
    db = open_db(root / "memory.sqlite")
    model = get_embeddings("minilm")
    recall = SqliteRecallMemory(db, AGENT, model, root / "faiss")
    archival = SqliteArchivalMemory(db, AGENT, model, root / "faiss")
    for query in queries:  # warm: load the indexes, embed the queries
        recall.search(query)
        archival.search(query)
    times: dict[str, dict[str, list[float]]] = {way: {"recall": [], "archival": []} for way in WAYS}
    for _ in range(rounds):
        for query in queries:
            for way, begin in WAYS.items():
                vectors_module.begin_walk = begin  # type: ignore[attr-defined]
                for tier, store in (("recall", recall), ("archival", archival)):
                    start = time.perf_counter()
                    store.search(query)
                    times[way][tier].append(time.perf_counter() - start)
    vectors_module.begin_walk = faiss_beside.begin_walk  # type: ignore[attr-defined]
    recall.close()
    archival.close()
    db.conn.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100000])
    parser.add_argument("--queries", type=int, default=80)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--embed", action="store_true", help="embed each query in each search")
    parser.add_argument("--onnx-spinning", action="store_true", help="with --embed: spin as before")
    args = parser.parse_args()
    args.seed_only = False
    print_header("SQLite hybrid searches: graph walks beside the word scores, and on the caller")
    if not args.embed:
        embed_once()
    elif args.onnx_spinning:
        spin_after_runs()
    vocab = Vocabulary()
    queries = vocab.queries(np.random.default_rng(2025), args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        roots = prepare_sqlite(args, Path(tmp), vocab)
        embedded = "each search embeds its query" if args.embed else "queries embedded once"
        if args.onnx_spinning:
            embedded += ", ONNX Runtime spinning after each run (as before)"
        print(f"\n{args.queries} queries x {args.rounds} rounds ({embedded}), p50 ms (mean)")
        print(f"{'N':>8}  {'tier':<9}{'walks here':>16}{'walks beside':>16}{'ratio':>8}")
        for n, root in roots.items():
            times = measure(root, queries, args.rounds)
            for tier in ("recall", "archival"):
                here, beside = (times[way][tier] for way in WAYS)
                ratio = statistics.median(beside) / statistics.median(here)
                cells = "".join(
                    f"{statistics.median(t) * 1e3:>8.2f} ({statistics.mean(t) * 1e3:5.2f})"
                    for t in (here, beside)
                )
                print(f"{n:>8,}  {tier:<9}{cells}{ratio:>7.2f}x")
        print(f"\nload avg at end {load_average()}")


if __name__ == "__main__":
    main()
