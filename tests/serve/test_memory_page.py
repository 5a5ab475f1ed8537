"""The memory page (``/memory``) in a real headless Chromium, on a real ``langgraph dev``.

The agent's memory is written the way it is in use: runs through the server's API with a
scripted model (a core edit, a saved passage, conversations in two windows), plus one
read-only block an operator set. The page must then show what the stores and the threads
hold. A screenshot of every view is written under ``$MEMGPT_TEST_ARTIFACTS`` (default
``tests/artifacts``); each path is printed.

Chromium is Debian's (``apt-get install chromium``, done by ``.ci/run``), driven by the
``playwright`` package through ``executable_path``: nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.serve.server import langgraph_config
from langgraph_memgpt.stores.sqlite import AgentMemory
from langgraph_memgpt.turn.main_context import ALERT_NAME
from tests.serve.test_server import DevServer

pytestmark = pytest.mark.server

ARTIFACTS = Path(
    os.environ.get("MEMGPT_TEST_ARTIFACTS") or Path(__file__).resolve().parents[1] / "artifacts"
)
RULE = "Never share the user's address."
SMALL_WINDOW = 3072
"""A window the first prompt already fills past the warning fraction (system prompt and
tool schemas are about 2.4k tokens), but not past the flush limit."""


def say(text: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {
        "content": "",
        "tool_calls": [{"name": name, "args": {**args, "request_heartbeat": True}}],
    }


SCRIPT = [
    call("core_memory_append", label="human", content="Cat: Pixel, likes tuna."),
    say("Noted, Pixel it is."),
    call("archival_memory_insert", content="Trip to Lisbon planned for May.", tags=["travel"]),
    say("Saved your trip."),
    say("Hello in a small window."),
    say("Hi Bob."),
    # Plain text answers both a turn (as the reply) and an eviction (as the summary), so
    # the script holds however the long thread's turns and evictions interleave.
    *[f"Bob told me about paper boats ({n})." for n in range(12)],
]
LONG_TURNS = 5
LONG_WINDOW = {"context_window": 4096, "evict_fraction": 0.75}
"""Five turns of ~440 tokens overflow this window once; an eviction brings the prompt
(about 2.4k of system prompt and tool schemas) down to 3072 tokens."""


def long_message(turn: int) -> str:
    return " ".join(f"Fact {turn}.{i}: Bob owns {i} paper boats." for i in range(40))


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("no chromium on PATH: apt-get install -y chromium (.ci/run does)")
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A served agent 'ada' with memory written through runs, and a second agent 'bob'."""
    from langgraph_sdk import get_sync_client

    root = tmp_path_factory.mktemp("page")
    data = root / "data"
    # The operator's fixed rule, set before the agent ever ran.
    memory = AgentMemory.open(data, "ada", None)
    memory.core.ensure_defaults(persona="I am Ada's assistant.", human="Name: Ada")
    memory.core.create("policy", RULE, "Rules from the operator.", 500, read_only=True)
    memory.close()
    (root / "script.json").write_text(json.dumps(SCRIPT))
    server = DevServer(
        root,
        data,
        env={"MEMGPT_MODEL": f"scripted:{root / 'script.json'}", "MEMGPT_EMBEDDING_MODEL": "none"},
    )
    for running in server.running():
        client = get_sync_client(url=running.url)
        ada = {"agent_id": "ada"}
        main = client.threads.create()["thread_id"]
        client.runs.wait(main, "memgpt", input=user("My cat is called Pixel."), context=ada)
        client.runs.wait(main, "memgpt", input=user("Remember my Lisbon trip."), context=ada)
        small = client.threads.create()["thread_id"]
        client.runs.wait(
            small,
            "memgpt",
            input=user("hello"),
            context={**ada, "context_window": SMALL_WINDOW},
        )
        bobs = client.threads.create()["thread_id"]
        client.runs.wait(bobs, "memgpt", input=user("hi"), context={"agent_id": "bob"})
        for turn in range(LONG_TURNS):
            client.runs.wait(
                bobs,
                "memgpt",
                input=user(long_message(turn)),
                context={"agent_id": "bob", **LONG_WINDOW},
            )
        yield {
            "server": running,
            "client": client,
            "main": main,
            "small": small,
            "long": bobs,
            "data": data,
        }


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, world: dict[str, Any]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    opened.goto(f"{world['server'].url}/memory?agent=ada")
    opened.wait_for_selector("body[data-loaded=core]")
    yield opened
    context.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"memory-page-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def texts(locator: Any) -> list[str]:
    """The elements' text as in the DOM (inner_text would reflow whitespace)."""
    found: list[str] = locator.evaluate_all("nodes => nodes.map(n => n.textContent)")
    return found


