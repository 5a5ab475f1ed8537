"""Our archival search next to LangGraph's own stores, on the same passages and queries.

The store a LangGraph user would otherwise pick for long-term memory is a ``BaseStore``
with a vector ``index``: ``InMemoryStore``, ``SqliteStore`` (sqlite-vec) or
``PostgresStore`` (pgvector). Each gets ``index={"dims": 384, "embed": <the same
embeddings>, "fields": ["text"]}``; ours is ``memory.archival`` of the SQLite and the
Postgres backend in its default (hybrid) mode. One run measures:

* quality, with the real MiniLM embeddings (every text embedded once, shared through a
  cache, so every engine reads the same vectors): hit@1 / hit@5 on the needle benchmark's
  passages (``needle.py``'s data: 24 facts in 400 messages, short and long variants, each
  looked up by topic words and by its identifier) and on LoCoMo dev (every turn a passage;
  a question hits when one of its evidence turns is among the first k);
* search latency p50 / p95 at each size (default 10k and 100k passages) and the write cost
  per passage. Here every engine gets the same stand-in 384-d vectors
  (``LookupEmbeddings``): MiniLM would embed 100k texts for hours on two loaded cores, and
  its cost (a query embedding, each passage's embedding) is the same for every engine; it
  is printed once beside the table. InMemoryStore and SqliteStore scan every vector in
  Python or in SQL, so their queries get a time budget per size (``--budget``).

    python benchmarks/stores_vs_langgraph.py [--sizes 10000 100000] [--queries 50]
        [--locomo /work/shared/bench/locomo-dev.json] [--no-postgres] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import LookupEmbeddings, Vocabulary, load_average, ms, percentile, print_header, table
from bench.locomo import load_locomo, turn_text
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore
from needle import conversation, make_facts

from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all

DIMS = 384
BATCH = 1000
OURS = "ours (SQLite)"


@dataclass(frozen=True)
class Row:
    """One passage as every engine receives it."""

    text: str
    tags: tuple[str, ...] = ()
    thread_id: str | None = None
    turn: int | None = None
    created_at: str | None = None


@dataclass(frozen=True)
class Query:
    """A lookup and the row indices that answer it."""

    text: str
    wanted: frozenset[int]


@dataclass(frozen=True)
class Dataset:
    """Spaces (one agent / namespace each) of rows, and their queries."""

    name: str
    spaces: dict[str, tuple[list[Row], list[Query]]]


class CachedMiniLM(MiniLMEmbeddings):
    """MiniLM that embeds each distinct text once for every engine of the run."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[str, np.ndarray] = {}
        self.seconds = 0.0
        self.embedded = 0

    def embed_array(self, texts: Sequence[str]) -> Any:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            start = time.perf_counter()
            vectors = super().embed_array(missing)
            self.seconds += time.perf_counter() - start
            self.embedded += len(missing)
            self.cache.update(zip(missing, vectors, strict=True))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, DIMS))


class Engine:
    """A store under test: load rows into a space, search a space for k row indices."""

    name: str

    def load(self, space: str, rows: Sequence[Row]) -> None:
        raise NotImplementedError

    def search(self, space: str, query: str, k: int) -> list[int]:
        raise NotImplementedError


class Ours(Engine):
    """``memory.archival`` of one of our backends; each space is an agent."""

    def __init__(self, name: str, backend: MemoryBackend) -> None:
        self.name = name
        self.backend = backend
        self.index_of: dict[str, dict[int, int]] = {}

    def load(self, space: str, rows: Sequence[Row]) -> None:
        archival = self.backend.open(space).archival
        index = self.index_of.setdefault(space, {})
        for start in range(0, len(rows), BATCH):
            chunk = rows[start : start + BATCH]
            passages = archival.insert_many(
                [NewPassage(r.text, r.tags, r.thread_id, r.turn, r.created_at) for r in chunk]
            )
            index.update({p.id: start + i for i, p in enumerate(passages)})

    def search(self, space: str, query: str, k: int) -> list[int]:
        page = self.backend.open(space).archival.search(query, page_size=k)
        return [self.index_of[space][h.item.id] for h in page.hits]


class LangGraph(Engine):
    """A LangGraph ``BaseStore`` with a vector index; each space is a namespace."""

    def __init__(self, name: str, store: BaseStore) -> None:
        self.name = name
        self.store = store

    def load(self, space: str, rows: Sequence[Row]) -> None:
        # A batch holds each text once: InMemoryStore (langgraph 1.2) embeds a batch's
        # distinct texts and then refuses the batch when two puts share a text.
        batch: list[PutOp] = []
        texts: set[str] = set()
        for i, row in enumerate(rows):
            if len(batch) == BATCH or row.text in texts:
                self.store.batch(batch)
                batch, texts = [], set()
            batch.append(PutOp(("bench", space), str(i), _value(row)))
            texts.add(row.text)
        if batch:
            self.store.batch(batch)

    def search(self, space: str, query: str, k: int) -> list[int]:
        return [int(item.key) for item in self.store.search(("bench", space), query=query, limit=k)]


