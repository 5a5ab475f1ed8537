"""The served agent: its graph, durable persistence, and the ``langgraph.json`` serving it.

``graph`` (``langgraph_memgpt.serve.server:graph`` in ``langgraph.json``) is the graph API clients
run. Its server settings (data directory, chat model, embedding model) come from the
server's environment (`ServerSettings.from_env`: ``MEMGPT_DATA_DIR``, ``MEMGPT_MODEL``,
``MEMGPT_EMBEDDING_MODEL``; ``langgraph.json``'s ``env`` can set them), and its context
schema holds only `CLIENT_FIELDS`. It is a graph factory: for every run the server hands it
the client's context before LangGraph drops unknown keys, so a run that tries to set a
server setting, an unknown field or a bad value fails with an error naming the fields a
client may set, instead of being silently ignored.

``langgraph.json`` points its ``checkpointer.path`` here (module form,
``langgraph_memgpt.serve.server.checkpointer``) so threads (the FIFO queue, the summary, the
counters) survive a server restart, in the same data directory as the agent's long-term
memory. With ``MEMGPT_DATABASE_URL`` set, both live in that Postgres database instead:
memory through `PostgresBackend`, threads through LangGraph's ``AsyncPostgresSaver``.
``langgraph-memgpt serve`` writes the same configuration (`langgraph_config`)
into the data directory, so an installed package serves exactly what the repository does.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateUpdate
from langgraph_sdk.runtime import ServerRuntime

from langgraph_memgpt.checkpoints import CHECKPOINT_FILENAME, existing_threads, serve_threads
from langgraph_memgpt.context import ContextError
from langgraph_memgpt.serve.settings import ServerSettings, check_client_context

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from langgraph_memgpt.stores.base import MemoryBackend

DATA_DIR_ENV = "MEMGPT_DATA_DIR"
GRAPH_ID = "memgpt"
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
}
"""Keeps ``langgraph dev`` from calling home: no analytics, version check or tracing."""
STUDIO_ORIGIN = "https://smith.langchain.com"
STUDIO_CORS: dict[str, Any] = {
    "allow_origins": [STUDIO_ORIGIN],
    "allow_methods": ["*"],
    "allow_headers": ["*"],
    "expose_headers": ["x-pagination-total", "x-pagination-next", "content-location"],
}
"""The origins a browser may call the server from: LangGraph Studio's only (``make run``
prints its URL). Every other web page is refused (`langgraph_memgpt.serve.web.guard`); name more
in ``langgraph.json``'s ``http.cors.allow_origins``."""


def langgraph_config() -> dict[str, Any]:
    """The ``langgraph.json`` that serves the agent (the repository's file holds the same)."""
    return {
        "dependencies": ["."],
        "graphs": {
            GRAPH_ID: "langgraph_memgpt.serve.server:graph",
            "memgpt_sleeptime": "langgraph_memgpt.sleeptime.server:graph",
        },
        "checkpointer": {"path": "langgraph_memgpt.serve.server.checkpointer"},
        "http": {"app": "langgraph_memgpt.serve.web:app", "cors": dict(STUDIO_CORS)},
        "env": dict(OFFLINE_ENV),
    }


def checkpoint_path() -> Path:
    """Where the server keeps checkpoints: ``$MEMGPT_DATA_DIR`` (default ``./.memgpt``)."""
    root = Path(os.environ.get(DATA_DIR_ENV, ".memgpt")).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root / CHECKPOINT_FILENAME


