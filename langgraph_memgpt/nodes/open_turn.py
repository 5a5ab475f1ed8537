"""open_turn: entered from START, once per run; a new user message (or events) opens a turn.

A run's system events enter the queue here first (`langgraph_memgpt.turn.event_turn.with_events`)
and open the turn as a user's message does. The turn itself is opened by the turn core
(`langgraph_memgpt.turn.core.open_turn`, shared with `MemGPTMiddleware`): the user's message is
written to recall memory first (write-ahead: the update lists it for
`langgraph_memgpt.turn.write_ahead`), and a message too large for the window is cut in the queue
while recall keeps it whole. A tool call left unanswered by a killed run gets its (error)
result here, before the model sees the queue again, and a user message a killed run left in
the checkpoint unrecorded (LangGraph saves a run's input before any node runs) opens its own
turn here, before the newest one (see ``langgraph_memgpt.ops.recovery`` for threads nobody
continues). A thread's first run makes it its agent's; a run after a handoff takes control
back. Measuring the prompt is ``check_pressure``, next.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime, get_runtime

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.state import State
from langgraph_memgpt.turn import core as turn
from langgraph_memgpt.turn.event_turn import with_events
from langgraph_memgpt.turn.main_context import context_of, thread_of
from langgraph_memgpt.turn.streaming import hide


def make_open_turn(deps: Deps) -> Any:
    """Build the node with the graph's dependencies."""

    def open_turn(state: State, config: RunnableConfig) -> dict[str, Any]:
        """Take the run's input in: open a turn for each new user message (or events)."""
        runtime: Runtime[Context] = get_runtime(Context)
        ctx = context_of(runtime)
        memory = deps.memory(ctx, state)
        # A new thread becomes the agent's (see Deps.memory).
        update: dict[str, Any] = {} if state.get("agent_id") else {"agent_id": deps.agent_of(ctx)}
        if state.get("handoff"):
            update["handoff"] = None  # an earlier run handed control over; this one has it back
        opened, _ = turn.open_turn(
            state,
            memory,
            ctx,
            thread_id=thread_of(runtime),
            counter=deps.counter,
            schemas=deps.schemas,
            instructions=deps.instructions,
        )
        hide(opened.get("messages", []), config)
        return {**update, **opened}

    return with_events(open_turn)
