"""Same origin only: the served API and the memory page answer no other web page.

``langgraph dev`` wraps every route in a CORS middleware that, unless ``langgraph.json``
says otherwise, allows any origin (``Access-Control-Allow-Origin: *``, every method, private
network access), and without auth the API has no token: any site the user visits could read
every conversation (``POST /threads/search``), start runs for any agent (``/runs/wait``) and
rewrite memory from the user's browser. `SameOriginGuard` is the one rule for every route
(threads, runs, store, assistants, the memory page and its API). It sits outside the
server's CORS (``langgraph dev`` puts the mounted app's own middleware first) and:

- refuses a ``Host`` the server is not known by (a DNS-rebinding page names its own host):
  loopback names, plus ``MEMGPT_ALLOWED_HOSTS`` (comma-separated host names, ``*``: any);
- refuses a request a browser marks as sent by another page: an ``Origin`` that is neither
  this host nor a named origin, or ``Sec-Fetch-Site`` other than ``same-origin``/``none``
  without a named origin; a preflight (``OPTIONS``) is answered only for a named origin;
- named origins are the server's own CORS setting, the one ``langgraph dev`` reads:
  ``langgraph.json``'s ``http.cors.allow_origins`` / ``allow_origin_regex`` (or the
  ``CORS_CONFIG`` / ``CORS_ALLOW_ORIGINS`` environment variables); without one, none.
  ``langgraph_memgpt.serve.server.langgraph_config`` names LangGraph Studio's origin only;
- removes every ``Access-Control-*`` header from an answer to anything but a named origin,
  so no other origin may read it;
- on ``/memory``: sends ``Content-Security-Policy`` (scripts, styles and requests from this
  origin only, no framing), ``X-Content-Type-Options: nosniff`` and ``Cache-Control:
  no-store`` on the API.

Clients that are not browsers (curl, the SDK, tests) send neither ``Origin`` nor
``Sec-Fetch-Site``; their ``Host`` is checked all the same. The server's own in-process
SDK client (what the memory page reads threads with) is not a request from outside.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ALLOWED_HOSTS_ENV = "MEMGPT_ALLOWED_HOSTS"
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
PREFIX = "/memory"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_BROWSER_SAME_SITE = frozenset({"same-origin", "none"})
_HOW_TO_ALLOW = "name it in langgraph.json's http.cors.allow_origins to allow it"


def allowed_hosts(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """Host names the server answers to: loopback plus ``MEMGPT_ALLOWED_HOSTS``."""
    raw = (environ if environ is not None else os.environ).get(ALLOWED_HOSTS_ENV, "")
    extra = {h.strip().lower().strip("[]") for h in raw.split(",") if h.strip()}
    return LOOPBACK_HOSTS | extra


def names_for_bind(host: str) -> list[str]:
    """Host names a server bound on ``host`` is reached by, besides the loopback ones.

    A named interface is reached by its name; a wildcard bind (``0.0.0.0``, ``::``) by the
    machine's host name, its fully qualified name and their addresses. ``serve`` adds them
    to ``MEMGPT_ALLOWED_HOSTS`` so a server it binds beyond loopback answers its clients.
    """
    name = host.strip().lower().strip("[]")
    if name in LOOPBACK_HOSTS:
        return []
    if name not in ("", "0.0.0.0", "::"):  # noqa: S104 - naming the wildcard, not binding it
        return [name]
    found = {socket.gethostname(), socket.getfqdn()}
    try:
        found |= {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        pass  # a host name without an address: its name still counts
    return sorted({n.lower() for n in found if n} - LOOPBACK_HOSTS)


@dataclass(frozen=True)
class Origins:
    """The other sites' origins a browser may call the server from (its CORS setting)."""

    names: frozenset[str] = frozenset()
    pattern: str | None = None

    def allow(self, origin: str) -> bool:
        """Whether ``origin`` (``scheme://host[:port]``, as a browser sends it) is named."""
        if "*" in self.names or origin.rstrip("/").lower() in self.names:
            return True
        return self.pattern is not None and re.fullmatch(self.pattern, origin) is not None


NO_ORIGINS = Origins()


@functools.lru_cache(maxsize=8)
def _parse_origins(cors_config: str, http_config: str, allow_origins: str) -> Origins:
    cors: object = None
    for raw in (cors_config, http_config):
        if not raw:
            continue
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            continue  # the server itself refuses to start on it
        cors = parsed if raw is cors_config else (parsed or {}).get("cors")
        if isinstance(cors, dict):
            break
    if isinstance(cors, dict):
        names = cors.get("allow_origins")
        if names is None and allow_origins:
            names = allow_origins.split(",")
        regex = cors.get("allow_origin_regex")
        return Origins(
            frozenset(str(n).strip().rstrip("/").lower() for n in names or () if str(n).strip()),
            regex if isinstance(regex, str) and regex else None,
        )
    if allow_origins:
        return Origins(frozenset(n.strip().rstrip("/").lower() for n in allow_origins.split(",")))
    return NO_ORIGINS