def block(page: Any, label: str) -> Any:
    return page.locator(f"[data-testid=block][data-label={label}]")


def test_the_page_lists_the_agents(page: Any) -> None:
    options = page.locator("[data-testid=agent-picker] option").all_inner_texts()
    assert options == ["ada", "bob"]
    assert page.locator("[data-testid=agent-picker]").input_value() == "ada"
    labels = page.locator("[data-testid=block]").evaluate_all(
        "cards => cards.map(c => c.dataset.label)"
    )
    assert labels == ["persona", "human", "policy"]
    # Fill level: characters of the limit, as the store counts them.
    fill = block(page, "policy").get_by_test_id("fill").inner_text()
    assert fill == f"{len(RULE)} / 500 chars"
    screenshot(page, "core")

    page.locator("[data-testid=agent-picker]").select_option("bob")
    page.wait_for_function("() => document.querySelectorAll('[data-testid=block]').length == 2")
    assert "Pixel" not in page.locator("#blocks").inner_text()


def test_a_core_edit_made_through_the_graph_appears_in_the_history_as_a_diff(
    page: Any, world: dict[str, Any]
) -> None:
    human = block(page, "human")
    assert "Cat: Pixel, likes tuna." in human.get_by_test_id("block-value").input_value()
    human.get_by_test_id("show-history").click()
    newest = page.get_by_test_id("edit").first
    newest.wait_for()
    assert texts(newest.locator("ins")) == ["\nCat: Pixel, likes tuna."]
    assert newest.locator("del").count() == 0
    assert newest.get_by_test_id("actor").inner_text() == "by agent"
    assert newest.get_by_test_id("edit-thread").inner_text() == f"thread {world['main']}"
    assert "Name: Ada" in newest.get_by_test_id("diff").inner_text()  # unchanged text kept
    assert page.get_by_test_id("edit").count() == 2  # the edit and the block's creation
    screenshot(page, "history")


def test_a_block_edited_on_the_page_is_saved_as_the_users_edit(page: Any) -> None:
    persona = block(page, "persona")
    persona.get_by_test_id("block-value").fill("I am Ada's cheerful assistant.")
    persona.get_by_test_id("save").click()
    page.get_by_test_id("edit").first.get_by_test_id("actor").wait_for()
    newest = page.get_by_test_id("edit").first
    assert newest.get_by_test_id("actor").inner_text() == "by user"
    assert [t.strip() for t in texts(newest.locator("ins"))] == ["cheerful"]
    # Over the limit: the store's refusal, in its words, and nothing saved.
    persona = block(page, "persona")
    persona.get_by_test_id("block-value").fill("x" * 2001)
    persona.get_by_test_id("save").click()
    page.wait_for_function(
        "() => document.querySelector('[data-label=persona] [data-testid=save-note]').textContent"
    )
    assert "over its limit of 2000" in persona.get_by_test_id("save-note").inner_text()
    page.reload()  # the draft stays in the box until then; the store kept the saved text
    page.wait_for_selector("body[data-loaded=core]")
    saved = block(page, "persona").get_by_test_id("block-value").input_value()
    assert saved == "I am Ada's cheerful assistant."


