"""The memory page's API under attack, without a server: the app itself, on real stores.

`test_memory_page_cross_origin.py` drives the same attacks through ``langgraph dev`` (whose
CORS allows every origin) and a real Chromium. Here: the same-origin guard, compare-and-set
writes, paged history, and that every bad parameter is a 400 with words, on each backend
where the store is involved.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from langgraph_memgpt.serve.settings import ServerSettings
from langgraph_memgpt.serve.web import build_app, views
from langgraph_memgpt.serve.web.guard import refusal
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.sqlite import AgentMemory
from langgraph_memgpt.stores.types import BlockConflictError

HOME = "http://127.0.0.1:2024"
EVIL = "https://evil.example"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The page's app over an SQLite data directory holding agent 'ada'."""
    data = tmp_path / "data"
    memory = AgentMemory.open(data, "ada", None)
    memory.core.ensure_defaults(persona="I am Ada's assistant.", human="Name: Ada")
    memory.close()
    app = build_app(ServerSettings(data_dir=str(data), embedding_model="none"))
    with TestClient(app, base_url=HOME) as test_client:
        yield test_client


def human(client: TestClient) -> str:
    blocks = client.get("/memory/api/core?agent=ada").json()["blocks"]
    return str(next(b["value"] for b in blocks if b["label"] == "human"))


def test_a_page_from_another_origin_can_neither_read_nor_write_memory(client: TestClient) -> None:
    read = client.get("/memory/api/core?agent=ada", headers={"Origin": EVIL})
    assert read.status_code == 403 and "Name: Ada" not in read.text
    assert "access-control-allow-origin" not in read.headers
    write = client.put(
        "/memory/api/core?agent=ada&label=human",
        json={"value": "Name: Mallory"},
        headers={"Origin": EVIL},
    )
    assert write.status_code == 403
    gone = client.delete("/memory/api/archival?agent=ada&id=1", headers={"Origin": EVIL})
    assert gone.status_code == 403
    preflight = client.options(
        "/memory/api/core",
        headers={"Origin": EVIL, "Access-Control-Request-Method": "PUT"},
    )
    assert preflight.status_code == 403
    assert not [h for h in preflight.headers if h.lower().startswith("access-control-")]
    assert human(client) == "Name: Ada"


def test_a_browser_request_marked_cross_site_is_refused_even_without_an_origin(
    client: TestClient,
) -> None:
    for site in ("cross-site", "same-site"):
        answer = client.get("/memory/api/core?agent=ada", headers={"Sec-Fetch-Site": site})
        assert answer.status_code == 403, site
    assert client.get("/memory", headers={"Sec-Fetch-Site": "none"}).status_code == 200


def test_a_foreign_host_header_is_refused(client: TestClient) -> None:
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: its Host gives it away."""
    answer = client.get("/memory/api/core?agent=ada", headers={"Host": "evil.example"})
    assert answer.status_code == 403 and "MEMGPT_ALLOWED_HOSTS" in answer.json()["detail"]
    assert client.get("/memory", headers={"Host": "evil.example:2024"}).status_code == 403


def test_the_pages_own_origin_and_hosts_named_by_the_operator_are_answered(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = client.get("/memory/api/core?agent=ada", headers={"Origin": HOME})
    assert answer.status_code == 200 and "Name: Ada" in answer.text
    assert "access-control-allow-origin" not in answer.headers
    assert client.get("/memory/api/agents", headers={"Host": "localhost:2024"}).status_code == 200
    headers = {"host": "memory.lan:8080", "origin": "http://memory.lan:8080"}
    assert refusal(headers, "GET", {"127.0.0.1"}) is not None
    monkeypatch.setenv("MEMGPT_ALLOWED_HOSTS", "memory.lan")
    assert client.get("/memory/api/agents", headers=headers).status_code == 200


def test_the_page_carries_a_content_security_policy_and_nosniff(client: TestClient) -> None:
    page = client.get("/memory")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    api = client.get("/memory/api/agents")
    assert api.headers["x-content-type-options"] == "nosniff"
    assert api.headers["cache-control"] == "no-store"
    assert client.get("/memory/static/memory.js").headers["x-content-type-options"] == "nosniff"


def test_a_save_over_a_block_the_agent_changed_since_the_page_loaded_answers_409(
    client: TestClient, tmp_path: Path
) -> None:
    loaded = human(client)
    memory = AgentMemory.open(tmp_path / "data", "ada", None)
    memory.core.append("human", "Cat: Pixel.", actor="agent:t1")
    memory.close()
    answer = client.put(
        "/memory/api/core?agent=ada&label=human",
        json={"value": "Name: Ada Lovelace", "expected": loaded},
    )
    assert answer.status_code == 409
    assert answer.json()["current"]["value"] == "Name: Ada\nCat: Pixel."
    assert "changed since it was read" in answer.json()["detail"]
    assert human(client) == "Name: Ada\nCat: Pixel."
    fresh = client.put(
        "/memory/api/core?agent=ada&label=human",
        json={"value": "Name: Ada Lovelace\nCat: Pixel.", "expected": human(client)},
    )
    assert fresh.status_code == 200 and human(client) == "Name: Ada Lovelace\nCat: Pixel."


def test_a_save_without_the_text_it_replaces_is_refused_not_a_blind_overwrite(
    client: TestClient, tmp_path: Path
) -> None:
    """Any client, not only the page: a PUT without ``expected`` would erase the agent's edit."""
    memory = AgentMemory.open(tmp_path / "data", "ada", None)
    memory.core.append("human", "Cat: Pixel.", actor="agent:t1")
    memory.close()
    for body in ({"value": "Name: Mallory"}, {"value": "Name: Mallory", "expected": None}):
        answer = client.put("/memory/api/core?agent=ada&label=human", json=body)
        assert answer.status_code == 400, answer.text
        assert '"expected"' in answer.json()["detail"]
    assert human(client) == "Name: Ada\nCat: Pixel."


