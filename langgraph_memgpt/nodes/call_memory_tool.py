"""call_memory_tool: LangGraph's ``ToolNode`` over every tool, MemGPT's rules around it.

``think`` sends each pending call here as its own task (``Send``, as ``create_agent``
does), so a call that finished before another one interrupted (``interrupt()`` in a tool)
is not run again on resume; a memory call run again anyway (a crashed step) answers from
its journal (`langgraph_memgpt.tools.memory_tools.run_once`). What this module adds to
``ToolNode`` sits in its ``wrap_tool_call`` / ``awrap_tool_call`` hooks (`ToolRules`):

- an unknown tool, or memory tool arguments that do not validate, answer a readable
  ``{"status": "Failed", ...}`` result (the loop goes on; the model fixes its call);
- a reply written beside a search, or an echo of the user's words, is held back, and none
  is sent in a turn opened by events alone (`langgraph_memgpt.turn.reply_rules`, which the
  stream applies too while the reply is written);
- a call whose arguments were cut in the queue runs with what the model really wrote;
- a user tool's output is wrapped like a memory tool's result; its ``Command`` may set keys
  of the graph's state, end the turn (``goto="respond"``) or, inside a parent graph, hand
  control over (``Command.PARENT``: ``respond`` carries it out after every result is in);
- every result gets an id that is the same on every replay (`langgraph_memgpt.turn.write_ahead`,
  around these rules, writes it to recall memory before the checkpoint), and carries its
  facts (`OUTCOME_KEY`) for ``close_step``, which closes the step once every call is
  answered.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langgraph.errors import GraphBubbleUp, is_invalid_resume
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.prebuilt.tool_node import (  # ToolNode's own reading of handle_tool_errors
    ToolCallRequest,
    _handle_tool_error,
    _infer_handled_types,
)
from langgraph.types import Command

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import TOOL_HOST, Deps
from langgraph_memgpt.tools.memory_tools import (
    OUTCOME_KEY,
    Binding,
    CallOrder,
    calling_message,
    failed_message,
    make_memory_tools,
    outcome_facts,
    provenance,
)
from langgraph_memgpt.tools.run import (
    MEMORY_TOOLS,
    facts_of,
    parse_args,
    tool_result,
)
from langgraph_memgpt.turn.main_context import CUT_CALLS_FLAG
from langgraph_memgpt.turn.reply_rules import REPLY_TOOL, Turn
from langgraph_memgpt.turn.streaming import hide
from langgraph_memgpt.turn.tokens import content_text
from langgraph_memgpt.turn.write_ahead import WriteAhead

log = logging.getLogger(__name__)

NAMESPACE_SEPARATOR = "|"
"""Between a parent graph's and a subgraph's part of a checkpoint namespace.

LangGraph's own constant for it is internal (``langgraph._internal``); the format is what
LangGraph shows in every state snapshot's ``checkpoint_ns`` ("parent:task|node:task")."""

ToolResult = ToolMessage | Command[Any]
Execute = Callable[[ToolCallRequest], ToolResult]
AExecute = Callable[[ToolCallRequest], Awaitable[ToolResult]]


def log_and_describe(error: Exception) -> str:
    """The default ``handle_tool_errors``: the model reads the error, the log keeps the trace."""
    log.error("a tool raised; the model reads the error", exc_info=error)
    return f"{type(error).__name__}: {error}"


