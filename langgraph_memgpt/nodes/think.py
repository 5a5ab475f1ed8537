"""think: one model call over the main context, with the memory tools bound.

The model's text next to a tool call is its inner monologue; a reply with no tool call is
a plain answer and ends the turn. A provider "context length exceeded" error sends the
queue to summarize_evict and retries (bounded by ``Context.max_context_retries``).
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from langgraph_memgpt import auto_search, prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps, Node
from langgraph_memgpt.llm.errors import is_context_overflow
from langgraph_memgpt.main_context import (
    bounded_calls,
    build_prompt,
    context_of,
    current_system,
    prompt_tokens,
    record,
    thread_of,
    valid_message,
)
from langgraph_memgpt.state import State
from langgraph_memgpt.tools import non_editing


def _with_call_ids(message: AIMessage) -> AIMessage:
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


def make_think(
    deps: Deps,
) -> Node[Command[Literal["call_memory_tool", "respond", "summarize_evict"]]]:
    """Build the node with the graph's dependencies."""

    def think(
        state: State, runtime: Runtime[Context]
    ) -> Command[Literal["call_memory_tool", "respond", "summarize_evict"]]:
        """Call the model on the rendered main context; route on what it asked for."""
        ctx = context_of(runtime)
        steps = state.get("steps", 0)
        if steps >= ctx.max_steps:
            reply = prompts.STEP_CAP_REPLY.format(steps=steps)
            return Command(goto="respond", update={"stop_reason": reply})
        memory = deps.memory(ctx, state)
        queue = state["messages"]
        thread_id = thread_of(runtime)
        system_prompt, update = current_system(
            state, memory, len(queue), ctx, mid_turn=steps > 0, thread_id=thread_id
        )
        chat = deps.chat_model(ctx)
        searched: list[AnyMessage] = []
        if steps == 0 and auto_search.wanted(ctx, chat):
            searched = auto_search.search_messages(queue, memory, ctx)
        schemas = deps.schemas_for(chat)
        summary, evicted = state.get("summary", ""), state.get("evicted_count", 0)
        prompt = build_prompt(system_prompt, summary, evicted, [*queue, *searched])
        if searched and prompt_tokens(deps.counter, prompt, schemas) > ctx.context_window:
            # The search was only a help: without it the model can still search itself.
            searched = []
            prompt = build_prompt(system_prompt, summary, evicted, queue)
        if prompt_tokens(deps.counter, prompt, schemas) > ctx.context_window:
            # Never send a prompt over the window (eviction could not make it fit, e.g. the
            # instructions and tools alone fill it): the honest reply ends the turn.
            return Command(
                goto="respond", update={**update, "stop_reason": prompts.CONTEXT_OVERFLOW_REPLY}
            )
        model = chat.bind_tools(schemas)
        step: dict[str, Any] = {}
        if getattr(chat, "accepts_step_tools", False) and auto_search.asks_memory_question(queue):
            # A small model asked about the user tends to save something while answering
            # (a copy of what it already holds): this step may search or reply, not edit.
            step["step_tools"] = non_editing(schemas)
        try:
            raw = model.invoke(prompt, **step)
        except Exception as exc:
            if not is_context_overflow(exc):
                raise
            retries = state.get("context_retries", 0)
            if retries >= ctx.max_context_retries:
                return Command(
                    goto="respond", update={**update, "stop_reason": prompts.CONTEXT_OVERFLOW_REPLY}
                )
            return Command(
                goto="summarize_evict",
                update={**update, "context_retries": retries + 1, "force_evict": True},
            )
        message = raw if isinstance(raw, AIMessage) else AIMessage(content=str(raw.content))
        message = valid_message(_with_call_ids(message))
        if not message.id:
            message = message.model_copy(update={"id": str(uuid.uuid4())})
        # Write-ahead of the whole message; the queue (and so the checkpoint) keeps a copy
        # bounded like a user message.
        record(memory, [*searched, message], thread_id, state.get("turn", 0))
        budget = int(ctx.context_window * ctx.max_message_fraction)
        message = bounded_calls(message, budget, deps.counter)
        out: dict[str, Any] = {**update, "messages": [*searched, message], "steps": steps + 1}
        if message.tool_calls or message.invalid_tool_calls:
            return Command(goto="call_memory_tool", update=out)
        return Command(goto="respond", update=out)

    return think