@asynccontextmanager
async def checkpointer() -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The server's checkpointer: threads in the data directory, or in Postgres.

    ``AsyncSqliteSaver`` over the data directory's checkpoint file; with
    ``MEMGPT_DATABASE_URL`` set, ``AsyncPostgresSaver`` on that database (its tables made by
    ``setup()``). The server enters it at start, so the served graph is built here too, and
    the memory schema made: a bad ``MEMGPT_*`` setting or an unreachable database stops the
    server at start instead of failing its first run.
    """
    await asyncio.to_thread(_from_env)
    settings = ServerSettings.from_env()
    # Where a forget made in a run (the forget tool, a store delete) cleans the threads.
    serve_threads(functools.partial(existing_threads, settings.data_dir, settings.database_url))
    # What a first turn loads once per process, loaded now: the first reply costs what later
    # ones do (the model's prompt prefix is read ahead by `serve`, see `warmup`).
    asyncio.get_running_loop().run_in_executor(None, prepare_at_start, settings)
    if settings.database_url:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        backend = server_memory(settings)
        assert backend is not None
        await asyncio.to_thread(backend.agents)  # its schema and connections, made now

        async with AsyncPostgresSaver.from_conn_string(settings.database_url) as saver:
            await saver.setup()
            # As on SQLite: threads' checkpointed but unrecorded messages, once the tables
            # exist, in the background.
            recovering = asyncio.get_running_loop().run_in_executor(None, recover_at_start)
            yield saver
        await recovering
        return
    # mkdir is blocking file-system I/O: keep it off the server's event loop.
    path = await asyncio.to_thread(checkpoint_path)
    # Messages a killed server checkpointed before recording them (see `recovery`): in
    # the background, so the server answers at once.
    recovering = asyncio.get_running_loop().run_in_executor(None, recover_at_start, path)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver
    await recovering


def prepare_at_start(settings: ServerSettings) -> None:
    """Load the embedding model and the token counter's encoding (never fatal)."""
    from langgraph_memgpt.serve.warmup import first_turn_prompt
    from langgraph_memgpt.stores.embeddings import get_embeddings
    from langgraph_memgpt.turn.tokens import TokenCounter

    try:
        TokenCounter().messages(first_turn_prompt())
        embeddings = get_embeddings(settings.embedding_model)
        if embeddings is not None and not settings.embedding_model.startswith("openai:"):
            embeddings.embed_query("warm up")  # local models only: a hosted one costs money
    except Exception:  # noqa: BLE001 - only a speed-up
        logging.getLogger(__name__).exception("preparing the server's first turn failed")


def recover_at_start(path: Path | None = None) -> int:
    """Record in recall memory what the server's threads hold that recall lacks.

    The threads of the checkpoint file ``path`` (SQLite), or with ``MEMGPT_DATABASE_URL``
    (``path`` None) of the Postgres database, recorded into the server's memory
    (`server_memory`), thread by thread past any that cannot be read (`recover_threads`).
    Never fatal: a failure is logged and the server serves on. Returns the messages recorded.
    """
    from langgraph_memgpt.checkpoints import open_checkpointer, sqlite_checkpointer
    from langgraph_memgpt.context import Context
    from langgraph_memgpt.graph import build_graph
    from langgraph_memgpt.ops.recovery import recover_threads

    try:
        settings = ServerSettings.from_env()
        memory = server_memory(settings)
        threads = (
            sqlite_checkpointer(path)
            if path is not None
            else open_checkpointer(Path(settings.data_dir), settings.database_url)
        )
        with threads as saver:
            graph = build_graph(memory=memory).compile(checkpointer=saver)
            ctx = Context(data_dir=settings.data_dir, embedding_model=settings.embedding_model)
            return recover_threads(graph, ctx, memory=memory)
    except Exception:  # noqa: BLE001 - recovery must never stop the server
        logging.getLogger(__name__).exception("recovering threads' messages into recall failed")
        return 0


_SERVER_MEMORY: dict[tuple[str, str], MemoryBackend] = {}


def server_memory(
    settings: ServerSettings, embeddings: Embeddings | None = None
) -> MemoryBackend | None:
    """The memory backend the settings choose: None for the embedded SQLite one.

    With ``database_url``, the backend of its engine (`stores.registry`: Postgres), one per
    URL and embedding model in the process, shared by the graph and the checkpointer's
    start-up check.

    Raises:
        ContextError: no engine serves the URL, or its extra is not installed.
    """
    if not settings.database_url:
        return None
    from langgraph_memgpt.stores.backends import BackendSetupError, open_backend

    def opened(embeddings: Embeddings | None = None) -> MemoryBackend:
        try:
            return open_backend(
                settings.data_dir,
                database_url=settings.database_url,
                embedding_model=settings.embedding_model,
                embeddings=embeddings,
            )
        except BackendSetupError as exc:
            raise ContextError([f"MEMGPT_DATABASE_URL: {exc}"]) from exc

    if embeddings is not None:
        return opened(embeddings)
    key = (settings.database_url, settings.embedding_model)
    if key not in _SERVER_MEMORY:
        _SERVER_MEMORY[key] = opened()
    return _SERVER_MEMORY[key]


GraphFactory = Callable[[ServerRuntime[Any]], "CompiledStateGraph[Any, Any, Any, Any]"]


