"""The loop's decisions, as the conditional edges of `langgraph_memgpt.graph`.

Nodes only return state updates, and each decision is a node's (``check_pressure`` asks for
an eviction, ``close_step`` says whether the turn is over, ``think`` and ``summarize_evict``
say why a turn stops); these functions only read the state those nodes wrote and say where
the turn goes next, so the whole loop is visible from ``graph.py`` (and in Studio), and
LangGraph's own recipes work: ``update_state`` on a pending tool call re-runs `after_think`.
No route reads the run's context or computes a decision.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Send

from langgraph_memgpt.state import State


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
) -> list[Send] | Literal["call_memory_tool", "close_step", "summarize_evict", "respond"]:
    """After ``think``: each unanswered tool call as its own tool task, or the next node.

    One task per call (as ``create_agent`` does): a call that completed before another
    interrupted is not run again when the run resumes. A step of one call goes to the tool
    node by its plain edge: the node's own task is then that call's, and it skips
    building a ``Send`` (most steps are one call). A step whose calls ``think`` answered
    itself (arguments that did not parse) goes straight to ``close_step``.
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
        return "close_step"  # every call answered (invalid ones by think itself)
    return "respond"


def after_close(state: State) -> Literal["check_pressure", "respond"]:
    """After ``close_step``: the turn is over (``respond`` replies or hands over), or go on."""
    return "respond" if state.get("turn_over") else "check_pressure"
