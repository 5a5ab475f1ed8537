"""respond: put the user-visible reply last in the queue and end the turn.

The reply is what the agent passed to ``send_message`` this turn (the user never sees inner
monologue), a plain answer the model wrote without a tool, or the honest reason the turn
was stopped. A parent graph reading the last AI message gets exactly what the user sees.
A reply that already streamed goes out under the id it streamed with (see
`langgraph_memgpt.turn.streaming`): a client streaming ``messages`` gets it once.

A turn opened by system events alone sends nothing (nobody asked): the run's
``event_outcome`` lists the memory edits the events led to instead
(`langgraph_memgpt.turn.event_turn`), unless the model chose to ``send_message`` anyway.

When a tool handed control to another agent of the parent graph (``Command.PARENT``, see
``call_memory_tool``), respond carries out that handoff instead of replying.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from langgraph_memgpt.deps import Deps
from langgraph_memgpt.state import State
from langgraph_memgpt.turn import core as turn_core
from langgraph_memgpt.turn.event_turn import event_outcome
from langgraph_memgpt.turn.main_context import (
    REPLY_FLAG,
    awaits_reply,
    latest_user_index,
)
from langgraph_memgpt.turn.step import results_of
from langgraph_memgpt.turn.streaming import finish_reply


def make_respond(deps: Deps) -> Any:
    """Build the node with the graph's dependencies."""

    def respond(state: State, config: RunnableConfig) -> dict[str, Any] | Command[Any]:
        """Emit the turn's reply as the last AI message, or hand control over."""
        handoff = state.get("handoff")
        if handoff:
            # call_memory_tool already put every result in this thread's state and in
            # recall; the parent graph continues from the messages the handoff carries.
            return Command(
                graph=Command.PARENT, goto=handoff["goto"], update=_handoff_update(state)
            )
        closed: dict[str, Any] = {}  # close_step wrote the step's decision already
        last = state["messages"][-1] if state["messages"] else None
        stop_reason = state.get("stop_reason")
        if not awaits_reply(state["messages"]):
            outcome = event_outcome(state["messages"], stop_reason or "")
            if not outcome["replied"]:
                return {**closed, "event_outcome": outcome, "stop_reason": "", "turn_over": True}
            closed["event_outcome"] = outcome
        elif state.get("event_outcome") is not None:
            closed["event_outcome"] = None  # an earlier event turn's: this turn had a user
        if not stop_reason and isinstance(last, AIMessage) and not last.tool_calls:
            return {**closed, "turn_over": True}  # a plain answer: already the last AI message
        turn = state["messages"][latest_user_index(state["messages"]) or 0 :]
        if stop_reason:
            # What was sent before the turn was stopped stays the reply's start: the user
            # saw it stream (it was sent), and the stop follows it.
            text = turn_core.reply_text(state, stop_reason)
            stable = _replay_stable_id(state, "stop", text)
            reply = AIMessage(text, id=finish_reply(turn, text, config, fallback=stable))
        else:
            text = turn_core.reply_text(state)
            reply = AIMessage(
                text,
                id=finish_reply(
                    turn, text, config, fallback=_replay_stable_id(state, "reply", text)
                ),
                additional_kwargs={REPLY_FLAG: True},
            )
        return {**closed, "messages": [reply], "stop_reason": "", "turn_over": True}

    return respond


def _replay_stable_id(state: State, kind: str, text: str) -> str:
    """An id for a message ``respond`` writes, the same when the step is replayed.

    Replaying a thread from a checkpoint (LangGraph's time travel) runs ``respond`` again
    over the same queue: the same id makes recall's write-ahead keep one copy. It follows
    the newest message of the queue (the model's step, or the user's message) and the text.
    """
    queue = state["messages"]
    after = str(queue[-1].id) if queue else ""
    return str(
        uuid.uuid5(uuid.NAMESPACE_URL, f"memgpt:{kind}:{state.get('turn', 0)}:{after}:{text}")
    )


def _handoff_update(state: State) -> Any:
    """The parent-graph ``Command``'s update, carrying every result of the last step.

    A parent graph (a swarm, a supervisor) continues from the messages it is handed: each
    tool call there needs its result, the handoff's own result being this loop's copy (the
    one recall holds), so that both histories agree.
    """
    handoff = state.get("handoff") or {}
    update = handoff.get("update")
    if not isinstance(update, Mapping):
        return update
    step = next(
        (m for m in reversed(state["messages"]) if isinstance(m, AIMessage) and m.tool_calls),
        None,
    )
    ours = {m.tool_call_id: m for m in results_of(state, step)} if step is not None else {}
    messages = [
        ours.pop(m.tool_call_id, m) if isinstance(m, ToolMessage) else m
        for m in convert_to_messages(update.get("messages", []))
    ]
    return {**update, "messages": [*messages, *ours.values()]}
