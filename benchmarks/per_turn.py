"""Per-turn overhead of the MemGPT graph as its memory grows, next to a plain agent.

The chat model is ``ScriptedChatModel`` (zero model latency), so what is timed is the
graph itself: pressure check and token counting, recall write-ahead (embedding every new
message and its neighbours' contexts), tool execution (memory searches), eviction with
its summary, and the checkpointer (``InMemorySaver``).

For each store size N (default 1k, 10k, 100k) the agent's recall memory is pre-seeded with
N messages and its archival memory with N passages, directly through the stores and with
``LookupEmbeddings`` (seeded random vectors, recorded under MiniLM's identity so the graph
accepts them), because embedding 200k texts with MiniLM would take hours here. The
measured turns then run exactly as a user would run them: the graph opens the memory
itself with ``Context.embedding_model`` = "minilm" (real MiniLM for every new message and
query) or "none" (words only).

Two scripted turn shapes:

* chat: the model calls ``send_message`` (1 model call).
* search: ``conversation_search`` (heartbeat) -> ``archival_memory_search`` (heartbeat)
  -> ``send_message`` (3 model calls); queries are natural 4-word queries.

Baseline, in the same run: a plain LangGraph tool-calling agent (``StateGraph`` with a
model node + ``ToolNode``, ``tools_condition``, ``InMemorySaver``) replaying the same
tool calls against stub tools with the same names, plus the final plain-text model call a
ReAct loop needs to stop (1 extra model call per turn).

Run: ``.venv/bin/python benchmarks/per_turn.py [--sizes 1000 10000 100000] [--quick]``
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    AGENT,
    LookupEmbeddings,
    Vocabulary,
    load_average,
    ms,
    percentile,
    print_header,
    ratio,
    rss_mib,
    table,
    timestamps,
)
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores import close_all
from langgraph_memgpt.stores.archival import ArchivalMemory
from langgraph_memgpt.stores.db import open_db
from langgraph_memgpt.stores.embeddings import (
    MINILM_DIMENSION,
    MINILM_MODEL_NAME,
    MiniLMEmbeddings,
)
from langgraph_memgpt.stores.recall import RecallMemory
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.stores.vectors import forget_loaded_indexes

SCENARIOS = ("chat", "search")


class EmbedMeter:
    """Counts the texts MiniLM embeds and the time it takes (a wrapper, not a change)."""

    texts = 0
    seconds = 0.0

    @classmethod
    def install(cls) -> None:
        original = MiniLMEmbeddings.embed_array

        def metered(self: MiniLMEmbeddings, texts: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(self, texts)
            finally:
                cls.seconds += time.perf_counter() - start
                cls.texts += len(texts)

        MiniLMEmbeddings.embed_array = metered  # type: ignore[method-assign]


class TurnTimes:
    """Wall time of each turn and what MiniLM took of it."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.embed_s: list[float] = []
        self.embed_n: list[int] = []

    def tail(self, skip: int) -> TurnTimes:
        out = TurnTimes()
        out.wall, out.embed_s = self.wall[skip:], self.embed_s[skip:]
        out.embed_n = self.embed_n[skip:]
        return out


# ----------------------------------------------------------------------------- scripts


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:24]}"}


def turn_steps(scenario: str, query: str, reply: str) -> list[dict[str, Any]]:
    """The scripted model replies of one turn of our agent."""
    send = {"content": "", "tool_calls": [_call("send_message", message=reply)]}
    if scenario == "chat":
        return [send]
    return [
        {
            "content": "Let me look that up.",
            "tool_calls": [_call("conversation_search", query=query, request_heartbeat=True)],
        },
        {
            "content": "And in my archive.",
            "tool_calls": [_call("archival_memory_search", query=query, request_heartbeat=True)],
        },
        send,
    ]


def baseline_steps(scenario: str, query: str, reply: str) -> list[dict[str, Any]]:
    """The same tool calls for the plain agent, plus the text reply that ends its loop."""
    steps = [
        {"content": s["content"], "tool_calls": [dict(c) for c in s["tool_calls"]]}
        for s in turn_steps(scenario, query, reply)
    ]
    for step in steps:
        for call in step["tool_calls"]:
            call["id"] = f"call_{uuid.uuid4().hex[:24]}"
    return [*steps, {"content": reply}]


