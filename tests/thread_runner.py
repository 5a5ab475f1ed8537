"""Runs turns on one thread in its own process, for the one-run-per-thread test.

Usage: python thread_runner.py DATA_DIR CHECKPOINT_DB THREAD_ID NAME TURNS GO_FILE

CHECKPOINT_DB is a SQLite file, or a ``postgresql://`` URL: then memory lives in that
database too (`PostgresBackend`) and threads in ``PostgresSaver``.

Prints ``ready``, waits for GO_FILE, then sends TURNS messages ``NAME i`` to the thread
with a scripted model that takes its time (so the other process's runs overlap), and
prints ``done``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from checkpointers import memory_backend, open_saver
from langchain_core.messages import HumanMessage

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel


class SlowModel(ScriptedChatModel):
    """A scripted model that thinks for a while, like a real one."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.15)
        return super()._generate(messages, stop, run_manager, **kwargs)


def reply(text: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}


def main() -> None:
    data_dir, checkpoint_db, thread_id, name, turns, go = sys.argv[1:7]
    model = SlowModel.from_steps([reply(f"{name} reply {i}") for i in range(int(turns))])
    saver, _ = open_saver(checkpoint_db)
    graph = build_graph(model=model, memory=memory_backend(checkpoint_db, "none")).compile(
        checkpointer=saver
    )
    config = {"configurable": {"thread_id": thread_id}}
    ctx = Context(data_dir=data_dir, embedding_model="none")
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.01)
    for i in range(int(turns)):
        graph.invoke({"messages": [HumanMessage(f"{name} {i}")]}, config, context=ctx)
    print("done", flush=True)


if __name__ == "__main__":
    main()