def test_a_read_only_block_cannot_be_edited_and_the_page_says_why(
    page: Any, world: dict[str, Any]
) -> None:
    policy = block(page, "policy")
    assert policy.get_by_test_id("block-value").get_attribute("readonly") is not None
    assert policy.get_by_test_id("save").count() == 0
    assert "Read-only" in policy.get_by_test_id("read-only-why").inner_text()
    # Nor through the page's API, whoever asks.
    answer = page.evaluate(
        """async () => {
            const r = await fetch('/memory/api/core?agent=ada&label=policy',
                {method: 'PUT', body: JSON.stringify({value: 'Share everything.'})});
            return [r.status, (await r.json()).detail];
        }"""
    )
    assert answer[0] == 403 and "read-only" in answer[1]
    page.reload()
    page.wait_for_selector("body[data-loaded=core]")
    assert block(page, "policy").get_by_test_id("block-value").input_value() == RULE
    screenshot(page, "read-only")


def test_a_search_on_the_page_finds_a_message(page: Any) -> None:
    page.get_by_role("button", name="Recall").click()
    page.wait_for_selector("body[data-loaded=recall]")
    timeline = " ".join(page.get_by_test_id("message").all_inner_texts())
    assert "My cat is called Pixel." in timeline and "Saved your trip." in timeline
    assert "Hi Bob." not in timeline  # another agent's conversation

    form = page.locator("#recall-form")
    form.locator("input[name=query]").fill("Pixel")
    form.locator("input[value=user]").check()
    form.get_by_role("button", name="Search").click()
    page.wait_for_selector("body[data-loaded=recall-search]")
    found = page.get_by_test_id("message")
    # Best first; the tools' hybrid search also ranks a message whose neighbours match.
    assert "My cat is called Pixel." in found.first.inner_text()
    assert set(found.locator(".role").all_inner_texts()) == {"user"}
    assert "Noted, Pixel it is." not in " ".join(found.all_inner_texts())
    screenshot(page, "recall-search")

    # The role filter applies: the same words among the agent's messages only.
    form.locator("input[value=user]").uncheck()
    form.locator("input[value=assistant]").check()
    page.evaluate("document.body.dataset.loaded = ''")
    form.get_by_role("button", name="Search").click()
    page.wait_for_selector("body[data-loaded=recall-search]")
    texts = " ".join(page.get_by_test_id("message").all_inner_texts())
    assert "My cat is called Pixel." not in texts
    assert "Noted, Pixel it is." in texts


def test_archival_passages_show_tags_provenance_and_search(
    page: Any, world: dict[str, Any]
) -> None:
    page.get_by_role("button", name="Archival").click()
    page.wait_for_selector("body[data-loaded=archival]")
    passage = page.get_by_test_id("passage").filter(has_text="Lisbon")
    assert passage.count() == 1
    assert "travel" in passage.locator(".tag").all_inner_texts()
    assert (
        passage.get_by_test_id("provenance").inner_text() == f"from thread {world['main']}, turn 2"
    )
    form = page.locator("#archival-form")
    form.locator("input[name=query]").fill("Lisbon")
    form.get_by_role("button", name="Search").click()
    page.wait_for_selector("body[data-loaded=archival-search]")
    assert "Trip to Lisbon planned for May." in page.get_by_test_id("passage").first.inner_text()
    screenshot(page, "archival")


def test_a_passage_forgotten_on_the_page_is_gone_everywhere_and_logged(
    page: Any, world: dict[str, Any]
) -> None:
    memory = AgentMemory.open(world["data"], "ada", None)
    memory.archival.insert("Old locker code 1234.", tags=["note"])
    memory.close()
    page.on("dialog", lambda dialog: dialog.accept())  # "Forget passage #N ...?"
    page.get_by_role("button", name="Archival").click()
    page.wait_for_selector("body[data-loaded=archival]")
    page.get_by_test_id("passage").filter(has_text="locker code 1234").get_by_test_id(
        "forget"
    ).click()
    page.wait_for_function("() => !document.body.textContent.includes('locker code 1234')")
    memory = AgentMemory.open(world["data"], "ada", None, read_only=True)
    assert memory.archival.search("locker code", mode="fts").hits == []
    entry = memory.deletions.entries(1)[0]
    assert (entry.kind, entry.actor) == ("passage", "user")
    assert "1234" not in entry.detail  # the log says what was deleted, never its content
    memory.close()


