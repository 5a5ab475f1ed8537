"""User tools, executed the way LangGraph's ``ToolNode`` executes them.

The caller's tools run through a private ``ToolNode`` (one call at a time, with the graph's
state as the injected state), so everything a LangGraph tool may ask for is filled:
``InjectedState``, ``InjectedStore``, ``InjectedToolCallId``, ``ToolRuntime`` (context,
store, config, stream writer). Sync tools run with ``invoke``, async ones with ``ainvoke``
when the graph runs async; an async-only tool (every tool ``langchain-mcp-adapters`` makes)
runs in a sync graph too, on a private event loop. The ``ToolMessage`` a tool produces keeps
its ``artifact``; a returned ``Command`` is taken apart (see `UserToolResult`) rather than
dumped as text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import (
    BaseMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command

T = TypeVar("T")


@dataclass(frozen=True)
class UserToolResult:
    """What one user tool call produced, taken apart for the MemGPT loop.

    Attributes:
        message: the call's own ``ToolMessage`` (artifact included); its content is the
            tool's raw output, not yet wrapped as a MemGPT result.
        ok: the tool ran (``message.status`` is not "error").
        extra_messages: other messages a returned ``Command`` added to the state.
        update: other state keys a returned ``Command`` sets in this graph.
        goto: where a returned ``Command`` (for this graph) routes, if anywhere.
        handoff: a ``Command`` addressed to the parent graph (``Command.PARENT``): the tool
            hands control to another agent.
    """

    message: ToolMessage
    ok: bool
    extra_messages: tuple[BaseMessage, ...] = ()
    update: Mapping[str, Any] = field(default_factory=dict)
    goto: Any = None
    handoff: Command[Any] | None = None


def _error_detail(error: Exception) -> str:
    """``ExcType: message``: ToolNode catches every tool error and the model reads this."""
    return f"{type(error).__name__}: {error}"


def is_async_only(tool: BaseTool) -> bool:
    """Whether ``tool`` has no sync implementation (MCP tools, ``@tool`` on a coroutine)."""
    return isinstance(tool, StructuredTool) and tool.func is None and tool.coroutine is not None


def _in_own_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to the end on a fresh event loop in a worker thread.

    A sync node may run inside a thread whose loop is already running (an async caller of a
    sync graph); a worker thread always can start its own.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memgpt-async-tool") as pool:
        return pool.submit(asyncio.run, coroutine).result()


class UserTools:
    """The caller's tools by name, run one call at a time through a private ``ToolNode``."""

    def __init__(self, tools: Sequence[BaseTool]) -> None:
        self.by_name: dict[str, BaseTool] = {t.name: t for t in tools}
        self._node = ToolNode(list(tools), name="user_tools", handle_tool_errors=_error_detail)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __iter__(self) -> Any:
        return iter(self.by_name)

    def _request(self, call: ToolCall, state: Mapping[str, Any]) -> dict[str, Any]:
        # ToolNode's one-call input with its own state snapshot: the tool sees this graph's
        # state (the MemGPT queue) as InjectedState and ToolRuntime.state.
        return {
            "__type": "tool_call_with_context",
            "tool_call": {**call, "type": "tool_call"},
            "state": dict(state),
        }

    def run(
        self,
        call: ToolCall,
        state: Mapping[str, Any],
        *,
        config: RunnableConfig | None,
        runtime: Runtime[Any],
    ) -> UserToolResult:
        """Run one call synchronously (an async-only tool on a private loop)."""
        request = self._request(call, state)
        if is_async_only(self.by_name[call["name"]]):
            output = _in_own_loop(self._node.ainvoke(request, config, runtime=runtime))
        else:
            output = self._node.invoke(request, config, runtime=runtime)
        return _taken_apart(call, output)

    async def arun(
        self,
        call: ToolCall,
        state: Mapping[str, Any],
        *,
        config: RunnableConfig | None,
        runtime: Runtime[Any],
    ) -> UserToolResult:
        """Run one call on the caller's event loop (``ainvoke``; sync tools in a thread)."""
        output = await self._node.ainvoke(self._request(call, state), config, runtime=runtime)
        return _taken_apart(call, output)


def _taken_apart(call: ToolCall, output: Any) -> UserToolResult:
    """Split ToolNode's output for one call into its result message and its effects.

    ToolNode answers ``{"messages": [ToolMessage]}`` for a plain result, and a list of
    ``Command``s (and message dicts) when the tool returned a ``Command``.
    """
    items: list[Any] = []
    for part in output if isinstance(output, list) else [output]:
        if isinstance(part, dict) and "messages" in part:
            items.extend(part["messages"])
        else:
            items.append(part)
    own: ToolMessage | None = None
    extra: list[BaseMessage] = []
    update: dict[str, Any] = {}
    goto: Any = None
    handoff: Command[Any] | None = None
    for item in items:
        if isinstance(item, ToolMessage) and item.tool_call_id == call["id"] and own is None:
            own = item
        elif isinstance(item, Command) and item.graph == Command.PARENT:
            handoff = item
        elif isinstance(item, Command):
            changes = dict(item.update) if isinstance(item.update, Mapping) else {}
            for message in convert_to_messages(changes.pop("messages", [])):
                if (
                    isinstance(message, ToolMessage)
                    and message.tool_call_id == call["id"]
                    and own is None
                ):
                    own = message
                else:
                    extra.append(message)
            update.update(changes)
            goto = item.goto or goto
        elif isinstance(item, ToolMessage):
            extra.append(item)
    if handoff is not None and own is None:
        own = _handoff_message(call, handoff)
    if own is None:
        own = ToolMessage("done", tool_call_id=str(call["id"]), name=call["name"], status="success")
    return UserToolResult(
        message=own,
        ok=own.status != "error",
        extra_messages=tuple(extra),
        update=update,
        goto=goto,
        handoff=handoff,
    )


def _handoff_message(call: ToolCall, handoff: Command[Any]) -> ToolMessage:
    """The handoff's own result: the one its update carries, else a plain note."""
    changes = handoff.update if isinstance(handoff.update, Mapping) else {}
    for message in convert_to_messages(changes.get("messages", [])):
        if isinstance(message, ToolMessage) and message.tool_call_id == call["id"]:
            return message
    goto = handoff.goto if isinstance(handoff.goto, str) else "the parent graph"
    return ToolMessage(f"Handed off to {goto}.", tool_call_id=str(call["id"]), name=call["name"])