@pytest.mark.parametrize(
    "path",
    [
        "/memory/api/recall?agent=ada&page=99999999999999999999",
        "/memory/api/recall?agent=ada&page=" + "9" * 5000,
        "/memory/api/recall?agent=ada&page=-1",
        "/memory/api/recall?agent=ada&page_size=0",
        "/memory/api/recall?agent=ada&page_size=1000",
        "/memory/api/recall?agent=ada&page=x",
        "/memory/api/recall?agent=ada&start_date=yesterday-ish",
        "/memory/api/recall?agent=ada&roles=robot",
        "/memory/api/archival?agent=ada&page=9223372036854775807",
        "/memory/api/archival?agent=ada&start_date=2024-13-45",
        "/memory/api/history?agent=ada&label=human&page=99999999999999999999",
        "/memory/api/history?agent=ada&label=human&page_size=-3",
        "/memory/api/core",
    ],
)
def test_every_bad_parameter_is_a_400_with_a_message(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 400, (path, answer.text)
    assert answer.json()["detail"]


def test_a_huge_passage_id_is_a_400_not_a_crash(client: TestClient) -> None:
    answer = client.delete("/memory/api/archival?agent=ada&id=99999999999999999999")
    assert answer.status_code == 400 and answer.json()["detail"]


@pytest.fixture
def memory(memory_backend: MemoryBackend) -> Memory:
    memory = memory_backend.open("ada")
    memory.core.ensure_defaults(persona="I am a helpful agent.", human="Name: Ada")
    return memory


def test_compare_and_set_refuses_a_stale_write_on_each_backend(memory: Memory) -> None:
    loaded = memory.core.get("human").value
    memory.core.append("human", "Likes tea.", actor="agent:t1")
    with pytest.raises(BlockConflictError) as refused:
        views.set_block(memory, "human", "Name: Ada (edited)", None, expected=loaded)
    assert refused.value.current.value == "Name: Ada\nLikes tea."
    assert memory.core.get("human").value == "Name: Ada\nLikes tea."
    saved = views.set_block(memory, "human", "Name: Ada", None, expected="Name: Ada\nLikes tea.")
    assert saved["value"] == "Name: Ada"


def test_a_long_history_is_answered_one_page_at_a_time_on_each_backend(memory: Memory) -> None:
    for n in range(45):
        memory.core.set("human", f"Name: Ada, edit {n}", actor="user")
    first = views.history_view(memory, "human", page=0, page_size=20)
    assert (first["total"], first["pages"], len(first["edits"])) == (46, 3, 20)
    assert first["edits"][0]["new"] == "Name: Ada, edit 44"
    last = views.history_view(memory, "human", page=2, page_size=20)
    assert [e["op"] for e in last["edits"]][-1] == "create" and len(last["edits"]) == 6
    with pytest.raises(views.PageError):
        views.history_view(memory, "human", page=views.MAX_PAGE + 1)


def test_a_refused_runs_context_gives_the_default_window_not_an_error() -> None:
    assert views.window_of({"context_window": -5}).context_window == 8192
    assert views.window_of({"context_window": 4096}).context_window == 4096
