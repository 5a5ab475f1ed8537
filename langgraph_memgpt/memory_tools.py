"""MemGPT's memory for agents that are not this package's loop.

`build_graph` is the whole MemGPT agent. Some LangGraph users already have an agent (a
``create_react_agent``, a ``create_agent``, a hand-built graph) and want only its memory,
as LangMem offers it: the three tiers, paged by the model through tools. This module gives
them the same tools, the same stores and the same rules (read-only blocks, the guards
against junk edits, searches that say what their filters hid):

- `memory_tools` — the memory tools as LangChain tools (``send_message`` left out: such an
  agent answers in its own words);
- `memory_prompt` — core memory and the memory statistics as text for the system prompt,
  so the model sees what it has (MemGPT's "always in view" tier);
- `recorder` — a node (e.g. a ``post_model_hook``) that writes the conversation into
  recall memory, so ``conversation_search`` finds it in later threads.

Which agent's memory a call uses: the ``agent_id`` given here, else the run's
``configurable["agent_id"]``, else ``"default"``; the thread is the run's ``thread_id``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from pydantic import BaseModel, create_model

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.main_context import record, render_memory_view
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.tools import MEMORY_TOOLS, MemoryTool, Provenance, execute_tool_call

DEFAULT_TOOLS: tuple[str, ...] = tuple(n for n, t in MEMORY_TOOLS.items() if not t.replies)
"""Every memory tool but ``send_message``."""


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

    def context_for(self, config: RunnableConfig | None) -> Context:
        """The Context of a run: the agent id resolved as the module docstring says."""
        configurable = (config or {}).get("configurable") or {}
        agent = self.agent_id or configurable.get("agent_id") or self.context.agent_id
        return Context.from_any({**_fields(self.context), "agent_id": str(agent)})

    def memory(self, config: RunnableConfig | None) -> Memory:
        """The agent's memory tiers, default core blocks ensured."""
        return self._deps.memory(self.context_for(config))


def _fields(ctx: Context) -> dict[str, Any]:
    return ctx.fields()


def _thread(config: RunnableConfig | None) -> str:
    return str(((config or {}).get("configurable") or {}).get("thread_id") or "default")


def memory_tools(
    agent_id: str | None = None,
    *,
    backend: MemoryBackend | None = None,
    context: Context | None = None,
    names: Sequence[str] = DEFAULT_TOOLS,
) -> list[BaseTool]:
    """The memory tools as LangChain tools for any agent.

    Args:
        agent_id: Whose memory; None: the run's ``configurable["agent_id"]`` or "default".
        backend: Where memory lives (`SqliteBackend`, `PostgresBackend`); None: the
            embedded SQLite + FAISS backend in ``context.data_dir``.
        context: Settings the tools read (data dir, embeddings, page size, result limit).
        names: Which tools (default: all but ``send_message``).

    Returns:
        One ``StructuredTool`` per name; each returns the loop's ``{"status", "message"}``
        JSON and never raises (a failure is a readable ``Failed`` result).

    Raises:
        ValueError: An unknown tool name.
    """
    unknown = [n for n in names if n not in MEMORY_TOOLS]
    if unknown:
        raise ValueError(f"unknown memory tool(s) {unknown}; the tools are {list(MEMORY_TOOLS)}")
    access = MemoryAccess(agent_id, backend=backend, context=context)
    return [_as_langchain_tool(MEMORY_TOOLS[name], access) for name in names]


def _as_langchain_tool(tool: MemoryTool, access: MemoryAccess) -> BaseTool:
    # The call id keys what the call writes, so a replayed step adds nothing twice; it is
    # injected by ToolNode and hidden from the model's schema.
    schema: type[BaseModel] = create_model(
        tool.args.__name__,
        __base__=tool.args,
        tool_call_id=(Annotated[str, InjectedToolCallId], ...),
    )
    schema.__doc__ = tool.args.__doc__

    def run(tool_call_id: str, config: RunnableConfig, **args: Any) -> str:
        ctx = access.context_for(config)
        outcome = execute_tool_call(
            tool.name,
            args,
            memory=access.memory(config),
            ctx=ctx,
            where=Provenance(thread_id=_thread(config), turn=0, call_id=tool_call_id),
            user_tools={},
        )
        return outcome.content

    return StructuredTool.from_function(
        func=run,
        name=tool.name,
        description=" ".join((tool.args.__doc__ or tool.name).split()),
        args_schema=schema,
    )


def memory_prompt(
    agent_id: str | None = None,
    *,
    backend: MemoryBackend | None = None,
    context: Context | None = None,
) -> Callable[[RunnableConfig | None], str]:
    """A function of the run's config giving core memory and statistics as prompt text.

    Use it in your agent's system prompt, after your own instructions.
    """
    access = MemoryAccess(agent_id, backend=backend, context=context)

    def render(config: RunnableConfig | None = None) -> str:
        return render_memory_view(access.memory(config))

    return render


def recorder(
    agent_id: str | None = None,
    *,
    backend: MemoryBackend | None = None,
    context: Context | None = None,
) -> Callable[[dict[str, Any], RunnableConfig], dict[str, Any]]:
    """A graph node that writes the state's ``messages`` into recall memory.

    Idempotent (a message is recorded once, by id), so it can run after every model call
    (``create_react_agent(..., post_model_hook=recorder(...))``). Returns no update.
    """
    access = MemoryAccess(agent_id, backend=backend, context=context)

    def record_messages(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[AnyMessage] = list(state.get("messages") or [])
        record(access.memory(config), messages, _thread(config), turn=0)
        return {}

    return record_messages
