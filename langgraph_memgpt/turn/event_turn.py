"""Turns opened by system events (`langgraph_memgpt.events`).

Into the queue, reply or not, outcome.

``open_turn`` puts a run's waiting events into the queue (`take_events`); the tool
step asks for a reply only when a user waits (`awaits_reply`); ``respond`` reports an
event-only turn's memory edits instead of replying (`event_outcome`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig

from langgraph_memgpt.events import EVENT_KEY, EVENT_NAME, Event, event_message_id, is_event
from langgraph_memgpt.state import State
from langgraph_memgpt.tools.memory_tools import OUTCOME_KEY
from langgraph_memgpt.tools.run import facts_of
from langgraph_memgpt.turn.main_context import latest_user_index
from langgraph_memgpt.turn.streaming import hide


def event_message(event: Event) -> HumanMessage:
    """The queue message of an event: user-role (every provider takes it mid-conversation).

    Unstamped, like a user message no turn has opened yet: ``open_turn`` opens one for
    it, records it, stamps its arrival and cuts it to the window as it does a user's.
    """
    return HumanMessage(
        event["text"],
        name=EVENT_NAME,
        id=event["id"],
        additional_kwargs={EVENT_KEY: {"source": event["source"], "time": event["time"]}},
    )


def take_events(state: Mapping[str, Any], queue: Sequence[AnyMessage]) -> list[HumanMessage]:
    """The waiting events as queue messages, leaving out those the queue already holds.

    Only the same event (an event message with its id: a retried delivery) is left out.
    A message of another kind holding that id (a client named a message ``event:...``)
    keeps it, and the event comes in under an id of its own: never dropped, never
    recorded over that message.
    """
    events_held = {m.id for m in queue if is_event(m)}
    others_held = {m.id for m in queue if not is_event(m)}
    taken: list[HumanMessage] = []
    for event in state.get("events") or []:
        if event["id"] in events_held:
            continue
        if event["id"] in others_held:
            event = Event(
                id=event_message_id(str(uuid.uuid4())),
                source=event["source"],
                time=event["time"],
                text=event["text"],
            )
        events_held.add(event["id"])
        taken.append(event_message(event))
    return taken


def with_events(
    node: Callable[[State, RunnableConfig], dict[str, Any]],
) -> Callable[[State, RunnableConfig], dict[str, Any]]:
    """``open_turn`` that first moves the run's waiting events into the queue.

    The node then sees them as it sees a user's new message (it opens the turn, records
    them, fits them to the window); its update carries them and empties ``events``.
    """

    @functools.wraps(node)
    def open_turn(state: State, config: RunnableConfig) -> dict[str, Any]:
        arrived = take_events(state, state["messages"])
        if not arrived and not state.get("events"):
            return node(state, config)
        hide(arrived, config)  # the caller's own input, like a user message
        seen: State = {**state, "messages": [*state["messages"], *arrived]}
        update = node(seen, config)
        written = list(update.get("messages") or [])
        if not (written and isinstance(written[0], RemoveMessage)):  # else: the whole queue
            ids = {m.id for m in written}
            written = [*(m for m in arrived if m.id not in ids), *written]
        return {**update, "messages": written, "events": None}

    return open_turn


def event_outcome(queue: Sequence[AnyMessage], stop_reason: str = "") -> dict[str, Any]:
    """What an event-only turn did, for the run's output: its events and memory edits.

    ``edits`` lists every call of a memory-changing tool since the turn's events, with its
    arguments (``request_heartbeat`` left out) and whether it worked; ``replied`` is True
    only if the model chose to ``send_message`` anyway.
    """
    index = latest_user_index(queue)
    start = index if index is not None else 0
    while start > 0 and is_event(queue[start - 1]):
        start -= 1
    turn = list(queue[start:])
    results = {m.tool_call_id: m for m in turn if isinstance(m, ToolMessage)}
    edits: list[dict[str, Any]] = []
    replied = False
    for message in turn:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            result = results.get(str(call.get("id")))
            ok = result is not None and result.status != "error"
            if facts_of(call["name"]).replies and ok:
                replied = True
            if not facts_of(call["name"]).edits:
                continue
            args = {k: v for k, v in call["args"].items() if k != "request_heartbeat"}
            facts = result.additional_kwargs.get(OUTCOME_KEY, {}) if result is not None else {}
            edits.append({"tool": call["name"], "args": args, "ok": bool(facts.get("ok", ok))})
    return {
        "events": [str(m.id) for m in turn if is_event(m)],
        "edits": edits,
        "replied": replied,
        "stop_reason": stop_reason,
    }
