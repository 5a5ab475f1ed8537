"""Another web page against the whole served API, on a real ``langgraph dev`` without auth.

As ``make run`` serves it (the repository's ``langgraph.json``, no auth), ``langgraph dev``
would answer every origin with ``Access-Control-Allow-Origin: *``: a page the user visits
could list every conversation and start runs. The server's one origin rule
(`langgraph_memgpt.serve.web.guard`) refuses it on threads, runs and the store as on the memory
page; the SDK, curl and LangGraph Studio (the origin ``langgraph.json`` names) still work.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.serve.web.guard import NO_ORIGINS, Origins, allowed_origins, refusal
from langgraph_memgpt.stores.sqlite.db import DB_FILENAME
from tests.serve.test_server import DevServer

pytestmark = pytest.mark.server

EVIL = "https://evil.example"
STUDIO = "https://smith.langchain.com"
PASSPORT = "My passport number is X1234567."


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The repository's langgraph.json, no auth; one thread holding a passport number."""
    from langgraph_sdk import get_sync_client

    root = tmp_path_factory.mktemp("served-cors")
    replies = [{"content": f"Noted {i}."} for i in range(10)]
    (root / "script.json").write_text(json.dumps(replies))
    server = DevServer(
        root,
        root / "data",
        env={"MEMGPT_MODEL": f"scripted:{root / 'script.json'}", "MEMGPT_EMBEDDING_MODEL": "none"},
    )
    for running in server.running():
        client = get_sync_client(url=running.url)
        thread = client.threads.create()["thread_id"]
        client.runs.wait(
            thread,
            "memgpt",
            input={"messages": [{"role": "user", "content": PASSPORT}]},
            context={"agent_id": "ada"},
        )
        yield {"server": running, "client": client, "thread": thread, "data": root / "data"}


def call(
    url: str, method: str = "GET", body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    data = None if body is None else json.dumps(body).encode()
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    req = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            answer = (response.status, response.headers, response.read())
    except urllib.error.HTTPError as exc:
        answer = (exc.code, exc.headers, exc.read())
    status, found, raw = answer
    return status, {k.lower(): v for k, v in found.items()}, raw.decode(errors="replace")


def cors_headers(headers: dict[str, str]) -> list[str]:
    return [k for k in headers if k.startswith("access-control-")]


def recall_texts(data: Path) -> list[str]:
    """Every message recall holds, of every agent."""
    with sqlite3.connect(data / DB_FILENAME) as conn:
        return [str(row[0]) for row in conn.execute("SELECT text FROM recall")]


def test_a_page_of_another_site_can_neither_read_threads_nor_start_runs(
    served: dict[str, Any],
) -> None:
    url = served["server"].url
    evil = {"Origin": EVIL}
    # Reading every conversation.
    status, headers, body = call(f"{url}/threads/search", "POST", {"limit": 100}, evil)
    assert status == 403, body
    assert "X1234567" not in body and not cors_headers(headers)
    assert "allow_origins" in json.loads(body)["detail"]  # names the setting to change
    status, _, body = call(f"{url}/threads/{served['thread']}/state", headers=evil)
    assert status == 403 and "X1234567" not in body
    # Starting a run for an agent, with a system event, stateless or on a thread.
    event = {"events": [{"source": "deploy", "text": "EVIL-EVENT: the user's name is Mallory"}]}
    for path in ("/runs/wait", f"/threads/{served['thread']}/runs/wait"):
        status, headers, body = call(
            f"{url}{path}",
            "POST",
            {"assistant_id": "memgpt", "input": event, "context": {"agent_id": "ada"}},
            evil,
        )
        assert status == 403, (path, body)
        assert not cors_headers(headers)
    # The store, and a preflight for any of it (Chrome's private-network one included).
    status, _, _ = call(
        f"{url}/store/items", "PUT", {"namespace": ["x"], "key": "k", "value": {}}, evil
    )
    assert status == 403
    status, headers, _ = call(
        f"{url}/threads/search",
        "OPTIONS",
        headers={
            **evil,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Private-Network": "true",
        },
    )
    assert status == 403 and not cors_headers(headers)
    # A browser request marked cross-site without an Origin, and a DNS-rebinding Host.
    status, _, _ = call(
        f"{url}/threads/{served['thread']}", headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert status == 403
    status, _, body = call(
        f"{url}/threads/search", "POST", {"limit": 100}, {"Host": "evil.example:2024"}
    )
    assert status == 403 and "MEMGPT_ALLOWED_HOSTS" in body
    # Nothing ran: the event is in no memory, the thread still holds one turn.
    assert not any("EVIL-EVENT" in text for text in recall_texts(served["data"]))
    assert served["client"].threads.get_state(served["thread"])["values"]["turn"] == 1
    assert any("X1234567" in text for text in recall_texts(served["data"]))  # recall is read


def test_clients_without_an_origin_and_the_named_origin_still_work(
    served: dict[str, Any],
) -> None:
    url = served["server"].url
    found = served["client"].threads.search(limit=100)  # the SDK sends no Origin
    assert served["thread"] in {t["thread_id"] for t in found}
    status, headers, body = call(f"{url}/threads/search", "POST", {"limit": 100})
    assert status == 200 and not cors_headers(headers)
    # LangGraph Studio: the origin langgraph.json's http.cors names.
    status, headers, body = call(
        f"{url}/threads/search", "POST", {"limit": 100}, {"Origin": STUDIO}
    )
    assert status == 200 and served["thread"] in body
    assert headers["access-control-allow-origin"] == STUDIO
    status, headers, _ = call(
        f"{url}/threads/search",
        "OPTIONS",
        headers={"Origin": STUDIO, "Access-Control-Request-Method": "POST"},
    )
    assert status == 200 and headers["access-control-allow-origin"] == STUDIO
    # The server's own origin (a page it serves) is answered.
    status, _, _ = call(f"{url}/threads/search", "POST", {"limit": 1}, {"Origin": url})
    assert status == 200


def test_the_named_origins_are_the_servers_cors_setting() -> None:
    http = {"app": "x:app", "cors": {"allow_origins": ["https://app.example/"]}}
    named = allowed_origins({"LANGGRAPH_HTTP": json.dumps(http)})
    assert named.allow("https://app.example") and not named.allow(EVIL)
    assert allowed_origins({}) == NO_ORIGINS  # no setting: no other site
    assert allowed_origins({"LANGGRAPH_HTTP": json.dumps({"app": "x:app"})}) == NO_ORIGINS
    regex = {"cors": {"allow_origin_regex": r"https://.*\.corp\.example"}}
    by_regex = allowed_origins({"LANGGRAPH_HTTP": json.dumps(regex)})
    assert by_regex.allow("https://chat.corp.example") and not by_regex.allow(EVIL)
    assert allowed_origins({"CORS_ALLOW_ORIGINS": "https://a.example,https://b.example"}).allow(
        "https://b.example"
    )
    host = {"host": "127.0.0.1:2024"}
    assert refusal({**host, "origin": EVIL}, "POST", {"127.0.0.1"}, named) is not None
    assert refusal({**host, "origin": "https://app.example"}, "POST", {"127.0.0.1"}, named) is None
    assert refusal({**host, "origin": "null"}, "POST", {"127.0.0.1"}, named) is not None
    assert (
        refusal({**host, "origin": EVIL}, "POST", {"127.0.0.1"}, Origins(frozenset({"*"}))) is None
    )
