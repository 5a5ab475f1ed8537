"""Who may write an agent's memory: one rule, used by auth, the served graph, recovery and the page.

A thread's queue is one agent's conversation, and whatever the queue holds ends up in that
agent's long-term memory (recall records it, summaries archive it). So which agent a thread
belongs to must never come from a value a client can write. Three parts, each used
everywhere it applies:

- **which agents a user may use** (`may_use`): their own name, or ``<user>/<anything>``
  (`langgraph_memgpt.serve.auth` checks every run's ``agent_id`` with it, the memory page lists
  agents with it);
- **what a client may write into a thread's state** (`client_write_refusal`): the
  conversation only (``messages``, none with an id in the events' namespace:
  `events.message_id_refusal`), never ``agent_id`` or any other key the graph keeps
  (turn counters, the summary, the system prompt). The served graph applies it to thread
  state updates (``POST /threads/{id}/state``, a new thread's ``supersteps``) and to a
  run's ``command.update``; the example auth refuses such a command before the run exists;
- **which agent a thread belongs to** (`thread_agent`): the agent the graph's own run
  recorded the thread for. ``agent_id`` in the thread's state is only a claim: it is
  believed when that agent's recall memory holds messages of this very thread, written by
  a run whose context auth accepted. Recovery (`langgraph_memgpt.ops.recovery`) records a
  thread's unrecorded messages for that agent only, and the memory page shows an agent
  the threads that are its own (`belongs_to`); and a run of another agent never continues
  a thread (`refuse_another_agent`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph_memgpt.stores.base import Memory, MemoryBackend

OWNER_KEY = "owner"
"""Thread / run metadata naming the user who created it (the example auth stamps it)."""
CLIENT_STATE_KEYS = frozenset({"messages"})
"""What a client may write into a thread's state: the conversation."""


def may_use(user: str, agent_id: object) -> bool:
    """Whether ``user`` may run ``agent_id``: their own name, or ``<user>/<name>``."""
    return isinstance(agent_id, str) and (agent_id == user or agent_id.startswith(user + "/"))


def client_write_refusal(values: object) -> str | None:
    """Why a client's write of ``values`` into a thread's state is refused (None: allowed).

    ``values`` is what a state update or a command's ``update`` carries: None, or an
    object whose keys are all in `CLIENT_STATE_KEYS`.
    """
    if values is None:
        return None
    if isinstance(values, Sequence) and not isinstance(values, str | bytes):
        # A list of (key, value) pairs, as LangGraph accepts for a command's update.
        keys: list[str] = []
        for item in values:
            if not (isinstance(item, Sequence) and len(item) == 2 and isinstance(item[0], str)):
                return "a state update must be an object of keys to values"
            keys.append(item[0])
    elif isinstance(values, Mapping):
        keys = [str(k) for k in values]
    else:
        return f"a state update must be an object of keys to values, not {type(values).__name__}"
    kept = sorted(set(keys) - CLIENT_STATE_KEYS)
    if not kept:
        from langgraph_memgpt.events import message_id_refusal

        pairs = values.items() if isinstance(values, Mapping) else values
        said = [v for k, v in pairs if k == "messages"]
        return next((w for v in said if (w := message_id_refusal(v)) is not None), None)
    return (
        f"a client may write only {sorted(CLIENT_STATE_KEYS)} into a thread's state, not "
        f"{kept}: the graph keeps the rest ('agent_id' names the agent whose memory the "
        "thread is; it is set by the thread's first run, from the run's context)"
    )


def command_refusal(command: object) -> str | None:
    """Why a run's ``command`` (as a client sends it) is refused: its ``update`` (None: fine)."""
    if not isinstance(command, Mapping):
        return None
    return client_write_refusal(command.get("update"))


def thread_agent(values: Mapping[str, Any], thread_id: str, backend: MemoryBackend) -> str | None:
    """The agent a thread belongs to, as the graph's own runs recorded it (None: unknown).

    Args:
        values: the thread's latest state (its ``agent_id`` is read).
        thread_id: the thread.
        backend: the memory the thread's runs record into.

    ``agent_id`` in the state is believed only when that agent's recall holds messages
    recorded for this thread: a run of that agent (whose context auth checked) wrote
    them. A thread stamped with someone else's agent by a state write holds nothing of
    theirs, and a thread no run has recorded anything of yet has no owner.
    """
    claimed = values.get("agent_id")
    if not isinstance(claimed, str) or not claimed or claimed not in backend.agents():
        return None
    return claimed if belongs_to(backend.open(claimed), thread_id, values) else None


def belongs_to(
    memory: Memory,
    thread_id: str,
    values: Mapping[str, Any],
    recorded: Collection[str] | None = None,
) -> bool:
    """Whether a thread (its latest state ``values``) is ``memory``'s agent's (`thread_agent`).

    Its state names the agent, and the agent's recall holds messages a run recorded for it.
    ``recorded``: the agent's ``recall.threads()``, when the caller asks about many threads.
    """
    if values.get("agent_id") != memory.agent_id:
        return False
    if recorded is None:
        from langgraph_memgpt.stores.capabilities import MessageListing, require

        recorded = require(memory.recall, MessageListing, "who owns a thread").threads()
    return thread_id in recorded


__all__ = [
    "CLIENT_STATE_KEYS",
    "OWNER_KEY",
    "belongs_to",
    "client_write_refusal",
    "command_refusal",
    "may_use",
    "refuse_another_agent",
    "thread_agent",
]


def refuse_another_agent(owner: str | None, agent_id: str) -> None:
    """Refuse ``agent_id`` on a thread ``owner`` holds (None: a thread nobody holds yet).

    A thread's queue is its agent's conversation: another agent would read it, and
    recording it would copy it into that agent's long-term memory. The one rule of who may
    continue a thread: the graph's input check (`langgraph_memgpt.turn.admission`), its nodes
    (`langgraph_memgpt.deps.Deps.memory`) and the middleware call it.

    Raises:
        ValueError: naming the thread's agent and what to do instead.
    """
    if owner and owner != agent_id:
        raise ValueError(
            f"this thread belongs to agent {owner!r}, not {agent_id!r}: continue it "
            f"with agent_id={owner!r}, or start a new thread for {agent_id!r}"
        )