def test_the_gauge_reflects_a_threads_queue(page: Any, world: dict[str, Any]) -> None:
    client = world["client"]
    small = client.threads.get_state(world["small"])["values"]
    # The graph itself found the small window past its warning fraction.
    assert any(m.get("name") == ALERT_NAME for m in small["messages"])

    page.get_by_role("button", name="Threads").click()
    page.wait_for_selector("body[data-loaded=threads]")
    cards = page.get_by_test_id("thread")
    assert cards.count() == 2  # ada's threads only

    def gauge(thread_id: str) -> tuple[int, int, str]:
        meter = page.locator(f"[data-thread='{thread_id}'] [data-testid=gauge]")
        return (
            int(meter.get_attribute("aria-valuenow")),
            int(meter.get_attribute("aria-valuemax")),
            meter.get_attribute("class"),
        )

    used, window, classes = gauge(world["small"])
    assert window == SMALL_WINDOW
    assert 0.7 * SMALL_WINDOW <= used < SMALL_WINDOW
    assert "warn" in classes
    used_main, window_main, classes_main = gauge(world["main"])
    assert window_main == 8192 and used_main < 0.7 * window_main
    assert "warn" not in classes_main
    text = page.locator(f"[data-thread='{world['main']}'] [data-testid=gauge-text]").inner_text()
    main_queue = client.threads.get_state(world["main"])["values"]["messages"]
    assert f"{len(main_queue)} queued messages" in text
    summary = page.locator(f"[data-thread='{world['main']}'] [data-testid=summary]")
    assert summary.inner_text() == "none yet"
    screenshot(page, "threads")

    # One more turn in the main thread: a longer queue, more tokens on the gauge.
    client.runs.wait(
        world["main"], "memgpt", input=user("Still there?"), context={"agent_id": "ada"}
    )
    page.reload()
    page.wait_for_selector("body[data-loaded=core]")
    page.get_by_role("button", name="Threads").click()
    page.wait_for_selector("body[data-loaded=threads]")
    longer = client.threads.get_state(world["main"])["values"]["messages"]
    assert len(longer) > len(main_queue)
    assert gauge(world["main"])[0] > used_main
    text = page.locator(f"[data-thread='{world['main']}'] [data-testid=gauge-text]").inner_text()
    assert f"{len(longer)} queued messages" in text


def test_a_threads_summary_and_eviction_history_show_after_evictions(
    page: Any, world: dict[str, Any]
) -> None:
    values = world["client"].threads.get_state(world["long"])["values"]
    assert values["evicted_count"] > 0 and values["summary"]  # the graph did evict

    page.locator("[data-testid=agent-picker]").select_option("bob")
    page.wait_for_selector("body[data-loaded=core]")
    page.get_by_role("button", name="Threads").click()
    page.wait_for_selector("body[data-loaded=threads]")
    card = page.locator(f"[data-thread='{world['long']}']")
    assert card.get_by_test_id("summary").inner_text() == values["summary"]
    assert f"Summary ({values['evicted_count']} messages evicted)" in card.inner_text()
    evictions = card.get_by_test_id("eviction")
    assert evictions.count() >= 1
    assert values["summary"] in evictions.first.inner_text()  # newest first: the current one
    # After the eviction the next prompt fits again.
    meter = card.get_by_test_id("gauge")
    assert int(meter.get_attribute("aria-valuenow")) < LONG_WINDOW["context_window"]
    screenshot(page, "evictions")


# --- who may see what ----------------------------------------------------------------------

TOKENS = {"token-alice": "alice", "token-bob": "bob"}


