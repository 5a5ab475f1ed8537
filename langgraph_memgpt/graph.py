"""Wires the MemGPT loop; ``build_graph`` for library users, ``graph`` for ``langgraph dev``.

Every phase of a turn is a node and every edge of the loop is here; the decisions are
written into state by the nodes and only read by the route functions of
`langgraph_memgpt.routes`::

    START → open_turn → check_pressure ─after_pressure─→ think | summarize_evict | respond
    summarize_evict ─after_eviction─→ think | respond
    think ─after_think─→ call_memory_tool (one task per call) | close_step
                         | summarize_evict | respond
    call_memory_tool → close_step (once, after every call's task)
    close_step ─after_close─→ check_pressure | respond (the turn is over)
    respond → END
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools import tool as as_tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.llm.factory import require_openai_endpoint
from langgraph_memgpt.nodes import (
    make_call_memory_tool,
    make_check_pressure,
    make_close_step,
    make_open_turn,
    make_respond,
    make_summarize_evict,
    make_think,
)
from langgraph_memgpt.nodes.call_memory_tool import log_and_describe
from langgraph_memgpt.routes import after_close, after_eviction, after_pressure, after_think
from langgraph_memgpt.state import InputState, OutputState, State, io_schemas
from langgraph_memgpt.stores.base import MemoryBackend, ThreadLocks
from langgraph_memgpt.tools.run import MEMORY_TOOLS
from langgraph_memgpt.turn.admission import Admission
from langgraph_memgpt.turn.threads import lock_dir_of, thread_guard
from langgraph_memgpt.turn.write_ahead import WriteAhead


class MemGPTStateGraph(StateGraph[State, Any, InputState, OutputState]):
    """The MemGPT loop's builder; its compiled graph runs one run per thread at a time.

    ``compile`` hands the compiled graph the callbacks of `langgraph_memgpt.turn.threads`
    (``with_config``), which claim a run's thread before LangGraph reads its checkpoint,
    then check the run's input (`admission`): a refused input is not kept.
    """

    thread_locks: ThreadLocks | None = None
    """The memory backend's cross-machine thread claims (Postgres); None for the embedded
    backend, whose file locks already reach every process of the machine."""
    lock_dir: str | None = None
    """The folder whose ``locks/`` holds the thread locks (the server's data directory);
    None: the folder of the ``SqliteSaver`` file given to ``compile``, or this process."""
    admission: Admission | None = None
    """The check of each run's input before LangGraph keeps it (`turn.admission`)."""

    def compile(
        self, *args: Any, **kwargs: Any
    ) -> CompiledStateGraph[State, Any, InputState, OutputState]:
        """`StateGraph.compile`; the compiled graph serialises runs per thread."""
        compiled = super().compile(*args, **kwargs)
        checkpointer = kwargs.get("checkpointer", args[0] if args else None)
        admission = self.admission
        guard = thread_guard(
            self.lock_dir or lock_dir_of(checkpointer),
            self.thread_locks,
            scope=f"checkpointer {id(checkpointer)}:",
            admit=(admission.check, admission.acheck) if admission is not None else None,
        )
        return compiled.with_config(callbacks=guard)


ToolLike = BaseTool | Callable[..., Any] | dict[str, Any]
"""A tool as ``create_agent`` takes one: a LangChain tool, a plain function (its docstring
is the description), or a dict (a provider-side tool: bound to the model, run by the
provider, never here)."""


def build_graph(
    *,
    model: BaseChatModel | str | None = None,
    embeddings: Embeddings | None = None,
    tools: Sequence[ToolLike] = (),
    system_prompt: str | None = None,
    state_schema: type[Any] | None = None,
    summary_model: BaseChatModel | str | None = None,
    memory: MemoryBackend | None = None,
    agent_id: str | None = None,
    handle_tool_errors: Any = log_and_describe,
) -> StateGraph[Any, Context, InputState, OutputState]:
    """Return the uncompiled MemGPT graph; the caller compiles it with its own persistence.

    Args:
        model: chat model for ``think``, or a ``"provider:name"`` string
            (``init_chat_model``; e.g. ``"openai:gpt-4o-mini"``); when None,
            ``Context.model`` picks one per run.
        embeddings: embeddings for recall and archival search; when None,
            ``Context.embedding_model`` picks them (the embedded MiniLM by default).
        tools: extra tools the model may call (LangChain tools, plain functions, or
            provider-side tool dicts); they run in ``call_memory_tool``, LangGraph's
            ``ToolNode`` (injected state, store, tool call id and runtime; async tools; a
            returned ``Command`` updates the state, ends the turn with
            ``goto="respond"`` or, addressed to the parent graph, hands control over).
            ``declare_tool`` says how the loop treats one.
        system_prompt: your instructions, added after MemGPT's (before core memory, so
            the prompt's unchanging head stays cacheable).
        state_schema: a subclass of `State` with keys of your own, which tools may set
            through ``Command(update=...)``; they are also run input and output.
        summary_model: model (or string) that writes eviction summaries (default:
            ``model``).
        memory: where agents' memory lives (a ``MemoryBackend``: agent id -> memory);
            when None, the embedded SQLite + FAISS backend in ``Context.data_dir``.
        agent_id: the agent this graph always is, whatever the run context says: two
            agents in one parent graph share the parent's context.
        handle_tool_errors: as ``ToolNode``'s, for your tools' exceptions. Default: the
            model reads ``ExcType: message`` and the log keeps the traceback; ``False``
            lets the exception end the run.

    Raises:
        ValueError: a tool name clashes with a memory tool, a model string cannot be
            resolved (e.g. its API key is missing), or ``state_schema`` is not a `State`.
    """
    return assemble(
        context_schema=Context,
        model=model,
        embeddings=embeddings,
        tools=tools,
        system_prompt=system_prompt,
        state_schema=state_schema,
        summary_model=summary_model,
        memory=memory,
        agent_id=agent_id,
        handle_tool_errors=handle_tool_errors,
    )


def assemble(
    *,
    context_schema: type[Any],
    model: BaseChatModel | str | None,
    embeddings: Embeddings | None,
    tools: Sequence[ToolLike],
    summary_model: BaseChatModel | str | None,
    memory: MemoryBackend | None = None,
    agent_id: str | None = None,
    system_prompt: str | None = None,
    state_schema: type[Any] | None = None,
    handle_tool_errors: Any = log_and_describe,
    lock_dir: str | None = None,
) -> StateGraph[Any, Any, InputState, OutputState]:
    """The graph with ``context_schema``.

    `Context` for library users; the served graph (`langgraph_memgpt.serve.server`) passes its
    client allow-list schema instead, and its data directory as ``lock_dir`` (a client's
    context names none; see `MemGPTStateGraph.lock_dir`).
    """
    schema = state_schema or State
    missing = set(State.__annotations__) - set(_annotations(schema))
    if missing:
        raise ValueError(
            f"state_schema {schema.__name__} lacks {sorted(missing)}: subclass "
            "langgraph_memgpt.state.State and add your keys"
        )
    runnable, provider_side = _tools(tools)
    clashes = sorted({t.name for t in runnable} & set(MEMORY_TOOLS))
    if clashes:
        raise ValueError(f"user tools {clashes} clash with memory tool names; rename them")
    deps = Deps(
        model=chat_model(model),
        summary_model=chat_model(summary_model),
        embeddings=embeddings,
        user_tools={t.name: t for t in runnable},
        backend=memory,
        agent_id=agent_id,
        instructions=system_prompt or "",
        state_keys=frozenset(_annotations(schema)),
        server_tools=provider_side,
    )
    input_schema, output_schema = io_schemas(schema)
    builder = MemGPTStateGraph(
        schema,
        input_schema=input_schema,
        output_schema=output_schema,
        context_schema=context_schema,
    )
    builder.thread_locks = memory if isinstance(memory, ThreadLocks) else None
    builder.lock_dir = lock_dir
    builder.admission = Admission(deps)
    # Write-ahead in one place: what each node's update adds to the queue reaches recall
    # before LangGraph checkpoints it (the tool step's: per call).
    write_ahead = WriteAhead(deps)
    nodes: dict[str, Any] = {
        "open_turn": make_open_turn(deps),
        "check_pressure": make_check_pressure(deps),
        "summarize_evict": make_summarize_evict(deps),
        "think": make_think(deps),
        "call_memory_tool": make_call_memory_tool(deps, handle_tool_errors, write_ahead),
        "close_step": make_close_step(deps),
        "respond": make_respond(deps),
    }
    for name, node in nodes.items():
        # The tool node's write-ahead is around each of its calls (given above).
        builder.add_node(name, node if name == "call_memory_tool" else write_ahead.node(node, name))
    builder.add_edge(START, "open_turn")
    builder.add_edge("open_turn", "check_pressure")
    builder.add_conditional_edges(
        "check_pressure", after_pressure, ["think", "summarize_evict", "respond"]
    )
    builder.add_conditional_edges("summarize_evict", after_eviction, ["think", "respond"])
    builder.add_conditional_edges(
        "think",
        after_think,
        ["call_memory_tool", "close_step", "summarize_evict", "respond"],
    )
    # One run of close_step after all of a step's call tasks (the join).
    builder.add_edge("call_memory_tool", "close_step")
    builder.add_conditional_edges("close_step", after_close, ["check_pressure", "respond"])
    builder.add_edge("respond", END)
    return builder


def _annotations(schema: type[Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for klass in reversed(getattr(schema, "__mro__", [schema])):
        merged.update(getattr(klass, "__annotations__", {}))
    return merged


def chat_model(model: BaseChatModel | str | None) -> BaseChatModel | None:
    """``model``, a ``"provider:name"`` string resolved now (not at the first run)."""
    if model is None or isinstance(model, BaseChatModel):
        return model
    from langchain.chat_models import init_chat_model

    if model.partition(":")[0] == "openai":
        require_openai_endpoint(model)
    try:
        resolved = init_chat_model(model)
    except Exception as exc:  # noqa: BLE001 - any failure here is a setup error to name
        raise ValueError(f"cannot make a chat model from {model!r}: {exc}") from exc
    if not isinstance(resolved, BaseChatModel):
        raise ValueError(f"{model!r} did not give a chat model")
    return resolved


def _tools(tools: Sequence[ToolLike]) -> tuple[list[BaseTool], list[dict[str, Any]]]:
    """The tools that run here (as LangChain tools) and the provider-side ones (dicts)."""
    runnable: list[BaseTool] = []
    provider_side: list[dict[str, Any]] = []
    for item in tools:
        if isinstance(item, dict):
            provider_side.append(item)
        elif isinstance(item, BaseTool):
            runnable.append(_with_sync_path(item))
        elif callable(item):
            runnable.append(_with_sync_path(as_tool(item)))
        else:
            raise ValueError(f"not a tool: {item!r} (give a BaseTool, a function or a dict)")
    return runnable, provider_side


def _run_coroutine(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def _with_sync_path(tool: BaseTool) -> BaseTool:
    """A copy of an async-only tool (MCP tools, ``@tool`` on a coroutine) a sync run can use.

    Its coroutine runs on a private event loop in a worker thread (the calling thread may
    already run a loop), in a copy of the caller's context variables: LangGraph's run
    context (``get_config()``, ``interrupt()``, ``get_stream_writer()``) reaches it as it
    reaches a sync tool. Under ``ainvoke`` the coroutine runs on the caller's loop.
    """
    if not (isinstance(tool, StructuredTool) and tool.func is None and tool.coroutine):
        return tool
    coroutine = tool.coroutine

    def run(*args: Any, **kwargs: Any) -> Any:
        context = contextvars.copy_context()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memgpt-async-tool") as pool:
            return pool.submit(context.run, _run_coroutine, coroutine(*args, **kwargs)).result()

    return tool.model_copy(update={"func": run})


def __getattr__(name: str) -> Any:
    """``graph``: the library graph, compiled when first asked for (importing builds nothing).

    Compiled without a checkpointer, every Context field settable by the caller. Do not
    serve it: a client would choose the data directory and the model. Serve
    ``langgraph_memgpt.serve.server:graph`` (what ``langgraph.json`` names) instead.
    """
    if name == "graph":
        compiled = build_graph().compile(name="memgpt")
        globals()["graph"] = compiled
        return compiled
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
