"""The memory tools as LangChain tools: the ones this package's loop runs, and anyone's.

`build_graph` is the whole MemGPT agent; its tool step is LangGraph's ``ToolNode`` over
these tools and the caller's (`langgraph_memgpt.nodes.call_memory_tool`); an agent of
yours gets the same tool objects through `langgraph_memgpt.compose.tools` (and
`MemGPTMiddleware`): the same stores and the same rules (read-only blocks, the guards
against junk edits, searches that say what their filters hid).

Each call runs once: its result is journalled in recall memory under an id made of the
thread, the AI message and the call id (`Provenance.result_id`). A call run again (a step
resumed after an ``interrupt()`` in a neighbouring tool, a crashed run re-run) answers with
the original result and changes nothing twice. The journal is the loop's own recall
write-ahead, handed in by whoever makes the tools (`ToolHost`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.prebuilt import ToolRuntime
from langgraph.prebuilt.tool_node import ToolCallRequest
from pydantic import BaseModel, create_model

from langgraph_memgpt.context import Context
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.tools.facts import FACTS_KEY, Provenance, ToolHost, ToolOutcome
from langgraph_memgpt.tools.run import (
    MEMORY_TOOLS,
    error_text,
    execute_tool_call,
    parse_args,
    tool_result,
    wants_heartbeat,
)

DEFAULT_TOOLS: tuple[str, ...] = tuple(n for n, t in MEMORY_TOOLS.items() if not t.replies)
"""Every memory tool but ``send_message``."""

OUTCOME_KEY = "memgpt_outcome"
"""Key of a memory tool result's `ToolOutcome` facts in ``ToolMessage.additional_kwargs``
(``ok``, ``heartbeat``, ``reply``, ``core_changed``), read by the loop's tool step."""


@dataclass(frozen=True)
class Binding:
    """What one tool call runs against: the agent's memory, the settings, where it happens."""

    memory: Memory
    ctx: Context
    where: Provenance


Binder = Callable[[ToolRuntime[Any, Any]], Binding]
"""Resolves a call's `Binding` from the ``ToolRuntime`` LangGraph injects."""


def thread_of_config(config: RunnableConfig | None) -> str:
    """The run's thread id, or ``"default"`` outside a checkpointed run."""
    return str(((config or {}).get("configurable") or {}).get("thread_id") or "default")


def calling_message(state: Any, call_id: str | None) -> AIMessage | None:
    """The AI message in the state's queue holding tool call ``call_id`` (newest first)."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    for message in reversed(messages or []):
        if isinstance(message, AIMessage) and any(
            c.get("id") == call_id for c in message.tool_calls
        ):
            return message
    return None


_RECENT_PROVENANCE: dict[int, tuple[ToolRuntime[Any, Any], Provenance]] = {}
"""The latest calls' provenance by runtime (a call's ordering, binding and result all ask
for it, and each answer scans the queue)."""
_RECENT_MAX = 64


def provenance(runtime: ToolRuntime[Any, Any], turn: int | None = None) -> Provenance:
    """Where the injected runtime's call happens: thread, turn, its AI message, the queue."""
    if turn is not None:
        return _provenance(runtime, turn)
    hit = _RECENT_PROVENANCE.get(id(runtime))
    if hit is not None and hit[0] is runtime:
        return hit[1]
    found = _provenance(runtime, None)
    if len(_RECENT_PROVENANCE) >= _RECENT_MAX:
        _RECENT_PROVENANCE.clear()  # a run's calls are few; the oldest are long done
    _RECENT_PROVENANCE[id(runtime)] = (runtime, found)
    return found


def _provenance(runtime: ToolRuntime[Any, Any], turn: int | None) -> Provenance:
    state = runtime.state if isinstance(runtime.state, Mapping) else {}
    messages: Sequence[AnyMessage] = state.get("messages") or []
    message = calling_message(state, runtime.tool_call_id)
    return Provenance(
        thread_id=thread_of_config(runtime.config),
        turn=int(state.get("turn", 0)) if turn is None else turn,
        call_id=runtime.tool_call_id,
        message_id=str(message.id) if message is not None and message.id else None,
        in_view=frozenset(str(m.id) for m in messages if m.id),
    )


