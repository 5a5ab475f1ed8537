"""call_memory_tool: run every tool call of the last AI message and decide whether to go on.

Every call gets a tool result (providers reject a queue with an unanswered call). One step
may hold several calls (a memory edit and the reply, in one model call). The turn goes on
when a result must be read (a search, or ``request_heartbeat``), when a call failed and no
reply was sent yet, or when nothing was sent to the user; otherwise it ends. A reply sent
in the same step as a search is held back (the model has not read the results yet). A
batch of calls identical to the previous ones, ``Context.max_repeated_calls`` times in a
row, ends the turn.

The caller's tools run the way LangGraph's ``ToolNode`` runs them (injected state, store,
tool call id and runtime; ``ainvoke`` when the graph runs async). A ``Command`` a tool
returns updates this graph's state or routes; one addressed to the parent graph
(``Command.PARENT``, a handoff) ends the turn: every call still gets its result, the results
reach recall and this thread's state first, and ``respond`` hands control over.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Command

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
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
from langgraph_memgpt.tool_runner import UserToolResult
from langgraph_memgpt.tools import (
    Provenance,
    ToolOutcome,
    error_text,
    facts_of,
    run_memory_tool,
    tool_result,
    user_outcome,
)

DESTINATIONS = ("check_pressure", "respond")
NAMESPACE_SEPARATOR = "|"
"""Between a parent graph's and a subgraph's part of a checkpoint namespace.

LangGraph's own constant for it is internal (``langgraph._internal``); the format is what
LangGraph shows in every state snapshot's ``checkpoint_ns`` ("parent:task|node:task")."""
"""Where the node routes: think again (through check_pressure) or end the turn."""


def _signature(message: AIMessage) -> str:
    calls: list[tuple[str, object]] = [(c["name"], c["args"]) for c in message.tool_calls]
    calls += [(str(c.get("name")), str(c.get("args"))) for c in message.invalid_tool_calls]
    return json.dumps(calls, sort_keys=True, default=str)


@dataclass
class _Step:
    """One run of the node: the calls to make, and what they produced so far."""

    state: State
    ctx: Context
    memory: Memory
    last: AIMessage
    where: Provenance
    calls: list[ToolCall]
    searching: bool
    in_subgraph: bool
    results: list[ToolMessage] = field(default_factory=list)
    outcomes: list[ToolOutcome] = field(default_factory=list)


