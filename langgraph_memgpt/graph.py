"""Wires the MemGPT loop; ``build_graph`` for library users, ``graph`` for ``langgraph dev``.

START → check_pressure → (summarize_evict →) think → call_memory_tool → check_pressure …
└→ respond → END
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Self

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.nodes import (
    make_call_memory_tool,
    make_check_pressure,
    make_respond,
    make_summarize_evict,
    make_think,
)
from langgraph_memgpt.nodes.call_memory_tool import DESTINATIONS
from langgraph_memgpt.state import InputState, OutputState, State
from langgraph_memgpt.stores.base import MemoryBackend, ThreadLocks
from langgraph_memgpt.threads import a_one_run, data_dir_of, one_run
from langgraph_memgpt.tools import MEMORY_TOOLS


class OneRunPerThread(CompiledStateGraph[Any, Any, Any, Any]):
    """The compiled MemGPT graph: a run holds its thread's lock (`langgraph_memgpt.threads`).

    Two runs of one thread at once would both start from the same checkpoint and the last
    to write would drop the other's messages; here the second waits for the first (every
    entry point, ``invoke``/``ainvoke``/events included, goes through ``stream`` or
    ``astream``).
    """

    lock_data_dir: str | None = None
    """Where the thread locks live; None: the run context's ``data_dir`` (the served graph
    sets its server's, since a client's context names none)."""
    thread_locks: ThreadLocks | None = None
    """The memory backend's cross-machine thread claims (Postgres), taken after the file
    lock; None for the embedded backend, whose file locks already cover every process."""

    def _lock_dir(self, kwargs: dict[str, Any]) -> str | None:
        return self.lock_data_dir or data_dir_of(kwargs.get("context"))

    def copy(self, update: dict[str, Any] | None = None) -> Self:
        """`Pregel.copy` keeping the locks (the server copies the graph for every run)."""
        copied = super().copy(update)
        copied.lock_data_dir = self.lock_data_dir
        copied.thread_locks = self.thread_locks
        return copied

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """`CompiledStateGraph.stream`, one run per thread at a time."""
        with one_run(config, self._lock_dir(kwargs), self.thread_locks):
            yield from super().stream(input, config, **kwargs)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """`CompiledStateGraph.astream`, one run per thread at a time."""
        async with a_one_run(config, self._lock_dir(kwargs), self.thread_locks):
            async for chunk in super().astream(input, config, **kwargs):
                yield chunk


class MemGPTStateGraph(StateGraph[State, Any, InputState, OutputState]):
    """The MemGPT loop's builder: ``compile`` returns a `OneRunPerThread` graph."""

    thread_locks: ThreadLocks | None = None
    """Handed to the compiled graph (`OneRunPerThread.thread_locks`)."""

    def compile(
        self, *args: Any, **kwargs: Any
    ) -> CompiledStateGraph[State, Any, InputState, OutputState]:
        """`StateGraph.compile`; the compiled graph serialises runs per thread."""
        compiled = super().compile(*args, **kwargs)
        compiled.__class__ = OneRunPerThread
        compiled.thread_locks = self.thread_locks  # type: ignore[attr-defined]
        return compiled


def build_graph(
    *,
    model: BaseChatModel | None = None,
    embeddings: Embeddings | None = None,
    tools: Sequence[BaseTool] = (),
    summary_model: BaseChatModel | None = None,
    memory: MemoryBackend | None = None,
    agent_id: str | None = None,
) -> StateGraph[State, Context, InputState, OutputState]:
    """Return the uncompiled MemGPT graph; the caller compiles it with its own persistence.

    Args:
        model: chat model for ``think``; when None, ``Context.model`` picks one per run.
        embeddings: embeddings for recall and archival search; when None,
            ``Context.embedding_model`` picks them (the embedded MiniLM by default).
        tools: extra tools the model may call; they run in ``call_memory_tool`` the way
            LangGraph's ``ToolNode`` runs them (injected state, store, tool call id and
            runtime; async tools; a returned ``Command`` updates the state or, addressed to
            the parent graph, hands control over). ``declare_tool`` says how the loop
            treats one (e.g. a result that need not be read).
        summary_model: model that writes eviction summaries (defaults to ``model``).
        memory: where agents' memory lives (a ``MemoryBackend``: agent id -> memory);
            when None, the embedded SQLite + FAISS backend in ``Context.data_dir``.
        agent_id: the agent this graph always is, whatever the run context says: two
            agents in one parent graph share the parent's context.
    """
    return assemble(
        context_schema=Context,
        model=model,
        embeddings=embeddings,
        tools=tools,
        summary_model=summary_model,
        memory=memory,
        agent_id=agent_id,
    )


def assemble(
    *,
    context_schema: type[Any],
    model: BaseChatModel | None,
    embeddings: Embeddings | None,
    tools: Sequence[BaseTool],
    summary_model: BaseChatModel | None,
    memory: MemoryBackend | None = None,
    agent_id: str | None = None,
) -> StateGraph[State, Any, InputState, OutputState]:
    """The graph with ``context_schema``.

    `Context` for library users; the served graph (`langgraph_memgpt.server`) passes its
    client allow-list schema instead.
    """
    clashes = sorted({t.name for t in tools} & set(MEMORY_TOOLS))
    if clashes:
        raise ValueError(f"user tools {clashes} clash with memory tool names; rename them")
    deps = Deps(
        model=model,
        summary_model=summary_model,
        embeddings=embeddings,
        user_tools={t.name: t for t in tools},
        backend=memory,
        agent_id=agent_id,
    )
    builder = MemGPTStateGraph(
        State, input_schema=InputState, output_schema=OutputState, context_schema=context_schema
    )
    builder.thread_locks = memory if isinstance(memory, ThreadLocks) else None
    builder.add_node("check_pressure", make_check_pressure(deps))
    builder.add_node("summarize_evict", make_summarize_evict(deps))
    builder.add_node("think", make_think(deps))
    builder.add_node("call_memory_tool", make_call_memory_tool(deps), destinations=DESTINATIONS)
    builder.add_node("respond", make_respond(deps))
    builder.add_edge(START, "check_pressure")
    builder.add_edge("respond", END)
    return builder


def __getattr__(name: str) -> Any:
    """``graph``: the library graph, compiled when first asked for (importing builds nothing).

    Compiled without a checkpointer, every Context field settable by the caller. Do not
    serve it: a client would choose the data directory and the model. Serve
    ``langgraph_memgpt.server:graph`` (what ``langgraph.json`` names) instead.
    """
    if name == "graph":
        compiled = build_graph().compile(name="memgpt")
        globals()["graph"] = compiled
        return compiled
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