def _value(row: Row) -> dict[str, Any]:
    return {
        "text": row.text,
        "tags": list(row.tags),
        "thread_id": row.thread_id,
        "turn": row.turn,
        "created_at": row.created_at,
    }


# -- datasets -------------------------------------------------------------------------


def needle_data(seed: int = 7, facts: int = 24, filler: int = 400) -> Dataset:
    """needle.py's conversations as passages; each fact looked up by topic and identifier."""
    found = make_facts(facts, random.Random(seed))
    spaces = {}
    for variant in ("short", "long"):
        messages, where = conversation(found, filler, long=variant == "long", seed=seed)
        rows = [Row(m.text) for m in messages]
        queries = [
            Query(text, frozenset({where[i]}))
            for i, fact in enumerate(found)
            for text in (fact.topic, fact.identifier)
        ]
        spaces[f"needle-{variant}"] = (rows, queries)
    return Dataset("needle", spaces)


def locomo_data(path: Path) -> Dataset:
    """Every LoCoMo turn a passage (speaker as tag, session as thread, its date)."""
    spaces = {}
    for conv in load_locomo(path):
        rows: list[Row] = []
        index_of: dict[str, int] = {}
        for session in conv.sessions:
            for turn_no, turn in enumerate(session.turns, start=1):
                index_of[turn.dia_id] = len(rows)
                rows.append(
                    Row(
                        turn_text(turn),
                        (turn.speaker,),
                        session.key,
                        turn_no,
                        session.created_at.isoformat(),
                    )
                )
        queries = [
            Query(q.question, frozenset(index_of[e] for e in q.evidence)) for q in conv.questions
        ]
        spaces[f"locomo-{conv.sample_id}"] = (rows, queries)
    return Dataset("LoCoMo dev", spaces)


# -- engines ----------------------------------------------------------------------------


def engines(
    folder: Path, emb: Embeddings, pg_urls: list[str], stack: contextlib.ExitStack
) -> list[Engine]:
    """Ours (SQLite, Postgres) and LangGraph's three stores, all over ``emb``."""
    index: Any = {"dims": DIMS, "embed": emb, "fields": ["text"]}
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Engine] = [Ours(OURS, SqliteBackend(folder / "ours", embeddings=emb))]
    if pg_urls:
        from langgraph_memgpt.stores.postgres import PostgresBackend

        backend = PostgresBackend(pg_urls[0], embeddings=emb)
        stack.callback(backend.close)
        out.append(Ours("ours (Postgres)", backend))
    out.append(LangGraph("InMemoryStore", InMemoryStore(index=index)))
    from langgraph.store.sqlite import SqliteStore

    conn = _extension_sqlite().connect(
        str(folder / "langgraph.sqlite"), check_same_thread=False, isolation_level=None
    )
    stack.callback(conn.close)
    sqlite_store = SqliteStore(conn, index=index)
    sqlite_store.setup()
    out.append(LangGraph("SqliteStore", sqlite_store))
    if pg_urls:
        from langgraph.store.postgres import PostgresStore

        pg_store = stack.enter_context(PostgresStore.from_conn_string(pg_urls[1], index=index))
        pg_store.setup()
        out.append(LangGraph("PostgresStore", pg_store))
    return out


def _extension_sqlite() -> Any:
    """An sqlite3 module that can load sqlite-vec (SqliteStore's vectors need it).

    Some Python builds (pyenv's here) leave out extension loading; the ``pysqlite3-binary``
    package (bench extra) brings its own SQLite with it.
    """
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    import pysqlite3.dbapi2  # type: ignore[import-not-found]

    return pysqlite3.dbapi2


def postgres_urls(count: int) -> tuple[list[str], Callable[[], None]]:
    """``count`` empty databases on a throwaway server (or MEMGPT_TEST_DATABASE_URL's)."""
    from per_turn import postgres_databases

    urls, clean_up = postgres_databases(list(range(count)))
    return [urls[i] for i in range(count)], clean_up


# -- measuring --------------------------------------------------------------------------


def quality(data: Dataset, all_engines: Sequence[Engine]) -> dict[str, dict[str, float]]:
    """hit@1 and hit@5 of every engine over every query of ``data``."""
    out: dict[str, dict[str, float]] = {}
    for engine in all_engines:
        hits1 = hits5 = total = 0
        for space, (rows, queries) in data.spaces.items():
            engine.load(space, rows)
            for q in queries:
                found = engine.search(space, q.text, 5)
                hits1 += bool(found[:1]) and found[0] in q.wanted
                hits5 += any(i in q.wanted for i in found)
                total += 1
        out[engine.name] = {"hit@1": hits1 / total, "hit@5": hits5 / total, "n": total}
        print(
            f"  {data.name:12} {engine.name:16} hit@1 {hits1 / total:.3f}  hit@5 "
            f"{hits5 / total:.3f}  (n={total}, load {load_average()})",
            flush=True,
        )
    return out