def run_once(name: str, args: dict[str, Any], bound: Binding, host: ToolHost) -> ToolOutcome:
    """Run a memory tool call unless it ran before; a replay answers the original result.

    The result is journalled in recall memory (as the call's ``ToolMessage``) before the
    step's checkpoint is written, so a step run again finds it there.
    """
    memory, where = bound.memory, bound.where
    result_id = where.result_id
    # Only a call that changes memory needs its journal: a search or a reply run again
    # changes nothing (its result is recorded under the same id either way).
    if result_id is not None and MEMORY_TOOLS[name].edits:
        earlier = memory.recall.get([result_id])
        if earlier:
            return _replayed(name, args, earlier[0].text)
    outcome = execute_tool_call(name, args, memory=memory, ctx=bound.ctx, where=where, host=host)
    if result_id is not None and where.call_id:
        host.record(
            memory,
            [result_message(name, where.call_id, result_id, outcome)],
            where.thread_id,
            where.turn,
        )
    return outcome


def _replayed(name: str, args: dict[str, Any], content: str) -> ToolOutcome:
    """The outcome of a call run before, read back from its journalled result."""
    try:
        ok = json.loads(content).get("status") == "OK"
    except (ValueError, AttributeError):
        ok = False
    parsed = parse_args(name, args)
    if not ok or isinstance(parsed, str):  # an OK result had arguments that validated
        return ToolOutcome(content, ok=False, heartbeat=True)
    return ToolOutcome(
        content,
        ok=True,
        heartbeat=wants_heartbeat(name, parsed),
        reply=str(args.get("message", "")) if MEMORY_TOOLS[name].replies else None,
        core_changed=MEMORY_TOOLS[name].edits,
    )


def outcome_facts(
    *,
    ok: bool,
    heartbeat: bool,
    reply: str | None = None,
    core_changed: bool = False,
    held_back: bool = False,
    goto_respond: bool = False,
) -> dict[str, Any]:
    """A result's facts for the loop, stored under `OUTCOME_KEY`.

    Did it work, must the model think again, the reply it carried, whether core memory
    changed, whether the reply was held back, whether a tool ended the turn.
    """
    return {
        "ok": ok,
        "heartbeat": heartbeat,
        "reply": reply,
        "core_changed": core_changed,
        "held_back": held_back,
        "goto_respond": goto_respond,
    }


def result_message(name: str, call_id: str, result_id: str, outcome: ToolOutcome) -> ToolMessage:
    """A memory tool's result as the queue and recall hold it (its facts in the kwargs)."""
    facts = outcome_facts(
        ok=outcome.ok,
        heartbeat=outcome.heartbeat,
        reply=outcome.reply,
        core_changed=outcome.core_changed,
    )
    return ToolMessage(
        outcome.content,
        tool_call_id=call_id,
        name=name,
        status="success" if outcome.ok else "error",
        id=result_id,
        additional_kwargs={OUTCOME_KEY: facts},
    )


def failed_message(
    name: str, call_id: str, detail: str, limit: int, id: str | None = None, **facts: Any
) -> ToolMessage:
    """A failed call's result: the model reads why and gets another step."""
    return ToolMessage(
        tool_result(False, error_text(name, detail), limit),
        tool_call_id=call_id,
        name=name,
        status="error",
        id=id,
        additional_kwargs={OUTCOME_KEY: outcome_facts(ok=False, heartbeat=True, **facts)},
    )


ORDER_WAIT_SECONDS = 120.0
"""Longest a memory call waits for the ones written before it (a slow embedding)."""
MAX_EVENTS = 10_000
"""Finished calls remembered for ordering (a step's calls finish within seconds)."""