def served_graph(
    settings: ServerSettings | None = None,
    *,
    model: BaseChatModel | None = None,
    embeddings: Embeddings | None = None,
    tools: Sequence[BaseTool] = (),
    summary_model: BaseChatModel | None = None,
    memory: MemoryBackend | None = None,
) -> GraphFactory:
    """A graph factory for ``langgraph.json``: the agent, configured by the server only.

    Args:
        settings: the server's settings; default `ServerSettings.from_env()`.
        model: chat model; when given, it wins over ``settings.model``.
        embeddings: embeddings; when None, ``settings.embedding_model`` picks them.
        tools: extra tools the model may call, as for `build_graph`.
        summary_model: model that writes eviction summaries (defaults to the chat model).
        memory: the memory backend; when None, `server_memory` (Postgres when
            ``settings.database_url`` is set, else SQLite under ``settings.data_dir``).

    Serve your own variant from a module of yours, e.g.
    ``graph = served_graph(model=ChatAnthropic(...))``, named in ``langgraph.json``.
    """
    from langgraph_memgpt.graph import assemble
    from langgraph_memgpt.serve.settings import client_context_schema

    settings = settings if settings is not None else ServerSettings.from_env()
    compiled = assemble(
        context_schema=client_context_schema(settings),
        model=model,
        embeddings=embeddings,
        tools=tools,
        summary_model=summary_model,
        memory=memory if memory is not None else server_memory(settings, embeddings),
        lock_dir=str(settings.data_dir),
    ).compile(name=GRAPH_ID)
    return checked_factory(compiled, settings)


class ClientWrites(CompiledStateGraph[Any, Any, Any, Any]):
    """The compiled graph as the server's clients reach it: they write the conversation only.

    A thread state update (``POST /threads/{id}/state``, a new thread's ``supersteps``) and
    a run's ``command.update`` may set ``messages`` and nothing else
    (`ownership.client_write_refusal`): ``agent_id``, which names the agent whose memory the
    thread is, and every other key are the graph's own. A refused write keeps nothing and
    answers 403 naming the keys.
    """

    @staticmethod
    def _check(supersteps: Sequence[Sequence[StateUpdate]]) -> None:
        for superstep in supersteps:
            for update in superstep:
                _refuse_client_write(update.values)

    def bulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        """As LangGraph's, after `ownership.client_write_refusal` on every update."""
        self._check(supersteps)
        return super().bulk_update_state(config, supersteps)

    async def abulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        """As LangGraph's, after `ownership.client_write_refusal` on every update."""
        self._check(supersteps)
        return await super().abulk_update_state(config, supersteps)

    def stream(self, input: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:  # noqa: A002
        """As LangGraph's; a run's ``Command`` may update the conversation only."""
        if isinstance(input, Command):
            _refuse_client_write(input.update)
        return super().stream(input, *args, **kwargs)

    def astream(self, input: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # noqa: A002
        """As LangGraph's; a run's ``Command`` may update the conversation only."""
        if isinstance(input, Command):
            _refuse_client_write(input.update)
        return super().astream(input, *args, **kwargs)


def _refuse_client_write(values: object) -> None:
    """`ownership.client_write_refusal`, as the server's 403 (with the same words)."""
    from langgraph_memgpt.ownership import client_write_refusal

    if isinstance(values, Command):  # a superstep given as a command: its update
        values = values.update
    why = client_write_refusal(values)
    if why is not None:
        from starlette.exceptions import HTTPException

        raise HTTPException(status_code=403, detail=why)


def client_facing(compiled: CompiledStateGraph[Any, Any, Any, Any]) -> ClientWrites:
    """``compiled`` as a `ClientWrites` (same nodes, channels and settings)."""
    attrs = {k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"}
    return ClientWrites(**attrs)


def checked_factory(
    compiled: CompiledStateGraph[Any, Any, Any, Any], settings: ServerSettings
) -> GraphFactory:
    """The factory ``langgraph.json`` names: ``compiled``, for runs whose context passes.

    Each run's client context is checked as sent (assistant context merged in), before
    LangGraph drops the keys the schema lacks: a field the server decides, an unknown one
    or a bad value is refused rather than ignored. Clients write the conversation only
    (`ClientWrites`).
    """
    served = client_facing(compiled)

    def graph(runtime: ServerRuntime[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
        execution = runtime.execution_runtime
        if execution is not None:
            check_client_context(execution.context, settings)
        return served

    return graph


@functools.cache
def _from_env() -> GraphFactory:
    return served_graph()


# The annotations are resolved at run time: LangGraph passes the ServerRuntime (the client's
# run context included) only to a factory whose parameter is annotated with it.
def graph(runtime: ServerRuntime[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The served graph (``langgraph_memgpt.serve.server:graph``).

    Configured from the server's environment when the server first asks for it (importing
    this module for `checkpointer` or `langgraph_config` builds nothing).
    """
    return _from_env()(runtime)