def make_call_memory_tool(deps: Deps) -> RunnableLambda[State, Command[Any]]:
    """Build the node with the graph's dependencies: a sync and an async implementation.

    LangGraph runs the sync one under ``invoke``/``stream`` and the async one under
    ``ainvoke``/``astream``, so async tools run on the caller's event loop; the memory
    tools' store I/O then runs in a worker thread (blocking calls on the loop are refused
    by ``langgraph dev``). Both are public LangChain/LangGraph API: a ``RunnableLambda``
    with a sync and an async body, the run's `Runtime` from ``get_runtime``.
    """

    def begin(state: State, config: RunnableConfig, runtime: Runtime[Context]) -> _Step | None:
        ctx = context_of(runtime)
        last = state["messages"][-1]
        if not isinstance(last, AIMessage):
            return None
        memory = deps.memory(ctx, state)
        where = Provenance(
            thread_id=thread_of(runtime),
            turn=state.get("turn", 0),
            in_view=frozenset(str(m.id) for m in state["messages"] if m.id),
        )
        executed = _as_recorded(last, memory)
        return _Step(
            state=state,
            ctx=ctx,
            memory=memory,
            last=last,
            where=where,
            calls=[executed.get(str(call["id"]), call) for call in last.tool_calls],
            searching=any(facts_of(c["name"], deps.tools).reads for c in last.tool_calls),
            # A handoff needs a graph to hand control to. A node's checkpoint namespace is
            # "node:task" at the root and "parent:task|node:task" inside another graph.
            in_subgraph=NAMESPACE_SEPARATOR
            in str(config.get("configurable", {}).get("checkpoint_ns", "")),
        )

    def held_back(step: _Step, call: ToolCall) -> bool:
        if call["name"] != "send_message":
            return False
        reason = _hold_back_reason(call, step.searching, step.state)
        if reason:
            step.results.append(_held_back(call, reason, step.ctx.result_char_limit))
        return bool(reason)

    def run_memory(step: _Step, call: ToolCall) -> ToolOutcome:
        return run_memory_tool(
            call["name"],
            call["args"],
            memory=step.memory,
            ctx=step.ctx,
            where=replace(step.where, call_id=str(call["id"]) if call.get("id") else None),
            user_tools=deps.tools,
        )

    def taken_in(step: _Step, call: ToolCall, result: UserToolResult) -> ToolOutcome:
        facts = facts_of(call["name"], deps.tools)
        outcome = user_outcome(call["name"], result, facts, step.ctx.result_char_limit)
        return _checked(call, outcome, step)

    def call_memory_tool(
        state: State, config: RunnableConfig
    ) -> Command[Literal["check_pressure", "respond"]]:
        """Execute the pending tool calls; heartbeat or failure -> think again, else respond."""
        runtime: Runtime[Context] = get_runtime(Context)
        step = begin(state, config, runtime)
        if step is None:
            return Command(goto="respond")
        for call in step.calls:
            if held_back(step, call):
                continue
            if call["name"] in deps.tools:
                try:
                    result = deps.tools.run(call, state, config=config, runtime=runtime)
                    outcome = taken_in(step, call, result)
                except GraphBubbleUp:
                    raise
                except Exception as exc:  # noqa: BLE001 - every failure goes back to the model
                    outcome = _failed(call["name"], exc, step.ctx)
            else:
                outcome = run_memory(step, call)
            _add(step, call, outcome)
        return finish(step)

    async def acall_memory_tool(
        state: State, config: RunnableConfig
    ) -> Command[Literal["check_pressure", "respond"]]:
        """`call_memory_tool` on the caller's event loop."""
        runtime: Runtime[Context] = get_runtime(Context)
        step = await asyncio.to_thread(begin, state, config, runtime)
        if step is None:
            return Command(goto="respond")
        for call in step.calls:
            if held_back(step, call):
                continue
            if call["name"] in deps.tools:
                try:
                    result = await deps.tools.arun(call, state, config=config, runtime=runtime)
                    outcome = taken_in(step, call, result)
                except GraphBubbleUp:
                    raise
                except Exception as exc:  # noqa: BLE001 - every failure goes back to the model
                    outcome = _failed(call["name"], exc, step.ctx)
            else:
                outcome = await asyncio.to_thread(run_memory, step, call)
            _add(step, call, outcome)
        return await asyncio.to_thread(finish, step)

    return RunnableLambda(call_memory_tool, afunc=acall_memory_tool, name="call_memory_tool")


def _failed(name: str, exc: BaseException | str, ctx: Context) -> ToolOutcome:
    content = tool_result(False, error_text(name, exc), ctx.result_char_limit)
    return ToolOutcome(content, ok=False, heartbeat=True)


def _checked(call: ToolCall, outcome: ToolOutcome, step: _Step) -> ToolOutcome:
    """The outcome, or a readable failure when its ``Command`` cannot be carried out here."""
    unknown = sorted(set(outcome.update) - set(State.__annotations__))
    if unknown:
        return _failed(
            call["name"],
            f"it returned a Command setting {unknown}, which this agent's state does not "
            "hold; return only messages, or address the parent graph "
            "(Command(graph=Command.PARENT, ...))",
            step.ctx,
        )
    if outcome.goto and outcome.goto not in DESTINATIONS:
        return _failed(
            call["name"],
            f"it returned Command(goto={outcome.goto!r}); inside this agent a tool may route "
            f"only to {list(DESTINATIONS)}. To go to another agent, address the parent graph "
            "(Command(graph=Command.PARENT, goto=...))",
            step.ctx,
        )
    if outcome.handoff is not None and not step.in_subgraph:
        goto = outcome.handoff.goto
        return _failed(
            call["name"],
            f"it hands control to {goto!r} in a parent graph, but this agent runs on its "
            "own; add it to a multi-agent graph (a swarm, a supervisor) to hand off",
            step.ctx,
        )
    return outcome


