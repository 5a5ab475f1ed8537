"""What ``build_graph`` hands to the nodes: the models, the embeddings, the user's tools."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from langgraph_memgpt.context import Context
from langgraph_memgpt.ops.forget import forget_matching
from langgraph_memgpt.ownership import refuse_another_agent
from langgraph_memgpt.small_model.policy import small_model_policies
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.tools.facts import ToolHost
from langgraph_memgpt.tools.run import tool_schemas
from langgraph_memgpt.turn.main_context import record
from langgraph_memgpt.turn.policies import ModelPolicy
from langgraph_memgpt.turn.tokens import TokenCounter

R_co = TypeVar("R_co", covariant=True)


class Node(Protocol[R_co]):
    """A node of this graph: state in, runtime by keyword (as LangGraph passes it)."""

    def __call__(self, state: State, *, runtime: Runtime[Context]) -> R_co:
        """Run the node."""
        ...


TOOL_HOST = ToolHost(record=record, forget=forget_matching)
"""What the memory tools ask of the package above them: the loop's recall write-ahead, and
the eraser the ``forget`` tool runs. Every face's tools get this one."""


def policies_for(traits: ModelTraits) -> tuple[ModelPolicy, ...]:
    """The policy stack a model with ``traits`` runs, outermost first (both faces ask here).

    A model whose traits need nothing (a hosted one) gets an empty stack: its steps never
    enter `langgraph_memgpt.small_model` beyond its traits.
    """
    return small_model_policies(traits) if traits.small else ()


@dataclass
class Deps:
    """Shared, process-wide collaborators of the nodes (never part of the checkpoint)."""

    model: BaseChatModel | None = None
    summary_model: BaseChatModel | None = None
    embeddings: Embeddings | None = None
    user_tools: Mapping[str, BaseTool] = field(default_factory=dict)
    backend: MemoryBackend | None = None
    agent_id: str | None = None
    """The agent this graph always is (``build_graph(agent_id=...)``); None: the run
    context's ``agent_id``. Two agents in one parent graph share the parent's context."""
    instructions: str = ""
    """The caller's system prompt (``build_graph(system_prompt=...)``), added to MemGPT's."""
    state_keys: frozenset[str] = frozenset(State.__annotations__)
    """Keys of the graph's state schema: what a tool's ``Command`` may set."""
    server_tools: list[dict[str, Any]] = field(default_factory=list)
    """Tools given as dicts (provider-side tools): bound to the model, never run here."""
    counter: TokenCounter = field(default_factory=TokenCounter)
    schemas: list[dict[str, Any]] = field(init=False)
    compact_schemas: list[dict[str, Any]] = field(init=False)

    def __post_init__(self) -> None:
        # Built once: converting pydantic models to JSON schema on every step was the
        # largest cost of an empty turn.
        tools = list(self.user_tools.values())
        self.schemas = [*tool_schemas(tools), *self.server_tools]
        self.compact_schemas = [*tool_schemas(tools, compact=True), *self.server_tools]

    def schemas_for(self, traits: ModelTraits) -> list[dict[str, Any]]:
        """The tool schemas to bind: compact ones for a model whose traits ask for them."""
        return self.compact_schemas if traits.compact_schemas else self.schemas

    def chat_model(self, ctx: Context) -> BaseChatModel:
        """The model a node calls: the one given to ``build_graph``, else ``ctx.model``."""
        if self.model is not None:
            return self.model
        from langgraph_memgpt.models import resolve_model

        return resolve_model(ctx.model)

    def summarizer(self, ctx: Context) -> BaseChatModel:
        """The model that writes eviction summaries (the chat model unless one was given)."""
        return self.summary_model if self.summary_model is not None else self.chat_model(ctx)

    def agent_of(self, ctx: Context) -> str:
        """The agent whose memory this graph uses: its own, else the context's."""
        return self.agent_id or ctx.agent_id

    def memory(self, ctx: Context, state: State | None = None) -> Memory:
        """The agent's memory tiers from the graph's backend.

        Default core blocks are ensured when ``state`` is None or a thread no step has
        claimed for an agent yet (``agent_id`` unset): once per thread, not per step.

        Without a backend given to ``build_graph``, the embedded SQLite + FAISS backend in
        ``ctx.data_dir`` (opened once per process and agent).

        Raises:
            ValueError: ``state`` is a thread of another agent. Its queue is that agent's
                conversation: this agent would read it, and recording it would copy it
                into this agent's long-term memory.
        """
        agent_id = self.agent_of(ctx)
        owner = state.get("agent_id") if state is not None else None
        refuse_another_agent(owner, agent_id)
        from langgraph_memgpt.stores.backends import open_backend

        backend = self.backend or open_backend(
            ctx.data_dir,
            embedding_model=ctx.embedding_model,
            embeddings=self.embeddings,
            core_block_limit=ctx.core_block_limit,
        )
        memory = backend.open(agent_id)
        if not owner:
            # A thread's first step seeds a new agent's blocks (and calls from outside a
            # thread always check); later steps of the thread skip the two reads, and a
            # block the user deleted on purpose stays deleted.
            memory.core.ensure_defaults(
                persona=ctx.persona, human=ctx.human, char_limit=ctx.core_block_limit
            )
        return memory
