"""A MemGPT agent inside a swarm and under a supervisor (served: ``langgraph dev`` here).

``make_swarm`` and ``make_supervisor`` return the uncompiled parent graphs: the caller
compiles them with its own persistence. ``swarm`` is the graph this folder's
``langgraph.json`` serves. Its models come from the environment like the packaged server's:
``MEMGPT_MODEL`` for the MemGPT agent, ``HELPER_MODEL`` for the plain LangGraph agent beside
it (default: the same spec); its memory lives in ``MEMGPT_DATA_DIR`` (embeddings:
``MEMGPT_EMBEDDING_MODEL``).
"""

from __future__ import annotations

import os
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph
from langgraph_supervisor import create_supervisor
from langgraph_swarm import create_handoff_tool, create_swarm

from langgraph_memgpt import build_graph
from langgraph_memgpt.models import resolve_model
from langgraph_memgpt.serve.settings import ServerSettings
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.sqlite import SqliteBackend

MEMGPT_AGENT = "concierge"
HELPER_AGENT = "helper"


def make_swarm(
    memgpt_model: BaseChatModel,
    helper_model: BaseChatModel,
    memory: MemoryBackend | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """The concierge (a MemGPT agent) and a helper, each able to hand the user to the other.

    The concierge keeps what it learns in its own memory (agent ``concierge``), so after a
    handoff, and in any later thread, it continues with it.
    """
    concierge = build_graph(
        model=memgpt_model,
        memory=memory,
        agent_id=MEMGPT_AGENT,
        tools=[create_handoff_tool(agent_name=HELPER_AGENT, description="Ask the helper.")],
    ).compile(name=MEMGPT_AGENT)
    helper = create_agent(
        helper_model,
        tools=[create_handoff_tool(agent_name=MEMGPT_AGENT, description="Back to the concierge.")],
        system_prompt="You answer practical questions, then hand the user back to the concierge.",
        name=HELPER_AGENT,
    )
    return create_swarm([concierge, helper], default_active_agent=MEMGPT_AGENT)


def make_supervisor(
    memgpt_model: BaseChatModel,
    supervisor_model: BaseChatModel,
    memory: MemoryBackend | None = None,
) -> StateGraph[Any, Any, Any, Any]:
    """A supervisor that sends whatever concerns the user's memory to a MemGPT worker."""
    worker = build_graph(model=memgpt_model, memory=memory, agent_id=MEMGPT_AGENT).compile(
        name="memory_agent"
    )
    return create_supervisor(
        [worker],
        model=supervisor_model,
        prompt="Send anything about what the user told you before to memory_agent.",
    )


def _served() -> Any:
    settings = ServerSettings.from_env()
    memory = SqliteBackend(settings.data_dir, embedding_model=settings.embedding_model)
    helper_spec = os.environ.get("HELPER_MODEL") or settings.model
    return make_swarm(resolve_model(settings.model), resolve_model(helper_spec), memory).compile(
        name="swarm"
    )


swarm = _served()
"""The served swarm (``langgraph.json``): ``langgraph dev`` gives it its checkpointer."""
