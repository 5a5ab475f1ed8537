"""The Starlette app ``langgraph dev`` mounts: the memory page and its JSON endpoints.

The page (``/memory``, static files shipped in this package, no build step, no CDN) holds
no data; everything it shows comes from ``/memory/api/...``:

- ``GET agents``: the agents the caller may see.
- ``GET core?agent=A``; ``GET history?agent=A&label=L&page=``; ``PUT core?agent=A&label=L``
  with ``{"value": "...", "expected": "<the value the page loaded>"}`` (a person's edit,
  compare-and-set: 409 with the block as it is now when it changed; read-only blocks are
  refused).
- ``GET recall?agent=A&query=&roles=user,assistant&start_date=&end_date=&page=``.
- ``GET archival?agent=A&query=&tags=&start_date=&end_date=&page=``.
- ``GET threads?agent=A``; ``GET thread?agent=A&thread_id=T``.

Every list is paged with bounds and every bad parameter answers 400 with a message. The
page and its API answer their own origin only (`langgraph_memgpt.serve.web.guard`), whatever CORS
the server around them allows.

Memory is opened the way the served graph opens it (`ServerSettings` from the server's
environment: the SQLite data directory, or ``MEMGPT_DATABASE_URL``). Threads are read
through the server's own threads API, in process. When the server has custom auth
(``langgraph.json``'s ``auth``), the API routes run the server's authentication and a
caller sees only the agents `langgraph_memgpt.ownership.may_use` allows them, as for runs.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from langgraph_memgpt.checkpoints import existing_threads
from langgraph_memgpt.llm.factory import declared_by
from langgraph_memgpt.ownership import belongs_to, may_use
from langgraph_memgpt.serve.settings import ServerSettings
from langgraph_memgpt.serve.web import views
from langgraph_memgpt.serve.web.guard import SameOriginGuard
from langgraph_memgpt.serve.web.views import PageError
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.stores.backends import open_backend
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.capabilities import MessageListing, MissingCapability, require
from langgraph_memgpt.stores.types import BlockConflictError, BlockEditError, MemoryStoreError

logger = logging.getLogger(__name__)
STATIC = resources.files("langgraph_memgpt.serve.web") / "static"
THREADS_LISTED = 50
"""Newest threads of an agent the page lists."""

Handler = Callable[[Request], Awaitable[Response]]


def server_auth_middleware() -> list[Middleware]:
    """The server's own authentication, when ``langgraph.json`` configures custom auth.

    The server hands ``langgraph.json``'s ``auth`` to its process as ``LANGGRAPH_AUTH``
    (read here rather than through ``langgraph_api.config``, which cannot be imported
    outside a server). Without it there is none.
    """
    if not os.environ.get("LANGGRAPH_AUTH"):
        return []
    from langgraph_api.auth.middleware import auth_middleware

    return [auth_middleware]


def caller(request: Request) -> str | None:
    """The authenticated user's name (the server's auth middleware put them in scope)."""
    if "user" not in request.scope:
        return None
    identity = getattr(request.user, "identity", None)
    return str(identity) if identity else None


class Agents:
    """The served agents' memory, opened as the served graph opens it."""

    def __init__(self, settings: ServerSettings | None = None) -> None:
        self._settings = settings

    @functools.cached_property
    def settings(self) -> ServerSettings:
        """The server's settings (read at first use, as the graph reads them)."""
        return self._settings or ServerSettings.from_env()

    def ids(self) -> list[str]:
        """Every agent with memory on this server."""
        from langgraph_memgpt.serve.server import server_memory

        backend = server_memory(self.settings) or open_backend(self.settings.data_dir)
        return list(backend.agents())

    def open(self, agent_id: str) -> Memory:
        """The memory of an existing agent (never creates one)."""
        from langgraph_memgpt.serve.server import server_memory

        if agent_id not in self.ids():
            raise PageError(f"no agent {agent_id!r} on this server", 404)
        backend = server_memory(self.settings) or open_backend(
            self.settings.data_dir, embedding_model=self.settings.embedding_model
        )
        return backend.open(agent_id)

    def forget(self, memory: Memory, passage_id: int, user: str | None) -> dict[str, Any]:
        """`views.forget_passage` in the server's threads (`checkpoints.existing_threads`)."""
        settings = self.settings
        with existing_threads(settings.data_dir, settings.database_url) as threads:
            return views.forget_passage(memory, passage_id, user, threads)

    def compact_tools(self) -> bool:
        """Whether the served model binds the compact tool schemas (the embedded model).

        Decided from the model spec: resolving the model here could start llama.cpp.
        """
        return ModelTraits.of(declared_by(self.settings.model)).compact_schemas


