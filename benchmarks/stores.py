"""Archival and recall stores: insert throughput and search latency, next to baselines.

For each size N (default 10k and 100k) it measures, in one run:

* archival (``SqliteArchivalMemory``): ``insert_many`` throughput, and search latency p50/p95
  in modes fts / vector / hybrid. Baseline: LangGraph's ``InMemoryStore`` with
  ``index={"embed": ..., "dims": 384}`` (batched puts; ``search(query=...)``).
* recall (``SqliteRecallMemory``): ``add_many`` throughput (2 vectors per message: the turn,
  and its +-2-message context; the line printed says how many texts were embedded, as
  the store may pool the context from its neighbours' vectors instead of embedding it),
  with vectors and words-only, and search latency p50/p95 in the three modes.
  Baseline: a plain SQLite table (``executemany`` inserts, one transaction per 256 rows)
  searched with ``text LIKE '%word%' OR ...`` over every query word.

Our stores and the baselines get the *same* vectors: ``LookupEmbeddings`` maps every text
to a seeded random unit vector, so only the stores are compared (embedding 100k texts
with MiniLM takes from minutes to hours on two cores, depending on their load). The cost of
the real model is reported separately on a small sample (``--minilm-sample``).

Run: ``.venv/bin/python benchmarks/stores.py [--sizes 10000 100000] [--quick]``
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import (
    AGENT,
    LookupEmbeddings,
    Vocabulary,
    load_average,
    ms,
    percentile,
    print_header,
    rate,
    ratio,
    recall_messages,
    rss_mib,
    table,
    time_calls,
)
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.words import query_words

PAGE_SIZE = 5  # what the memory tools ask for (Context.search_page_size)
THREADS = 50  # recall messages are spread over this many threads
BASELINE_BUDGET_S = 30.0  # most wall time spent on InMemoryStore queries per size


def summarize(lat: list[float]) -> tuple[float, float]:
    return percentile(lat, 50), percentile(lat, 95)


def bench_archival(
    root: Path, texts: list[str], queries: list[str], baseline_queries: int
) -> list[list[object]]:
    n = len(texts)
    emb = LookupEmbeddings()
    db = open_db(root / "memory.sqlite")
    archival = SqliteArchivalMemory(db, AGENT, emb, root / "faiss")
    tags = ["work", "home", "travel", "health", "misc"]
    start = time.perf_counter()
    for i in range(0, n, 1000):  # 1000-passage calls: the caller's batches
        archival.insert_many(texts[i : i + 1000], tags=[tags[(i // 1000) % len(tags)]])
    archival.close()
    ours_insert = time.perf_counter() - start
    print(f"  archival insert_many: {n:,} passages in {ours_insert:.1f} s", flush=True)

    lat: dict[str, list[float]] = {}
    for mode in ("fts", "vector", "hybrid"):
        archival.search(queries[0], mode=mode, page_size=PAGE_SIZE)  # warm
        lat[mode] = time_calls(
            lambda q, m=mode: archival.search(q, mode=m, page_size=PAGE_SIZE), queries
        )
    matches = [archival.search(q, mode="fts", page_size=PAGE_SIZE).total for q in queries[:20]]
    print(f"  archival fts matches per query (mean of 20): {np.mean(matches):,.0f}", flush=True)
    db.conn.close()

    store = InMemoryStore(index={"embed": emb, "dims": 384, "fields": ["text"]})
    ns = ("bench", "archival")
    start = time.perf_counter()
    for i in range(0, n, 1000):
        store.batch([PutOp(ns, str(j), {"text": texts[j]}) for j in range(i, min(n, i + 1000))])
    base_insert = time.perf_counter() - start
    print(f"  InMemoryStore batch put: {n:,} items in {base_insert:.1f} s", flush=True)
    base_lat: list[float] = []
    spent = 0.0
    for q in queries[:baseline_queries]:
        t = time.perf_counter()
        store.search(ns, query=q, limit=PAGE_SIZE)
        base_lat.append(time.perf_counter() - t)
        spent += base_lat[-1]
        if spent > BASELINE_BUDGET_S and len(base_lat) >= 3:
            break
    del store
    gc.collect()
    rows: list[list[object]] = [
        [
            f"archival {n:,}",
            "insert/s",
            f"{rate(n, ours_insert):,.0f}",
            f"{rate(n, base_insert):,.0f}",
            ratio(rate(n, ours_insert), rate(n, base_insert)),
            "",
        ]
    ]
    rows.extend(search_rows("archival", n, lat, base_lat))
    return rows


def search_rows(
    tier: str, n: int, lat: dict[str, list[float]], base_lat: list[float]
) -> list[list[object]]:
    """One row per search mode: our p50/p95 next to the baseline's, with the ratios."""
    b50, b95 = summarize(base_lat)
    rows: list[list[object]] = []
    for mode in ("fts", "vector", "hybrid"):
        p50, p95 = summarize(lat[mode])
        rows.append(
            [
                f"{tier} {n:,}",
                f"search {mode} (n={len(lat[mode])})",
                f"{ms(p50)} / {ms(p95)}",
                f"{ms(b50)} / {ms(b95)} (n={len(base_lat)})",
                ratio(p50, b50),
                ratio(p95, b95),
            ]
        )
    return rows


