"""Policies around a model step, as a stack (the first is the outermost, as in ``create_agent``).

A policy is a ``wrap_model_call`` / ``awrap_model_call`` pair over a `ModelCall` (what the
step answers and the options it is called with): it may change the call, then hands it to
the next one; the innermost handler calls the model. Both faces run the same stack: the
graph's ``think`` (`call_model` around its streamed call) and
`langgraph_memgpt.compose.middleware.MemGPTMiddleware` (`agent_model_call` around ``create_agent``'s
handler, the options going in as the request's ``model_settings``).

The stack is given by the caller: which policies a model needs is read from its traits
(`langgraph_memgpt.deps.policies_for`), and this module knows no policy of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from langchain_core.messages import AnyMessage

T = TypeVar("T")


@dataclass(frozen=True)
class ModelCall:
    """One model step as the policies see it."""

    queue: Sequence[AnyMessage]
    """The conversation the step answers (the state's queue, without the system prompt)."""
    tools: tuple[str, ...]
    """Names of the tools bound for the step."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Call options the model gets with the prompt (``step_tools=``, ``repair=``)."""

    def with_options(self, **options: Any) -> ModelCall:
        """This call with ``options`` added to its call options."""
        return dataclasses.replace(self, options={**self.options, **options})


class ModelPolicy(Protocol):
    """A wrapper around a model step (see the module)."""

    def wrap_model_call(self, call: ModelCall, handler: Callable[[ModelCall], T]) -> T:
        """Change ``call`` (or not), hand it to ``handler``, return (or change) its answer."""
        ...

    async def awrap_model_call(
        self, call: ModelCall, handler: Callable[[ModelCall], Awaitable[T]]
    ) -> T:
        """`wrap_model_call` for async runs."""
        ...


Stack = Sequence[ModelPolicy]
"""Policies around a step, outermost first (empty: the handler alone)."""


def call_model(stack: Stack, call: ModelCall, handler: Callable[[ModelCall], T]) -> T:
    """``handler(call)`` through ``stack``, first policy outermost."""

    def step(index: int, current: ModelCall) -> T:
        if index == len(stack):
            return handler(current)
        return stack[index].wrap_model_call(current, lambda inner: step(index + 1, inner))

    return step(0, call)


async def acall_model(
    stack: Stack, call: ModelCall, handler: Callable[[ModelCall], Awaitable[T]]
) -> T:
    """`call_model` for async runs."""

    async def step(index: int, current: ModelCall) -> T:
        if index == len(stack):
            return await handler(current)
        return await stack[index].awrap_model_call(current, lambda inner: step(index + 1, inner))

    return await step(0, call)


def tool_names(tools: Sequence[Any]) -> tuple[str, ...]:
    """Names of bound tools: OpenAI-format schemas, ``{"name": ...}`` dicts or tool objects."""
    names = []
    for tool in tools:
        if isinstance(tool, Mapping):
            spec = tool.get("function", tool)
            names.append(str(spec.get("name", "")) if isinstance(spec, Mapping) else "")
        else:
            names.append(str(getattr(tool, "name", "")))
    return tuple(name for name in names if name)


def agent_model_call(stack: Stack, request: Any, handler: Callable[[Any], T]) -> T:
    """A ``create_agent`` model request through ``stack``.

    The policies' options go to the model as the request's ``model_settings`` (which
    ``create_agent`` binds with the tools).
    """
    return call_model(
        stack, _agent_call(request), lambda call: handler(_with_settings(request, call))
    )


async def aagent_model_call(
    stack: Stack, request: Any, handler: Callable[[Any], Awaitable[T]]
) -> T:
    """`agent_model_call` for async runs."""
    return await acall_model(
        stack, _agent_call(request), lambda call: handler(_with_settings(request, call))
    )


def _agent_call(request: Any) -> ModelCall:
    """The request as a `ModelCall`, its queue the agent's state.

    The request's messages are the rendered prompt (user messages prefixed with their time).
    """
    state = request.state if isinstance(request.state, Mapping) else {}
    queue = list(state.get("messages") or request.messages)
    return ModelCall(queue, tool_names(request.tools))


def _with_settings(request: Any, call: ModelCall) -> Any:
    if not call.options:
        return request
    return request.override(model_settings={**request.model_settings, **call.options})