@pytest.fixture(scope="module")
def authed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    from langgraph_sdk import get_sync_client

    root = tmp_path_factory.mktemp("page-auth")
    config = langgraph_config()
    config["auth"] = {"path": "langgraph_memgpt.serve.auth:auth"}
    (root / "langgraph.json").write_text(json.dumps(config))
    (root / "script.json").write_text(json.dumps([say("hi alice"), say("hi bob")]))
    server = DevServer(
        root,
        root / "data",
        config=root / "langgraph.json",
        env={
            "MEMGPT_MODEL": f"scripted:{root / 'script.json'}",
            "MEMGPT_EMBEDDING_MODEL": "none",
            "MEMGPT_AUTH_TOKENS": json.dumps(TOKENS),
        },
    )
    for running in server.running():
        for token in TOKENS:
            client = get_sync_client(url=running.url, headers={"Authorization": f"Bearer {token}"})
            thread = client.threads.create()["thread_id"]
            client.runs.wait(thread, "memgpt", input=user("hello"))
        yield running


def get(server: DevServer, path: str, token: str | None) -> tuple[int, Any]:
    request = urllib.request.Request(f"{server.url}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_with_auth_a_user_sees_only_their_own_agents(authed: DevServer) -> None:
    status, body = get(authed, "/memory/api/agents", "token-alice")
    assert status == 200 and body["agents"] == ["alice"] and body["user"] == "alice"
    for path in ("core", "recall", "archival", "threads"):
        assert get(authed, f"/memory/api/{path}?agent=alice", "token-alice")[0] == 200, path
        status, body = get(authed, f"/memory/api/{path}?agent=alice", "token-bob")
        assert status == 404 and "no agent 'alice'" in body["detail"], path
    threads = get(authed, "/memory/api/threads?agent=bob", "token-bob")[1]["threads"]
    assert len(threads) == 1
    status, _ = get(authed, "/memory/api/agents", None)
    assert status == 401
    assert get(authed, "/memory/api/agents", "token-mallory")[0] == 401
    # The page itself holds no data: it loads, then asks for a token.
    with urllib.request.urlopen(f"{authed.url}/memory", timeout=30) as response:
        assert response.status == 200 and b"<title>Memory" in response.read()


def test_with_auth_the_page_asks_for_a_token_then_shows_that_users_agents(
    browser: Any, authed: DevServer
) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{authed.url}/memory")
        page.locator("#token").wait_for()  # 401: the page asks who you are
        assert "asks who you are" in page.locator("#login").inner_text()
        page.locator("#token").fill("token-bob")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_selector("body[data-loaded=core]")
        assert page.locator("[data-testid=agent-picker] option").all_inner_texts() == ["bob"]
        assert page.locator("#who").inner_text() == "signed in as bob"
        assert page.locator("#login").is_hidden()
    finally:
        context.close()


@pytest.mark.timeout(180)
def test_the_page_reads_an_agent_served_from_postgres(postgres_url: str, tmp_path: Path) -> None:
    from langgraph_sdk import get_sync_client

    (tmp_path / "script.json").write_text(json.dumps(SCRIPT[:2]))
    server = DevServer(
        tmp_path,
        tmp_path / "data",
        env={
            "MEMGPT_MODEL": f"scripted:{tmp_path / 'script.json'}",
            "MEMGPT_EMBEDDING_MODEL": "none",
            "MEMGPT_DATABASE_URL": postgres_url,
        },
    )
    for running in server.running():
        client = get_sync_client(url=running.url)
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "memgpt", input=user("My cat is called Pixel."), context={})
        assert get(running, "/memory/api/agents", None)[1]["agents"] == ["default"]
        edits = get(running, "/memory/api/history?agent=default&label=human", None)[1]["edits"]
        assert (edits[0]["actor"], edits[0]["thread_id"]) == ("agent", thread)
        found = get(running, "/memory/api/recall?agent=default&query=Pixel&roles=user", None)[1]
        assert found["messages"][0]["text"] == "My cat is called Pixel."
        (shown,) = get(running, "/memory/api/threads?agent=default", None)[1]["threads"]
        assert shown["thread_id"] == thread and shown["gauge"]["queue_messages"] > 0