def bench_recall(root: Path, texts: list[str], queries: list[str]) -> list[list[object]]:
    n = len(texts)
    emb = LookupEmbeddings()
    messages = recall_messages(texts, sessions=THREADS)

    db = open_db(root / "recall.sqlite")
    recall = SqliteRecallMemory(db, AGENT, emb, root / "faiss-recall")
    start = time.perf_counter()
    recall.add_many(messages)
    ours_insert = time.perf_counter() - start
    print(
        f"  recall add_many (turn + context vectors): {n:,} messages in {ours_insert:.1f} s "
        f"({emb.texts_embedded:,} texts embedded)",
        flush=True,
    )
    lat: dict[str, list[float]] = {}
    for mode in ("fts", "vector", "hybrid"):
        recall.search(queries[0], mode=mode, page_size=PAGE_SIZE)
        lat[mode] = time_calls(
            lambda q, m=mode: recall.search(q, mode=m, page_size=PAGE_SIZE), queries
        )
    db.conn.close()

    db2 = open_db(root / "recall-words.sqlite")
    words_only = SqliteRecallMemory(db2, AGENT, None, root / "faiss-none")
    start = time.perf_counter()
    words_only.add_many(messages)
    words_insert = time.perf_counter() - start
    print(f"  recall add_many (words only): {n:,} messages in {words_insert:.1f} s", flush=True)
    db2.conn.close()

    plain = sqlite3.connect(root / "plain.sqlite")
    plain.execute("PRAGMA journal_mode=WAL")
    plain.execute("PRAGMA synchronous=NORMAL")
    plain.execute(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, message_id TEXT UNIQUE, thread_id TEXT, "
        "role TEXT, text TEXT, created_at TEXT)"
    )
    start = time.perf_counter()
    for i in range(0, n, 256):
        with plain:
            plain.executemany(
                "INSERT INTO messages (message_id, thread_id, role, text, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (m.message_id, m.thread_id, m.role, m.text, m.created_at)
                    for m in messages[i : i + 256]
                ],
            )
    base_insert = time.perf_counter() - start
    print(f"  plain SQLite insert: {n:,} rows in {base_insert:.2f} s", flush=True)

    def like_scan(query: str) -> list[tuple[object, ...]]:
        words = query_words(query)
        where = " OR ".join(["text LIKE ?"] * len(words))
        return plain.execute(
            f"SELECT id, text FROM messages WHERE {where}", [f"%{w}%" for w in words]
        ).fetchall()

    like_scan(queries[0])
    base_lat = time_calls(like_scan, queries)
    plain.close()

    rows: list[list[object]] = [
        [
            f"recall {n:,}",
            "insert/s (with vectors)",
            f"{rate(n, ours_insert):,.0f}",
            f"{rate(n, base_insert):,.0f}",
            ratio(rate(n, ours_insert), rate(n, base_insert)),
            "",
        ],
        [
            f"recall {n:,}",
            "insert/s (words only)",
            f"{rate(n, words_insert):,.0f}",
            f"{rate(n, base_insert):,.0f}",
            ratio(rate(n, words_insert), rate(n, base_insert)),
            "",
        ],
    ]
    rows.extend(search_rows("recall", n, lat, base_lat))
    return rows


