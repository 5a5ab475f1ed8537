"""Which Postgres store call a 100k turn waits on: wall time per call, by agent size.

``pg_turn_sql.py`` times statements; a search runs its statements side by side (the word
columns and the graph walks on spare connections, ``stores/postgres/spare.py``), so a
statement's time does not say whether the turn waited for it. This runs ``per_turn.py``
unchanged (the same command line, both turn shapes, each size's agent in rotation) and
times every call of the Postgres tiers and their search signals (``PgRecallMemory``,
``PgArchivalMemory``, ``PgRecallSignals``, ``_PgArchivalSignals``) in the agent of each
size; a ``begin_nearest`` is timed as begun, waited for (``.wait``: how long the search
stood still for its walks after its words) and begun-to-collected.

Two switches change what the stores do, for finding the critical path, never for a
figure to quote: ``--ef-search N`` walks the graphs with another candidate list (a list
shorter than the search's pool makes pgvector's iterative scan resume, which costs more
pages, not fewer), ``--no-words`` scores no word column (the search's BM25 signals empty),
``--settle-pause S`` lets the recall settler wait ``S`` seconds after a write (instead of
``settling.SETTLE_PAUSE``) before its pass. The report also gives how much of each size's
settling passes ran while one of its searches did (``settler passes beside searches``).
``--graph binary|side-binary`` walks smaller graphs instead of the package's
(``pg_graph_probe.py``), re-ranking ``--candidates`` of them.

    python benchmarks/pg_turn_calls.py [--ef-search N] [--no-words] -- \\
        --backend postgres --sizes 1000 100000 --turns 20 --warmup 3 --embeddings minilm
    python benchmarks/pg_turn_calls.py --graph side-binary --candidates 512 -- ... --fresh-postgres
"""

from __future__ import annotations

import argparse
import atexit
import collections
import functools
import re
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from langgraph_memgpt.stores.postgres import archival, recall, recall_signals, search, settling

SIGNAL_CALLS = (
    "word_signals",
    "term_matches",
    "vector_text",
    "vectors_wait_for_words",
    "embed",
    "begin_nearest",
    "vector_total",
    "named_signals",
    "sequences",
    "fetch",
)
TIER_CALLS = {
    recall.PgRecallMemory: ("search", "add", "get", "latest", "count", "thread_messages"),
    archival.PgArchivalMemory: ("search", "count", "tags", "recent", "last_modified"),
}

spent: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
spans: dict[tuple[str, str], list[tuple[float, float]]] = collections.defaultdict(list)
"""(size, "search" or "settle") -> (start, end) of each tier search and settling pass."""


def size_of(obj: Any) -> str:
    """The agent size of a tier or signal source, from its pool's database name."""
    pool = getattr(obj, "pool", None)
    name = str(getattr(pool, "conninfo", ""))
    found = re.search(r"memgpt_bench_(?:turn_)?(\d+)", name)  # per_turn.py's databases
    return f"{int(found.group(1)):,}" if found else "?"


def timed(cls: type, name: str) -> None:
    """Replace ``cls.name`` with a wrapper that records its wall time (and its wait)."""
    inner = getattr(cls, name)
    label = f"{cls.__name__}.{name}"

    @functools.wraps(inner)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        out = inner(self, *args, **kwargs)
        size = size_of(self)
        spent[(size, label)].append(time.perf_counter() - start)
        if name == "search":
            spans[(size, "search")].append((start, time.perf_counter()))
        if name.startswith("begin") and callable(out):
            collect: Callable[[], Any] = out

            def waited() -> Any:
                began = time.perf_counter()
                found = collect()
                spent[(size, label + ".wait")].append(time.perf_counter() - began)
                spent[(size, label + ".begun-to-collected")].append(time.perf_counter() - start)
                return found

            return waited
        return out

    setattr(cls, name, call)


def timed_settling() -> None:
    """Record each settling pass's span by agent size (the settler's pool names it)."""
    inner = settling.Settler.settle_now

    @functools.wraps(inner)
    def settle_now(self: settling.Settler, agent_id: str) -> int:
        start = time.perf_counter()
        try:
            return inner(self, agent_id)
        finally:
            spans[(size_of(self), "settle")].append((start, time.perf_counter()))

    settling.Settler.settle_now = settle_now  # type: ignore[method-assign]


def overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Seconds during which a span of ``a`` and one of ``b`` both ran."""
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


def report() -> None:
    """Per call: calls, total and p50 wall time at each size."""
    sizes = sorted({s for s, _ in spent}, key=lambda s: int(s.replace(",", "") or 0))
    print("\nstore calls (all turns of both shapes, warm-up included): calls, total, p50")
    for label in sorted({label for _, label in spent}):
        cells = []
        for size in sizes:
            values = spent.get((size, label), [])
            p50 = np.median(values) * 1000 if values else 0.0
            cells.append(f"N={size}: {len(values):4d} {sum(values) * 1000:8.1f} ms {p50:6.2f}")
        print(f"  {label:48s} " + "   ".join(cells))
    print("\nsettler passes beside searches: passes, their total, the part while a search ran")
    for size in sizes:
        passes, searches = spans.get((size, "settle"), []), spans.get((size, "search"), [])
        total = sum(e - s for s, e in passes) * 1000
        both = overlap(passes, searches) * 1000
        print(f"  N={size}: {len(passes):4d} passes {total:8.1f} ms, {both:8.1f} ms in a search")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ef-search", type=int, help="walk the graphs with this list")
    parser.add_argument("--no-words", action="store_true", help="score no word column")
    parser.add_argument("--settle-pause", type=float, help="seconds the settler waits")
    parser.add_argument("--graph", choices=["halfvec", "binary", "side-binary"], default="halfvec")
    parser.add_argument("--candidates", type=int, default=512, help="re-ranked, other graphs")
    args, rest = parser.parse_known_args()
    if args.ef_search:
        search.HNSW_EF_SEARCH = args.ef_search
    if args.no_words:
        search.bm25_scores = lambda *a, **k: {}  # type: ignore[assignment]
    if args.settle_pause is not None:
        settling.Settler.pause = args.settle_pause
    if args.graph != "halfvec":
        import pg_graph_probe

        pg_graph_probe.install(args.graph, args.candidates)
    timed_settling()
    for cls in (recall_signals.PgRecallSignals, archival._PgArchivalSignals):
        for name in SIGNAL_CALLS:
            if hasattr(cls, name):
                timed(cls, name)
    for tier, names in TIER_CALLS.items():
        for name in names:
            if hasattr(tier, name):
                timed(tier, name)
    atexit.register(report)
    import per_turn

    switches = [f"--ef-search {args.ef_search}"] * bool(args.ef_search)
    switches += ["--no-words"] * args.no_words
    switches += [f"--settle-pause {args.settle_pause}"] * (args.settle_pause is not None)
    switches += [f"--graph {args.graph} --candidates {args.candidates}"] * (args.graph != "halfvec")
    print(f"pg_turn_calls switches: {' '.join(switches) or 'none'}", flush=True)
    sys.argv = ["per_turn.py", *[r for r in rest if r != "--"]]
    per_turn.main()


if __name__ == "__main__":
    main()