def latency(
    n: int, all_engines: Sequence[Engine], queries: list[str], budget_s: float
) -> dict[str, dict[str, Any]]:
    """Write cost per passage and search p50/p95 of every engine over ``n`` passages."""
    rng = np.random.default_rng(n)
    rows = [
        Row(t, (f"tag{i % 8}",), f"t{i % 50}", i) for i, t in enumerate(Vocabulary().texts(rng, n))
    ]
    out: dict[str, dict[str, Any]] = {}
    for engine in all_engines:
        start = time.perf_counter()
        engine.load("scale", rows)
        write_s = (time.perf_counter() - start) / n
        engine.search("scale", queries[0], 5)  # warm caches / indexes
        seconds: list[float] = []
        began = time.perf_counter()
        for q in queries:
            t0 = time.perf_counter()
            engine.search("scale", q, 5)
            seconds.append(time.perf_counter() - t0)
            if time.perf_counter() - began > budget_s and len(seconds) >= 3:
                break
        out[engine.name] = {
            "write_us": write_s * 1e6,
            "p50_ms": percentile(seconds, 50) * 1000,
            "p95_ms": percentile(seconds, 95) * 1000,
            "queries": len(seconds),
            "load": load_average(),
        }
        print(
            f"  {n:>7,} {engine.name:16} write {write_s * 1e6:8.1f} us/passage  p50 "
            f"{ms(percentile(seconds, 50))}  p95 {ms(percentile(seconds, 95))}  "
            f"({len(seconds)} queries, load {load_average()})",
            flush=True,
        )
    return out


def report(results: dict[str, Any]) -> str:
    """The tables, as ratios against our SQLite search."""
    lines = []
    for dataset, by_engine in results["quality"].items():
        ours = by_engine[OURS]
        rows = [
            [
                name,
                f"{f['hit@1']:.3f}",
                f"{f['hit@5']:.3f}",
                f"{ours['hit@1'] / f['hit@1']:.2f}x" if f["hit@1"] else "inf",
            ]
            for name, f in by_engine.items()
        ]
        lines.append(f"\n{dataset} (n={ours['n']} lookups)")
        lines.append(table(rows, ["engine", "hit@1", "hit@5", "ours hit@1 / this"]))
    for n, by_engine in results["latency"].items():
        ours = by_engine[OURS]
        rows = [
            [
                name,
                f"{f['p50_ms']:.2f}",
                f"{f['p95_ms']:.2f}",
                f"{f['p50_ms'] / ours['p50_ms']:.2f}x",
                f"{f['write_us']:.0f}",
                f"{f['write_us'] / ours['write_us']:.2f}x",
                f["queries"],
                f["load"],
            ]
            for name, f in by_engine.items()
        ]
        lines.append(f"\n{int(n):,} passages")
        header = ["engine", "p50 ms", "p95 ms", "p50 / ours", "write us", "write / ours"]
        lines.append(table(rows, [*header, "queries", "load"]))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run quality then latency, print the tables (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds of queries a size")
    parser.add_argument("--locomo", type=Path, default=Path("/work/shared/bench/locomo-dev.json"))
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    print_header("archival search vs LangGraph's stores (same passages, queries, embeddings)")
    datasets = [needle_data()]
    if args.locomo.is_file():
        datasets.append(locomo_data(args.locomo))
    else:
        print(f"# no LoCoMo file at {args.locomo}: needle only")
    runs = 1 + len(args.sizes)
    urls, clean_up = ([], lambda: None) if args.no_postgres else postgres_urls(2 * runs)
    results: dict[str, Any] = {"command": " ".join(sys.argv), "quality": {}, "latency": {}}
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
            minilm = CachedMiniLM()
            every_text = [
                t
                for d in datasets
                for rows, queries in d.spaces.values()
                for t in [*(r.text for r in rows), *(q.text for q in queries)]
            ]
            minilm.embed_array(every_text)
            per_text = minilm.seconds / max(1, minilm.embedded)
            print(
                f"# MiniLM: {minilm.embedded} distinct texts embedded once, "
                f"{per_text * 1000:.1f} ms a text (load {load_average()})",
                flush=True,
            )
            results["minilm_ms_per_text"] = per_text * 1000
            quality_engines = engines(Path(tmp) / "q", minilm, urls[:2], stack)
            for data in datasets:
                results["quality"][data.name] = quality(data, quality_engines)
            lookup = LookupEmbeddings()
            for i, n in enumerate(args.sizes):
                folder = Path(tmp) / f"n{n}"
                pg = urls[2 * (i + 1) : 2 * (i + 2)]
                with contextlib.ExitStack() as size_stack:
                    size_engines = engines(folder, lookup, pg, size_stack)
                    queries = Vocabulary().queries(np.random.default_rng(n + 1), args.queries)
                    results["latency"][n] = latency(n, size_engines, queries, args.budget)
                close_all()
    finally:
        close_all()
        clean_up()
    print(report(results))
    print(f"\nload average after: {load_average()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
