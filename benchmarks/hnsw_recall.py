"""What a Postgres graph walk finds of the exact nearest vectors, at 100k, on real MiniLM.

A large agent's vector signals come from a walk of the HNSW graph (``hnsw.ef_search``
candidates, ``stores.postgres.search.HNSW_EF_SEARCH``), not an exact scan. This measures
what the walk loses, per ``ef_search``, where it matters: real MiniLM vectors of real
conversation turns, searched with real questions, among as many other messages as a
large agent holds.

Data: the LoCoMo dev conversations' turns (``speaker: text``) and ``--size`` minus that
many filler messages (English words drawn with Zipf frequencies, ``_common.Vocabulary``,
as ``per_turn.py``'s), all embedded with the package's MiniLM into one table, as one
agent's recall; the graph is the package's (``halfvec`` copies, cosine, pgvector's
default ``m`` and ``ef_construction``), on a throwaway pgserver with its default settings.
Queries: every scorable LoCoMo dev question, embedded as a search embeds it.

For each ``ef_search`` and pool size ``k`` (recall's pool is 50, archival's 100:
``stores.search.RECALL_POOL`` / ``ARCHIVAL_POOL``), per conversation and overall:

- overlap@k: the share of the exact top ``k`` the walk returns (pgvector's iterative scan
  in ``strict_order``, as the package runs it);
- evidence kept: of the evidence turns the exact top ``k`` holds, the share the walk's
  top ``k`` holds too (what the walk costs the search that follows);
- the walk's median time (the server's buffers are its default 128MB, as a fresh install);
- the pages a walk touches (graph and table, from ``EXPLAIN (ANALYZE, BUFFERS)`` of the
  first ``--explain`` questions' walks): on a server whose buffers cannot hold the graphs,
  as a 100k agent's three at the default 128MB, each is a read from outside them, and
  that, more than the walk's time alone, is what a search turn pays.

``--m`` and ``--ef-construction`` build the graph with other parameters than pgvector's
defaults (16 and 64, the package's): a graph built with a longer candidate list finds as
much with a shorter walk, at a slower build and insert.

``--graph binary`` measures another graph instead, not the package's: one over the vectors'
signs (``binary_quantize(embedding)::bit(384)``, Hamming distance), each walk returning
``ef_search`` candidates that are then ranked by their exact cosine (the top ``k`` kept):
a graph a quarter of the size or less, which a 128MB server could keep in its buffers. The
table prints each graph's size.

``--graph ivfflat`` measures pgvector's other index instead: ``--lists`` clusters of the
``halfvec`` copies, each search reading the vectors of its ``ivfflat.probes`` nearest
clusters in full (the ``--ef`` values are then the probes): few pages, each read through,
against the graph's many pages with one vector read on each.

The filler vectors are cached in ``--data-dir`` (embedding 100k texts takes ~7 minutes on
the 2-core VM). Run: ``.venv/bin/python benchmarks/hnsw_recall.py --data
../shared/bench/locomo-dev.json [--size 100000] [--ef 40 64 128 256] [--data-dir DIR]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    SEED_BUILD_MEMORY,
    Vocabulary,
    print_header,
    table,
    throwaway_vector_db,
    walk_plan,
)
from bench.locomo import load_locomo

from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.postgres.search import walk_settings

DIMS = 384

GRAPHS = {
    "halfvec": (
        "(embedding::halfvec(384)) halfvec_cosine_ops",
        "SELECT id FROM t ORDER BY embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(k)s",
    ),
    "binary": (
        "(binary_quantize(embedding)::bit(384)) bit_hamming_ops",
        "SELECT id FROM (SELECT id, embedding FROM t ORDER BY binary_quantize(embedding)::bit(384)"
        " <~> binary_quantize(%(q)s::vector) LIMIT %(candidates)s) AS c "
        "ORDER BY embedding <=> %(q)s::vector LIMIT %(k)s",
    ),
    "ivfflat": (
        "(embedding::halfvec(384)) halfvec_cosine_ops",
        "SELECT id FROM t ORDER BY embedding::halfvec(384) <=> %(q)s::halfvec(384) LIMIT %(k)s",
    ),
}
"""Each index: its expression, and the search (binary: candidates re-ranked exactly)."""


def search_settings(graph: str, ef: int) -> tuple[str, ...]:
    """A search's settings: the stores' walk with ``ef`` candidates, or ``ef`` IVF probes."""
    if graph == "ivfflat":
        return (f"SET LOCAL ivfflat.probes = {int(ef)}",)
    return walk_settings(ef)


def filler_vectors(embeddings: MiniLMEmbeddings, count: int, cache: Path | None) -> np.ndarray:
    """``count`` filler messages' MiniLM vectors (cached: the texts are seeded)."""
    path = cache / f"hnsw_recall_filler_{count}.npy" if cache else None
    if path is not None and path.exists():
        return np.load(path)
    texts = Vocabulary().texts(np.random.default_rng(count), count, 8, 40)
    started = time.perf_counter()
    vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
    print(f"embedded {count:,} filler texts in {time.perf_counter() - started:.0f} s", flush=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors


def walk_pages(conn: Any, graph: str, q: np.ndarray, k: int, ef: int) -> int:
    """The buffers one walk touches (hit or read): what it costs a server whose buffers
    cannot hold the graph (each page a read from outside them)."""
    params = {"q": q, "k": k, "candidates": max(k, int(ef))}
    top = walk_plan(conn, GRAPHS[graph][1], params, search_settings(graph, ef))["Plan"]
    return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--ef", type=int, nargs="+", default=[40, 64, 96, 128, 192, 256])
    parser.add_argument("--k", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--graph", choices=list(GRAPHS), default="halfvec")
    parser.add_argument("--lists", type=int, default=1000, help="ivfflat's clusters")
    parser.add_argument("--m", type=int, default=16, help="the graph's m (pgvector's: 16)")
    parser.add_argument(
        "--ef-construction", type=int, default=64, help="its ef_construction (pgvector's: 64)"
    )
    parser.add_argument(
        "--explain", type=int, default=40, help="questions whose walks count the pages read"
    )
    args = parser.parse_args()
    print_header("hnsw_recall: graph walk against exact scan, real MiniLM vectors")

    embeddings = MiniLMEmbeddings()
    conversations = load_locomo(args.data)
    turns = [
        (conv.sample_id, turn.dia_id, f"{turn.speaker}: {turn.text}")
        for conv in conversations
        for session in conv.sessions
        for turn in session.turns
    ]
    real = np.asarray(embeddings.embed_documents([t for _, _, t in turns]), dtype=np.float32)
    filler = filler_vectors(embeddings, args.size - len(turns), args.data_dir)
    questions = [(conv.sample_id, q) for conv in conversations for q in conv.questions]
    asked = np.asarray([embeddings.embed_query(q.question) for _, q in questions], dtype=np.float32)
    print(f"{len(turns):,} LoCoMo turns + {len(filler):,} filler, {len(questions)} questions")

    with throwaway_vector_db("memgpt-hnsw-recall-") as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, embedding vector(384))")
        # Filler first, then the conversations: the turns are the agent's newest rows.
        with conn.cursor().copy("COPY t (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector"])
            for i, vector in enumerate([*filler, *real]):
                copy.write_row((i, vector))
        started = time.perf_counter()
        graph = GRAPHS[args.graph]
        conn.execute(f"SET maintenance_work_mem = '{SEED_BUILD_MEMORY}'")
        built = (
            f"ivfflat ({graph[0]}) WITH (lists = {int(args.lists)})"
            if args.graph == "ivfflat"
            else f"hnsw ({graph[0]}) WITH "
            f"(m = {int(args.m)}, ef_construction = {int(args.ef_construction)})"
        )
        conn.execute(f"CREATE INDEX t_graph ON t USING {built}")
        conn.execute("RESET maintenance_work_mem")
        conn.execute("VACUUM ANALYZE t")
        size = conn.execute("SELECT pg_size_pretty(pg_relation_size('t_graph'))").fetchone()
        shape = (
            f"lists {args.lists}"
            if args.graph == "ivfflat"
            else f"m {args.m}, ef_construction {args.ef_construction}"
        )
        print(
            f"{args.graph} index ({shape}) "
            f"built in {time.perf_counter() - started:.0f} s, "
            f"{size[0] if size else '?'}",
            flush=True,
        )
        first_real = len(filler)
        where = {first_real + i: (conv, dia) for i, (conv, dia, _) in enumerate(turns)}
        exact: dict[int, list[list[int]]] = {}
        for k in args.k:
            exact[k] = [
                [
                    int(r[0])
                    for r in conn.execute(
                        "SELECT id FROM t ORDER BY embedding <=> %s LIMIT %s", (q, k)
                    ).fetchall()
                ]
                for q in asked
            ]
        rows: list[list[object]] = []
        for ef in args.ef:
            walked: dict[int, list[list[int]]] = {k: [] for k in args.k}
            times: list[float] = []
            pages = [
                walk_pages(conn, args.graph, q, max(args.k), ef) for q in asked[: args.explain]
            ]
            for q in asked:
                for k in args.k:
                    with conn.transaction():
                        for setting in search_settings(args.graph, ef):
                            conn.execute(setting)
                        started = time.perf_counter()
                        found = conn.execute(
                            graph[1],
                            {"q": q, "k": k, "candidates": max(k, int(ef))},
                        ).fetchall()
                        if k == max(args.k):
                            times.append(time.perf_counter() - started)
                    walked[k].append([int(r[0]) for r in found])
            for k in args.k:
                by_conv: dict[str, list[tuple[float, int, int]]] = {}
                for (conv, question), ex, wa in zip(questions, exact[k], walked[k], strict=True):
                    overlap = len(set(ex) & set(wa)) / k
                    wanted = set(question.evidence)
                    in_exact = {where[i][1] for i in ex if i in where and where[i][0] == conv}
                    in_walk = {where[i][1] for i in wa if i in where and where[i][0] == conv}
                    kept_ev = len(wanted & in_exact & in_walk)
                    by_conv.setdefault(conv, []).append((overlap, len(wanted & in_exact), kept_ev))
                every = [x for values in by_conv.values() for x in values]
                for name, values in [*sorted(by_conv.items()), ("all", every)]:
                    had = sum(v[1] for v in values)
                    rows.append(
                        [
                            ef,
                            k,
                            name,
                            f"{statistics.mean(v[0] for v in values):.3f}",
                            f"{sum(v[2] for v in values) / had:.3f}" if had else "-",
                            had,
                            f"{statistics.median(times) * 1000:.1f} ms",
                            f"{statistics.median(pages):.0f}" if pages else "-",
                        ]
                    )
        print()
        print(
            table(
                rows,
                [
                    "ef_search" if args.graph != "ivfflat" else "probes",
                    "k",
                    "conversation",
                    "overlap@k",
                    "evidence kept",
                    "evidence in exact",
                    f"walk p50 (k={max(args.k)})",
                    "pages a walk, p50",
                ],
            )
        )


if __name__ == "__main__":
    main()


__all__: list[Any] = []