def _add(step: _Step, call: ToolCall, outcome: ToolOutcome) -> None:
    step.outcomes.append(outcome)
    step.results.append(
        ToolMessage(
            outcome.content,
            tool_call_id=str(call["id"]),
            name=call["name"],
            status="success" if outcome.ok else "error",
            artifact=outcome.artifact,
            id=str(uuid.uuid4()),
        )
    )


def finish(step: _Step) -> Command[Literal["check_pressure", "respond"]]:
    """Answer invalid calls, record every result (write-ahead), and decide the route."""
    ctx, state, last, memory, where = step.ctx, step.state, step.last, step.memory, step.where
    results, outcomes = step.results, step.outcomes
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
    added: list[BaseMessage] = [m for o in outcomes for m in o.extra_messages]
    handoff = next((o.handoff for o in outcomes if o.handoff is not None), None)
    if handoff is not None:
        # Leaving the loop: no note asking for a reply, no breaker; respond hands over.
        record(memory, [*results, *added], where.thread_id, where.turn)
        update: dict[str, Any] = {
            "messages": [*results, *added],
            "handoff": _handoff(handoff, results),
            "repeat_key": "",
            "repeat_count": 0,
        }
        for outcome in outcomes:
            update.update(outcome.update)
        if any(o.core_changed for o in outcomes):
            update["core_blocks"] = core_mirror(memory)
        return Command(goto="respond", update=update)
    go_on = any(o.heartbeat and o.ok for o in outcomes)
    replied = any(o.reply is not None for o in outcomes) or bool(sent_messages(state))
    failed = any(not o.ok for o in outcomes) or bool(last.invalid_tool_calls)
    # A failure is worth another step while the user still waits for a reply; after
    # the reply it would only cost time (the error stays in the queue for next turn).
    go_on = go_on or (failed and not replied)
    extra: list[AnyMessage] = []
    if not go_on and not replied:
        # Every user message gets a reply: a turn may not end on a silent memory edit
        # (small models often forget send_message). Bounded by max_steps and the breaker.
        go_on = True
        extra.append(HumanMessage(prompts.NO_REPLY_NOTE, name=ALERT_NAME, id=str(uuid.uuid4())))
    record(memory, [*results, *added, *extra], where.thread_id, where.turn)

    signature = _signature(last)
    repeats = state.get("repeat_count", 0) + 1 if signature == state.get("repeat_key") else 1
    update = {
        "messages": [*results, *added, *extra],
        "repeat_key": signature,
        "repeat_count": repeats,
    }
    for outcome in outcomes:
        update.update(outcome.update)
    if any(o.core_changed for o in outcomes):
        update["core_blocks"] = core_mirror(memory)
    if repeats >= ctx.max_repeated_calls:
        first = last.tool_calls[0]["name"] if last.tool_calls else "an invalid call"
        update["stop_reason"] = prompts.REPEATED_CALL_REPLY.format(name=first)
        return Command(goto="respond", update=update)
    routed = next((o.goto for o in outcomes if o.goto), None)
    if routed is not None:
        return Command(goto=routed, update=update)
    return Command(goto="check_pressure" if go_on else "respond", update=update)


def _handoff(command: Command[Any], results: list[ToolMessage]) -> dict[str, Any]:
    """The parent-graph ``Command`` as state: its update carries every result of this step.

    A parent graph (a swarm, a supervisor) continues from the messages it is handed: each
    tool call there needs its result, the handoff's own result being this loop's copy (the
    one recall holds), so that both histories agree.
    """
    update = command.update
    if isinstance(update, Mapping):
        ours = {m.tool_call_id: m for m in results}
        messages = [
            ours.pop(m.tool_call_id, m) if isinstance(m, ToolMessage) else m
            for m in convert_to_messages(update.get("messages", []))
        ]
        update = {**update, "messages": [*messages, *ours.values()]}
    return {"goto": command.goto, "update": update}


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
