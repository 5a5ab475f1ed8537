"""BEAM dev chats in memories of growing size: what recall search finds, and what it costs.

For each dev chat (``../shared/bench/beam-dev.json``, BEAM's 100K chats in LoCoMo's schema)
and each size, one agent's recall holds the chat and, as filler up to the size in tokens,
the other dev chats' messages repeated (new threads and ids; half dated before the chat,
half after, so the chat sits inside its history, not at either end). Every question of the
chat is searched in each mode (page of 10, the agent's own ``SqliteRecallMemory.search``) and
scored with LongMemEval's recall_any@10 / recall_all@10 on the chat's evidence, overall
and per BEAM ability; search time per query, p50 and p95, embedding of the query excluded
(the query vector is computed once before the timed call, as a cached embedding would be).
The first search of each mode after a memory is opened loads its indexes (FAISS files, the
database's pages): it is timed apart ("first ms", p50 over the chats), so the per-query
figures are those of a memory in use.

Baselines in the same run:
- quality: plain BM25 (``bench.bm25.BM25``, the ``bench locomo`` baseline) over the same
  agent's messages, questions as queries;
- speed: ``--before N`` times the first N questions again with each long text's part words
  counted at search time (every text treated as not yet caught up: the code before
  ``stores/sqlite/part_terms`` and ``stores/postgres/part_terms``), as a ratio; on both
  backends.

Usage::

    python benchmarks/beam_scale.py --data ../shared/bench/beam-dev.json \
        --sizes 0 1000000 --modes fts --data-dir /tmp/beam-scale

``--sizes 0`` is the chat alone. Memories are kept in ``--data-dir`` (or, with
``--database-url URL``, in that Postgres: one agent per chat and size) and reused.
``--embeddings minilm`` adds vectors (each distinct text embedded once, cached in
``--data-dir``); slow on two cores for the first run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CachedEmbeddings, percentile, print_header, table  # noqa: E402
from bench.bm25 import BM25  # noqa: E402
from bench.locomo import Conversation, load_locomo, recall_messages  # noqa: E402
from bench.metrics import recall_all, recall_any  # noqa: E402

from langgraph_memgpt.stores.sqlite import part_terms  # noqa: E402
from langgraph_memgpt.stores.sqlite.db import open_db  # noqa: E402
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory  # noqa: E402
from langgraph_memgpt.stores.types import RecallMessage  # noqa: E402
from langgraph_memgpt.turn.tokens import _count_text  # noqa: E402

K = 10


def tokens(text: str) -> int:
    """cl100k tokens of a text (how BEAM sizes its chats)."""
    return _count_text(text, "cl100k_base")


def abilities(path: Path) -> dict[tuple[str, str], str]:
    """``{(sample id, question): BEAM ability}`` from the file's ``qa[].beam_type``."""
    raw = json.loads(path.read_text())
    return {
        (str(s["sample_id"]), str(q["question"])): str(q.get("beam_type", "?"))
        for s in raw
        for q in s.get("qa", [])
    }


def memory_messages(
    chat: Conversation, others: Sequence[Conversation], size: int
) -> list[RecallMessage]:
    """The chat's messages and filler from ``others`` up to ``size`` tokens in all."""
    agent = chat.sample_id
    own = recall_messages(chat, agent)
    total = sum(tokens(m.text) for m in own)
    filler: list[list[RecallMessage]] = []  # sessions
    copy = 0
    while total < size and others:
        for other in others:
            for session in other.sessions:
                if total >= size:
                    break
                thread = f"filler-{copy}-{other.sample_id}-{session.key}"
                messages = [
                    dataclasses.replace(
                        m,
                        agent_id=agent,
                        thread_id=thread,
                        message_id=f"filler-{copy}:{m.message_id}",
                    )
                    for m in recall_messages(other, agent)
                    if m.thread_id == session.key
                ]
                total += sum(tokens(m.text) for m in messages)
                filler.append(messages)
        copy += 1
    first = min(s.created_at for s in chat.sessions)
    last = max(s.created_at for s in chat.sessions)
    older = len(filler) // 2
    out = list(own)
    for n, session_messages in enumerate(filler):
        when = first - timedelta(days=older - n) if n < older else last + timedelta(days=n)
        out.extend(dataclasses.replace(m, created_at=when.isoformat()) for m in session_messages)
    return out


