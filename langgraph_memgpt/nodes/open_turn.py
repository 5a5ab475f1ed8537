"""open_turn: entered from START, once per run; a new user message (or events) opens a turn.

A run's system events enter the queue here first (`langgraph_memgpt.event_turn.with_events`)
and open the turn as a user's message does. The user's message is written to recall memory
first (write-ahead: this node's update lists it for `langgraph_memgpt.write_ahead`), and a
message too large for the window is cut in the queue while recall
keeps it whole. A tool call left unanswered by a killed run gets its (error) result here,
before the model sees the queue again, and a user message a killed run left in the
checkpoint unrecorded (LangGraph saves a run's input before any node runs) opens its own
turn here, before the newest one (see ``langgraph_memgpt.recovery`` for threads nobody
continues). A thread's first run makes it its agent's; a run after a handoff takes control
back. Measuring the prompt is ``check_pressure``, next.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime, get_runtime

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.event_turn import with_events
from langgraph_memgpt.main_context import (
    CUT_FLAG,
    TIME_KEY,
    context_of,
    current_system,
    cut_text,
    is_user_message,
    latest_user_index,
    message_budget,
    stamped,
    thread_of,
    valid_message,
    with_time,
)
from langgraph_memgpt.state import State
from langgraph_memgpt.streaming import hide
from langgraph_memgpt.tokens import TokenCounter, content_text
from langgraph_memgpt.tools import error_text, tool_result
from langgraph_memgpt.write_ahead import RECORD_FIRST


def fitted(message: AnyMessage, budget: int, counter: TokenCounter) -> AnyMessage | None:
    """A copy of ``message`` cut to ``budget`` tokens as the model reads it, or None if it fits.

    The model reads a user message after the time it was sent (``with_time``): the stamp's
    tokens come out of the budget, and they vary with the time.
    """
    text = content_text(message)
    budget -= counter.text(content_text(with_time(message.model_copy(update={"content": ""}))))
    if counter.text(text) <= budget:
        return None
    note = prompts.TRUNCATED_NOTE.format(chars=len(text), message_id=message.id)
    cut = cut_text(text, budget, counter, note)
    kwargs = {**message.additional_kwargs, CUT_FLAG: len(cut)}  # recall keeps the whole text
    return message.model_copy(update={"content": cut, "additional_kwargs": kwargs})


def _answer_interrupted_calls(
    queue: list[AnyMessage], user_index: int, limit: int
) -> list[AnyMessage] | None:
    """The queue with an error result after every tool call that never got one, or None.

    A run killed (or cancelled) between ``think`` and ``call_memory_tool`` leaves an AI
    tool call without its result in the checkpoint; the next user message starts a new
    run, and providers reject a queue holding an unanswered call. The model is told the
    call was interrupted (it may or may not have taken effect), like any failed call.
    """
    answered = {m.tool_call_id for m in queue if isinstance(m, ToolMessage)}
    repaired: list[AnyMessage] = []
    missing = False
    for index, message in enumerate(queue):
        repaired.append(message)
        if not isinstance(message, AIMessage) or index >= user_index:
            continue
        calls: list[tuple[str | None, str | None]] = [
            (c["name"], c["id"]) for c in message.tool_calls
        ]
        calls += [(c.get("name"), c.get("id")) for c in message.invalid_tool_calls]
        for name, call_id in calls:
            if str(call_id) in answered:
                continue
            missing = True
            repaired.append(
                ToolMessage(
                    tool_result(False, error_text(str(name), prompts.INTERRUPTED_CALL), limit),
                    tool_call_id=str(call_id),
                    name=str(name),
                    status="error",
                    id=str(uuid.uuid4()),
                )
            )
    return repaired if missing else None


def make_open_turn(deps: Deps) -> Any:
    """Build the node with the graph's dependencies."""

    def open_turn(state: State, config: RunnableConfig) -> dict[str, Any]:
        """Take the run's input in: open a turn for each new user message (or events)."""
        runtime: Runtime[Context] = get_runtime(Context)
        ctx = context_of(runtime)
        memory = deps.memory(ctx, state)
        queue = list(state["messages"])
        # A new thread becomes the agent's (see Deps.memory).
        update: dict[str, Any] = {} if state.get("agent_id") else {"agent_id": deps.agent_of(ctx)}
        if state.get("handoff"):
            update["handoff"] = None  # an earlier run handed control over; this one has it back
        user_index = latest_user_index(queue)
        if user_index is None or queue[user_index].id == state.get("turn_user_id"):
            return update
        turn = state.get("turn", 0) + 1
        update.update(
            turn=turn,
            turn_user_id=queue[user_index].id,
            steps=0,
            repeat_key="",
            repeat_count=0,
            context_retries=0,
            stop_reason="",
            turn_over=False,
        )
        repaired = _answer_interrupted_calls(queue, user_index, ctx.result_char_limit)
        # User messages no run has opened a turn for yet (no arrival time): the newest,
        # and any whose run was killed after LangGraph checkpointed it but before this
        # node ran. Each opens its own turn, in order, with the time it arrived: the time
        # `recover_thread` recorded for it, else now.
        waiting = [
            i
            for i, m in enumerate(queue)
            if i == user_index or (is_user_message(m) and TIME_KEY not in m.additional_kwargs)
        ]
        known = {
            r.message_id: r.created_at
            for r in memory.recall.get([str(queue[i].id) for i in waiting])
        }
        arrived = {
            i: stamped(valid_message(queue[i]), known.get(str(queue[i].id))) for i in waiting
        }
        turn += len(waiting) - 1
        update["turn"] = turn
        # Write-ahead (`write_ahead.WriteAhead`, as this update is taken): recall holds each
        # message verbatim, in its own turn, and what a killed run left unrecorded.
        first = [
            (number, [arrived[index]])
            for number, index in enumerate(waiting, start=turn - len(waiting) + 1)
        ]
        opened = {queue[i].id for i in waiting}
        first.append((turn, [m for m in repaired or queue if m.id not in opened]))
        update[RECORD_FIRST] = first
        system_prompt, system_update = current_system(
            state,
            memory,
            len(repaired or queue),
            ctx,
            mid_turn=False,
            thread_id=thread_of(runtime),
            instructions=deps.instructions,
        )
        update.update(system_update)
        budget = message_budget(
            ctx, deps.counter, deps.schemas, system_prompt, state.get("evicted_count", 0)
        )
        changed: dict[str | None, AnyMessage] = {}
        for index, message in enumerate(queue):
            admitted = arrived.get(index) or valid_message(message)
            if index in arrived:  # earlier messages were fitted in their turn
                admitted = fitted(admitted, budget, deps.counter) or admitted
            if admitted is not message:
                changed[message.id] = admitted
        if repaired is not None:
            # Tool results belong right after their call: rewrite the whole queue.
            queue = [changed.get(m.id, m) for m in repaired]
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *queue]
        elif changed:
            update["messages"] = list(changed.values())
        hide(update.get("messages", []), config)
        return update

    return with_events(open_turn)