def _answer(handler: Handler) -> Handler:
    """Turn the page's and the stores' refusals into JSON errors with their words."""

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except PageError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=exc.status)
        except BlockConflictError as exc:
            current = views.block_view(exc.current)
            return JSONResponse({"detail": str(exc), "current": current}, status_code=409)
        except BlockEditError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=400)
        except MissingCapability as exc:  # the engine cannot do it: say which, no trace
            return JSONResponse({"detail": str(exc)}, status_code=501)
        except MemoryStoreError as exc:
            logger.exception("memory page: store error")
            return JSONResponse({"detail": str(exc)}, status_code=500)

    return answer


MAX_INT = 2**63 - 1
"""Largest whole number a parameter may be (the stores' integers are 64-bit)."""


def _int(request: Request, name: str, default: int, low: int = 0, high: int = MAX_INT) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if len(raw) > 20:  # int() of a huge string is slow, and no bound is that long
        raise PageError(f"{name} must be a whole number from {low} to {high}, got {raw[:20]!r}…")
    try:
        value = int(raw)
    except ValueError:
        raise PageError(f"{name} must be a whole number, got {raw!r}") from None
    if not low <= value <= high:
        raise PageError(f"{name} must be a whole number from {low} to {high}, got {value}")
    return value


def _list(request: Request, name: str) -> list[str]:
    return [x.strip() for x in request.query_params.get(name, "").split(",") if x.strip()]


def _page(request: Request) -> dict[str, int]:
    """The page a list asks for (``page``, ``page_size``)."""
    return {
        "page": _int(request, "page", 0),
        "page_size": _int(request, "page_size", views.PAGE_SIZE),
    }


def _search(request: Request) -> dict[str, Any]:
    """A search's query, dates and page, as the views take them."""
    params = request.query_params
    dates = {"start_date": params.get("start_date"), "end_date": params.get("end_date")}
    return {"query": params.get("query", ""), **dates, **_page(request)}