class CallOrder:
    """Memory calls of one model message land in the order the model wrote them.

    LangGraph's ``ToolNode`` (in this loop and in ``create_agent``) runs a message's calls
    at once; memory edits must land in the model's order ("append X, then replace X"), a
    block's lines in the order it wrote them. A call waits for the memory calls before it
    in its message (`wait`) until each says it is `done`, or its result is already in the
    journal (done in an earlier run of the step).
    """

    def __init__(self, bind: Binder) -> None:
        self.bind = bind
        self._done: dict[str, threading.Event] = {}
        self._guard = threading.Lock()

    def _event(self, result_id: str) -> threading.Event:
        with self._guard:
            return self._done.setdefault(result_id, threading.Event())

    def wait(self, request: ToolCallRequest) -> None:
        """Until the memory calls written before this one in its message have run."""
        if request.tool_call["name"] not in MEMORY_TOOLS:
            return
        message = calling_message(request.state, request.tool_call.get("id"))
        if message is None:
            return
        where = provenance(request.runtime)
        for call in message.tool_calls:
            if call.get("id") == request.tool_call.get("id"):
                return
            if call["name"] not in MEMORY_TOOLS or not call.get("id"):
                continue
            earlier = replace(where, call_id=str(call["id"])).result_id
            if earlier is None or self._event(earlier).is_set():
                continue
            if self.bind(request.runtime).memory.recall.get([earlier]):
                continue  # done in an earlier run of this step
            self._event(earlier).wait(ORDER_WAIT_SECONDS)

    def done(self, request: ToolCallRequest) -> None:
        """This call has run: the ones after it may go."""
        result_id = provenance(request.runtime).result_id
        if result_id is None:
            return
        self._event(result_id).set()
        with self._guard:
            if len(self._done) > MAX_EVENTS:  # a long-lived process: drop the oldest
                for key in list(self._done)[: len(self._done) - MAX_EVENTS]:
                    del self._done[key]


def make_memory_tools(bind: Binder, names: Sequence[str], host: ToolHost) -> list[BaseTool]:
    """The named memory tools as LangChain tools, each call resolved through ``bind``.

    ``host``: what the tools ask of the package above them (`ToolHost`: the recall
    write-ahead that journals a result, the eraser ``forget`` runs).

    The model's schema is the tool's argument model; LangGraph injects the call's
    ``ToolRuntime`` (state, config, context) and hides it from the model. Called with a
    tool call, a tool answers a ``ToolMessage`` (id: the call's `Provenance.result_id`);
    called with bare arguments, its result text.
    """
    unknown = [n for n in names if n not in MEMORY_TOOLS]
    if unknown:
        raise ValueError(f"unknown memory tool(s) {unknown}; the tools are {list(MEMORY_TOOLS)}")
    return [_memory_tool(name, bind, host) for name in names]


def _memory_tool(name: str, bind: Binder, host: ToolHost) -> BaseTool:
    spec = MEMORY_TOOLS[name]

    # `runtime` is what ToolNode injects (found by its name and type, hidden from the
    # model); a bare ``tool.invoke(args)`` leaves it None.
    def run(
        runtime: ToolRuntime = None,  # type: ignore[assignment]
        tool_call_id: str | None = None,
        **args: Any,
    ) -> str | ToolMessage:
        bound = bind(runtime or _bare_runtime(tool_call_id))
        outcome = run_once(name, args, bound, host)
        where = bound.where
        if where.call_id is None or where.result_id is None:
            return outcome.content
        return result_message(name, where.call_id, where.result_id, outcome)

    return StructuredTool.from_function(
        func=run,
        name=name,
        description=" ".join((spec.args.__doc__ or name).split()),
        args_schema=_with_call_id(spec.args),
        metadata={FACTS_KEY: spec.facts},
    )


def _with_call_id(args: type[BaseModel]) -> type[BaseModel]:
    """The argument model plus the call id LangChain injects (hidden from the model).

    ``ToolNode`` injects the whole runtime; a tool call invoked outside it gets its id.
    """
    schema: type[BaseModel] = create_model(
        args.__name__,
        __base__=args,
        tool_call_id=(Annotated[str | None, InjectedToolCallId], None),
    )
    schema.__doc__ = args.__doc__
    return schema


def _bare_runtime(tool_call_id: str | None) -> ToolRuntime[Any, Any]:
    """The runtime of a tool invoked outside ``ToolNode`` (no state: no AI message id)."""
    return ToolRuntime(
        state={},
        context=None,
        config=ensure_config(),
        stream_writer=lambda _: None,
        tool_call_id=tool_call_id,
        store=None,
    )
