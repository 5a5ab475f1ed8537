"""Recording what a thread's checkpoint holds that recall memory lacks, outside any run.

LangGraph checkpoints a run's input before any node runs, so a process killed in between
leaves the user's newest message in the thread and not in recall memory (the write-ahead
is ``open_turn``'s first act). That window cannot be closed from inside the graph: no
node runs before LangGraph's checkpoint. The next run of the thread repairs it
(``open_turn`` opens a turn for every user message no run has opened one for, in
order), but a thread nobody continues would keep the message out of the agent's long-term
memory for good. So a process that serves threads calls `recover_thread` (one thread) or
`recover_threads` (every thread of a checkpointer) when it starts: each message of a
thread's latest checkpoint that recall lacks is recorded, idempotently, a user message with
the turn it opens and the time LangGraph checkpointed it. ``langgraph-memgpt chat`` does it
for its thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.pregel import Pregel

from langgraph_memgpt.context import Context
from langgraph_memgpt.ownership import thread_agent
from langgraph_memgpt.stores.backends import open_backend
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.turn.main_context import TIME_KEY, is_user_message, record, stamped

_log = logging.getLogger(__name__)


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
        context: the thread's ``Context`` (agent and data directory). A thread's messages
            are recorded for the agent its runs recorded it for (`ownership.thread_agent`):
            an ``agent_id`` in its state that no run of that agent recorded this thread
            for (a client's state write) is not believed, and nothing is recorded. A new
            thread whose first run never started names none: its messages are recorded
            for the agent ``context`` names (``agent_id`` given explicitly), else left for
            the thread's next run.
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
    if not queue or not (values.get("agent_id") or _named_agent(context)):
        return 0
    thread_id = str(config.get("configurable", {}).get("thread_id", "default"))
    backend = memory or open_backend(
        ctx.data_dir,
        embedding_model=ctx.embedding_model,
        embeddings=embeddings,
        core_block_limit=ctx.core_block_limit,
    )
    if values.get("agent_id"):
        # The thread's agent as its runs recorded it, never the state's word alone: a
        # client's state write could name another user's agent (`ownership`).
        agent_id = thread_agent(values, thread_id, backend)
        if agent_id is None:
            _log.warning(
                "thread %s: its state names agent %r, for which no run recorded this thread; "
                "nothing of it is recorded (its next run of that agent records it)",
                thread_id,
                values.get("agent_id"),
            )
            return 0
    else:
        # A thread whose first run never started names no agent yet: the caller's, if it
        # names one (a guess would copy someone's message into another agent's memory).
        agent_id = str(_named_agent(context))
    tiers = backend.open(agent_id)
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

    Each thread on its own: a thread that cannot be read or recorded (a damaged checkpoint,
    a refused input left in its pending writes) is logged and skipped, and the threads after
    it are recovered all the same.

    Returns:
        How many messages were recorded in all.
    """
    if thread_ids is None:
        checkpointer = graph.checkpointer
        if checkpointer is None or checkpointer is True or checkpointer is False:
            return 0
        thread_ids = _thread_ids(checkpointer)
    recorded = 0
    for thread_id in thread_ids:
        try:
            recorded += recover_thread(
                graph,
                {"configurable": {"thread_id": thread_id}},
                context,
                memory=memory,
                embeddings=embeddings,
            )
        except Exception:  # noqa: BLE001 - one bad thread must not keep the others' messages out
            _log.exception("recovering thread %s failed; going on with the next thread", thread_id)
    return recorded


def _thread_ids(checkpointer: BaseCheckpointSaver[Any]) -> list[str]:
    """Every thread of ``checkpointer``, newest first, without reading a checkpoint.

    A ``SqliteSaver``'s or ``PostgresSaver``'s threads come from its table (listing
    through ``list`` would decode every checkpoint, and one damaged checkpoint would hide
    every thread after it); another saver's from ``list``, as far as it can be read (a
    failure is logged).
    """
    if isinstance(checkpointer, SqliteSaver):
        checkpointer.setup()  # a new file has no tables yet (``list`` makes them too)
        with checkpointer.lock:
            rows = checkpointer.conn.execute(
                "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
                "GROUP BY thread_id ORDER BY MAX(checkpoint_id) DESC"
            ).fetchall()
        return [str(row[0]) for row in rows]
    postgres = _postgres_thread_ids(checkpointer)
    if postgres is not None:
        return postgres
    found: dict[str, None] = {}
    try:
        for saved in checkpointer.list(None):
            if not saved.config["configurable"].get("checkpoint_ns"):
                found.setdefault(str(saved.config["configurable"]["thread_id"]), None)
    except Exception:  # noqa: BLE001 - recover the threads listed so far
        _log.exception("listing the threads to recover stopped after %d threads", len(found))
    return list(found)


def _postgres_thread_ids(checkpointer: BaseCheckpointSaver[Any]) -> list[str] | None:
    """A ``PostgresSaver``'s threads from its table, newest first (None: another saver).

    As for SQLite: listing through ``list`` would decode every checkpoint, and one that
    cannot be decoded would hide every thread after it.
    """
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:  # the postgres extra is not installed
        return None
    if not isinstance(checkpointer, PostgresSaver):
        return None
    with checkpointer._cursor() as cur:  # noqa: SLF001 - the saver's own connection and lock
        cur.execute(
            "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
            "GROUP BY thread_id ORDER BY MAX(checkpoint_id) DESC"
        )
        return [str(row["thread_id"]) for row in cur.fetchall()]


def _named_agent(context: Context | dict[str, Any] | None) -> str | None:
    """The agent ``context`` names explicitly (not the default ``Context`` fills in)."""
    if isinstance(context, Context):
        return context.agent_id if "agent_id" in context.model_fields_set else None
    if isinstance(context, dict) and context.get("agent_id"):
        return str(context["agent_id"])
    return None


def _waiting(message: Any) -> bool:
    """A user message no run has opened a turn for (``open_turn`` stamps it)."""
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