@tool
def send_message(message: str) -> str:
    """Send a message to the user."""
    return "Sent message successfully."


@tool
def conversation_search(query: str, request_heartbeat: bool = False) -> str:
    """Search past messages."""
    return "No results found."


@tool
def archival_memory_search(query: str, request_heartbeat: bool = False) -> str:
    """Search archival memory."""
    return "No results found."


def plain_agent(model: ScriptedChatModel) -> Any:
    tools = [send_message, conversation_search, archival_memory_search]
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


# ----------------------------------------------------------------------------- seeding


def seed(root: Path, n: int, vocab: Vocabulary) -> float:
    """Pre-seed recall (N messages) and archival (N passages); returns seconds taken."""
    start = time.perf_counter()
    emb = LookupEmbeddings(model_name=MINILM_MODEL_NAME, dimension=MINILM_DIMENSION)
    db = open_db(root / "memory.sqlite")
    rng = np.random.default_rng(n)
    texts = vocab.texts(rng, n)
    stamps = timestamps(n, start="2023-01-01T00:00:00+00:00")
    recall = RecallMemory(db, AGENT, emb, root / "faiss")
    threads = max(1, n // 200)  # past sessions of ~200 messages
    recall.add_many(
        RecallMessage(
            agent_id=AGENT,
            thread_id=f"past-{i * threads // n}",
            message_id=f"seed-{i}",
            role="user" if i % 2 == 0 else "assistant",
            text=text,
            created_at=stamps[i],
            turn=i // 2,
        )
        for i, text in enumerate(texts)
    )
    archival = ArchivalMemory(db, AGENT, emb, root / "faiss")
    passages = vocab.texts(np.random.default_rng(n + 1), n)
    for i in range(0, n, 1000):
        archival.insert_many(passages[i : i + 1000], tags=["seed"])
    archival.close()
    recall.close()
    db.conn.close()
    forget_loaded_indexes()  # the graph opens everything itself, like a fresh process
    return time.perf_counter() - start


# ----------------------------------------------------------------------------- runs


def run_turns(invoke: Callable[[str], object], messages: list[str]) -> TurnTimes:
    """Time every turn; the first one is 'cold' (opens memory, loads caches and models)."""
    out = TurnTimes()
    for text in messages:
        texts, spent = EmbedMeter.texts, EmbedMeter.seconds
        start = time.perf_counter()
        invoke(text)
        out.wall.append(time.perf_counter() - start)
        out.embed_s.append(EmbedMeter.seconds - spent)
        out.embed_n.append(EmbedMeter.texts - texts)
    return out


def memgpt_run(
    root: Path, embedding_model: str, scenario: str, users: list[str], queries: list[str]
) -> tuple[TurnTimes, int]:
    replies = [f"Noted: {u[:60]}" for u in users]
    steps = [s for q, r in zip(queries, replies, strict=True) for s in turn_steps(scenario, q, r)]
    model = ScriptedChatModel.from_steps(steps)
    summarizer = ScriptedChatModel.from_steps(
        [f"I chatted with the user about topic {i}; nothing urgent." for i in range(200)]
    )
    graph = build_graph(model=model, summary_model=summarizer).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"bench-{embedding_model}-{scenario}"}}
    ctx = Context(data_dir=str(root), agent_id=AGENT, embedding_model=embedding_model)

    def invoke(text: str) -> object:
        return graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)

    times = run_turns(invoke, users)
    evictions = len(summarizer.calls)
    close_all()
    forget_loaded_indexes()
    return times, evictions


def baseline_run(scenario: str, users: list[str], queries: list[str]) -> list[float]:
    replies = [f"Noted: {u[:60]}" for u in users]
    steps = [
        s for q, r in zip(queries, replies, strict=True) for s in baseline_steps(scenario, q, r)
    ]
    graph = plain_agent(ScriptedChatModel.from_steps(steps))
    config = {"configurable": {"thread_id": f"baseline-{scenario}"}}

    def invoke(text: str) -> object:
        out = graph.invoke({"messages": [HumanMessage(text)]}, config)
        assert isinstance(out["messages"][-1], AIMessage)
        return out

    return run_turns(invoke, users).wall[WARMUP:]


WARMUP = 3