@contextmanager
def counted_at_search(recall: Any, db: Any) -> Iterator[None]:
    """Every long text's part words counted from its text at search time (the old path).

    Every text is marked not yet caught up, so the searches inside take the path of such
    texts: split and tokenize. SQLite (``db``): in a transaction rolled back afterwards.
    Postgres (``db`` None): the agent's long texts marked and committed (the searches run
    on the store's own connections), then counted again by a write's catch-up.
    """
    if db is not None:
        db.conn.execute("BEGIN")
        try:
            part_terms.mark_all_stale(db.conn)
            yield
        finally:
            db.conn.execute("ROLLBACK")
        return
    from langgraph_memgpt.stores.postgres import part_terms as pg_part_terms

    with recall.pool.connection() as conn, conn.transaction():
        pg_part_terms.mark_all_stale(conn, recall.agent_id)
    try:
        yield
    finally:
        with recall.pool.connection() as conn, conn.transaction():
            pg_part_terms.catch_up(conn)


@contextmanager
def open_recall(
    args: argparse.Namespace, chat: str, size: int, embeddings: Any
) -> Iterator[tuple[Any, Any]]:
    """One (chat, size) agent's recall: SQLite in ``--data-dir``, or ``--database-url``.

    Yields ``(recall, db)``; ``db`` is the SQLite database, None on Postgres.
    """
    if args.database_url:
        from langgraph_memgpt.stores.postgres import PostgresBackend

        model = "none" if embeddings is None else args.embeddings
        backend = PostgresBackend(args.database_url, embedding_model=model, embeddings=embeddings)
        try:
            yield backend.open(f"{chat}-{size}").recall, None  # one agent a size
        finally:
            backend.close()
        return
    folder = args.data_dir / f"{args.embeddings}-{size}" / chat
    db = open_db(folder / "memory.sqlite")
    recall = SqliteRecallMemory(db, chat, embeddings, folder / "faiss")
    try:
        yield recall, db
    finally:
        recall.close()
        db.conn.close()


def add_all(recall: Any, messages: Sequence[RecallMessage]) -> int:
    """Ingest in order: the store's bulk ingest where it has one, else chunks of 256."""
    if hasattr(recall, "add_many"):
        return int(recall.add_many(messages))
    ordered = sorted(messages, key=lambda m: (m.thread_id, m.created_at))
    return sum(int(recall.add(ordered[i : i + 256])) for i in range(0, len(ordered), 256))


def timed_search(recall: SqliteRecallMemory, question: str, mode: str) -> tuple[list[str], float]:
    """The ranked message ids of one search and its seconds (query vector made before)."""
    if recall.embeddings is not None and mode != "fts":
        recall.embeddings.embed_query(question)  # warm the cache: not what is timed
    start = time.perf_counter()
    page = recall.search(question, mode=mode, page_size=K)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    return [h.item.message_id for h in page.hits], seconds


