"""check_pressure: between model steps; measure the next prompt, warn once per cycle, ask to evict.

It runs after ``open_turn`` (a run's start) and after ``close_step`` when the turn goes on.
It renders the system prompt the next ``think`` sends (re-rendered only when core memory or
the summary changed, `main_context.current_system`), counts that prompt exactly, adds the
memory-pressure warning past ``warning_fraction`` of the window (once per eviction cycle),
and asks for an eviction (``force_evict``) past ``flush_fraction``: `routes.after_pressure`
reads its update.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime, get_runtime

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.main_context import (
    ALERT_NAME,
    build_prompt,
    context_of,
    current_system,
    prompt_tokens,
    thread_of,
)
from langgraph_memgpt.state import State
from langgraph_memgpt.streaming import hide
from langgraph_memgpt.tokens import TokenCounter


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

    def check_pressure(state: State, config: RunnableConfig) -> dict[str, Any]:
        """Measure the next prompt; warn or ask to evict."""
        runtime: Runtime[Context] = get_runtime(Context)
        ctx = context_of(runtime)
        memory = deps.memory(ctx, state)
        queue = state["messages"]
        system_prompt, update = current_system(
            state,
            memory,
            len(queue),
            ctx,
            mid_turn=state.get("steps", 0) > 0,
            thread_id=thread_of(runtime),
            instructions=deps.instructions,
        )
        update = dict(update)
        evict, alert = pressure(state, system_prompt, queue, ctx, deps.counter, deps.schemas)
        if evict:
            update["force_evict"] = True
            return update
        if alert is not None:
            hide([alert], config)
            update["messages"] = [alert]
            update["alerted"] = True
        return update

    return check_pressure


__all__ = ["make_check_pressure", "pressure"]
