"""The loop's decisions, as the conditional edges of `langgraph_memgpt.graph`.

Nodes only return state updates; these functions read the state and say where the turn
goes next, so the whole loop is visible from ``graph.py`` (and in Studio), and LangGraph's
own recipes work: ``update_state`` on a pending tool call re-runs `after_think`.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import get_runtime
from langgraph.types import Send

from langgraph_memgpt.context import Context
from langgraph_memgpt.state import State
from langgraph_memgpt.tool_step import decide, open_step, results_of


def after_pressure(state: State) -> Literal["think", "summarize_evict", "respond"]:
    """After ``check_pressure``: the turn is over, the queue must shrink, or think."""
    if state.get("turn_over"):
        return "respond"
    if state.get("force_evict"):
        return "summarize_evict"
    return "think"


def after_eviction(state: State) -> Literal["think", "respond"]:
    """After ``summarize_evict``: think, unless no eviction could make the prompt fit."""
    return "respond" if state.get("stop_reason") else "think"


def after_think(
    state: State,
) -> list[Send] | Literal["call_memory_tool", "check_pressure", "summarize_evict", "respond"]:
    """After ``think``: each unanswered tool call as its own tool task, or the next node.

    One task per call (as ``create_agent`` does): a call that completed before another
    interrupted is not run again when the run resumes. A step of one call goes to the tool
    node by its plain edge: the node's own task is then that call's, and it skips
    building a ``Send`` (most steps are one call).
    """
    if state.get("stop_reason"):
        return "respond"
    if state.get("force_evict"):
        return "summarize_evict"
    queue = state["messages"]
    index = next(
        (i for i in range(len(queue) - 1, -1, -1) if isinstance(queue[i], AIMessage)), None
    )
    if index is None:
        return "respond"
    last = queue[index]
    assert isinstance(last, AIMessage)
    # Only results after it: call ids may repeat across steps ("0" every response).
    answered = {m.tool_call_id for m in queue[index + 1 :] if isinstance(m, ToolMessage)}
    pending = [c for c in last.tool_calls if c.get("id") not in answered]
    if pending and len(last.tool_calls) == 1:
        return "call_memory_tool"
    if pending:
        return [Send("call_memory_tool", [{**c, "type": "tool_call"}]) for c in pending]
    if last.tool_calls or last.invalid_tool_calls:
        return "check_pressure"  # every call answered (invalid ones by think itself)
    return "respond"


def after_tools(state: State) -> Literal["check_pressure", "respond"]:
    """After every call of a step has its result: the turn is over, or measure and think.

    A step that ends the turn (the reply is out) goes straight to ``respond``, which
    closes it; any other goes to ``check_pressure`` (a note, the breaker, the pressure).
    """
    step = open_step(state)
    if step is None or state.get("handoff"):
        # A handoff is closed in check_pressure: respond then only hands control over.
        return "check_pressure"
    # Each call's task reads the state with its own result only: only a step of one call
    # is seen whole here; the others close in check_pressure, once every task is done.
    answered = {r.tool_call_id for r in results_of(state, step)}
    if any(c.get("id") not in answered for c in step.tool_calls):
        return "check_pressure"
    try:
        limit = Context.from_any(get_runtime().context).max_repeated_calls
    except (RuntimeError, LookupError):
        limit = Context().max_repeated_calls
    decision = decide(state, step, limit)
    return "respond" if decision.turn_over and not decision.stop_reason else "check_pressure"
