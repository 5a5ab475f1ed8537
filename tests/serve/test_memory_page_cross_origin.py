"""A hostile web page against the memory page's API, in a real Chromium on a real ``langgraph dev``.

``langgraph dev`` answers every origin with ``Access-Control-Allow-Origin: *``; the page's
routes must not. A page served from another origin (another port of 127.0.0.1: no private
network rules stand in the way) tries to read Ada's core memory and rewrite her ``human``
block with ``fetch``; both must fail and the block must be unchanged. Beside it: the page's
compare-and-set save seen in the browser, and a refused run that must not hide the thread list.
"""

from __future__ import annotations

import http.server
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.stores.sqlite import AgentMemory
from tests.serve.test_memory_page import chromium, say, user
from tests.serve.test_server import DevServer, free_port

pytestmark = pytest.mark.server

EVIL_PAGE = """<!doctype html><html><body><pre id="out">running</pre><script>
const api = "%(api)s/memory/api";
const results = {};
async function attempt(name, url, options) {
  try {
    const response = await fetch(url, options);
    results[name] = { status: response.status, body: await response.text() };
  } catch (err) { results[name] = { error: String(err) }; }
}
(async () => {
  await attempt("read", api + "/core?agent=ada", {});
  await attempt("write", api + "/core?agent=ada&label=human", {
    method: "PUT", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ value: "Name: Mallory" }) });
  await attempt("simple-write", api + "/core?agent=ada&label=human", {
    method: "PUT", mode: "no-cors", headers: { "Content-Type": "text/plain" },
    body: JSON.stringify({ value: "Name: Mallory" }) });
  await attempt("forget", api + "/archival?agent=ada&id=1", { method: "DELETE" });
  document.getElementById("out").textContent = JSON.stringify(results);
  document.body.dataset.done = "1";
})();
</script></body></html>"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Agent 'ada' behind ``langgraph dev`` (one run), with an archived passage."""
    from langgraph_sdk import get_sync_client

    root = tmp_path_factory.mktemp("cross-origin")
    data = root / "data"
    memory = AgentMemory.open(data, "ada", None)
    memory.core.ensure_defaults(persona="I am Ada's assistant.", human="Name: Ada")
    memory.archival.insert("Ada's door code is 4711.")
    memory.close()
    (root / "script.json").write_text(json.dumps([say("Hello Ada."), say("Hello again.")]))
    server = DevServer(
        root,
        data,
        env={"MEMGPT_MODEL": f"scripted:{root / 'script.json'}", "MEMGPT_EMBEDDING_MODEL": "none"},
    )
    for running in server.running():
        client = get_sync_client(url=running.url)
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "memgpt", input=user("hi"), context={"agent_id": "ada"})
        yield {"server": running, "client": client, "thread": thread, "data": data}


