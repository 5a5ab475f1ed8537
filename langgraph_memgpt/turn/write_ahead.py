"""Write-ahead, in one place: every message a step adds to the queue reaches recall first.

The graph's assembly (`langgraph_memgpt.graph.assemble`) puts `WriteAhead` around every
node, and around each tool call of ``call_memory_tool`` (its tasks are per call): what a
node's update adds to the queue is written to recall memory (`main_context.record`,
idempotent by message id) after the node body returns and before LangGraph checkpoints the
update. A run killed at any point therefore loses nothing that reached the queue; a step
run again records nothing twice. No node body writes to recall itself.

A node states what recall keeps differently from the queue in its update, under
`RECORD_FIRST` (taken out before LangGraph sees the update): groups of ``(turn, messages)``
written first and in order. ``open_turn`` lists there each user message a killed run left
unrecorded (each with its own turn number) and the queue's catch-up; ``think`` the whole
copy of a model message the queue keeps cut. A message listed there is not written again
in the queue's (cut) form.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, RemoveMessage, ToolMessage, convert_to_messages
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import get_runtime
from langgraph.types import Command

from langgraph_memgpt.context import Context
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.tools.memory_tools import provenance, thread_of_config
from langgraph_memgpt.turn.main_context import context_of, record, thread_of

RECORD_FIRST = "memgpt:record_first"
"""Key of a node's update: ``[(turn, [messages])]`` recall gets first (see the module)."""


class MemorySource(Protocol):
    """Opens the memory of the agent a run is for (the graph's `langgraph_memgpt.deps.Deps`)."""

    def agent_of(self, ctx: Context) -> str:
        """The agent whose memory the run uses."""
        ...

    def memory(self, ctx: Context, state: State | None = None) -> Memory:
        """That agent's memory tiers; refuses a thread of another agent (``state``)."""
        ...


Node = Callable[[State, RunnableConfig], Any]
ANode = Callable[[State, RunnableConfig], Awaitable[Any]]
ToolResult = ToolMessage | Command[Any]
Execute = Callable[[ToolCallRequest], ToolResult]
AExecute = Callable[[ToolCallRequest], Awaitable[ToolResult]]
ToolWrap = Callable[[ToolCallRequest, Execute], ToolResult]
AToolWrap = Callable[[ToolCallRequest, AExecute], Awaitable[ToolResult]]


def added_messages(update: Any) -> list[BaseMessage]:
    """The messages an update adds to (or rewrites in) the queue: removals left out.

    ``update``: a node's update, a ``Command``, or a tool's result message.
    """
    if isinstance(update, BaseMessage):
        return [update] if update.id and not isinstance(update, RemoveMessage) else []
    if isinstance(update, Command):
        if update.graph == Command.PARENT:
            return []  # the parent graph's messages, not this queue's
        update = update.update
    if not isinstance(update, Mapping):
        return []
    messages = update.get("messages") or []
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        messages = [messages]
    return [m for m in convert_to_messages(messages) if not isinstance(m, RemoveMessage) and m.id]


def write(
    memory: Memory,
    thread_id: str,
    turn: int,
    update: Any,
    first: Sequence[tuple[int, Sequence[BaseMessage]]] = (),
) -> Any:
    """Record what ``update`` adds to the queue; return it without `RECORD_FIRST`.

    ``turn``: the state's, unless the update sets one. The `RECORD_FIRST` groups
    (``first``, then the update's own) are recorded first. The one place a step's messages
    reach recall, for the graph's nodes, its tool calls and `MemGPTMiddleware`'s hooks.
    """
    if isinstance(update, Mapping) and RECORD_FIRST in update:
        update = dict(update)
        first = [*first, *(update.pop(RECORD_FIRST) or [])]
    listed: set[str | None] = set()
    for number, messages in first:
        record(memory, messages, thread_id, number)
        listed |= {m.id for m in messages}
    own = update.get("turn") if isinstance(update, Mapping) else None
    number = int(own) if own is not None else turn
    added = [m for m in added_messages(update) if m.id not in listed]
    if added:
        record(memory, added, thread_id, number)
    return update


class WriteAhead:
    """The write-ahead around the graph's nodes and tool calls (see the module docstring)."""

    def __init__(self, deps: MemorySource) -> None:
        self.deps = deps

    # -- nodes -------------------------------------------------------------------------

    def node(self, node: Node | Runnable[Any, Any], name: str) -> Any:
        """``node`` (of state and config, or a ``RunnableLambda``), its update written ahead.

        A node with no async body stays a plain function: a ``RunnableLambda`` around it
        would open a second, nested run of the same name on every step (callbacks, config
        merging), which every turn pays and every trace shows. Under ``ainvoke`` recall is
        written in a worker thread.
        """
        func: Node
        afunc: ANode | None = None
        if isinstance(node, RunnableLambda):
            func = node.func  # type: ignore[assignment]
            afunc = getattr(node, "afunc", None)
        else:
            func = node  # type: ignore[assignment]

        def run(state: State, config: RunnableConfig) -> Any:
            return self.taken(state, func(state, config))

        if afunc is None:
            run.__name__ = run.__qualname__ = name
            return run
        async_body = afunc

        async def arun(state: State, config: RunnableConfig) -> Any:
            update = await async_body(state, config)
            return await asyncio.to_thread(self.taken, state, update)

        return RunnableLambda(run, afunc=arun, name=name)

    def taken(self, state: State, update: Any) -> Any:
        """``update`` as LangGraph gets it, once recall holds what it adds."""
        first: list[tuple[int, list[BaseMessage]]] = []
        if isinstance(update, Mapping) and RECORD_FIRST in update:
            update = dict(update)
            first = list(update.pop(RECORD_FIRST) or [])
        if not first and not added_messages(update):
            return update
        runtime = get_runtime(Context)
        memory = self.deps.memory(context_of(runtime), state)
        return write(memory, thread_of(runtime), state.get("turn", 0), update, first)

    # -- tool calls --------------------------------------------------------------------

    def tool_call(self, inner: ToolWrap) -> ToolWrap:
        """A ``wrap_tool_call`` hook: ``inner``, then its result written ahead."""

        def wrap(request: ToolCallRequest, execute: Execute) -> ToolResult:
            return self.tool_result(request, inner(request, execute))

        return wrap

    def atool_call(self, inner: AToolWrap) -> AToolWrap:
        """The ``awrap_tool_call`` hook: recall written in a worker thread."""

        async def awrap(request: ToolCallRequest, execute: AExecute) -> ToolResult:
            result = await inner(request, execute)
            return await asyncio.to_thread(self.tool_result, request, result)

        return awrap

    def tool_result(self, request: ToolCallRequest, result: ToolResult) -> ToolResult:
        """``result`` (a ``ToolMessage`` or a ``Command``), once recall holds its messages."""
        if not added_messages(result):
            return result
        runtime = request.runtime
        ctx = Context.for_run(runtime.context, runtime.config)
        state = runtime.state if isinstance(runtime.state, Mapping) else None
        memory = self.deps.memory(ctx, state)  # type: ignore[arg-type]
        where = provenance(runtime)
        written: ToolResult = write(memory, thread_of_config(runtime.config), where.turn, result)
        return written
