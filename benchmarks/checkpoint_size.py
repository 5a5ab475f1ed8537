"""Checkpoint size per thread as a conversation grows: bounded queue vs keep-everything.

The same scripted conversation (user message of 15-45 words, reply of 10-30 words sent
with ``send_message``) runs through:

* ours: the MemGPT graph with a 4,096-token window, ``SqliteSaver`` on a file, and
  ``embedding_model="none"`` (words-only recall: keeps thousands of turns quick, and
  vectors live in the memory database, never in the checkpoint);
* baseline: a plain LangGraph tool-calling agent (model node + ``ToolNode``,
  ``MessagesState``) on its own ``SqliteSaver`` file, which keeps every message in state.
  It replays the same ``send_message`` call, then the final text reply a ReAct loop
  needs to stop.

Measured at 100, 1,000 and 5,000 turns: the bytes of the thread's *latest checkpoint plus
its pending writes* (``length(checkpoint) + sum(length(value))`` in the SqliteSaver
tables: what must be read to resume the thread), the messages in state, and the mean
wall time per turn over the turns just before. Both agents run with
``durability="exit"`` (one checkpoint per turn instead of one per step: the latest
checkpoint is the same, and the keep-everything baseline would otherwise spend most of
5,000 turns re-serialising its history), and older checkpoints of the thread are deleted
every 100 turns so the files stay small; neither affects the figure measured.

The baseline deserialises its whole history on every turn (O(n) per turn: ~1.4 s per turn
at 5,000 turns here, about an hour for the full run), so past ``--real-baseline`` turns
(default 1,000) its turns are appended with ``update_state`` (message copies of its own
real turns, same shapes and fields), except the 50 turns before each mark, which run for
real so that ms/turn is measured and the checkpoint is written by the loop itself.

Run: ``.venv/bin/python benchmarks/checkpoint_size.py [--turns 100 1000 5000] [--quick]``
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from _common import Vocabulary, load_average, print_header, ratio, rss_mib, table
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel

WINDOW = 4096
THREAD = "long"
PRUNE_EVERY = 100
TIMED_TURNS = 50
REAL_BASELINE_TURNS = 1000


def latest_bytes(conn: sqlite3.Connection, thread_id: str) -> int:
    """Bytes of the thread's latest checkpoint plus the writes pending on it."""
    row = conn.execute(
        "SELECT checkpoint_id, length(checkpoint) + length(metadata) FROM checkpoints "
        "WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1",
        (thread_id,),
    ).fetchone()
    writes = conn.execute(
        "SELECT COALESCE(SUM(length(value)), 0) FROM writes "
        "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
        (thread_id, row[0]),
    ).fetchone()
    return int(row[1]) + int(writes[0])


def prune(conn: sqlite3.Connection, thread_id: str) -> None:
    """Delete every checkpoint of the thread but the latest (and their writes)."""
    (latest,) = conn.execute(
        "SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ?", (thread_id,)
    ).fetchone()
    with conn:
        conn.execute(
            "DELETE FROM writes WHERE thread_id = ? AND checkpoint_id < ?", (thread_id, latest)
        )
        conn.execute(
            "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id < ?",
            (thread_id, latest),
        )


def forget_prompts(*models: ScriptedChatModel) -> None:
    """Drop the prompts the scripted models keep for assertions, keeping their count.

    Each turn deserialises the state afresh, so kept prompts would hold a new copy of the
    whole history per call: gigabytes for the baseline, and garbage-collector time that
    would be charged to its turns.
    """
    for model in models:
        for i in range(max(0, len(model.calls) - 4), len(model.calls)):
            model.calls[i] = []


@tool
def send_message(message: str) -> str:
    """Send a message to the user."""
    return "Sent message successfully."


def _send(reply: str) -> dict[str, Any]:
    call = {"name": "send_message", "args": {"message": reply}}
    return {"content": "", "tool_calls": [{**call, "id": f"call_{uuid.uuid4().hex[:24]}"}]}


def ours(root: Path, users: list[str], replies: list[str]) -> Any:
    model = ScriptedChatModel.from_steps([_send(r) for r in replies])
    summarizer = ScriptedChatModel.from_steps(
        [f"I chatted with the user; summary number {i}, nothing urgent." for i in range(len(users))]
    )
    conn = sqlite3.connect(root / "ours.sqlite", check_same_thread=False)
    graph = build_graph(model=model, summary_model=summarizer).compile(
        checkpointer=SqliteSaver(conn)
    )
    ctx = Context(data_dir=str(root / "memory"), context_window=WINDOW, embedding_model="none")

    def invoke(text: str) -> int:
        out = graph.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": THREAD}},
            context=ctx,
            durability="exit",
        )
        forget_prompts(model, summarizer)
        return len(out["messages"])

    return conn, invoke