def make_call_memory_tool(
    deps: Deps,
    handle_tool_errors: Any = log_and_describe,
    write_ahead: WriteAhead | None = None,
) -> ToolNode:
    """The tool step: a ``ToolNode`` over the memory tools and the caller's, with `ToolRules`.

    Args:
        deps: the graph's collaborators (memory backend, the caller's tools, state keys).
        handle_tool_errors: as ``ToolNode``'s: what a user tool's exception becomes. By
            default the model reads it and the log keeps its traceback; ``False`` lets it
            raise out of the run.
        write_ahead: the graph's write-ahead, put around every call (outside the rules):
            each result reaches recall before the step is checkpointed. The graph's
            assembly gives it; None: the node's own.
    """
    rules = ToolRules(deps, ToolErrors(handle_tool_errors))
    write_ahead = write_ahead or WriteAhead(deps)
    tools = [
        *make_memory_tools(rules.bind, list(MEMORY_TOOLS), TOOL_HOST),
        *deps.user_tools.values(),
    ]
    node = ToolNode(
        tools,
        name="call_memory_tool",
        tags=["nostream"],  # results are not the reply: chat UIs must not show them
        # ToolNode catches every exception out of a wrapper whatever the setting says:
        # the setting is applied in `ToolRules` (`ToolErrors`), so ToolNode re-raises.
        handle_tool_errors=False,
        wrap_tool_call=write_ahead.tool_call(rules.wrap),
        awrap_tool_call=write_ahead.atool_call(rules.awrap),
    )
    return node


class ToolErrors:
    """A ``handle_tool_errors`` setting, applied as ``ToolNode`` applies it without a wrapper.

    ``True`` or a callable without a typed parameter: every exception; an exception type,
    a tuple of them, or a callable whose first parameter names them: only those; ``False``:
    none. A handled exception becomes an error result (the text ToolNode would write, the
    callable's, or the string given); any other raises out of the run. An interrupt, and
    a resume value its interrupt refuses, always raise.
    """

    def __init__(self, setting: Any) -> None:
        self.setting = setting
        self.types: tuple[type[Exception], ...]
        if isinstance(setting, type) and issubclass(setting, Exception):
            self.types = (setting,)
        elif isinstance(setting, tuple):
            self.types = setting
        elif callable(setting) and not isinstance(setting, type):
            self.types = _infer_handled_types(setting)
        else:
            self.types = (Exception,)

    def result(self, call: ToolCall, error: Exception) -> ToolMessage:
        """The error result ``error`` becomes; raises it when the setting does not handle it."""
        if not self.setting or not isinstance(error, self.types) or is_invalid_resume(error):
            raise error
        return ToolMessage(
            _handle_tool_error(error, flag=self.setting),
            name=call["name"],
            tool_call_id=call["id"],
            status="error",
        )