def bench_minilm(root: Path, vocab: Vocabulary, sample: int) -> list[str]:
    rng = np.random.default_rng(99)
    texts = vocab.texts(rng, sample)
    emb = MiniLMEmbeddings()
    emb.embed_array(texts[:8])  # load the model outside the timing
    start = time.perf_counter()
    emb.embed_array(texts)
    raw = time.perf_counter() - start

    db = open_db(root / "minilm.sqlite")
    archival = SqliteArchivalMemory(db, AGENT, emb, root / "faiss-minilm")
    start = time.perf_counter()
    archival.insert_many(texts)
    archival.close()
    arch = time.perf_counter() - start

    recall = SqliteRecallMemory(db, AGENT, emb, root / "faiss-minilm")
    start = time.perf_counter()
    recall.add_many(recall_messages(texts, sessions=THREADS))
    rec = time.perf_counter() - start
    db.conn.close()
    return [
        f"real MiniLM (int8 ONNX) on a {sample:,}-text sample of the same kind of text:",
        f"  embed only            {rate(sample, raw):8,.0f} texts/s",
        f"  archival insert_many  {rate(sample, arch):8,.0f} passages/s (1 vector each)",
        f"  recall add_many       {rate(sample, rec):8,.0f} messages/s (turn + context vectors)",
        f"  => 100k recall messages with MiniLM: ~{100_000 / rate(sample, rec) / 60:,.0f} min",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50, help="queries per search mode")
    parser.add_argument("--baseline-queries", type=int, default=20)
    parser.add_argument("--minilm-sample", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="small sizes, < 1 minute")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.queries, args.baseline_queries, args.minilm_sample = [2000], 15, 5, 100

    print_header("stores: archival and recall insert/search vs baselines")
    print(
        "Vectors: LookupEmbeddings (seeded random unit vectors by text, 384-d) for OUR\n"
        "stores AND the baselines, so only the stores are compared. Text: English words\n"
        "(MiniLM's vocabulary) with Zipf frequencies, 8-40 words per text; queries: 4\n"
        "Zipf-drawn words (stop words included, like natural queries). Search = one page of\n"
        f"{PAGE_SIZE} results, as the memory tools ask. Latencies are p50 / p95 per query;\n"
        "ratio = ours / baseline (insert/s: above 1 is better; latency: below 1 is better).\n",
        flush=True,
    )
    vocab = Vocabulary()
    rows: list[list[object]] = []
    tmp = Path(tempfile.mkdtemp(prefix="memgpt-bench-stores-"))
    try:
        for n in args.sizes:
            print(f"--- N = {n:,}", flush=True)
            rng = np.random.default_rng(n)
            texts = vocab.texts(rng, n)
            queries = vocab.queries(np.random.default_rng(n + 1), args.queries)
            root = tmp / str(n)
            root.mkdir()
            rows += bench_archival(root, texts, queries, args.baseline_queries)
            rows += bench_recall(root, texts, queries)
            shutil.rmtree(root, ignore_errors=True)
            gc.collect()
        print()
        print(
            "Baselines: archival = LangGraph InMemoryStore semantic search; "
            "recall = LIKE '%word%' scan of a plain SQLite table.\n"
        )
        print(
            table(
                rows,
                [
                    "store",
                    "metric",
                    "ours",
                    "baseline",
                    "ratio p50 (or rate)",
                    "ratio p95",
                ],
            )
        )
        print()
        for line in bench_minilm(tmp, vocab, args.minilm_sample):
            print(line)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\npeak RSS {rss_mib():,.0f} MiB; load avg at end {load_average()}")


if __name__ == "__main__":
    main()
