"""Recording what a thread's checkpoint holds that recall memory lacks, outside any run.

LangGraph checkpoints a run's input before any node runs, so a process killed in between
leaves the user's newest message in the thread and not in recall memory (the write-ahead
is ``check_pressure``'s first act). That window cannot be closed from inside the graph: no
node runs before LangGraph's checkpoint. The next run of the thread repairs it
(``check_pressure`` opens a turn for every user message no run has opened one for, in
order), but a thread nobody continues would keep the message out of the agent's long-term
memory for good. So a process that serves threads calls `recover_thread` (one thread) or
`recover_threads` (every thread of a checkpointer) when it starts: each message of a
thread's latest checkpoint that recall lacks is recorded, idempotently, a user message with
the turn it opens and the time LangGraph checkpointed it. ``langgraph-memgpt chat`` does it
for its thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel

from langgraph_memgpt.context import Context
from langgraph_memgpt.main_context import TIME_KEY, is_user_message, record, stamped
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.sqlite import SqliteBackend


def recover_thread(
    graph: Pregel[Any, Any],
    config: RunnableConfig,
    context: Context | dict[str, Any] | None = None,
    *,
    memory: MemoryBackend | None = None,
    embeddings: Embeddings | None = None,
) -> int:
    """Record in recall memory what the thread's latest checkpoint holds that recall lacks.

    Args:
        graph: the compiled graph, with its checkpointer.
        config: names the thread (``{"configurable": {"thread_id": ...}}``).
        context: the thread's ``Context`` (agent and data directory); the thread's own
            agent wins when its state names one. A new thread whose first run never
            started names none: its messages are recorded for the agent ``context``
            names (``agent_id`` given explicitly), else left for the thread's next run.
        memory: the graph's memory backend, when it was built with one.
        embeddings: the graph's embeddings, when it was built with them.

    Returns:
        How many messages were recorded (0 for a thread recall already covers, or one no
        agent ever opened when ``context`` names no agent either).
    """
    ctx = Context.from_any(context)
    snapshot = graph.get_state(config)
    values = snapshot.values or {}
    queue = list(values.get("messages", []))
    # A thread whose first run never started names no agent yet: the caller's, if it
    # names one (a guess would copy someone's message into another agent's memory).
    agent_id = values.get("agent_id") or _named_agent(context)
    if not queue or not agent_id:
        return 0
    thread_id = str(config.get("configurable", {}).get("thread_id", "default"))
    backend = memory or SqliteBackend(
        ctx.data_dir,
        embedding_model=ctx.embedding_model,
        embeddings=embeddings,
        core_block_limit=ctx.core_block_limit,
    )
    tiers = backend.open(str(agent_id))
    stored = {m.message_id for m in tiers.recall.get([str(m.id) for m in queue if m.id])}
    missing = [m for m in queue if m.id and str(m.id) not in stored]
    if not missing:
        return 0
    turn = int(values.get("turn", 0))
    arrived = _arrival_times(graph, config, [m for m in missing if _waiting(m)])
    for message in missing:
        if _waiting(message):
            turn += 1
            message = stamped(message, arrived.get(str(message.id)))
        record(tiers, [message], thread_id, turn)
    return len(missing)


def recover_threads(
    graph: Pregel[Any, Any],
    context: Context | dict[str, Any] | None = None,
    *,
    thread_ids: Iterable[str] | None = None,
    memory: MemoryBackend | None = None,
    embeddings: Embeddings | None = None,
) -> int:
    """`recover_thread` for ``thread_ids``, or every thread of the graph's checkpointer.

    Returns:
        How many messages were recorded in all.
    """
    if thread_ids is None:
        checkpointer = graph.checkpointer
        if checkpointer is None or checkpointer is True or checkpointer is False:
            return 0
        thread_ids = dict.fromkeys(
            str(t.config["configurable"]["thread_id"])
            for t in checkpointer.list(None)
            if not t.config["configurable"].get("checkpoint_ns")
        )
    return sum(
        recover_thread(
            graph,
            {"configurable": {"thread_id": thread_id}},
            context,
            memory=memory,
            embeddings=embeddings,
        )
        for thread_id in thread_ids
    )


def _named_agent(context: Context | dict[str, Any] | None) -> str | None:
    """The agent ``context`` names explicitly (not the default ``Context`` fills in)."""
    if isinstance(context, Context):
        return context.agent_id if "agent_id" in context.model_fields_set else None
    if isinstance(context, dict) and context.get("agent_id"):
        return str(context["agent_id"])
    return None


def _waiting(message: Any) -> bool:
    """A user message no run has opened a turn for (``check_pressure`` stamps it)."""
    return is_user_message(message) and not message.additional_kwargs.get(TIME_KEY)


def _arrival_times(
    graph: Pregel[Any, Any], config: RunnableConfig, messages: list[Any]
) -> dict[str, str]:
    """When each message first appeared in a checkpoint of the thread (ISO-8601 UTC)."""
    wanted = {str(m.id) for m in messages}
    times: dict[str, str] = {}
    for snapshot in graph.get_state_history(config):  # newest first
        present = {str(m.id) for m in (snapshot.values or {}).get("messages", [])} & wanted
        if not present and times:
            break
        for message_id in present:
            if snapshot.created_at:
                times[message_id] = snapshot.created_at
    return times
