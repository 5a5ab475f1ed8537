"""Export / import time of an agent with 10k recall messages (and archival passages).

Seeds an embedded (SQLite + FAISS) agent with seeded synthetic messages over several
threads and some passages, then times:

* ``export_agent`` (the file ``langgraph-memgpt export`` writes) and its size;
* ``read_export`` alone (the full check an import makes before it writes);
* ``import_agent`` under a new id with lookup vectors (the stores' own cost), with no
  embedding model (words only), and with the real MiniLM (what a user waits for);
* a second import of the same file (idempotent: nothing new is written).

Baseline in the same run: SQLite's online backup of the whole database file, the copy a
user could make instead (not portable across backends or embedding models, and it holds
every agent). Nothing asserts on timings.

    .venv/bin/python benchmarks/export_import.py [--messages 10000] [--passages 1000] [--quick]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    LookupEmbeddings,
    Vocabulary,
    print_header,
    recall_messages,
    table,
    timestamps,
)

from langgraph_memgpt.ops.export_file import read_export
from langgraph_memgpt.ops.transfer import export_agent, import_agent  # noqa: E402
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings  # noqa: E402
from langgraph_memgpt.stores.passages import NewPassage  # noqa: E402
from langgraph_memgpt.stores.sqlite import AgentMemory, close_all  # noqa: E402


def seed(root: Path, messages: int, passages: int) -> None:
    rng = np.random.default_rng(7)
    words = Vocabulary()
    memory = AgentMemory.open(root, "source", LookupEmbeddings())
    memory.core.ensure_defaults(persona="I am Sam.", human="Likes hiking.")
    for i in range(20):
        memory.core.append("human", f"fact {i}: {' '.join(words.texts(rng, 1, 4, 8))}")
    history = recall_messages(
        words.texts(rng, messages), sessions=max(1, messages // 500), agent="source"
    )
    memory.recall.add_many(history)
    stamps = timestamps(passages, start="2024-02-01T00:00:00+00:00", step_s=3600)
    memory.archival.insert_many(
        [
            NewPassage(text, tags=["bench"], created_at=stamps[i])
            for i, text in enumerate(words.texts(rng, passages, 20, 80))
        ]
    )
    memory.close()


def timed(label: str, fn: Callable[[], object]) -> tuple[str, float]:
    start = time.perf_counter()
    fn()
    return label, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--passages", type=int, default=1_000)
    parser.add_argument("--no-minilm", action="store_true", help="skip the real-model import")
    parser.add_argument("--quick", action="store_true", help="1k messages, 100 passages")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.passages = 1_000, 100
    print_header(f"export / import: {args.messages} messages, {args.passages} passages")
    with tempfile.TemporaryDirectory(prefix="memgpt-bench-transfer-") as tmp:
        root = Path(tmp) / "data"
        started = time.perf_counter()
        seed(root, args.messages, args.passages)
        print(f"seeded in {time.perf_counter() - started:.1f} s (lookup vectors)\n", flush=True)
        out = Path(tmp) / "source.jsonl"
        rows: list[tuple[str, float]] = []
        source = AgentMemory.open(root, "source", None, read_only=True)
        rows.append(timed("export_agent (words and rows only)", lambda: export_agent(source, out)))
        source.close()
        rows.append(timed("read_export (full check, no write)", lambda: read_export(out)))

        lookup = AgentMemory.open(root, "copy-lookup", LookupEmbeddings())
        rows.append(timed("import_agent, lookup vectors", lambda: import_agent(lookup, out)))
        rows.append(
            timed(
                "import_agent again (nothing new)",
                lambda: import_agent(lookup, out, mode="merge"),
            )
        )
        lookup.close()
        words_only = AgentMemory.open(root, "copy-words", None)
        rows.append(
            timed("import_agent, no embedding model", lambda: import_agent(words_only, out))
        )
        words_only.close()
        if not args.no_minilm:
            real = AgentMemory.open(root, "copy-minilm", MiniLMEmbeddings())
            rows.append(timed("import_agent, MiniLM (re-embeds)", lambda: import_agent(real, out)))
            real.close()
        backup = Path(tmp) / "backup.sqlite"

        def copy_db() -> None:
            with sqlite3.connect(root / "memory.sqlite") as src, sqlite3.connect(backup) as dst:
                src.backup(dst)

        rows.append(timed("baseline: sqlite3 backup of the whole db", copy_db))
        close_all()
        size = out.stat().st_size / 2**20
        items = args.messages + args.passages
        print(
            table(
                [(label, f"{seconds:.2f}", f"{items / seconds:,.0f}") for label, seconds in rows],
                ["step", "seconds", "items/s"],
            )
        )
        print(f"\nexport file: {size:.1f} MiB for {items} items (JSON Lines, no vectors)")
        print(
            f"database after all imports: {(root / 'memory.sqlite').stat().st_size / 2**20:.1f} MiB"
        )


if __name__ == "__main__":
    main()
