"""respond: put the user-visible reply last in the queue and end the turn.

The reply is what the agent passed to ``send_message`` this turn (the user never sees inner
monologue), a plain answer the model wrote without a tool, or the honest reason the turn
was stopped. A parent graph reading the last AI message gets exactly what the user sees.

When a tool handed control to another agent of the parent graph (``Command.PARENT``, see
``call_memory_tool``), respond carries out that handoff instead of replying.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps, Node
from langgraph_memgpt.main_context import (
    REPLY_FLAG,
    context_of,
    latest_user_index,
    record,
    thread_of,
)
from langgraph_memgpt.state import State


def sent_messages(state: State) -> list[str]:
    """Texts the agent sent with ``send_message`` since the user's latest message."""
    queue = state["messages"]
    start = latest_user_index(queue) or 0
    ok_calls = {
        m.tool_call_id for m in queue[start:] if isinstance(m, ToolMessage) and m.status != "error"
    }
    return [
        str(call["args"].get("message", ""))
        for m in queue[start:]
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["name"] == "send_message" and call.get("id") in ok_calls
    ]


def make_respond(deps: Deps) -> Node[dict[str, Any] | Command[Any]]:
    """Build the node with the graph's dependencies."""

    def respond(state: State, runtime: Runtime[Context]) -> dict[str, Any] | Command[Any]:
        """Emit the turn's reply as the last AI message, or hand control over."""
        handoff = state.get("handoff")
        if handoff:
            # call_memory_tool already put every result in this thread's state and in
            # recall; the parent graph continues from the messages the handoff carries.
            return Command(graph=Command.PARENT, goto=handoff["goto"], update=handoff["update"])
        last = state["messages"][-1] if state["messages"] else None
        stop_reason = state.get("stop_reason")
        if not stop_reason and isinstance(last, AIMessage) and not last.tool_calls:
            return {}  # a plain answer: it already is the last AI message
        if stop_reason:
            reply = AIMessage(stop_reason, id=str(uuid.uuid4()))
        else:
            reply = AIMessage(
                "\n\n".join(sent_messages(state)),
                id=str(uuid.uuid4()),
                additional_kwargs={REPLY_FLAG: True},
            )
        ctx = context_of(runtime)
        record(deps.memory(ctx, state), [reply], thread_of(runtime), state.get("turn", 0))
        return {"messages": [reply], "stop_reason": ""}

    return respond
