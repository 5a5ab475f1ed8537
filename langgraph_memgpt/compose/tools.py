"""The memory for an agent you already have: its tools, its prompt, its recorder.

Some LangGraph users already have an agent (a ``create_agent``, a hand-built graph) and
want only its memory, as LangMem offers it: the three tiers, paged by the model through
tools. This module gives them the loop's own tool objects
(`langgraph_memgpt.tools.memory_tools`), stores and rules:

- `memory_tools` — the memory tools (``send_message`` left out: such an agent answers in
  its own words);
- `memory_prompt` — core memory and the memory statistics as text for the system prompt,
  so the model sees what it has (MemGPT's "always in view" tier);
- `recorder` — a node (e.g. a ``post_model_hook``) that writes the conversation into
  recall memory, so ``conversation_search`` finds it in later threads.

Which agent's memory a call uses: the ``agent_id`` given here, else the run context's
``agent_id`` (``create_agent(..., context=...)``, ``graph.invoke(..., context=...)``), else
the run's ``configurable["agent_id"]``, else ``"default"``; the thread is the run's
``thread_id``. `build_graph` resolves it the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolRuntime

from langgraph_memgpt.context import Context, run_agent_id
from langgraph_memgpt.deps import TOOL_HOST, Deps
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.tools.memory_tools import (
    DEFAULT_TOOLS,
    Binding,
    make_memory_tools,
    provenance,
    thread_of_config,
)
from langgraph_memgpt.turn.main_context import record, render_memory_view

__all__ = ["DEFAULT_TOOLS", "MemoryAccess", "memory_prompt", "memory_tools", "recorder"]


class MemoryAccess:
    """Opens the right agent's memory for a run (the backend's own caches make it cheap)."""

    def __init__(
        self,
        agent_id: str | None = None,
        *,
        backend: MemoryBackend | None = None,
        context: Context | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.context = context or Context()
        self._deps = Deps(backend=backend)

    def context_for(self, config: RunnableConfig | None, run_context: Any = None) -> Context:
        """The Context of a run: the agent id resolved as the module docstring says."""
        agent = self.agent_id or run_agent_id(run_context, config) or self.context.agent_id
        return Context.from_any({**self.context.fields(), "agent_id": str(agent)})

    def memory(self, config: RunnableConfig | None, run_context: Any = None) -> Memory:
        """The agent's memory tiers, default core blocks ensured."""
        return self._deps.memory(self.context_for(config, run_context))

    def tools(self, names: Sequence[str] = DEFAULT_TOOLS) -> list[BaseTool]:
        """The named memory tools over this memory, each result journalled in recall."""
        return make_memory_tools(self.bind, names, TOOL_HOST)

    def bind(self, runtime: ToolRuntime[Any, Any]) -> Binding:
        """A tool call's `Binding` (see `Binder`)."""
        ctx = self.context_for(runtime.config, runtime.context)
        return Binding(memory=self._deps.memory(ctx), ctx=ctx, where=provenance(runtime))


def memory_tools(
    agent_id: str | None = None,
    *,
    backend: MemoryBackend | None = None,
    context: Context | None = None,
    names: Sequence[str] = DEFAULT_TOOLS,
) -> list[BaseTool]:
    """The memory tools as LangChain tools for any agent.

    Args:
        agent_id: Whose memory; None: resolved per run (see the module docstring).
        backend: Where memory lives (`SqliteBackend`, `PostgresBackend`); None: the
            embedded SQLite + FAISS backend in ``context.data_dir``.
        context: Settings the tools read (data dir, embeddings, page size, result limit).
        names: Which tools (default: all but ``send_message``).

    Returns:
        One ``StructuredTool`` per name; each answers the loop's ``{"status", "message"}``
        JSON and never raises (a failure is a readable ``Failed`` result).

    Raises:
        ValueError: An unknown tool name.
    """
    return MemoryAccess(agent_id, backend=backend, context=context).tools(names)


def memory_prompt(
    agent_id: str | None = None,
    *,
    backend: MemoryBackend | None = None,
    context: Context | None = None,
) -> Callable[..., str]:
    """A function of the run's config (and context) giving core memory as prompt text.

    Use it in your agent's system prompt, after your own instructions.
    """
    access = MemoryAccess(agent_id, backend=backend, context=context)

    def render(config: RunnableConfig | None = None, run_context: Any = None) -> str:
        return render_memory_view(access.memory(config, run_context))

    return render


def recorder(
    agent_id: str | None = None,
    *,
    backend: MemoryBackend | None = None,
    context: Context | None = None,
) -> Callable[..., dict[str, Any]]:
    """A graph node that writes the state's ``messages`` into recall memory.

    Idempotent (a message is recorded once, by id), so it can run after every model call
    (e.g. as a node after your model's). Returns no update.
    """
    access = MemoryAccess(agent_id, backend=backend, context=context)

    def record_messages(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[AnyMessage] = list(state.get("messages") or [])
        run_context = getattr(_current_runtime(), "context", None)
        record(access.memory(config, run_context), messages, thread_of_config(config), turn=0)
        return {}

    return record_messages


def _current_runtime() -> Any:
    """The running graph's ``Runtime``, or None outside one."""
    from langgraph.runtime import get_runtime

    try:
        return get_runtime()
    except (RuntimeError, KeyError, LookupError):
        return None
