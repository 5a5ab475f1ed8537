"""Same-origin only: the memory page and its API answer no other web page.

``langgraph dev`` wraps every route, the page's included, in a CORS middleware that allows
any origin (``Access-Control-Allow-Origin: *``, every method, private network access), and
the page's API has no token when the server has no auth. Any site the user visits could then
read an agent's memory and rewrite it from the user's browser. `SameOriginGuard` sits
outside that middleware (``langgraph dev`` puts the mounted app's own middleware first) and,
for ``/memory`` paths only:

- refuses a ``Host`` the server is not known by (a DNS-rebinding page names its own host):
  loopback names, plus ``MEMGPT_ALLOWED_HOSTS`` (comma-separated host names, ``*``: any);
- refuses a request a browser marks as sent by another page: an ``Origin`` that is not this
  host, or ``Sec-Fetch-Site`` other than ``same-origin``/``none``; preflights (``OPTIONS``)
  are refused outright, since the page itself never sends one;
- removes every ``Access-Control-*`` header from the answer, so no other origin may read it;
- sends ``Content-Security-Policy`` (scripts, styles and requests from this origin only, no
  framing), ``X-Content-Type-Options: nosniff`` and ``Cache-Control: no-store`` on the API.

Clients that are not browsers (curl, the SDK, tests) send neither ``Origin`` nor
``Sec-Fetch-Site``; their ``Host`` is checked all the same.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
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


def allowed_hosts(environ: dict[str, str] | None = None) -> frozenset[str]:
    """Host names the page answers to: loopback plus ``MEMGPT_ALLOWED_HOSTS``."""
    raw = (environ if environ is not None else os.environ).get(ALLOWED_HOSTS_ENV, "")
    extra = {h.strip().lower().strip("[]") for h in raw.split(",") if h.strip()}
    return LOOPBACK_HOSTS | extra


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


def refusal(headers: dict[str, str], method: str, hosts: Iterable[str]) -> str | None:
    """Why a request to the page must be refused (None: it comes from the page's own origin)."""
    host = headers.get("host", "")
    hosts = frozenset(hosts)
    if "*" not in hosts and host_name(host) not in hosts:
        return (
            f"the memory page is not served as host {host!r}; "
            f"set {ALLOWED_HOSTS_ENV} to the host names it is reached by"
        )
    origin = headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        if origin == "null" or parts.netloc.lower() != host.strip().lower():
            return f"the memory page answers its own origin only, not {origin!r}"
    site = headers.get("sec-fetch-site")
    if site is not None and site.lower() not in _BROWSER_SAME_SITE:
        return f"the memory page answers its own origin only (a {site} request was refused)"
    if method == "OPTIONS":
        return "the memory page allows no cross-origin requests"
    return None


class SameOriginGuard:
    """ASGI middleware: ``/memory`` answers same-origin requests only (see the module)."""

    def __init__(self, app: ASGIApp, *, prefix: str = PREFIX) -> None:
        self.app = app
        self.prefix = prefix

    def _ours(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse, or pass on with the answer's CORS headers removed and the page's added."""
        if scope["type"] != "http" or not self._ours(str(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        why = refusal(headers, str(scope.get("method", "GET")).upper(), allowed_hosts())
        if why is not None:
            body = json.dumps({"detail": why}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"x-content-type-options", b"nosniff"),
                        (b"vary", b"Origin"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        is_api = str(scope.get("path", "")).startswith(self.prefix + "/api")

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [
                    (k, v)
                    for k, v in message.get("headers") or ()
                    if not k.lower().startswith(b"access-control-")
                ]
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