@pytest.fixture(scope="module")
def evil_origin(served: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Another origin (127.0.0.1, another port) serving the attacking page."""
    root = tmp_path_factory.mktemp("evil")
    (root / "evil.html").write_text(EVIL_PAGE % {"api": served["server"].url})

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), headless=True)
        yield launched
        launched.close()


def request(
    url: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def human_block(data: Path) -> str:
    memory = AgentMemory.open(data, "ada", None)
    try:
        return memory.core.get("human").value
    finally:
        memory.close()


def test_a_page_from_another_origin_cannot_read_or_write_memory_in_chromium(
    served: dict[str, Any], evil_origin: str, browser: Any
) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{evil_origin}/evil.html")
        page.wait_for_selector("body[data-done]", timeout=30_000)
        results = json.loads(page.locator("#out").inner_text())
    finally:
        context.close()
    # CORS-mode requests fail in the browser (no Access-Control-Allow-Origin): the page
    # never sees a body; the no-cors write reaches the server, which refuses it.
    assert set(results["read"]) == {"error"}, results["read"]
    assert set(results["write"]) == {"error"}, results["write"]
    assert set(results["forget"]) == {"error"}, results["forget"]
    assert "Name: Ada" not in json.dumps(results)
    assert human_block(served["data"]) == "Name: Ada"
    status, _, body = request(f"{served['server'].url}/memory/api/archival?agent=ada")
    assert status == 200 and b"4711" in body  # the passage is still there


def test_the_dev_servers_permissive_cors_does_not_reach_the_pages_routes(
    served: dict[str, Any],
) -> None:
    url = served["server"].url
    status, headers, _ = request(
        f"{url}/memory/api/core",
        "OPTIONS",
        {
            "Origin": "https://evil.example",
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Private-Network": "true",
        },
    )
    lowered = {k.lower(): v for k, v in headers.items()}
    assert status == 403
    assert not [k for k in lowered if k.startswith("access-control-")], lowered
    status, headers, body = request(
        f"{url}/memory/api/core?agent=ada", headers={"Origin": "https://evil.example"}
    )
    assert status == 403 and b"Name: Ada" not in body
    assert "access-control-allow-origin" not in {k.lower() for k in headers}
    status, _, body = request(f"{url}/memory/api/core?agent=ada", headers={"Host": "evil.example"})
    assert status == 403 and b"Name: Ada" not in body
    # The server's own API keeps its CORS (Studio needs it): only the page's routes changed.
    _, headers, _ = request(f"{url}/ok", headers={"Origin": "https://smith.langchain.com"})
    assert {k.lower() for k in headers} & {"access-control-allow-origin"}
    page_headers = request(f"{url}/memory")[1]
    assert "script-src 'self'" in page_headers["content-security-policy"]
    assert page_headers["x-content-type-options"] == "nosniff"


def test_a_save_after_the_agent_changed_the_block_is_refused_and_the_page_says_so(
    served: dict[str, Any], browser: Any
) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{served['server'].url}/memory?agent=ada")
        page.wait_for_selector("body[data-loaded=core]")
        memory = AgentMemory.open(served["data"], "ada", None)
        memory.core.append("human", "Cat: Pixel.", actor=f"agent:{served['thread']}")
        memory.close()
        card = page.locator("[data-testid=block][data-label=human]")
        card.locator("textarea").fill("Name: Ada Lovelace")
        card.get_by_role("button", name="Save").click()
        note = card.locator("[data-testid=save-note][data-conflict]")
        note.wait_for()
        assert "changed since the page loaded" in note.inner_text()
        assert "Cat: Pixel." in note.inner_text()
        assert human_block(served["data"]) == "Name: Ada\nCat: Pixel."
        # A second click saves nothing either: the stale text never lands over the agent's.
        with page.expect_response(
            lambda r: "/memory/api/core" in r.url and r.request.method == "PUT"
        ) as second:
            card.get_by_role("button", name="Save").click()
        assert second.value.status == 409
        note.wait_for()
        assert human_block(served["data"]) == "Name: Ada\nCat: Pixel."
        assert card.locator("textarea").input_value() == "Name: Ada Lovelace"
    finally:
        context.close()


def test_a_refused_run_on_one_thread_does_not_hide_the_other_threads(
    served: dict[str, Any],
) -> None:
    client = served["client"]
    bad = client.threads.create()["thread_id"]
    client.runs.wait(bad, "memgpt", input=user("hi"), context={"agent_id": "ada"})
    refused = client.runs.wait(
        bad,
        "memgpt",
        input=user("hi"),
        context={"agent_id": "ada", "context_window": -5},
        raise_error=False,
    )
    assert "ContextError" in json.dumps(refused)
    status, _, body = request(f"{served['server'].url}/memory/api/threads?agent=ada")
    assert status == 200, body
    shown = {t["thread_id"]: t for t in json.loads(body)["threads"]}
    assert served["thread"] in shown and "gauge" in shown[served["thread"]]
    assert bad in shown
    status, _, body = request(f"{served['server'].url}/memory/api/threads?agent=ada&page=-1")
    assert status == 400 and json.loads(body)["detail"]
