"""Threads survive a killed process; long threads keep a bounded checkpoint; composition.

The killed-process test runs on both backends (`place`: a folder, or Postgres with
``PostgresSaver``); the others say why they stay on the embedded backend.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

from checkpointers import Place
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.sqlite import open_memory

HERE = Path(__file__).parents[1]


def run_turn(place: Place, replies: list[Any], message: str) -> dict[str, Any]:
    """One turn in a fresh process, killed with SIGKILL once it has answered."""
    script = place.data_dir / f"script-{message}.json"
    script.write_text(json.dumps(replies))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "agent_process.py"),
            str(place.data_dir / "data"),
            place.threads,
            "thread-1",
            str(script),
            message,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert line, proc.stderr.read() if proc.stderr else ""
    return json.loads(line)


def test_a_thread_continues_after_its_process_is_killed(place: Place) -> None:
    def send(text: str) -> dict[str, Any]:
        return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}

    first = run_turn(place, [send("Hi Ada")], "I am Ada")
    assert first["reply"] == "Hi Ada" and first["turn"] == 1
    second = run_turn(place, [send("You are Ada")], "who am I?")
    assert second["reply"] == "You are Ada"
    assert second["turn"] == 2
    assert second["queue"][0] == "I am Ada", "the queue came back from the checkpoint"
    stored = Place(place.kind, place.data_dir / "data", place.url)  # the processes' memory
    try:
        memory = stored.open(embedding_model="minilm")
        assert memory.recall.search("Ada", mode="fts").total >= 3
    finally:
        stored.close()


def _checkpoint_bytes(path: Path, thread_id: str) -> int:
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = ? "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            (thread_id,),
        ).fetchone()
        writes = conn.execute(
            "SELECT COALESCE(SUM(length(value)), 0) FROM writes WHERE thread_id = ? AND "
            "checkpoint_id = (SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ?)",
            (thread_id, thread_id),
        ).fetchone()
    return int(row[0]) + int(writes[0])


def test_a_500_turn_thread_keeps_a_bounded_checkpoint(tmp_path: Path) -> None:
    """SQLite only: the checkpoint holds the queue, which the loop bounds whatever backend
    holds memory (eviction on Postgres: test_graph_loop); 500 turns on Postgres would add
    about a minute to the suite for the same queue."""
    turns = 500
    model = ScriptedChatModel.from_steps([f"reply number {i} " + "ok " * 20 for i in range(turns)])
    summarizer = ScriptedChatModel.from_steps([f"I chatted a lot ({i})." for i in range(turns)])
    db = tmp_path / "checkpoints.sqlite"
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    graph = build_graph(model=model, summary_model=summarizer).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "long"}}
    # Words-only recall keeps 1,000 writes quick; boundedness does not depend on vectors.
    # 3,000 tokens: the instructions and tool schemas alone take about 2,000.
    ctx = Context(data_dir=str(tmp_path / "data"), context_window=3000, embedding_model="none")
    sizes: dict[int, int] = {}
    for i in range(turns):
        graph.invoke(
            {"messages": [HumanMessage(f"user message {i} " + "blah " * 30)]}, config, context=ctx
        )
        if i + 1 in (100, 250, 500):
            sizes[i + 1] = _checkpoint_bytes(db, "long")
    state = graph.get_state(config).values
    assert state["turn"] == turns and state["evicted_count"] > 800
    assert len(state["messages"]) < 60
    assert sizes[500] <= 1.5 * sizes[100], sizes
    # Every user message and reply is in recall (plus the runtime's pressure alerts).
    recall = open_memory(ctx.data_dir, "default", embedding_model="none").recall
    assert recall.count() >= 2 * turns
    assert recall.search("user message 3", mode="fts").total >= 1


def test_the_graph_mounts_as_a_node_of_a_parent_graph(tmp_path: Path, monkeypatch: Any) -> None:
    """SQLite only: about composing graphs, not memory (the default backend is enough)."""
    monkeypatch.setenv("MEMGPT_DATA_DIR", str(tmp_path))
    child = build_graph(model=ScriptedChatModel.from_steps(["child says hi"])).compile()
    parent = StateGraph(MessagesState)
    parent.add_node("memgpt", child)
    parent.add_edge(START, "memgpt")
    app = parent.compile(checkpointer=InMemorySaver())
    out = app.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "p"}})
    assert isinstance(out["messages"][-1], AIMessage)
    assert out["messages"][-1].content == "child says hi"


def test_the_graph_runs_as_a_wrapped_call_from_a_parent_with_another_schema(tmp_path: Path) -> None:
    """SQLite only: about composing graphs, not memory (the default backend is enough)."""

    class Ticket(TypedDict):
        question: str
        answer: str

    child = build_graph(
        model=ScriptedChatModel.from_steps(
            [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "42"}}]}]
        )
    ).compile()

    def ask(ticket: Ticket) -> dict[str, str]:
        out = child.invoke(
            {"messages": [HumanMessage(ticket["question"])]},
            context=Context(data_dir=str(tmp_path), agent_id="helpdesk"),
        )
        return {"answer": out["messages"][-1].content}

    parent = StateGraph(Ticket)
    parent.add_node("ask", ask)
    parent.add_edge(START, "ask")
    assert parent.compile().invoke({"question": "meaning of life?"})["answer"] == "42"
    assert open_memory(tmp_path, "helpdesk").recall.count() >= 2