def main() -> None:
    global WARMUP
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--turns", type=int, default=30, help="measured turns per run")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="unmeasured first turns")
    parser.add_argument(
        "--embeddings", nargs="+", default=["minilm", "none"], choices=["minilm", "none"]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, < 1 minute")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.turns, args.warmup = [200, 2000], 5, 1
    WARMUP = args.warmup
    total = args.turns + args.warmup

    print_header("per_turn: graph overhead per turn vs store size")
    print(
        "Model: ScriptedChatModel (zero latency). Checkpointer: InMemorySaver (both agents).\n"
        "Stores pre-seeded with LookupEmbeddings vectors under MiniLM's identity; the\n"
        "measured turns embed with the configured model (minilm = real MiniLM int8 ONNX).\n"
        f"Each run: {args.warmup} warm-up turns (the first one, 'cold', opens the memory and\n"
        f"loads FAISS caches and MiniLM) then {args.turns} measured turns; default Context\n"
        "(8192-token window), so evictions (scripted summary) happen as in real use.\n",
        flush=True,
    )
    vocab = Vocabulary()
    rng = np.random.default_rng(2024)
    users = vocab.texts(rng, total, 15, 45)
    queries = vocab.queries(np.random.default_rng(2025), total)

    base: dict[str, list[float]] = {}
    for scenario in SCENARIOS:
        base[scenario] = baseline_run(scenario, users, queries)

    EmbedMeter.install()
    results: dict[tuple[int, str, str], tuple[TurnTimes, int]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="memgpt-bench-turn-"))
    try:
        for n in args.sizes:
            root = tmp / str(n)
            seconds = seed(root, n, vocab)
            print(f"seeded N={n:,} (recall messages = archival passages) in {seconds:.1f} s")
            for emb in args.embeddings:
                for scenario in SCENARIOS:
                    times, ev = memgpt_run(root, emb, scenario, users, queries)
                    results[(n, emb, scenario)] = (times, ev)
                    print(
                        f"  N={n:,} {emb:<6} {scenario:<6} cold {ms(times.wall[0])}, "
                        f"p50 {ms(percentile(times.wall[WARMUP:], 50))}, evictions {ev}",
                        flush=True,
                    )
            shutil.rmtree(root, ignore_errors=True)
            gc.collect()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    rows: list[list[object]] = []
    for scenario in SCENARIOS:
        b50, b95 = percentile(base[scenario], 50), percentile(base[scenario], 95)
        rows.append([f"baseline plain agent, {scenario}", "-", "", ms(b50), ms(b95), "1x", "1x"])
        for emb in args.embeddings:
            for n in args.sizes:
                times, ev = results[(n, emb, scenario)]
                measured = times.tail(WARMUP)
                p50, p95 = percentile(measured.wall, 50), percentile(measured.wall, 95)
                row: list[object] = [
                    f"memgpt {emb}, {scenario}",
                    f"{n:,}",
                    ms(times.wall[0]),
                    ms(p50),
                    ms(p95),
                    ratio(p50, b50),
                    ratio(p95, b95),
                    ev,
                ]
                if emb == "minilm":
                    share = sum(measured.embed_s) / sum(measured.wall)
                    row += [
                        f"{np.mean(measured.embed_n):.1f}",
                        f"{ms(float(np.mean(measured.embed_s)))} ({share:.0%})",
                    ]
                else:
                    row += ["-", "-"]
                row.append("")
                rows.append(row)
            if len(args.sizes) > 1:
                first = results[(args.sizes[0], emb, scenario)][0].wall[WARMUP:]
                last = results[(args.sizes[-1], emb, scenario)][0].wall[WARMUP:]
                rows[-1][-1] = (
                    f"p50 {ratio(percentile(last, 50), percentile(first, 50))}, "
                    f"p95 {ratio(percentile(last, 95), percentile(first, 95))}"
                )
    print(
        table(
            rows,
            [
                "agent, turn shape",
                "N",
                "cold turn",
                "p50/turn",
                "p95/turn",
                "p50 vs base",
                "p95 vs base",
                "evictions",
                "MiniLM texts/turn",
                "MiniLM time/turn",
                f"{args.sizes[-1]:,}/{args.sizes[0]:,}",
            ],
        )
    )
    print(f"\npeak RSS {rss_mib():,.0f} MiB; load avg at end {load_average()}")


if __name__ == "__main__":
    main()
