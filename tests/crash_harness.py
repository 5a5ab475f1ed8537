"""Runs turns of the agent in its own process and kills it (SIGKILL) at a chosen point.

Usage: python crash_harness.py PLAN_JSON

The plan is a JSON object: ``data_dir``, ``checkpoint_db`` (a SQLite file, or a
``postgresql://`` URL: then memory lives in that database too, through `PostgresBackend`,
and threads in ``PostgresSaver``), ``thread_id``, ``script`` (the
chat model's replies), ``summaries`` (the summarizer's), ``messages`` (one user message
per turn), ``context`` (extra ``Context`` fields) and ``durability`` (LangGraph's: "sync"
writes each step's checkpoint before the next step starts; None, LangGraph's default
"async", writes it while the next step runs). Each completed turn prints one JSON
line ``{"turn": n, "reply": ...}``.

``MEMGPT_CRASH_AT`` picks the kill point, armed from the ``MEMGPT_CRASH_FROM_TURN``-th
message on (default: the last one):

- ``tool``: inside a user tool call (``call_memory_tool`` is running it);
- ``input_checkpointed``: right before recall memory writes the user's new message, after
  LangGraph checkpointed the run's input (the message is in the thread, not yet in recall);
- ``recall_write:<role>``: right after recall memory committed a new message of that
  role, before the node returns (so before the checkpoint that would hold it);
- ``recall_embedding:user``: while recall memory embeds the user's new message (on
  Postgres inside the write transaction: the rows are inserted, nothing is committed; the
  embedded backend embeds before its transaction, so nothing is written yet);
- ``summarize``: inside the summarizer's model call (``summarize_evict``);
- ``summary_archived``: right after the eviction summary was committed to archival memory;
- ``faiss_index_write`` / ``faiss_sidecar_write``: halfway through writing the temporary
  file of a FAISS cache file (the index, or its checksum sidecar written after it).

The process kills itself with ``os.kill(os.getpid(), SIGKILL)``: no ``finally`` block, no
atexit hook, no buffered write gets a chance to run, as in a power cut or an OOM kill.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

from checkpointers import memory_backend, open_saver
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.sqlite import archival as archival_module
from langgraph_memgpt.stores.sqlite import faiss_cache as faiss_cache_module
from langgraph_memgpt.stores.sqlite import recall as recall_module

CRASH_AT = os.environ.get("MEMGPT_CRASH_AT", "")
ARMED = False
RECORDING_USER = False  # recall is recording a new user message (for recall_embedding)


def die() -> None:
    """Crash like a power cut: SIGKILL, nothing flushed, nothing cleaned up."""
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    if ARMED and CRASH_AT == "tool":
        die()
    return f"sunny in {city}"


class CrashingSummarizer(ScriptedChatModel):
    """The summarizer; dies inside its model call when ``summarize`` is armed."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        if ARMED and CRASH_AT == "summarize":
            die()
        return super()._generate(messages, stop, run_manager, **kwargs)


def _recall_classes() -> list[Any]:
    classes: list[Any] = [recall_module.SqliteRecallMemory]
    try:
        from langgraph_memgpt.stores.postgres.recall import PgRecallMemory
    except ImportError:  # no postgres extra: the embedded backend only
        return classes
    return [*classes, PgRecallMemory]


def _archival_classes() -> list[Any]:
    classes: list[Any] = [archival_module.SqliteArchivalMemory]
    try:
        from langgraph_memgpt.stores.postgres.archival import PgArchivalMemory
    except ImportError:
        return classes
    return [*classes, PgArchivalMemory]


def _wrap_recall_add(cls: Any) -> None:
    original_add = cls.add

    def add(self: Any, messages: Any) -> int:
        global RECORDING_USER
        stored = {m.message_id for m in self.get([m.message_id for m in messages])}
        new_user = any(m.role == "user" and m.message_id not in stored for m in messages)
        if ARMED and CRASH_AT == "input_checkpointed" and new_user:
            die()
        RECORDING_USER = new_user
        try:
            added = original_add(self, messages)  # committed when this returns
        finally:
            RECORDING_USER = False
        if ARMED and CRASH_AT.startswith("recall_write:"):
            role = CRASH_AT.split(":", 1)[1]
            if any(m.role == role and m.message_id not in stored for m in messages):
                die()
        return added

    cls.add = add


def _wrap_archival_insert(cls: Any) -> None:
    original_insert = cls.insert

    def insert(self: Any, text: str, tags: Any = (), *args: Any, **kwargs: Any) -> Any:
        passage = original_insert(self, text, tags, *args, **kwargs)
        if ARMED and CRASH_AT == "summary_archived" and "summary" in (tags or ()):
            die()
        return passage

    cls.insert = insert


def install_kill_points() -> None:
    """Wrap the store functions at the kill points (no-ops unless armed)."""
    for recall_class in _recall_classes():
        _wrap_recall_add(recall_class)
    for archival_class in _archival_classes():
        _wrap_archival_insert(archival_class)

    original_embed = MiniLMEmbeddings.embed_array

    def embed_array(self: Any, texts: Any) -> Any:
        if ARMED and CRASH_AT == "recall_embedding:user" and RECORDING_USER:
            die()
        return original_embed(self, texts)

    MiniLMEmbeddings.embed_array = embed_array  # type: ignore[method-assign]

    original_write = faiss_cache_module.write_atomic

    def atomic_write(path: Path, data: bytes) -> None:
        target = {"faiss_index_write": ".faiss", "faiss_sidecar_write": ".json"}.get(CRASH_AT)
        if ARMED and target and path.name.endswith(target):
            # The same temporary name the real writer uses, half written, then the kill.
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
            with open(tmp, "wb") as handle:
                handle.write(data[: len(data) // 2])
                handle.flush()
                os.fsync(handle.fileno())
            die()
        original_write(path, data)

    faiss_cache_module.write_atomic = atomic_write


def main() -> None:
    global ARMED
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    install_kill_points()
    model = ScriptedChatModel.from_steps(plan["script"])
    summarizer = CrashingSummarizer.from_steps(plan.get("summaries", []))
    saver, _ = open_saver(plan["checkpoint_db"])
    memory = memory_backend(plan["checkpoint_db"])
    graph = build_graph(
        model=model, summary_model=summarizer, tools=[weather], memory=memory
    ).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": plan["thread_id"]}}
    ctx = Context(data_dir=plan["data_dir"], **plan.get("context", {}))
    messages = plan["messages"]
    arm_from = int(os.environ.get("MEMGPT_CRASH_FROM_TURN", len(messages)))
    for number, text in enumerate(messages, start=1):
        ARMED = bool(CRASH_AT) and number >= arm_from
        out = graph.invoke(
            {"messages": [HumanMessage(text)]},
            config,
            context=ctx,
            durability=plan.get("durability"),
        )
        print(json.dumps({"turn": number, "reply": out["messages"][-1].content}), flush=True)


if __name__ == "__main__":
    main()
