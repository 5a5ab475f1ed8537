"""close_step: the join after a step's tool calls; writes the step's decision into state once.

Each call of the model's message ran as its own ``call_memory_tool`` task; this node runs
once after all of them (an unconditional edge from ``call_memory_tool``: every task of the
superstep triggers one run of it), or after ``think`` when every call was answered there
(invalid calls). The turn core (`langgraph_memgpt.turn.core.close`, shared with
`MemGPTMiddleware`; the rule is `langgraph_memgpt.turn.step.decide`) decides whether the
turn goes on (a result to read, a failure, a note asking for the reply) or is over (the
reply is out, a tool ended it or handed it over, the breaker), and the node writes that into
state (``turn_over``, ``stop_reason``, ``repeat_key``/``repeat_count``, ``step_closed``);
`routes.after_close` only reads it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime, get_runtime

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.state import State
from langgraph_memgpt.turn import core as turn
from langgraph_memgpt.turn.main_context import context_of
from langgraph_memgpt.turn.step import open_step
from langgraph_memgpt.turn.streaming import hide


def make_close_step(deps: Deps) -> Any:
    """Build the node with the graph's dependencies."""

    def close_step_node(state: State, config: RunnableConfig) -> dict[str, Any]:
        """Decide, once, what the finished tool step means for the turn."""
        if open_step(state) is None:
            # Nothing of this loop's to close (a parent's calls in a swarm's queue).
            return {}
        runtime: Runtime[Context] = get_runtime(Context)
        ctx = context_of(runtime)
        update = turn.close(state, deps.memory(ctx, state), ctx) or {}
        hide(update.get("messages", []), config)
        return update

    close_step_node.__name__ = "close_step"
    return close_step_node