def run(args: argparse.Namespace) -> None:
    """Build each (chat, size) memory, search its questions, print the figures."""
    chats = load_locomo(args.data)
    kinds = abilities(args.data)
    if args.chats:
        chosen = [c for c in chats if c.sample_id in set(args.chats)]
    else:
        chosen = chats
    modes = [m for m in args.modes.split(",") if m]
    embeddings = None
    if args.embeddings == "minilm":
        from langgraph_memgpt.stores.embeddings import get_embeddings

        inner = get_embeddings("minilm")
        args.data_dir.mkdir(parents=True, exist_ok=True)
        embeddings = CachedEmbeddings(
            inner, args.data_dir / "minilm-vectors.sqlite", "all-MiniLM-L6-v2", 384
        )
    print_header("BEAM dev at growing memory sizes (benchmarks/beam_scale.py)")
    rows: list[list[object]] = []
    per_ability: dict[tuple[int, str, str], list[tuple[float, float]]] = {}
    for size in args.sizes:
        scores: dict[str, list[tuple[float, float]]] = {}
        times: dict[str, list[float]] = {}
        first: dict[str, list[float]] = {}
        before: list[float] = []
        before_now: list[float] = []
        memory_tokens: list[int] = []
        ingest: list[tuple[int, float]] = []
        for chat in chosen:
            others = [c for c in chats if c.sample_id != chat.sample_id]
            messages = memory_messages(chat, others, size)
            memory_tokens.append(sum(tokens(m.text) for m in messages))
            with open_recall(args, chat.sample_id, size, embeddings) as (recall, db):
                agent = recall.agent_id
                start = time.perf_counter()
                added = add_all(recall, [dataclasses.replace(m, agent_id=agent) for m in messages])
                if added:
                    ingest.append((added, time.perf_counter() - start))
                texts = {m.message_id: m.text for m in messages}
                ids = list(texts)
                bm25 = BM25([texts[i] for i in ids])
                for mode in modes:  # the first search after opening loads the indexes
                    first.setdefault(mode, []).append(
                        timed_search(recall, chat.questions[0].question, mode)[1]
                    )
                for q in chat.questions:
                    evidence = {chat.message_id(e) for e in q.evidence}
                    kind = kinds.get((chat.sample_id, q.question), "?")
                    ranked_bm25 = [ids[i] for i in bm25.rank(q.question, K)]
                    got = (
                        recall_any(ranked_bm25, evidence, K),
                        recall_all(ranked_bm25, evidence, K),
                    )
                    scores.setdefault("bm25", []).append(got)
                    per_ability.setdefault((size, "bm25", kind), []).append(got)
                    for mode in modes:
                        ranked, seconds = timed_search(recall, q.question, mode)
                        got = (recall_any(ranked, evidence, K), recall_all(ranked, evidence, K))
                        scores.setdefault(mode, []).append(got)
                        times.setdefault(mode, []).append(seconds)
                        per_ability.setdefault((size, mode, kind), []).append(got)
                if args.before:
                    asked = [q.question for q in chat.questions[: args.before]]
                    before_now.extend(timed_search(recall, q, "fts")[1] for q in asked)
                    with counted_at_search(recall, db):
                        before.extend(timed_search(recall, q, "fts")[1] for q in asked)
        label = f"{statistics.mean(memory_tokens) / 1000:.0f}k"
        for name, got in scores.items():
            spent = times.get(name, [])
            rows.append(
                [
                    label,
                    name,
                    len(got),
                    f"{statistics.mean(a for a, _ in got):.3f}",
                    f"{statistics.mean(b for _, b in got):.3f}",
                    f"{1000 * percentile(spent, 50):.1f}" if spent else "-",
                    f"{1000 * percentile(spent, 95):.1f}" if spent else "-",
                    f"{1000 * percentile(first[name], 50):.1f}" if name in first else "-",
                ]
            )
        for added, seconds in ingest:
            print(f"ingest {label}: {added} messages in {seconds:.1f} s ({added / seconds:.1f}/s)")
        if before:
            now, old = percentile(before_now, 50), percentile(before, 50)
            print(
                f"words search p50 at {label}, {len(before)} questions: kept counts "
                f"{1000 * now:.1f} ms, counted at search (before) {1000 * old:.1f} ms: "
                f"{old / now:.1f}x faster"
            )
    print()
    print(
        table(
            rows,
            [
                "tokens/agent",
                "search",
                "questions",
                "recall_any@10",
                "recall_all@10",
                "p50 ms",
                "p95 ms",
                "first ms",
            ],
        )
    )
    print()
    ability_rows = [
        [
            f"{size}",
            name,
            kind,
            len(got),
            f"{statistics.mean(a for a, _ in got):.3f}",
            f"{statistics.mean(b for _, b in got):.3f}",
        ]
        for (size, name, kind), got in sorted(per_ability.items())
    ]
    print(table(ability_rows, ["size", "search", "ability", "n", "any@10", "all@10"]))


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1_000_000])
    parser.add_argument("--modes", default="fts,hybrid,vector")
    parser.add_argument("--embeddings", choices=["none", "minilm"], default="none")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--chats", nargs="*", help="sample ids (default: every chat)")
    parser.add_argument(
        "--database-url", help="Postgres holding the agents (one per chat and size) instead"
    )
    parser.add_argument(
        "--before", type=int, default=0, help="questions per chat timed with the old path too"
    )
    args = parser.parse_args(argv)
    if args.embeddings == "none":
        args.modes = ",".join(m for m in args.modes.split(",") if m == "fts") or "fts"
    run(args)


if __name__ == "__main__":
    main()
