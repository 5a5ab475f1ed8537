"""The served consolidation graph (``langgraph_memgpt.sleeptime.server:graph``).

Configured like the served chat graph (`langgraph_memgpt.serve.server`): data directory, chat
model, embeddings and database come from the server's environment; a client's run
context may set only `CLIENT_FIELDS` (``agent_id`` above all), and a context that tries
more is refused with the fields it may set.
"""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph
from langgraph_sdk.runtime import ServerRuntime

from langgraph_memgpt.checkpoints import existing_threads
from langgraph_memgpt.serve.server import GraphFactory, checked_factory, server_memory
from langgraph_memgpt.serve.settings import ServerSettings, client_context_schema
from langgraph_memgpt.sleeptime.graph import GRAPH_ID, assemble_sleeptime
from langgraph_memgpt.stores.base import MemoryBackend


def served_sleeptime_graph(
    settings: ServerSettings | None = None,
    *,
    model: BaseChatModel | None = None,
    embeddings: Embeddings | None = None,
    memory: MemoryBackend | None = None,
) -> GraphFactory:
    """A graph factory for ``langgraph.json``: the consolidator, configured by the server."""
    settings = settings if settings is not None else ServerSettings.from_env()
    compiled = assemble_sleeptime(
        context_schema=client_context_schema(settings),
        model=model,
        embeddings=embeddings,
        memory=memory if memory is not None else server_memory(settings, embeddings),
        # The server's chat threads: a retention purge cleans its copies there too.
        threads=functools.partial(existing_threads, settings.data_dir, settings.database_url),
    ).compile(name=GRAPH_ID)
    return checked_factory(compiled, settings)


@functools.cache
def _from_env() -> GraphFactory:
    return served_sleeptime_graph()


# The annotation is resolved at run time: LangGraph passes the ServerRuntime only to a
# factory whose parameter is annotated with it.
def graph(runtime: ServerRuntime[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The served consolidation graph, built from the environment on first use."""
    return _from_env()(runtime)
