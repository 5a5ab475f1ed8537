"""check_pressure: measure the next prompt, warn once per cycle, or send it to eviction.

It also opens each user turn: the user's message is written to recall memory here, first
(write-ahead), and a message too large for the window is cut in the queue while recall
keeps it whole.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps, Node
from langgraph_memgpt.main_context import (
    ALERT_NAME,
    build_prompt,
    context_of,
    current_system,
    latest_user_index,
    prompt_tokens,
    record,
    thread_of,
)
from langgraph_memgpt.state import State
from langgraph_memgpt.tokens import TokenCounter, content_text


def _fit(message: AnyMessage, budget: int, counter: TokenCounter) -> AnyMessage | None:
    """A copy of ``message`` cut to ``budget`` tokens, or None when it already fits."""
    text = content_text(message)
    tokens = counter.text(text)
    if tokens <= budget:
        return None
    keep = max(0, int(len(text) * budget / tokens * 0.9) - 300)
    note = prompts.TRUNCATED_NOTE.format(chars=len(text), message_id=message.id)
    return message.model_copy(update={"content": text[:keep] + note})


def make_check_pressure(
    deps: Deps,
) -> Node[Command[Literal["think", "summarize_evict"]]]:
    """Build the node with the graph's dependencies."""

    def check_pressure(
        state: State, runtime: Runtime[Context]
    ) -> Command[Literal["think", "summarize_evict"]]:
        """Route to think, after a warning if the window is filling, or to summarize_evict."""
        ctx = context_of(runtime)
        memory = deps.memory(ctx)
        queue = list(state["messages"])
        update: dict[str, Any] = {}

        user_index = latest_user_index(queue)
        turn = state.get("turn", 0)
        if user_index is not None and queue[user_index].id != state.get("turn_user_id"):
            turn += 1
            update.update(
                turn=turn,
                turn_user_id=queue[user_index].id,
                steps=0,
                repeat_key="",
                repeat_count=0,
                context_retries=0,
                stop_reason="",
            )
            # Write-ahead before anything can fail: recall holds the message verbatim.
            record(memory, queue, thread_of(runtime), turn)
            budget = int(ctx.context_window * ctx.max_message_fraction)
            cut = [m for m in (_fit(m, budget, deps.counter) for m in queue[user_index:]) if m]
            if cut:
                update["messages"] = cut
                by_id = {m.id: m for m in cut}
                queue = [by_id.get(m.id, m) for m in queue]

        system_prompt, system_update = current_system(state, memory, len(queue))
        update.update(system_update)
        prompt = build_prompt(
            system_prompt, state.get("summary", ""), state.get("evicted_count", 0), queue
        )
        used = prompt_tokens(deps.counter, prompt, deps.schemas)
        window = ctx.context_window
        if state.get("force_evict") or used > ctx.flush_fraction * window:
            return Command(goto="summarize_evict", update=update)
        if used > ctx.warning_fraction * window and not state.get("alerted"):
            alert = HumanMessage(
                prompts.pressure_alert(used, window), name=ALERT_NAME, id=str(uuid.uuid4())
            )
            record(memory, [alert], thread_of(runtime), turn)
            update["messages"] = [*update.get("messages", []), alert]
            update["alerted"] = True
        return Command(goto="think", update=update)

    return check_pressure