class ToolRules:
    """MemGPT's rules around each tool call (see the module docstring)."""

    def __init__(self, deps: Deps, errors: ToolErrors | None = None) -> None:
        self.deps = deps
        self.errors = errors or ToolErrors(log_and_describe)
        self.order = CallOrder(self.bind)

    def bind(self, runtime: ToolRuntime[Any, Any]) -> Binding:
        """A memory tool call's memory, settings and provenance (graph's agent resolution)."""
        ctx = Context.for_run(runtime.context, runtime.config)
        state = runtime.state if isinstance(runtime.state, Mapping) else {}
        memory = self.deps.memory(ctx, state)  # type: ignore[arg-type]
        return Binding(memory=memory, ctx=ctx, where=provenance(runtime))

    def wrap(self, request: ToolCallRequest, execute: Execute) -> ToolResult:
        """``wrap_tool_call``: refuse or adjust, run, then take the result in."""
        try:
            self.order.wait(request)
            checked = self._before(request)
            if isinstance(checked, ToolMessage):
                return self._recorded(request, checked)
            try:
                result: Any = execute(checked)
            except GraphBubbleUp:
                raise
            except Exception as error:
                result = self.errors.result(checked.tool_call, error)
            return self._after(checked, result)
        except GraphBubbleUp:
            raise
        except Exception as error:  # in the rules themselves: as a tool's, by the setting
            return self.errors.result(request.tool_call, error)
        finally:
            self.order.done(request)

    async def awrap(self, request: ToolCallRequest, execute: AExecute) -> ToolResult:
        """``awrap_tool_call``: the same, store I/O off the event loop."""
        try:
            await asyncio.to_thread(self.order.wait, request)
            checked = await asyncio.to_thread(self._before, request)
            if isinstance(checked, ToolMessage):
                return await asyncio.to_thread(self._recorded, request, checked)
            try:
                result: Any = await execute(checked)
            except GraphBubbleUp:
                raise
            except Exception as error:
                result = self.errors.result(checked.tool_call, error)
            return await asyncio.to_thread(self._after, checked, result)
        except GraphBubbleUp:
            raise
        except Exception as error:  # in the rules themselves: as a tool's, by the setting
            return self.errors.result(request.tool_call, error)
        finally:
            self.order.done(request)

    # -- before the call ---------------------------------------------------------------

    def _limit(self, request: ToolCallRequest) -> int:
        return Context.from_any(request.runtime.context).result_char_limit

    def _before(self, request: ToolCallRequest) -> ToolCallRequest | ToolMessage:
        call = request.tool_call
        name = call["name"]
        limit = self._limit(request)
        if name not in MEMORY_TOOLS and name not in self.deps.user_tools:
            known = ", ".join([*MEMORY_TOOLS, *self.deps.user_tools])
            return _failed(call, f"no tool named {name!r}; available tools: {known}", limit)
        message = calling_message(request.state, call.get("id"))
        if message is not None and message.additional_kwargs.get(CUT_CALLS_FLAG):
            whole = self._whole_call(request, message)
            if whole is not None:
                request = request.override(tool_call=whole)
                call = whole
        if name == REPLY_TOOL:
            # The same rules the stream applied while the reply was written (reply_rules).
            calls = message.tool_calls if message is not None else []
            verdict = Turn.of(_queue_of(request.state)).verdict(
                str(call["args"].get("message", "")),
                written=True,
                reads_beside=any(facts_of(c["name"], self.deps.user_tools).reads for c in calls),
            )
            if verdict.sent is False:
                return _failed(call, verdict.reason, limit, **verdict.facts)
        if name in MEMORY_TOOLS:
            parsed = parse_args(name, call["args"])
            if isinstance(parsed, str):
                return _failed(call, parsed, limit)
        return request

    def _whole_call(self, request: ToolCallRequest, message: AIMessage) -> ToolCall | None:
        """The call as the model wrote it: ``think`` recorded it whole before cutting it."""
        stored = self.bind(request.runtime).memory.recall.get([str(message.id)])
        for c in stored[0].tool_calls if stored else []:
            args = c.get("args")
            if c.get("id") == request.tool_call.get("id") and isinstance(args, dict):
                return ToolCall(name=str(c.get("name")), args=args, id=str(c.get("id")))
        return None

    # -- after the call ----------------------------------------------------------------

    def _after(self, request: ToolCallRequest, result: Any) -> ToolResult:
        call = request.tool_call
        if call["name"] in MEMORY_TOOLS:
            if isinstance(result, ToolMessage) and OUTCOME_KEY in result.additional_kwargs:
                hide([result], request.runtime.config)
                return result  # journalled by run_once already
            text = content_text(result) if isinstance(result, BaseMessage) else str(result)
            return self._recorded(request, _failed(call, text, self._limit(request)))
        if isinstance(result, Command):
            return self._taken_in(request, result)
        if isinstance(result, ToolMessage):
            return self._recorded(request, self._wrapped(request, result))
        return self._recorded(request, self._wrapped(request, _plain(call, result)))

    def _wrapped(self, request: ToolCallRequest, message: ToolMessage, **facts: Any) -> ToolMessage:
        """A user tool's own result, in the loop's ``{"status", "message"}`` form."""
        call = request.tool_call
        content = message.content
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        limit = self._limit(request)
        if message.status == "error":
            return _failed(call, text, limit, **facts)
        must_read = facts_of(call["name"], self.deps.user_tools).must_read
        return message.model_copy(
            update={
                "content": tool_result(True, text, limit),
                "name": call["name"],
                "additional_kwargs": {
                    **message.additional_kwargs,
                    OUTCOME_KEY: outcome_facts(ok=True, heartbeat=must_read, **facts),
                },
            }
        )

    def _taken_in(self, request: ToolCallRequest, command: Command[Any]) -> ToolResult:
        """A user tool's ``Command``: its own result wrapped, its effects checked."""
        call = request.tool_call
        limit = self._limit(request)
        changes = dict(command.update) if isinstance(command.update, Mapping) else {}
        own: ToolMessage | None = None
        extra: list[BaseMessage] = []
        for message in convert_to_messages(changes.pop("messages", [])):
            if (
                isinstance(message, ToolMessage)
                and message.tool_call_id == call["id"]
                and own is None
            ):
                own = message
            else:
                extra.append(message)
        if command.graph == Command.PARENT:
            if not _in_subgraph(request):
                goto = command.goto
                return self._recorded(
                    request,
                    _failed(
                        call,
                        f"it hands control to {goto!r} in a parent graph, but this agent runs "
                        "on its own; add it to a multi-agent graph (a swarm, a supervisor) "
                        "to hand off",
                        limit,
                    ),
                )
            goto_name = command.goto if isinstance(command.goto, str) else "the parent graph"
            mine = self._wrapped(
                request,
                own or _plain(call, f"Handed off to {goto_name}."),
                goto_respond=True,
            )
            handoff = {"goto": command.goto, "update": command.update}
            return Command(update={"messages": [self._recorded(request, mine)], "handoff": handoff})
        unknown = sorted(set(changes) - self.deps.state_keys)
        if unknown:
            return self._recorded(
                request,
                _failed(
                    call,
                    f"it returned a Command setting {unknown}, which this agent's state does "
                    "not hold; return only messages, add the keys with build_graph("
                    "state_schema=...), or address the parent graph "
                    "(Command(graph=Command.PARENT, ...))",
                    limit,
                ),
            )
        goto = command.goto
        if goto and goto != "respond" and goto != ["respond"]:
            return self._recorded(
                request,
                _failed(
                    call,
                    f"it returned Command(goto={goto!r}); inside this agent a tool may only "
                    "end the turn (goto='respond'). To go to another agent, address the "
                    "parent graph (Command(graph=Command.PARENT, goto=...))",
                    limit,
                ),
            )
        mine = self._wrapped(request, own or _plain(call, "done"), goto_respond=bool(goto))
        added = [self._recorded(request, mine), *extra]
        hide(extra, request.runtime.config)
        return Command(update={**changes, "messages": added})

    # -- the result's id -----------------------------------------------------------------

    def _recorded(self, request: ToolCallRequest, message: ToolMessage) -> ToolMessage:
        """The call's result with its replay-stable id, kept out of the ``messages`` stream.

        The queue gets this very message (`write_ahead` records it): recall and the
        checkpoint hold one id.
        """
        result_id = provenance(request.runtime).result_id
        if result_id is not None:
            message = message.model_copy(update={"id": result_id})
        hide([message], request.runtime.config)
        return message


def _failed(call: ToolCall, detail: str, limit: int, **facts: Any) -> ToolMessage:
    return failed_message(call["name"], str(call["id"]), detail, limit, **facts)


def _plain(call: ToolCall, output: Any) -> ToolMessage:
    text = output if isinstance(output, str) else json.dumps(output, default=str)
    return ToolMessage(text, tool_call_id=str(call["id"]), name=call["name"])


def _in_subgraph(request: ToolCallRequest) -> bool:
    """A handoff needs a graph to hand control to: the namespace is "parent:task|node:task"."""
    config = request.runtime.config or {}
    return NAMESPACE_SEPARATOR in str(config.get("configurable", {}).get("checkpoint_ns", ""))


def _queue_of(state: Any) -> list[AnyMessage]:
    """The queue of the state a tool call sees (none when the call came without one)."""
    return list(state.get("messages") or []) if isinstance(state, Mapping) else []
