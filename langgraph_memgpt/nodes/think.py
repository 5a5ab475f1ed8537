"""think: one model call over the main context, with every tool bound.

The model's text next to a tool call is its inner monologue; a reply with no tool call is
a plain answer and ends the turn. A provider "context length exceeded" error asks for an
eviction and a retry (bounded by ``Context.max_context_retries``). The call is private: a
client streaming the run sees only the reply the loop sends, as it is written (see
`langgraph_memgpt.turn.streaming` and `langgraph_memgpt.turn.reply_rules`). Under
``ainvoke``/``astream`` the model's async API is used and the store I/O runs in a worker
thread. Where the turn goes next is `routes.after_think`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.runtime import Runtime, get_runtime

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps, policies_for
from langgraph_memgpt.llm.errors import is_context_overflow
from langgraph_memgpt.small_model import auto_search
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.state import State
from langgraph_memgpt.tools.run import facts_of
from langgraph_memgpt.turn import core as turn_core
from langgraph_memgpt.turn.main_context import (
    awaits_reply,
    build_prompt,
    context_of,
    latest_user_index,
    prompt_tokens,
    thread_of,
)
from langgraph_memgpt.turn.policies import (
    ModelCall,
    ModelPolicy,
    acall_model,
    call_model,
    tool_names,
)
from langgraph_memgpt.turn.reply_rules import REPLY_SEPARATOR, ReplyGate, Turn
from langgraph_memgpt.turn.step import sent_messages
from langgraph_memgpt.turn.streaming import (
    ReplyStream,
    astream_step,
    hide,
    stream_step,
)

T = TypeVar("T")


@dataclass
class _Call:
    """One prepared model call, or the update that ends the step without one."""

    update: dict[str, Any]
    model: Runnable[Any, Any] | None = None
    prompt: list[BaseMessage] = field(default_factory=list)
    step: ModelCall | None = None
    policies: tuple[ModelPolicy, ...] = ()
    searched: list[AnyMessage] = field(default_factory=list)
    reply: ReplyStream | None = None

    def streamed(self, stream: Callable[..., T], config: RunnableConfig) -> Callable[[Any], T]:
        """The innermost handler of the policies: the model's call, its reply streamed.

        ``stream``: `stream_step` or `astream_step`; the policies' options go with the prompt.
        """
        model, reply = self.model, self.reply
        assert model is not None and reply is not None
        return lambda step: stream(model, self.prompt, config, reply, **step.options)


def make_think(deps: Deps) -> RunnableLambda[State, dict[str, Any]]:
    """Build the node with the graph's dependencies: a sync and an async implementation."""

    def prepare(state: State, runtime: Runtime[Context]) -> _Call:
        ctx = context_of(runtime)
        steps = state.get("steps", 0)
        capped = turn_core.step_cap(state, ctx)
        if capped is not None:
            return _Call({"stop_reason": capped})
        memory = deps.memory(ctx, state)
        queue = state["messages"]
        system_prompt, update = turn_core.system(
            state, memory, ctx, thread_id=thread_of(runtime), instructions=deps.instructions
        )
        chat = deps.chat_model(ctx)
        traits = ModelTraits.of(chat)
        searched: list[AnyMessage] = []
        # The helps for a user's question: events from the host ask nothing.
        asked = awaits_reply(queue)
        if steps == 0 and asked and traits.searches_first(ctx):
            searched = auto_search.search_messages(queue, memory, ctx)
        schemas = deps.schemas_for(traits)
        summary, evicted = state.get("summary", ""), state.get("evicted_count", 0)
        prompt = build_prompt(system_prompt, summary, evicted, [*queue, *searched])
        if searched and prompt_tokens(deps.counter, prompt, schemas) > ctx.context_window:
            # The search was only a help: without it the model can still search itself.
            searched = []
            prompt = build_prompt(system_prompt, summary, evicted, queue)
        if prompt_tokens(deps.counter, prompt, schemas) > ctx.context_window:
            # Never send a prompt over the window (eviction could not make it fit, e.g. the
            # instructions and tools alone fill it): the honest reply ends the turn.
            return _Call({**update, "stop_reason": prompts.CONTEXT_OVERFLOW_REPLY})
        step = ModelCall(queue, tool_names(schemas))
        gate = ReplyGate(
            Turn.of(queue),
            reads=lambda name: facts_of(name, deps.user_tools).reads,
            reply_last=traits.reply_last,
        )
        turn = queue[latest_user_index(queue) or 0 :]
        reply = ReplyStream.of(gate, turn, REPLY_SEPARATOR.join(sent_messages(state)))
        return _Call(
            update,
            chat.bind_tools(schemas),
            list(prompt),
            step,
            policies_for(traits),
            searched,
            reply,
        )

    def overflowed(state: State, runtime: Runtime[Context], call: _Call) -> dict[str, Any]:
        retries = state.get("context_retries", 0)
        stop = turn_core.after_overflow(retries, context_of(runtime))
        if stop is not None:
            return {**call.update, "stop_reason": stop}
        return {**call.update, "context_retries": retries + 1, "force_evict": True}

    def take(
        state: State,
        runtime: Runtime[Context],
        config: RunnableConfig,
        call: _Call,
        raw: AIMessage,
    ) -> dict[str, Any]:
        # The queue (and so the checkpoint) keeps a copy bounded like a user message;
        # recall gets the whole message (`write_ahead`, as this update is taken).
        taken = turn_core.take(raw, context_of(runtime), deps.counter)
        message = taken.message
        added = [*call.searched, message, *taken.answers]
        # The model's step is for the model; a plain answer (no call) is the reply itself,
        # when the loop sends it (it streamed as it was written, under the message's id).
        step = bool(message.tool_calls or message.invalid_tool_calls)
        sent = call.reply is not None and call.reply.gate.turn.answer_sent()
        hide(added if step or not sent else call.searched, config)
        return {
            **call.update,
            "messages": added,
            "steps": state.get("steps", 0) + 1,
            "step_closed": "",
            **taken.record_first(state.get("turn", 0), call.searched),
        }

    def think(state: State, config: RunnableConfig) -> dict[str, Any]:
        """Call the model on the rendered main context (the reply streams)."""
        runtime: Runtime[Context] = get_runtime(Context)
        call = prepare(state, runtime)
        if call.model is None:
            return call.update
        assert call.step is not None  # through the model's policies (`turn.policies`):
        try:
            raw = call_model(call.policies, call.step, call.streamed(stream_step, config))
        except Exception as exc:
            if not is_context_overflow(exc):
                raise
            return overflowed(state, runtime, call)
        return take(state, runtime, config, call, raw)

    async def athink(state: State, config: RunnableConfig) -> dict[str, Any]:
        """`think` with the model's async API; store I/O in a worker thread."""
        runtime: Runtime[Context] = get_runtime(Context)
        call = await asyncio.to_thread(prepare, state, runtime)
        if call.model is None:
            return call.update
        assert call.step is not None
        try:
            raw = await acall_model(call.policies, call.step, call.streamed(astream_step, config))
        except Exception as exc:
            if not is_context_overflow(exc):
                raise
            return overflowed(state, runtime, call)
        return await asyncio.to_thread(take, state, runtime, config, call, raw)

    return RunnableLambda(think, afunc=athink, name="think")
