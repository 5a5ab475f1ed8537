"""Word search through each tier's covering index against through its table, on long texts.

A SQLite word search filters each FTS5 match in the same statement, looking it up by id
(``stores/sqlite/fts.py``, ``filtered_rows``). Through the table, the lookup reads a row
holding the text (and a message's context); through ``recall_search_rows`` /
``archival_search_rows`` (``schema.SEARCH_ROWS``), a few dozen bytes. This script times
both in one process, in alternating rounds, so the machine's drift falls on both alike.

Memories: each chosen BEAM dev chat padded to ``--size`` tokens with the other dev chats'
messages (``beam_scale.memory_messages``: the same memories as ``beam_scale.py``), once as
one agent's recall and once as its archival passages; words only (no vectors: what is
timed is the words search). Every question of the chat is searched, page of 10, in fts
mode, plain and with a date filter (which the table path reads from past the text).

Baseline: the same searches through the table (the index left unnamed), in the same run;
the ratio is the index's p50 over the table's.

Usage::

    python benchmarks/search_rows.py --data ../shared/bench/beam-dev.json \
        --data-dir /tmp/search-rows [--size 1000000] [--chats 2] [--rounds 4]

The memories are kept in ``--data-dir`` and reused.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_header, table  # noqa: E402
from beam_scale import memory_messages  # noqa: E402
from bench.locomo import load_locomo  # noqa: E402

from langgraph_memgpt.stores.sqlite import fts  # noqa: E402
from langgraph_memgpt.stores.sqlite.archival import NewPassage, SqliteArchivalMemory  # noqa: E402
from langgraph_memgpt.stores.sqlite.db import open_db  # noqa: E402
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory  # noqa: E402

EARLIEST = "2000-01-01"
"""The date filter's start: before every message, so it changes the path, not the matches."""


def open_memories(args: argparse.Namespace) -> list[tuple[Any, Any, list[str]]]:
    """Each chosen chat's (recall, archival, questions), built on first use."""
    chats = load_locomo(args.data)
    out = []
    for chat in chats[: args.chats]:
        others = [c for c in chats if c.sample_id != chat.sample_id]
        messages = memory_messages(chat, others, args.size)
        folder = args.data_dir / f"{args.size}" / chat.sample_id
        db = open_db(folder / "memory.sqlite")
        recall = SqliteRecallMemory(db, chat.sample_id, None, folder / "faiss")
        archive = SqliteArchivalMemory(db, chat.sample_id, embeddings=None, cache_dir=folder)
        if recall.count() == 0:
            ordered = sorted(messages, key=lambda m: (m.thread_id, m.created_at))
            for i in range(0, len(ordered), 256):
                recall.add(ordered[i : i + 256])
        if archive.count() == 0:
            for i in range(0, len(messages), 500):
                archive.insert_many(
                    [
                        NewPassage(m.text, thread_id=m.thread_id, created_at=m.created_at)
                        for m in messages[i : i + 500]
                    ]
                )
        out.append((recall, archive, [q.question for q in chat.questions]))
    return out


def p50_ms(searches: Sequence[Callable[[], object]]) -> float:
    """The median of one timed call of each search, in milliseconds."""
    spent = []
    for search in searches:
        start = time.perf_counter()
        search()
        spent.append(time.perf_counter() - start)
    return 1000 * statistics.median(spent)


def run(args: argparse.Namespace) -> None:
    """Time each tier's searches through the index and through the table, alternating."""
    memories = open_memories(args)
    print_header("Word search through the covering index and through the table")
    named = dict(fts.SEARCH_ROW_INDEXES)
    cases: dict[str, list[Callable[[], object]]] = {}
    for recall, archive, questions in memories:
        for q in questions:
            for tier, memory in (("recall", recall), ("archival", archive)):

                def plain(m: Any = memory, q: str = q) -> object:
                    return m.search(q, mode="fts", page_size=10)

                def dated(m: Any = memory, q: str = q) -> object:
                    return m.search(q, mode="fts", page_size=10, start_date=EARLIEST)

                cases.setdefault(f"{tier}", []).append(plain)
                cases.setdefault(f"{tier}, date filter", []).append(dated)
    for searches in cases.values():  # once, unmeasured: the pages read once
        p50_ms(searches)
    spent: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for path in ("table", "index"):
            fts.SEARCH_ROW_INDEXES = named if path == "index" else {}
            for name, searches in cases.items():
                spent.setdefault((name, path), []).append(p50_ms(searches))
    fts.SEARCH_ROW_INDEXES = named
    rows = []
    for name, searches in cases.items():
        table_p50 = statistics.median(spent[(name, "table")])
        index_p50 = statistics.median(spent[(name, "index")])
        rows.append(
            [
                name,
                len(searches),
                " ".join(f"{v:.1f}" for v in spent[(name, "table")]),
                " ".join(f"{v:.1f}" for v in spent[(name, "index")]),
                f"{index_p50 / table_p50:.2f}x",
            ]
        )
    print(f"{args.chats} chats at {args.size} tokens, {args.rounds} rounds (p50 ms per round)")
    print(table(rows, ["search", "queries", "table p50", "index p50", "index / table"]))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--chats", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    run(parser.parse_args(argv))


if __name__ == "__main__":
    main()
