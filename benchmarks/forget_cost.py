"""What one ``forget`` costs on the embedded backend as memory grows.

Seeds one agent with N short synthetic messages (no embedding model: the cost measured is
the stores' and the clean-up's, not MiniLM's), then times ``AgentMemory.scrub`` alone (the
full-text indexes merged with FTS5 ``optimize``, the write-ahead log truncated) and
``forget_messages`` of one message (its rows, the scan for tool messages quoting it, the
summaries and facts made from it, and the scrub). Nothing asserts on timings.

    .venv/bin/python benchmarks/forget_cost.py [--messages 100000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

from langgraph_memgpt.ops.forget import forget_messages
from langgraph_memgpt.stores.sqlite import AgentMemory
from langgraph_memgpt.stores.types import RecallMessage


def main() -> None:
    """Seed, then time the scrub and one forget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    n = parser.parse_args().messages
    words = [f"w{i}" for i in range(5000)]
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as folder:
        memory = AgentMemory.open(folder, "ada", None)
        started = time.perf_counter()
        for start in range(0, n, 1000):
            memory.recall.add(
                [
                    RecallMessage(
                        "ada",
                        "t1",
                        f"m{i}",
                        "user",
                        " ".join(rng.choices(words, k=20)),
                        f"2026-11-01T10:00:00.{i:06d}+00:00",
                    )
                    for i in range(start, min(n, start + 1000))
                ]
            )
        print(f"seed {n} messages: {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        memory.scrub()
        print(f"scrub (index merge + WAL truncate): {time.perf_counter() - started:.2f} s")
        started = time.perf_counter()
        forget_messages(memory, ["m5"], actor="user", checkpointer=None)
        print(f"forget_messages of one message: {time.perf_counter() - started:.2f} s")
        memory.close()


if __name__ == "__main__":
    main()
