"""Document ingest throughput: Markdown files into archival memory, chunked and embedded.

Writes seeded synthetic Markdown files (paragraphs of English words), then times
``ingest_file`` into an embedded (SQLite + FAISS) agent with the real MiniLM and with no
embedding model (reading, chunking and storing only), and a second ingest of the same
files (unchanged: nothing is written). Baseline in the same run: inserting the same chunk
texts with ``archival.insert_many`` directly (no reading, no chunking, no keys). Nothing
asserts on timings.

    .venv/bin/python benchmarks/ingest.py [--files 10] [--kib 20] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Vocabulary, print_header, table  # noqa: E402

from langgraph_memgpt.ops.ingest import chunk_text, document_text, ingest_file  # noqa: E402
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings  # noqa: E402
from langgraph_memgpt.stores.sqlite import AgentMemory, close_all  # noqa: E402


def write_corpus(folder: Path, files: int, kib: int) -> list[Path]:
    rng = np.random.default_rng(11)
    words = Vocabulary()
    paths = []
    for n in range(files):
        parts = [f"# Document {n}"]
        while sum(len(p) for p in parts) < kib * 1024:
            parts.append(" ".join(words.texts(rng, 1, 30, 120)) + ".")
        path = folder / f"doc{n:03d}.md"
        path.write_text("\n\n".join(parts), encoding="utf-8")
        paths.append(path)
    return paths


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--kib", type=int, default=20, help="size of each file")
    parser.add_argument("--quick", action="store_true", help="4 files of 10 KiB")
    args = parser.parse_args()
    if args.quick:
        args.files, args.kib = 4, 10
    print_header(f"ingest: {args.files} Markdown files of {args.kib} KiB")
    with tempfile.TemporaryDirectory(prefix="memgpt-bench-ingest-") as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        paths = write_corpus(docs, args.files, args.kib)
        chunks = sum(len(chunk_text(document_text(p))) for p in paths)
        kib = sum(p.stat().st_size for p in paths) / 1024
        texts = [c.text for p in paths for c in chunk_text(document_text(p))]
        root = Path(tmp) / "data"
        rows = []
        for label, embeddings in (("MiniLM", MiniLMEmbeddings()), ("no embedding model", None)):
            memory = AgentMemory.open(root, f"agent-{label[:2]}", embeddings)
            first = timed(lambda m=memory: [ingest_file(m, p) for p in paths])
            again = timed(lambda m=memory: [ingest_file(m, p) for p in paths])
            rows.append((f"ingest_file, {label}", first, chunks / first, kib / first))
            rows.append((f"again, unchanged ({label})", again, chunks / again, kib / again))
            base = AgentMemory.open(root, f"base-{label[:2]}", embeddings)
            direct = timed(lambda b=base: b.archival.insert_many(texts))
            rows.append((f"baseline: insert_many, {label}", direct, chunks / direct, kib / direct))
            memory.close()
            base.close()
        close_all()
        print(f"{chunks} chunks of at most 1200 characters from {kib:,.0f} KiB\n")
        print(
            table(
                [(r[0], f"{r[1]:.2f}", f"{r[2]:,.1f}", f"{r[3]:,.1f}") for r in rows],
                ["step", "seconds", "chunks/s", "KiB/s"],
            )
        )


if __name__ == "__main__":
    main()
