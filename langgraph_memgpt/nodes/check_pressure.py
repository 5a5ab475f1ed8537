"""check_pressure: between model steps; measure the next prompt, warn once per cycle, ask to evict.

It runs after ``open_turn`` (a run's start) and after ``close_step`` when the turn goes on.
It renders the system prompt the next ``think`` sends (re-rendered only when core memory or
the summary changed, `main_context.current_system`), counts that prompt exactly, adds the
memory-pressure warning past ``warning_fraction`` of the window (once per eviction cycle),
and asks for an eviction (``force_evict``) past ``flush_fraction``: `routes.after_pressure`
reads its update. The measuring is the turn core's (`langgraph_memgpt.turn.core.measure`, shared
with `MemGPTMiddleware`).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime, get_runtime

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.state import State
from langgraph_memgpt.turn import core as turn
from langgraph_memgpt.turn.main_context import (
    context_of,
    thread_of,
)
from langgraph_memgpt.turn.streaming import hide


def make_check_pressure(deps: Deps) -> Any:
    """Build the node with the graph's dependencies."""

    def check_pressure(state: State, config: RunnableConfig) -> dict[str, Any]:
        """Measure the next prompt; warn or ask to evict."""
        runtime: Runtime[Context] = get_runtime(Context)
        ctx = context_of(runtime)
        memory = deps.memory(ctx, state)
        queue = state["messages"]
        system_prompt, update = turn.system(
            state, memory, ctx, thread_id=thread_of(runtime), instructions=deps.instructions
        )
        measured = turn.measure(state, system_prompt, queue, ctx, deps.counter, deps.schemas)
        hide(measured.get("messages", []), config)
        return {**update, **measured}

    return check_pressure


__all__ = ["make_check_pressure"]
