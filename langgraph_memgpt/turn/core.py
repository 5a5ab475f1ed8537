"""One turn, two faces: the orchestration of a MemGPT turn, shared by the graph and the middleware.

A turn is: open it (`open_turn`: the user's message and the run's events in, stamped, cut to
the window, what a killed run left caught up), measure the next prompt (`measure`: warn once
per cycle, ask for an eviction past the flush limit; the eviction itself is
`nodes.summarize_evict.evict`, handed in; the middleware plans its exact prompt with
`plan`), stop at the step cap (`step_cap`), call the model, take its message (`take`: call
ids, a readable error for each call that did not parse, the copy the queue keeps bounded),
close each tool step (`close`: does the turn go on, the repeat breaker, heartbeats), and end
with the reply the loop sends (`reply_text`). A provider's context-length error evicts and
retries, a bounded number of times (`after_overflow`).

The graph's nodes (`langgraph_memgpt.nodes`) and `MemGPTMiddleware`'s hooks
(`langgraph_memgpt.compose.middleware`) are thin adapters over these functions: a rule changed here
changes both faces. Each returns state updates; recall is written by
`langgraph_memgpt.turn.write_ahead` as the update is taken.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.tools.memory_tools import failed_message
from langgraph_memgpt.tools.run import error_text, tool_result
from langgraph_memgpt.turn.main_context import (
    ALERT_NAME,
    CUT_FLAG,
    TIME_KEY,
    bounded_calls,
    build_prompt,
    current_system,
    cut_text,
    is_user_message,
    latest_user_index,
    message_budget,
    prompt_tokens,
    stamped,
    valid_message,
    with_time,
)
from langgraph_memgpt.turn.reply_rules import REPLY_SEPARATOR
from langgraph_memgpt.turn.step import close_step, open_step, sent_messages
from langgraph_memgpt.turn.tokens import TokenCounter, content_text
from langgraph_memgpt.turn.write_ahead import RECORD_FIRST

# -- opening the turn ------------------------------------------------------------------


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


def answer_interrupted_calls(
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


def open_turn(
    state: State,
    memory: Memory,
    ctx: Context,
    *,
    thread_id: str,
    counter: TokenCounter,
    schemas: Sequence[dict[str, Any]],
    instructions: str = "",
) -> tuple[dict[str, Any], list[AnyMessage]]:
    """The update opening a turn for the queue's new user message (or events), and the queue.

    Empty (and the queue as it is) when the newest user message already opened its turn.
    The update resets the turn's counters, stamps each user message no turn opened yet with
    its arrival time (each opens its own turn, in order: a killed run's first), answers the
    tool calls a killed run left unanswered, cuts a message too large for the window (recall
    keeps it whole: `RECORD_FIRST`), and caches the system prompt it measured against.
    """
    queue: list[AnyMessage] = list(state["messages"])
    update: dict[str, Any] = {}
    user_index = latest_user_index(queue)
    if user_index is None or queue[user_index].id == state.get("turn_user_id"):
        return update, queue
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
    repaired = answer_interrupted_calls(queue, user_index, ctx.result_char_limit)
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
        r.message_id: r.created_at for r in memory.recall.get([str(queue[i].id) for i in waiting])
    }
    arrived = {i: stamped(valid_message(queue[i]), known.get(str(queue[i].id))) for i in waiting}
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
    system_prompt, system_update = system(
        state,
        memory,
        ctx,
        thread_id=thread_id,
        instructions=instructions,
        mid_turn=False,
        queue=repaired or queue,
    )
    update.update(system_update)
    budget = message_budget(ctx, counter, schemas, system_prompt, state.get("evicted_count", 0))
    changed: dict[str | None, AnyMessage] = {}
    for index, message in enumerate(queue):
        admitted = arrived.get(index) or valid_message(message)
        if index in arrived:  # earlier messages were fitted in their turn
            admitted = fitted(admitted, budget, counter) or admitted
        if admitted is not message:
            changed[message.id] = admitted
    if repaired is not None:
        # Tool results belong right after their call: rewrite the whole queue.
        queue = [changed.get(m.id, m) for m in repaired]
        update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *queue]
    elif changed:
        update["messages"] = list(changed.values())
        queue = [changed.get(m.id, m) for m in queue]
    return update, queue


# -- between steps ----------------------------------------------------------------------


def system(
    state: State,
    memory: Memory,
    ctx: Context,
    *,
    thread_id: str,
    instructions: str,
    mid_turn: bool | None = None,
    queue: Sequence[AnyMessage] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The system prompt for the queue in ``state`` (or ``queue``), and its state update.

    `main_context.current_system` as every phase asks for it: ``mid_turn`` once the turn
    has taken a model step (unless said).
    """
    return current_system(
        state,
        memory,
        len(state["messages"] if queue is None else queue),
        ctx,
        mid_turn=state.get("steps", 0) > 0 if mid_turn is None else mid_turn,
        thread_id=thread_id,
        instructions=instructions,
    )


def measure(
    state: State,
    system_prompt: str,
    queue: Sequence[AnyMessage],
    ctx: Context,
    counter: TokenCounter,
    schemas: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """Measure the next prompt: the update its size asks for (empty: none).

    Eviction (``force_evict``) is due past ``flush_fraction`` of the window (or when
    ``force_evict`` already asks); the memory-pressure warning (and ``alerted``) past
    ``warning_fraction``, once per eviction cycle.
    """
    prompt = build_prompt(
        system_prompt, state.get("summary", ""), state.get("evicted_count", 0), queue
    )
    used = prompt_tokens(counter, prompt, schemas)
    window = ctx.context_window
    if state.get("force_evict") or used > ctx.flush_fraction * window:
        return {"force_evict": True}
    if used > ctx.warning_fraction * window and not state.get("alerted"):
        alert = HumanMessage(
            prompts.pressure_alert(used, window), name=ALERT_NAME, id=str(uuid.uuid4())
        )
        return {"messages": [alert], "alerted": True}
    return {}


@dataclass(frozen=True)
class Plan:
    """The prompt to send, the state update that made it, or the reply that ends the turn."""

    prompt: list[BaseMessage]
    update: dict[str, Any]
    reply: str | None = None
    """The honest reply when no eviction can make the prompt fit (then no model call)."""


def plan(
    state: State,
    memory: Memory,
    ctx: Context,
    *,
    render: Callable[[State, bool], tuple[str, dict[str, Any]]],
    evict: Callable[..., dict[str, Any]],
    counter: TokenCounter,
    schemas: Sequence[dict[str, Any]],
    summarizer: Callable[[], BaseChatModel],
    thread_id: str,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Plan:
    """The prompt for the queue in ``state``, evicted first when it is over the flush limit.

    ``render(state, mid_turn)``: the system prompt and its state update
    (`main_context.current_system` with the face's instructions). ``evict``: the
    eviction, `nodes.summarize_evict.evict` (the graph's ``summarize_evict`` node); ``loop``, an
    async run's event loop, has the summary written with the summarizer's async API. In the
    graph these are three nodes (``check_pressure``, ``summarize_evict``, ``think``); the
    middleware, which sees the exact prompt only inside its model call, runs them here.
    """
    messages = list(state["messages"])
    view = state
    system_prompt, update = render(view, True)
    update = dict(update)
    evict_now = bool(
        measure(view, system_prompt, messages, ctx, counter, schemas).get("force_evict")
    )
    reply = None
    if evict_now:
        evicted = evict(
            view,
            memory,
            ctx,
            system_prompt=system_prompt,
            counter=counter,
            schemas=schemas,
            summarizer=summarizer,
            thread_id=thread_id,
            loop=loop,
        )
        reply = evicted.pop("stop_reason", None)
        update.update(evicted)
        gone = {m.id for m in evicted.get("messages", [])}
        messages = [m for m in messages if m.id not in gone]
        view = cast(State, {**state, **update, "messages": messages})
        system_prompt, rendered = render(view, False)
        update.update(rendered)
    prompt = build_prompt(
        system_prompt, view.get("summary", ""), view.get("evicted_count", 0), messages
    )
    return Plan(prompt, update, reply)


def step_cap(state: State, ctx: Context) -> str | None:
    """The honest reply when the turn has used its ``max_steps`` model calls, else None."""
    steps = state.get("steps", 0)
    return prompts.STEP_CAP_REPLY.format(steps=steps) if steps >= ctx.max_steps else None


def after_overflow(retries: int, ctx: Context) -> str | None:
    """After a provider's context-length error: None (evict, retry), or the honest reply.

    The reply once ``max_context_retries`` evictions did not help.
    """
    return prompts.CONTEXT_OVERFLOW_REPLY if retries >= ctx.max_context_retries else None


# -- the model's message ------------------------------------------------------------------


@dataclass(frozen=True)
class Taken:
    """The model's message as the queue keeps it, and what else enters the queue with it."""

    message: AIMessage
    """With an id and call ids; its text and arguments bounded (``whole`` otherwise)."""
    answers: list[ToolMessage]
    """An error result for each call whose arguments did not parse."""
    whole: AIMessage
    """The message as the model wrote it (recall keeps this one)."""

    def record_first(self, turn: int, before: Sequence[AnyMessage] = ()) -> dict[str, Any]:
        """The `RECORD_FIRST` entry keeping the whole message in recall, when it was cut."""
        if self.message is self.whole:
            return {}
        return {RECORD_FIRST: [(turn, [*before, self.whole, *self.answers])]}


def take(raw: AIMessage, ctx: Context, counter: TokenCounter, *, bound: bool = True) -> Taken:
    """The model's message taken into the turn.

    ``bound``: the queue's copy is cut to ``max_message_fraction`` of the window (the calls
    run with the whole arguments, which recall keeps).
    """
    message = valid_message(with_call_ids(raw))
    if not message.id:
        message = message.model_copy(update={"id": str(uuid.uuid4())})
    answers = invalid_call_results(message, ctx.result_char_limit)
    whole = message
    if bound:
        budget = int(ctx.context_window * ctx.max_message_fraction)
        message = bounded_calls(message, budget, counter)
    return Taken(message, answers, whole)


def with_call_ids(message: AIMessage) -> AIMessage:
    """Every tool call gets an id: its result must point back at it or providers answer 400."""
    if all(c.get("id") for c in message.tool_calls) and all(
        c.get("id") for c in message.invalid_tool_calls
    ):
        return message
    calls = [
        {**c, "id": c.get("id") or f"call_{uuid.uuid4().hex[:24]}"} for c in message.tool_calls
    ]
    invalid = [
        {**c, "id": c.get("id") or f"call_{uuid.uuid4().hex[:24]}"}
        for c in message.invalid_tool_calls
    ]
    return message.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid})


def invalid_call_results(message: AIMessage, limit: int) -> list[ToolMessage]:
    """An error result for each call whose arguments did not parse (no tool can run it)."""
    results = []
    for bad in message.invalid_tool_calls:
        name = str(bad.get("name") or "unknown")
        reason = bad.get("error") or "parse error"
        detail = f"arguments are not valid JSON ({reason}): {bad.get('args')!r}"
        results.append(
            failed_message(name, str(bad.get("id")), detail, limit, id=str(uuid.uuid4()))
        )
    return results


# -- closing a step, ending the turn ---------------------------------------------------------


def close(
    state: State,
    memory: Memory,
    ctx: Context,
    *,
    marked_only: bool = True,
    note: bool = True,
) -> dict[str, Any] | None:
    """The update closing the queue's finished tool step (`tool_step.close_step`), or None.

    ``marked_only``: only a step whose results this loop's tool step marked (in a swarm the
    queue also holds other agents' calls); the middleware's agent runs every call itself.
    ``note``: a step that sent no reply gets a note asking for it (the graph's agents reply
    with ``send_message``; the middleware's answer in plain text at their next step).
    """
    step = open_step(state, marked_only=marked_only)
    if step is None:
        return None
    update, _ = close_step(state, step, memory, ctx, note=note)
    return update


def reply_text(state: State, stop_reason: str = "") -> str:
    """The reply that ends the turn: what ``send_message`` sent, then the stop's reason."""
    return REPLY_SEPARATOR.join([*sent_messages(state), *([stop_reason] if stop_reason else [])])


__all__ = [
    "Plan",
    "Taken",
    "after_overflow",
    "answer_interrupted_calls",
    "close",
    "fitted",
    "invalid_call_results",
    "system",
    "system",
    "measure",
    "open_turn",
    "plan",
    "reply_text",
    "step_cap",
    "take",
    "with_call_ids",
]