def build_app(settings: ServerSettings | None = None) -> Starlette:
    """The page and its API (``settings``: default, the server's environment)."""
    agents = Agents(settings)
    authentication = server_auth_middleware()

    def user_of(request: Request) -> str | None:
        """Who asks: None when the server has no auth (anyone may see any agent)."""
        return caller(request) if authentication else None

    def allowed(request: Request) -> str:
        """The ``agent`` asked for, if the caller may see it (404 otherwise, as threads)."""
        agent_id = request.query_params.get("agent", "")
        if not agent_id:
            raise PageError("say which agent: ?agent=<agent_id> (see /memory/api/agents)")
        user = user_of(request)
        if user is not None and not may_use(user, agent_id):
            raise PageError(f"no agent {agent_id!r} on this server", 404)
        return agent_id

    async def memory_of(request: Request) -> Memory:
        return await asyncio.to_thread(agents.open, allowed(request))

    @_answer
    async def list_agents_(request: Request) -> Response:
        user = user_of(request)
        ids = await asyncio.to_thread(agents.ids)
        visible = [a for a in ids if user is None or may_use(user, a)]
        return JSONResponse({"agents": visible, "user": user, "actor": views.page_actor(user)})

    @_answer
    async def core(request: Request) -> Response:
        memory = await memory_of(request)
        if request.method == "PUT":
            try:
                body = await request.json()
            except json.JSONDecodeError:
                raise PageError('send {"value": "<the block\'s new text>"} as JSON') from None
            label = request.query_params.get("label", "")
            value = body.get("value") if isinstance(body, dict) else None
            expected = body.get("expected") if isinstance(body, dict) else None
            block = await asyncio.to_thread(
                views.set_block, memory, label, value, user_of(request), expected
            )
            return JSONResponse(block)
        return JSONResponse(await asyncio.to_thread(views.core_view, memory))

    @_answer
    async def history(request: Request) -> Response:
        memory = await memory_of(request)
        found = await asyncio.to_thread(
            views.history_view,
            memory,
            request.query_params.get("label", ""),
            **_page(request),
        )
        return JSONResponse(found)

    @_answer
    async def recall(request: Request) -> Response:
        memory = await memory_of(request)
        found = await asyncio.to_thread(
            views.recall_view, memory, roles=_list(request, "roles"), **_search(request)
        )
        return JSONResponse(found)

    @_answer
    async def archival(request: Request) -> Response:
        memory = await memory_of(request)
        if request.method == "DELETE":
            passage = _int(request, "id", -1, low=-1)
            gone = await asyncio.to_thread(agents.forget, memory, passage, user_of(request))
            return JSONResponse(gone)
        found = await asyncio.to_thread(
            views.archival_view, memory, tags=_list(request, "tags"), **_search(request)
        )
        return JSONResponse(found)

    async def thread_of(client: Any, memory: Memory, thread: dict[str, Any]) -> dict[str, Any]:
        runs = await client.runs.list(thread["thread_id"], limit=1)
        kwargs = (runs[0].get("kwargs") or {}) if runs else {}
        values = thread.get("values") or {}

        def view() -> dict[str, Any]:
            ctx = views.window_of(kwargs.get("context"))
            return views.thread_view(
                memory, thread, values, ctx, compact_tools=agents.compact_tools()
            )

        return await asyncio.to_thread(view)

    async def listed(client: Any, memory: Memory, thread: dict[str, Any]) -> dict[str, Any]:
        """One thread of the list; a thread that cannot be shown says why, in its place."""
        try:
            return await thread_of(client, memory, thread)
        except Exception as exc:  # noqa: BLE001 - one bad thread must not hide the others
            logger.warning("memory page: thread %s: %s", thread.get("thread_id"), exc)
            return {
                "thread_id": str(thread.get("thread_id")),
                "updated_at": str(thread.get("updated_at") or ""),
                "status": thread.get("status"),
                "error": f"{type(exc).__name__}: {exc}",
            }

    @_answer
    async def threads(request: Request) -> Response:
        memory = await memory_of(request)
        page = _int(request, "page", 0, high=views.MAX_PAGE)
        page_size = _int(request, "page_size", THREADS_LISTED, low=1, high=THREADS_LISTED)
        client = _server_client()
        found = await client.threads.search(
            values={"agent_id": memory.agent_id},
            limit=page_size,
            offset=page * page_size,
            sort_by="updated_at",
        )
        recorded = set(
            await asyncio.to_thread(
                require(memory.recall, MessageListing, "the memory page").threads
            )
        )
        views_ = [
            await listed(client, memory, dict(t))
            for t in found
            if belongs_to(memory, str(t.get("thread_id")), t.get("values") or {}, recorded)
        ]
        return JSONResponse(
            {"agent_id": memory.agent_id, "page": page, "page_size": page_size, "threads": views_}
        )

    @_answer
    async def thread(request: Request) -> Response:
        memory = await memory_of(request)
        thread_id = request.query_params.get("thread_id", "")
        client = _server_client()
        try:
            found = dict(await client.threads.get(thread_id))
        except Exception as exc:  # noqa: BLE001 - the SDK raises httpx errors: not found
            raise PageError(f"no thread {thread_id!r} of agent {memory.agent_id!r}", 404) from exc
        values = found.get("values") or {}
        if not await asyncio.to_thread(belongs_to, memory, thread_id, values):
            raise PageError(f"no thread {thread_id!r} of agent {memory.agent_id!r}", 404)
        return JSONResponse(await thread_of(client, memory, found))

    async def page(request: Request) -> Response:
        return FileResponse(str(STATIC / "index.html"), media_type="text/html")

    api = [
        Route("/agents", list_agents_),
        Route("/core", core, methods=["GET", "PUT"]),
        Route("/history", history),
        Route("/recall", recall),
        Route("/archival", archival, methods=["GET", "DELETE"]),
        Route("/threads", threads),
        Route("/thread", thread),
    ]
    # The guard is the app's own middleware: ``langgraph dev`` runs it outside its CORS.
    return Starlette(
        middleware=[Middleware(SameOriginGuard)],
        routes=[
            Mount("/memory/api", routes=api, middleware=authentication),
            Mount("/memory/static", app=StaticFiles(directory=str(STATIC)), name="static"),
            Route("/memory", page),
            Route("/memory/", page),
        ],
    )


@functools.cache
def _server_client() -> Any:
    """The server's own API, in process (its threads, as the checkpointer holds them).

    In process the server skips authentication, so every caller of this is behind
    `build_app`'s ``allowed`` check and filters threads by agent.
    """
    from langgraph_sdk import get_client

    return get_client()


app = build_app()
"""What ``langgraph.json``'s ``http.app`` names."""
