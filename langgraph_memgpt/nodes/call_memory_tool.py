"""call_memory_tool: run every tool call of the last AI message and decide whether to go on.

Every call gets a tool result (providers reject a queue with an unanswered call). One step
may hold several calls (a memory edit and the reply, in one model call). The turn goes on
when a result must be read (a search, or ``request_heartbeat``), when a call failed and no
reply was sent yet, or when nothing was sent to the user; otherwise it ends. A reply sent
in the same step as a search is held back (the model has not read the results yet). A
batch of calls identical to the previous ones, ``Context.max_repeated_calls`` times in a
row, ends the turn.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps, Node
from langgraph_memgpt.main_context import (
    ALERT_NAME,
    CUT_CALLS_FLAG,
    context_of,
    core_mirror,
    latest_user_index,
    record,
    thread_of,
)
from langgraph_memgpt.nodes.respond import sent_messages
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.tokens import content_text
from langgraph_memgpt.tools import (
    MEMORY_TOOLS,
    Provenance,
    ToolOutcome,
    error_text,
    execute_tool_call,
    tool_result,
)


def _signature(message: AIMessage) -> str:
    calls: list[tuple[str, object]] = [(c["name"], c["args"]) for c in message.tool_calls]
    calls += [(str(c.get("name")), str(c.get("args"))) for c in message.invalid_tool_calls]
    return json.dumps(calls, sort_keys=True, default=str)


def make_call_memory_tool(
    deps: Deps,
) -> Node[Command[Literal["check_pressure", "respond"]]]:
    """Build the node with the graph's dependencies."""

    def call_memory_tool(
        state: State, runtime: Runtime[Context]
    ) -> Command[Literal["check_pressure", "respond"]]:
        """Execute the pending tool calls; heartbeat or failure -> think again, else respond."""
        ctx = context_of(runtime)
        memory = deps.memory(ctx, state)
        last = state["messages"][-1]
        if not isinstance(last, AIMessage):
            return Command(goto="respond")
        where = Provenance(
            thread_id=thread_of(runtime),
            turn=state.get("turn", 0),
            in_view=frozenset(str(m.id) for m in state["messages"] if m.id),
        )
        results: list[ToolMessage] = []
        outcomes: list[ToolOutcome] = []
        go_on = False
        searching = any(
            MEMORY_TOOLS[c["name"]].reads for c in last.tool_calls if c["name"] in MEMORY_TOOLS
        )
        executed = _as_recorded(last, memory)
        for call in last.tool_calls:
            call = executed.get(str(call["id"]), call)
            if call["name"] == "send_message":
                reason = _hold_back_reason(call, searching, state)
                if reason:
                    results.append(_held_back(call, reason, ctx.result_char_limit))
                    continue
            outcome = execute_tool_call(
                call["name"],
                call["args"],
                memory=memory,
                ctx=ctx,
                where=replace(where, call_id=str(call["id"]) if call.get("id") else None),
                user_tools=deps.user_tools,
            )
            go_on = go_on or (outcome.heartbeat and outcome.ok)
            outcomes.append(outcome)
            results.append(
                ToolMessage(
                    outcome.content,
                    tool_call_id=str(call["id"]),
                    name=call["name"],
                    status="success" if outcome.ok else "error",
                    id=str(uuid.uuid4()),
                )
            )
        for bad in last.invalid_tool_calls:
            name = str(bad.get("name") or "unknown")
            reason = bad.get("error") or "parse error"
            detail = f"arguments are not valid JSON ({reason}): {bad.get('args')!r}"
            results.append(
                ToolMessage(
                    tool_result(False, error_text(name, detail), ctx.result_char_limit),
                    tool_call_id=str(bad.get("id")),
                    name=name,
                    status="error",
                    id=str(uuid.uuid4()),
                )
            )
        replied = any(o.reply is not None for o in outcomes) or bool(sent_messages(state))
        failed = any(not o.ok for o in outcomes) or bool(last.invalid_tool_calls)
        # A failure is worth another step while the user still waits for a reply; after
        # the reply it would only cost time (the error stays in the queue for next turn).
        go_on = go_on or (failed and not replied)
        extra: list[HumanMessage] = []
        if not go_on and not replied:
            # Every user message gets a reply: a turn may not end on a silent memory edit
            # (small models often forget send_message). Bounded by max_steps and the breaker.
            go_on = True
            extra.append(HumanMessage(prompts.NO_REPLY_NOTE, name=ALERT_NAME, id=str(uuid.uuid4())))
        record(memory, [*results, *extra], where.thread_id, where.turn)

        signature = _signature(last)
        repeats = state.get("repeat_count", 0) + 1 if signature == state.get("repeat_key") else 1
        update: dict[str, Any] = {
            "messages": [*results, *extra],
            "repeat_key": signature,
            "repeat_count": repeats,
        }
        if any(o.core_changed for o in outcomes):
            update["core_blocks"] = core_mirror(memory)
        if repeats >= ctx.max_repeated_calls:
            first = last.tool_calls[0]["name"] if last.tool_calls else "an invalid call"
            update["stop_reason"] = prompts.REPEATED_CALL_REPLY.format(name=first)
            return Command(goto="respond", update=update)
        return Command(goto="check_pressure" if go_on else "respond", update=update)

    return call_memory_tool


def _as_recorded(message: AIMessage, memory: Memory) -> dict[str, ToolCall]:
    """The whole calls of a message whose arguments were cut in the queue, by call id.

    ``think`` recorded the message whole in recall before cutting it (``bounded_calls``):
    a call runs with what the model really wrote, never with the cut copy.
    """
    if not message.additional_kwargs.get(CUT_CALLS_FLAG) or not message.id:
        return {}
    stored = memory.recall.get([str(message.id)])
    if not stored:
        return {}
    return {
        str(c.get("id")): ToolCall(name=str(c.get("name")), args=args, id=str(c.get("id")))
        for c in stored[0].tool_calls
        if not c.get("invalid") and isinstance(args := c.get("args"), dict)
    }


def _hold_back_reason(call: ToolCall, searching: bool, state: State) -> str | None:
    """Why a reply must not reach the user yet, or None.

    Written beside a search, it was written before the results were read. An echo of the
    user's own message (a small model's habit) answers nothing; it is held back once per
    turn, since a model that echoes again would only loop into the repeated-call breaker.
    """
    if searching:
        return prompts.REPLY_HELD_BACK
    queue = state["messages"]
    index = latest_user_index(queue)
    if index is None:
        return None
    said = _words(content_text(queue[index]))
    reply = _words(str(call["args"].get("message", "")))
    if len(said.split()) <= 3 or reply != said:
        return None
    held = any(
        isinstance(m, ToolMessage) and prompts.REPLY_ECHO in content_text(m) for m in queue[index:]
    )
    return None if held else prompts.REPLY_ECHO


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def _held_back(call: ToolCall, reason: str, limit: int) -> ToolMessage:
    """The result of a reply that was not sent, saying why."""
    return ToolMessage(
        tool_result(False, error_text("send_message", reason), limit),
        tool_call_id=str(call["id"]),
        name=call["name"],
        status="error",
        id=str(uuid.uuid4()),
    )
