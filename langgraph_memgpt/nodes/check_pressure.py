"""check_pressure: between model steps; measure the next prompt, warn once per cycle.

A run's system events enter the queue here first (`langgraph_memgpt.event_turn.with_events`)
and open the turn as a user's message does. It closes a finished tool step
(`langgraph_memgpt.tool_step`: does the turn go on?) and asks for an eviction when the
prompt passes the flush limit; `routes.after_pressure` reads its update. It also opens each
user turn: the user's message is written to recall memory here, first (write-ahead), and a
message too large for the window is cut in the queue while recall keeps it whole. A tool
call left unanswered by a killed run gets its (error) result here, before the model sees the
queue again, and a user message a killed run left in the checkpoint unrecorded (LangGraph
saves a run's input before any node runs) opens its own turn here, before the newest one
(see ``langgraph_memgpt.recovery`` for threads nobody continues).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.event_turn import with_events
from langgraph_memgpt.main_context import (
    ALERT_NAME,
    CUT_FLAG,
    TIME_KEY,
    build_prompt,
    context_of,
    current_system,
    cut_text,
    is_user_message,
    latest_user_index,
    message_budget,
    prompt_tokens,
    record,
    stamped,
    thread_of,
    valid_message,
    with_time,
)
from langgraph_memgpt.state import State
from langgraph_memgpt.streaming import hide
from langgraph_memgpt.tokens import TokenCounter, content_text
from langgraph_memgpt.tool_step import close_step, open_step
from langgraph_memgpt.tools import error_text, tool_result


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


def pressure(
    state: State,
    system_prompt: str,
    queue: Sequence[AnyMessage],
    ctx: Context,
    counter: TokenCounter,
    schemas: Sequence[dict[str, Any]],
) -> tuple[bool, HumanMessage | None]:
    """Measure the next prompt: (evict now?, the memory-pressure warning to add, or None).

    Eviction is due past ``flush_fraction`` of the window (or when ``force_evict`` asks);
    the warning past ``warning_fraction``, once per eviction cycle (``alerted``). Shared
    by this node and `langgraph_memgpt.middleware.MemGPTMiddleware`.
    """
    prompt = build_prompt(
        system_prompt, state.get("summary", ""), state.get("evicted_count", 0), queue
    )
    used = prompt_tokens(counter, prompt, schemas)
    window = ctx.context_window
    if state.get("force_evict") or used > ctx.flush_fraction * window:
        return True, None
    if used > ctx.warning_fraction * window and not state.get("alerted"):
        alert = HumanMessage(
            prompts.pressure_alert(used, window), name=ALERT_NAME, id=str(uuid.uuid4())
        )
        return False, alert
    return False, None


def make_check_pressure(deps: Deps) -> Any:
    """Build the node with the graph's dependencies."""

    def check_pressure(
        state: State, config: RunnableConfig, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """Close the tool step or open the turn; measure the prompt; warn or ask to evict."""
        ctx = context_of(runtime)
        memory = deps.memory(ctx, state)
        queue = list(state["messages"])
        # A new thread becomes the agent's (see Deps.memory).
        update: dict[str, Any] = {} if state.get("agent_id") else {"agent_id": deps.agent_of(ctx)}
        step = open_step(state)
        if step is not None:
            closed, added = close_step(state, step, memory, ctx)
            record(memory, added, thread_of(runtime), state.get("turn", 0))
            hide(added, config)
            update.update(closed)
            if closed.get("turn_over"):
                return update
            queue += added
        elif state.get("handoff"):
            update["handoff"] = None  # an earlier run handed control over; this one has it back

        user_index = latest_user_index(queue)
        system: tuple[str, dict[str, Any]] | None = None
        turn = state.get("turn", 0)
        new_turn = user_index is not None and queue[user_index].id != state.get("turn_user_id")
        if user_index is not None and new_turn:
            turn += 1
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
            # Write-ahead before anything can fail: recall holds the message verbatim.
            for number, index in enumerate(waiting, start=turn - len(waiting) + 1):
                record(memory, [arrived[index]], thread_of(runtime), number)
            opened = {queue[i].id for i in waiting}
            rest = [m for m in repaired or queue if m.id not in opened]
            record(memory, rest, thread_of(runtime), turn)
            system = current_system(
                state,
                memory,
                len(repaired or queue),
                ctx,
                mid_turn=False,
                thread_id=thread_of(runtime),
                instructions=deps.instructions,
            )
            budget = message_budget(
                ctx, deps.counter, deps.schemas, system[0], state.get("evicted_count", 0)
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
                queue = [changed.get(m.id, m) for m in queue]
            hide(update.get("messages", []), config)

        mid_turn = not new_turn and state.get("steps", 0) > 0
        if system is None:
            system = current_system(
                state,
                memory,
                len(queue),
                ctx,
                mid_turn=mid_turn,
                thread_id=thread_of(runtime),
                instructions=deps.instructions,
            )
        system_prompt, system_update = system
        update.update(system_update)
        evict, alert = pressure(state, system_prompt, queue, ctx, deps.counter, deps.schemas)
        if evict:
            update["force_evict"] = True
            return update
        if alert is not None:
            record(memory, [alert], thread_of(runtime), turn)
            hide([alert], config)
            update["messages"] = [*update.get("messages", []), alert]
            update["alerted"] = True
        return update

    return with_events(check_pressure)