def allowed_origins(environ: Mapping[str, str] | None = None) -> Origins:
    """The origins the server's CORS setting names (none when it names none).

    Read where ``langgraph dev`` reads it: ``CORS_CONFIG`` (JSON), else the ``cors`` of
    ``LANGGRAPH_HTTP`` (``langgraph.json``'s ``http``), else ``CORS_ALLOW_ORIGINS``
    (comma-separated) when set. LangGraph's own default, any origin, is not taken over.
    """
    env = environ if environ is not None else os.environ
    return _parse_origins(
        env.get("CORS_CONFIG", ""), env.get("LANGGRAPH_HTTP", ""), env.get("CORS_ALLOW_ORIGINS", "")
    )


def host_name(host: str) -> str:
    """``host[:port]`` (or ``[v6]:port``) without its port, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def _headers(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers") or ():
        found.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def foreign_origin(headers: Mapping[str, str]) -> str | None:
    """The ``Origin`` of a request sent by another site's page (None: same origin or none)."""
    origin = headers.get("origin")
    if origin is None:
        return None
    if (
        origin != "null"
        and urlsplit(origin).netloc.lower() == headers.get("host", "").strip().lower()
    ):
        return None
    return origin


def refusal(
    headers: Mapping[str, str],
    method: str,
    hosts: Iterable[str],
    origins: Origins = NO_ORIGINS,
) -> str | None:
    """Why a request must be refused.

    None: it comes from this server's own origin, a named one, or a client that is not a
    browser (no ``Origin``, no ``Sec-Fetch-Site``), by a host name the server is known by.
    """
    host = headers.get("host", "")
    hosts = frozenset(hosts)
    if "*" not in hosts and host_name(host) not in hosts:
        return (
            f"this server is not served as host {host!r}; "
            f"set {ALLOWED_HOSTS_ENV} to the host names it is reached by"
        )
    origin = foreign_origin(headers)
    if origin is not None:
        if origins.allow(origin):
            return None
        return f"this server answers its own origin only, not {origin!r} ({_HOW_TO_ALLOW})"
    site = headers.get("sec-fetch-site")
    if site is not None and site.lower() not in _BROWSER_SAME_SITE:
        return (
            f"this server answers its own origin only (a {site} request was refused; "
            f"a page of another site must send its Origin and be named: {_HOW_TO_ALLOW})"
        )
    if method == "OPTIONS":
        return "this server allows no cross-origin requests from pages it does not name"
    return None


def _refuse(why: str) -> list[Message]:
    body = json.dumps({"detail": why}).encode()
    return [
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"x-content-type-options", b"nosniff"),
                (b"vary", b"Origin"),
            ],
        },
        {"type": "http.response.body", "body": body},
    ]


def _in_process(scope: Scope) -> bool:
    """A call of the server's own SDK client, in process (``get_client()`` without a url).

    Its transport mounts the app under ``root_path="/noauth"``, which no network request
    carries (LangGraph's auth middleware trusts the same mark).
    """
    root_path = str(scope.get("root_path") or "")
    return root_path == "/noauth" or root_path.startswith("/noauth/")


class SameOriginGuard:
    """ASGI middleware: every route answers its own origin and named ones only (see the module)."""

    def __init__(self, app: ASGIApp, *, prefix: str = PREFIX) -> None:
        self.app = app
        self.prefix = prefix

    def _page(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse, or pass on with the answer's CORS headers kept for named origins only."""
        if scope["type"] != "http" or _in_process(scope):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        origins = allowed_origins()
        why = refusal(headers, str(scope.get("method", "GET")).upper(), allowed_hosts(), origins)
        if why is not None:
            for message in _refuse(why):
                await send(message)
            return
        path = str(scope.get("path", ""))
        page = self._page(path)
        is_api = path.startswith(self.prefix + "/api")
        named = foreign_origin(headers) is not None  # passed the rule: a named origin

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [
                    (k, v)
                    for k, v in message.get("headers") or ()
                    if named or not k.lower().startswith(b"access-control-")
                ]
                if page:
                    kept += [
                        (b"x-content-type-options", b"nosniff"),
                        (b"content-security-policy", CSP.encode()),
                        (b"x-frame-options", b"DENY"),
                        (b"referrer-policy", b"no-referrer"),
                    ]
                if is_api:
                    kept.append((b"cache-control", b"no-store"))
                message = {**message, "headers": kept}
            await send(message)

        await self.app(scope, receive, guarded_send)
