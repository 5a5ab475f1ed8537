"""Runs one turn of the agent in its own process (for persistence and crash tests).

Usage: python agent_process.py DATA_DIR CHECKPOINT_DB THREAD_ID SCRIPT_JSON MESSAGE

CHECKPOINT_DB is a SQLite file, or a ``postgresql://`` URL: then memory lives in that
database too (`PostgresBackend`) and the thread in ``PostgresSaver``.
Prints the turn's reply and state counters as one JSON line, then waits on stdin so the
parent can kill it with SIGKILL (a crash) instead of letting it exit cleanly.
"""

from __future__ import annotations

import json
import sys

from checkpointers import memory_backend, open_saver
from langchain_core.messages import HumanMessage

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel


def main() -> None:
    data_dir, checkpoint_db, thread_id, script, message = sys.argv[1:6]
    model = ScriptedChatModel.from_file(script)
    saver, _ = open_saver(checkpoint_db)
    graph = build_graph(
        model=model, summary_model=model, memory=memory_backend(checkpoint_db)
    ).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": thread_id}}
    ctx = Context(data_dir=data_dir, context_window=4000)
    out = graph.invoke({"messages": [HumanMessage(message)]}, config, context=ctx)
    values = graph.get_state(config).values
    print(
        json.dumps(
            {
                "reply": out["messages"][-1].content,
                "queue": [m.content for m in values["messages"]],
                "turn": values.get("turn"),
                "summary": values.get("summary", ""),
            }
        ),
        flush=True,
    )
    sys.stdin.read()


if __name__ == "__main__":
    main()