def baseline(root: Path, users: list[str], replies: list[str]) -> Any:
    steps: list[dict[str, Any] | str] = []
    for reply in replies:
        steps += [_send(reply), reply]
    model = ScriptedChatModel.from_steps(steps)
    bound = model.bind_tools([send_message])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([send_message]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    conn = sqlite3.connect(root / "baseline.sqlite", check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    config = {"configurable": {"thread_id": THREAD}}

    def invoke(text: str) -> int:
        out = graph.invoke({"messages": [HumanMessage(text)]}, config, durability="exit")
        forget_prompts(model)
        return len(out["messages"])

    def fast_forward(texts: list[str], answers: list[str]) -> None:
        """Append turns to the state as the loop would, without running the loop."""
        human, call, result, reply = graph.get_state(config).values["messages"][-4:]
        new: list[Any] = []
        for text, answer in zip(texts, answers, strict=True):
            call_id = f"call_{uuid.uuid4().hex[:24]}"
            tool_call = {
                "name": "send_message",
                "args": {"message": answer},
                "id": call_id,
                "type": "tool_call",
            }
            new += [
                human.model_copy(update={"content": text, "id": str(uuid.uuid4())}),
                call.model_copy(update={"id": str(uuid.uuid4()), "tool_calls": [tool_call]}),
                result.model_copy(update={"id": str(uuid.uuid4()), "tool_call_id": call_id}),
                reply.model_copy(update={"content": answer, "id": str(uuid.uuid4())}),
            ]
        graph.update_state(config, {"messages": new}, as_node="agent")
        model.calls.extend([] for _ in range(2 * len(texts)))  # keep the script aligned

    return conn, invoke, fast_forward


def run(
    name: str,
    factory: Any,
    root: Path,
    users: list[str],
    replies: list[str],
    marks: list[int],
    real_until: int | None = None,
) -> dict[int, tuple[int, int, float]]:
    """Run the conversation, measuring at ``marks``.

    Past ``real_until``, turns are appended with ``fast_forward`` except the 50 before
    each mark, which run for real (so ms/turn is always measured).
    """
    made = factory(root, users, replies)
    conn, invoke = made[0], made[1]
    out: dict[int, tuple[int, int, float]] = {}
    window: list[float] = []
    start_all = time.perf_counter()
    i = 0
    while i < len(users):
        if real_until is not None and i >= real_until:
            target = min((m for m in marks if m > i), default=len(users)) - TIMED_TURNS
            if target > i:
                for chunk in range(i, target, 500):
                    stop = min(target, chunk + 500)
                    made[2](users[chunk:stop], replies[chunk:stop])
                    prune(conn, THREAD)
                print(f"  {name:<8} turns {i + 1:,}..{target:,} appended with update_state")
                i = target
        start = time.perf_counter()
        held = invoke(users[i])
        window.append(time.perf_counter() - start)
        i += 1
        if i % PRUNE_EVERY == 0:
            prune(conn, THREAD)
        if i in marks:
            out[i] = (latest_bytes(conn, THREAD), held, float(np.mean(window[-TIMED_TURNS:])))
            print(
                f"  {name:<8} turn {i:>5,}: latest checkpoint {out[i][0] / 1024:,.1f} KiB, "
                f"{held:,} messages in state, {out[i][2] * 1000:.1f} ms/turn "
                f"(elapsed {time.perf_counter() - start_all:,.0f} s)",
                flush=True,
            )
    conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument(
        "--real-baseline",
        type=int,
        default=REAL_BASELINE_TURNS,
        help="baseline turns run for real; later ones are appended with update_state",
    )
    parser.add_argument("--quick", action="store_true", help="100 and 300 turns, < 1 minute")
    args = parser.parse_args()
    if args.quick:
        args.turns = [100, 300]
    marks = sorted(set(args.turns))
    total = marks[-1]

    print_header("checkpoint_size: latest checkpoint per thread vs turns")
    print(
        f"Ours: MemGPT graph, {WINDOW}-token window, embedding_model='none' (for speed; vectors\n"
        "never enter the checkpoint), SqliteSaver file. Baseline: plain tool-calling agent\n"
        "(model node + ToolNode) keeping every message, SqliteSaver file. Same scripted\n"
        "conversation. Size = latest checkpoint + its pending writes of the thread (bytes in\n"
        "the SqliteSaver tables). durability='exit' for both; older checkpoints pruned\n"
        f"every {PRUNE_EVERY} turns (neither changes the latest checkpoint). ms/turn = mean of\n"
        f"the {TIMED_TURNS} turns before the mark. Baseline turns after {args.real_baseline:,}\n"
        "are appended with update_state (copies of its real turns) except the "
        f"{TIMED_TURNS}\nbefore each mark, which run for real.\n",
        flush=True,
    )
    vocab = Vocabulary()
    users = vocab.texts(np.random.default_rng(1), total, 15, 45)
    replies = vocab.texts(np.random.default_rng(2), total, 10, 30)
    tmp = Path(tempfile.mkdtemp(prefix="memgpt-bench-ckpt-"))
    try:
        mine = run("memgpt", ours, tmp, users, replies, marks)
        base = run("baseline", baseline, tmp, users, replies, marks, args.real_baseline)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    for turn in marks:
        (ob, om, ot), (bb, bm, bt) = mine[turn], base[turn]
        rows.append(
            [
                f"{turn:,}",
                f"{ob / 1024:,.1f} KiB",
                f"{bb / 1024:,.1f} KiB",
                ratio(bb, ob),
                f"{om:,}",
                f"{bm:,}",
                f"{ot * 1000:.1f} ms",
                f"{bt * 1000:.1f} ms",
            ]
        )
    print()
    print(
        table(
            rows,
            [
                "turns",
                "ours (latest ckpt)",
                "baseline",
                "baseline / ours",
                "msgs ours",
                "msgs baseline",
                "ours ms/turn",
                "baseline ms/turn",
            ],
        )
    )
    first, last = marks[0], marks[-1]
    print(
        f"\ngrowth {first:,} -> {last:,} turns: ours {ratio(mine[last][0], mine[first][0])}, "
        f"baseline {ratio(base[last][0], base[first][0])}"
    )
    print(f"peak RSS {rss_mib():,.0f} MiB; load avg at end {load_average()}")


if __name__ == "__main__":
    main()
