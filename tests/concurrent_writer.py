"""Writes recall messages and archival passages for one agent, racing another process.

Usage: python concurrent_writer.py DATA_DIR AGENT_ID WRITER N M GO_FILE [stores|graph] [URL]

Prints ``ready`` once imported (and the embedding model loaded), waits until GO_FILE
exists, then opens the agent's memory (so two writers also race to create the database)
and interleaves writes: N recall messages of its own, the same N shared messages the other
writer also writes (same ids: exactly one row each must survive), and M passages. With
``graph``, it instead runs N turns of the agent through the graph, each saving a passage.
Exits 0 after printing ``done``; any error is a traceback and a non-zero exit.

With a ``postgresql://`` URL, memory (and, with ``graph``, the thread) lives in that
database instead: `PostgresBackend`, ``PostgresSaver``.
"""

from __future__ import annotations

import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from checkpointers import memory_backend, open_saver

from langgraph_memgpt.stores.embeddings import get_embeddings
from langgraph_memgpt.stores.sqlite import open_memory
from langgraph_memgpt.stores.types import RecallMessage


def wait_for(go_file: Path) -> None:
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while not go_file.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("never told to start")
        time.sleep(0.005)


def write_stores(data_dir: str, agent_id: str, writer: str, n: int, m: int, url: str) -> None:
    backend = memory_backend(url)
    memory: Any = open_memory(data_dir, agent_id) if backend is None else backend.open(agent_id)
    # The embedded memory's process lock (Postgres serialises writers itself).
    lock = memory.lock if backend is None else nullcontext()
    for i in range(max(n, m)):
        if i < n:
            own = RecallMessage(
                agent_id=agent_id,
                thread_id=f"thread-{writer}",
                message_id=f"{writer}-m{i}",
                role="user" if i % 2 else "assistant",
                text=f"{writer} says message {i}",
                created_at="2026-01-01T00:00:00+00:00",
                turn=i,
            )
            shared = RecallMessage(
                agent_id=agent_id,
                thread_id="thread-shared",
                message_id=f"shared-m{i}",
                role="user",
                text=f"shared message {i}",
                created_at="2026-01-02T00:00:00+00:00",
                turn=i,
            )
            with lock:
                memory.recall.add([own])
                memory.recall.add([shared])
        if i < m:
            with lock:
                memory.archival.insert(
                    f"{writer} passage {i}: the {writer} fact number {i}", tags=[writer]
                )


def run_graph(data_dir: str, agent_id: str, writer: str, n: int, checkpoints: str) -> None:
    from langchain_core.messages import HumanMessage

    from langgraph_memgpt import Context, build_graph
    from langgraph_memgpt.llm.scripted import ScriptedChatModel

    script = [
        {
            "content": "",
            "tool_calls": [
                {
                    "name": "archival_memory_insert",
                    "args": {"content": f"{writer} turn {i} fact", "tags": [writer]},
                },
                {"name": "send_message", "args": {"message": "saved"}},
            ],
        }
        for i in range(n)
    ]
    saver, _ = open_saver(checkpoints)
    graph = build_graph(
        model=ScriptedChatModel.from_steps(script), memory=memory_backend(checkpoints)
    ).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": f"thread-{writer}"}}
    ctx = Context(data_dir=data_dir, agent_id=agent_id)
    for i in range(n):
        graph.invoke({"messages": [HumanMessage(f"{writer} turn {i}")]}, config, context=ctx)


def main() -> None:
    data_dir, agent_id, writer, n, m, go_file = sys.argv[1:7]
    mode = sys.argv[7] if len(sys.argv) > 7 else "stores"
    url = sys.argv[8] if len(sys.argv) > 8 else ""
    get_embeddings("minilm").embed_query("warm up")  # load the model before the race
    wait_for(Path(go_file))
    if mode == "graph":
        checkpoints = url or str(Path(go_file).with_name(f"{writer}.cp"))
        run_graph(data_dir, agent_id, writer, int(n), checkpoints)
    else:
        write_stores(data_dir, agent_id, writer, int(n), int(m), url)
    print("done", flush=True)


if __name__ == "__main__":
    main()
