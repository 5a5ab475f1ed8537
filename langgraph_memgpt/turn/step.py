"""Closing a tool step: once every call of the model's message has its result, what now.

Each call ran as its own ``call_memory_tool`` task and left its facts on its result
(`memory_tools.OUTCOME_KEY`). ``close_step`` (the node, or the middleware through
`langgraph_memgpt.turn.core.close`) closes the step with `close_step`: the
turn goes on when a result must be read (a search, ``request_heartbeat``, a user tool), when
a call failed and no reply was sent yet, or when nothing was sent to the user (a note asks
for the reply); it ends when the reply is out, when a tool ended it (``goto="respond"``, a
handoff), or when the same calls came ``Context.max_repeated_calls`` times in a row.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.tools.memory_tools import OUTCOME_KEY
from langgraph_memgpt.turn.main_context import (
    ALERT_NAME,
    awaits_reply,
    core_mirror,
    latest_user_index,
)


def open_step(state: State, *, marked_only: bool = True) -> AIMessage | None:
    """The model message whose calls are all answered and whose step is not closed yet.

    ``marked_only``: only a step whose results the graph's tool step marked (its facts).
    """
    queue = state["messages"]
    index = len(queue) - 1
    while index >= 0 and isinstance(queue[index], ToolMessage):
        index -= 1
    if index < 0 or index == len(queue) - 1:
        return None
    message = queue[index]
    if not isinstance(message, AIMessage) or state.get("step_closed") == message.id:
        return None
    # Only this loop's own steps: in a swarm the queue also holds other agents' calls.
    if marked_only and not any(OUTCOME_KEY in m.additional_kwargs for m in queue[index + 1 :]):
        return None
    return message


def signature(message: AIMessage) -> str:
    """The calls of a step, for the repeated-call breaker."""
    calls: list[tuple[str, object]] = [(c["name"], c["args"]) for c in message.tool_calls]
    calls += [(str(c.get("name")), str(c.get("args"))) for c in message.invalid_tool_calls]
    return json.dumps(calls, sort_keys=True, default=str)


def results_of(state: State, message: AIMessage) -> list[ToolMessage]:
    """The results in the queue answering ``message``'s calls."""
    ids = {c.get("id") for c in [*message.tool_calls, *message.invalid_tool_calls]}
    queue = state["messages"]
    # Only results after it: call ids may repeat across steps ("0" every response).
    start = next((i for i, m in enumerate(queue) if m is message or m.id == message.id), 0)
    return [m for m in queue[start:] if isinstance(m, ToolMessage) and m.tool_call_id in ids]


def facts(result: ToolMessage) -> dict[str, Any]:
    """A result's facts; an unmarked one (an older checkpoint) read from its status."""
    marked = result.additional_kwargs.get(OUTCOME_KEY)
    if isinstance(marked, dict):
        return marked
    ok = result.status != "error"
    return {"ok": ok, "heartbeat": not ok}


def sent_messages(state: State) -> list[str]:
    """Texts the agent sent with ``send_message`` since the user's latest message."""
    queue = state["messages"]
    start = latest_user_index(queue) or 0
    sent = {
        m.tool_call_id
        for m in queue[start:]
        if isinstance(m, ToolMessage) and m.status != "error" and facts(m).get("reply") is not None
    }
    # Older checkpoints carry no facts: an OK send_message result is a sent reply.
    sent |= {
        m.tool_call_id
        for m in queue[start:]
        if isinstance(m, ToolMessage)
        and m.status != "error"
        and m.name == "send_message"
        and OUTCOME_KEY not in m.additional_kwargs
    }
    return [
        str(call["args"].get("message", ""))
        for m in queue[start:]
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["name"] == "send_message" and call.get("id") in sent
    ]


@dataclass(frozen=True)
class Decision:
    """What a finished tool step means for the turn."""

    turn_over: bool
    note: bool = False
    """Nothing was sent to the user: a note asks for the reply (the turn goes on)."""
    repeat_key: str = ""
    repeat_count: int = 0
    stop_reason: str = ""
    core_changed: bool = False


def decide(state: State, message: AIMessage, max_repeated_calls: int) -> Decision:
    """Whether the turn goes on after ``message``'s step (a pure function of the state)."""
    outcomes = [facts(r) for r in results_of(state, message)]
    core_changed = any(o.get("core_changed") for o in outcomes)
    if state.get("handoff") or any(o.get("goto_respond") for o in outcomes):
        # A tool ended the turn (or handed it to another agent): no note, no breaker.
        return Decision(turn_over=True, core_changed=core_changed)
    go_on = any(o.get("heartbeat") and o.get("ok") for o in outcomes)
    replied = bool(sent_messages(state))
    failed = any(not o.get("ok") for o in outcomes)
    # A failure is worth another step while the user still waits for a reply; after
    # the reply it would only cost time (the error stays in the queue for next turn).
    go_on = go_on or (failed and not replied)
    # Every user message gets a reply: a turn may not end on a silent memory edit
    # (small models often forget send_message). Bounded by max_steps and the breaker.
    # Events alone wait for no reply (`langgraph_memgpt.turn.event_turn`).
    note = not go_on and not replied and awaits_reply(state["messages"])
    key = signature(message)
    repeats = state.get("repeat_count", 0) + 1 if key == state.get("repeat_key") else 1
    stop = ""
    if repeats >= max_repeated_calls:
        first = message.tool_calls[0]["name"] if message.tool_calls else "an invalid call"
        stop = prompts.REPEATED_CALL_REPLY.format(name=first)
    return Decision(
        turn_over=bool(stop) or not (go_on or note),
        note=note,
        repeat_key=key,
        repeat_count=repeats,
        stop_reason=stop,
        core_changed=core_changed,
    )


def close_step(
    state: State, message: AIMessage, memory: Memory, ctx: Context, *, note: bool = True
) -> tuple[dict[str, Any], list[AnyMessage]]:
    """The state update closing ``message``'s step, and the messages it adds.

    ``note``: a step that sent nothing while the user waits gets a note asking for the
    reply (False: the agent replies in plain text at its next step anyway).
    """
    decision = decide(state, message, ctx.max_repeated_calls)
    update: dict[str, Any] = {
        "step_closed": message.id,
        "turn_over": decision.turn_over,
        "repeat_key": decision.repeat_key,
        "repeat_count": decision.repeat_count,
    }
    if decision.core_changed:
        update["core_blocks"] = core_mirror(memory)
    if decision.stop_reason:
        update["stop_reason"] = decision.stop_reason
    added: list[AnyMessage] = []
    if note and decision.note and not decision.turn_over:
        added.append(HumanMessage(prompts.NO_REPLY_NOTE, name=ALERT_NAME, id=str(uuid.uuid4())))
        update["messages"] = added
    return update, added
