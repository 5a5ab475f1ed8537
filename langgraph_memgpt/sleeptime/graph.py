"""Wires the sleep-time consolidation graph (``memgpt_sleeptime`` in ``langgraph.json``).

START → read_new_messages ─after_read─┬─(nothing new said)──────────────────→ END
                                      └→ propose_rewrite ─after_proposal─┬─(malformed)→ END
                                                                         └→ apply_rewrite → END

The nodes return state updates; the routes (`after_read`, `after_proposal`) only read them.

It tends one agent's memory between conversations (MemGPT's agent has no idle time;
Letta's sleep-time agents do this in the background): the same `Context` as the chat
graph picks the agent, the model and the memory, so it runs beside a conversation, in
Studio, on a server cron, or mounted as a node of a parent graph.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph

from langgraph_memgpt.checkpoints import ThreadsAt
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.sleeptime.apply_rewrite import make_apply_rewrite
from langgraph_memgpt.sleeptime.propose_rewrite import make_propose_rewrite
from langgraph_memgpt.sleeptime.read_new_messages import make_read_new_messages
from langgraph_memgpt.sleeptime.state import SleepInput, SleepState
from langgraph_memgpt.stores.base import MemoryBackend

GRAPH_ID = "memgpt_sleeptime"


def after_read(state: SleepState) -> Literal["propose_rewrite", "__end__"]:
    """After ``read_new_messages``: ask the model, unless nothing new was said."""
    return "propose_rewrite" if state.get("transcript") else "__end__"


def after_proposal(state: SleepState) -> Literal["apply_rewrite", "__end__"]:
    """After ``propose_rewrite``: apply the proposal, unless the answer was unusable."""
    return "apply_rewrite" if state.get("proposal") is not None else "__end__"


def build_sleeptime_graph(
    *,
    model: BaseChatModel | None = None,
    embeddings: Embeddings | None = None,
    memory: MemoryBackend | None = None,
    agent_id: str | None = None,
    threads: ThreadsAt = None,
) -> StateGraph[SleepState, Context, SleepInput, SleepState]:
    """Return the uncompiled consolidation graph; the caller compiles it.

    Args:
        model: chat model that proposes the rewrite; when None, ``Context.model``.
        embeddings: embeddings for archival inserts; when None, ``Context.embedding_model``.
        memory: the memory backend (as for ``build_graph``); when None, the embedded
            SQLite + FAISS backend in ``Context.data_dir``.
        agent_id: the agent this graph always tends; None: the run context's ``agent_id``.
        threads: the checkpointer of the agent's chat threads (or a function opening
            it), where a retention purge cleans every copy of what it forgets; None: the
            run's own checkpointer (compile both graphs with one, or mount this one in the
            chat's parent graph), when it is a SQLite, Postgres or in-memory saver.
    """
    return assemble_sleeptime(
        context_schema=Context,
        model=model,
        embeddings=embeddings,
        memory=memory,
        agent_id=agent_id,
        threads=threads,
    )


def assemble_sleeptime(
    *,
    context_schema: type[Any],
    model: BaseChatModel | None,
    embeddings: Embeddings | None,
    memory: MemoryBackend | None,
    agent_id: str | None = None,
    threads: ThreadsAt = None,
) -> StateGraph[SleepState, Any, SleepInput, SleepState]:
    """The graph with ``context_schema`` (`Context`, or a served graph's client schema)."""
    deps = Deps(model=model, embeddings=embeddings, backend=memory, agent_id=agent_id)
    builder: StateGraph[SleepState, Any, SleepInput, SleepState] = StateGraph(
        SleepState, input_schema=SleepInput, output_schema=SleepState, context_schema=context_schema
    )
    builder.add_node("read_new_messages", make_read_new_messages(deps, threads))
    builder.add_node("propose_rewrite", make_propose_rewrite(deps))
    builder.add_node("apply_rewrite", make_apply_rewrite(deps))
    builder.add_edge(START, "read_new_messages")
    builder.add_conditional_edges("read_new_messages", after_read, ["propose_rewrite", END])
    builder.add_conditional_edges("propose_rewrite", after_proposal, ["apply_rewrite", END])
    builder.add_edge("apply_rewrite", END)
    return builder


def __getattr__(name: str) -> Any:
    """``graph``: the library graph, compiled when first asked for (importing builds nothing).

    Every Context field is settable by the caller. Serve
    ``langgraph_memgpt.sleeptime.server:graph`` (what ``langgraph.json`` names) instead.
    """
    if name == "graph":
        compiled = build_sleeptime_graph().compile(name=GRAPH_ID)
        globals()["graph"] = compiled
        return compiled
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
