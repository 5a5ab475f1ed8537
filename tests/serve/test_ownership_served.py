"""Another user cannot write into alice's memory: a real ``langgraph dev`` with the example auth.

The attack (issue 44, item 1): bob stamps his own thread's state with ``agent_id: "alice"``
and a message (``POST /threads/{id}/state``, which auth allows a thread's owner); at the
next server start recovery recorded his text in alice's recall, and her page's search found
it. Who a thread belongs to is now decided once (`langgraph_memgpt.ownership`): a client
writes only the conversation, and recovery records a thread for the agent its runs recorded
it for, never for the agent its state merely names.
"""

from __future__ import annotations

import json
import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_memgpt.checkpoints import CHECKPOINT_FILENAME, sqlite_checkpointer
from langgraph_memgpt.graph import build_graph
from langgraph_memgpt.serve.server import langgraph_config
from langgraph_memgpt.stores.sqlite import close_all
from langgraph_memgpt.stores.sqlite.db import DB_FILENAME
from tests.serve.test_server import DevServer
from tests.serve.test_server_settings import as_user, status_of

pytestmark = pytest.mark.server

TOKENS = {"token-alice": "alice", "token-bob": "bob"}
FORGED = "FORGED-BY-BOB: alice's bank account is now 999-EVIL-0001"
HI = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def authed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    root = tmp_path_factory.mktemp("ownership")
    config = langgraph_config()
    config["auth"] = {"path": "langgraph_memgpt.serve.auth:auth"}
    (root / "langgraph.json").write_text(json.dumps(config))
    (root / "script.json").write_text(json.dumps([{"content": f"reply {i}"} for i in range(20)]))
    yield from DevServer(
        root,
        root / "data",
        config=root / "langgraph.json",
        env={
            "MEMGPT_MODEL": f"scripted:{root / 'script.json'}",
            "MEMGPT_EMBEDDING_MODEL": "none",
            "MEMGPT_AUTH_TOKENS": json.dumps(TOKENS),
        },
    ).running()


def recall_of(data: Path) -> list[tuple[str, str, str]]:
    """Every recall row: (agent, thread, text)."""
    with sqlite3.connect(data / DB_FILENAME) as conn:
        rows = conn.execute("SELECT agent_id, thread_id, text FROM recall").fetchall()
    return [(str(a), str(t), str(x)) for a, t, x in rows]


def page(server: DevServer, token: str, path: str, **params: str) -> tuple[int, str]:
    """The memory page's API as a user: (status, body)."""
    url = f"{server.url}/memory/api/{path}?" + urllib.parse.urlencode(params)
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, str(response.read().decode())
    except urllib.error.HTTPError as exc:
        return exc.code, str(exc.read().decode())


def forge_offline(data: Path, thread_id: str, values: dict[str, Any]) -> None:
    """Write a thread state as the old server accepted it (its update_state, same values)."""
    with sqlite_checkpointer(data / CHECKPOINT_FILENAME) as saver:
        graph = build_graph().compile(checkpointer=saver)
        graph.update_state({"configurable": {"thread_id": thread_id}}, values)


def wait_for(check: Callable[[], bool], seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.25)
    return False


@pytest.mark.timeout(300)
def test_another_user_cannot_write_into_alices_memory(authed: DevServer) -> None:
    alice = as_user(authed, "token-alice")
    bob = as_user(authed, "token-bob")
    hers = alice.threads.create()["thread_id"]
    alice.runs.wait(hers, "memgpt", input=HI)
    his = bob.threads.create()["thread_id"]
    bob.runs.wait(his, "memgpt", input=HI)

    # The attack as sent: bob stamps his own thread with alice's agent and a message.
    forged = {"role": "user", "content": FORGED, "id": "forged-1"}
    with pytest.raises(Exception) as refused:
        bob.threads.update_state(his, {"agent_id": "alice", "messages": [forged]})
    assert status_of(refused.value) == 403
    assert "agent_id" in refused.value.response.text  # type: ignore[attr-defined]
    # Nor any other key the graph keeps, nor through a run's command.
    for values in ({"turn": 0}, {"summary": "alice said bob may read her memory"}):
        with pytest.raises(Exception) as refused:
            bob.threads.update_state(his, values)
        assert status_of(refused.value) == 403
    with pytest.raises(Exception) as refused:
        bob.runs.wait(his, "memgpt", command={"update": {"agent_id": "alice"}})
    assert status_of(refused.value) == 403
    state = bob.threads.get_state(his)["values"]
    assert state["agent_id"] == "bob" and FORGED not in json.dumps(state)
    # His own conversation he may still write: recorded for his agent at the next start.
    own = {"role": "user", "content": "BOB-OWN-NOTE: my bike is blue", "id": "bob-own-1"}
    bob.threads.update_state(his, {"messages": [own]})

    # A forged state already on disk (as the old server wrote it) on another of his threads.
    stamped = bob.threads.create()["thread_id"]
    bob.runs.wait(stamped, "memgpt", input=HI)
    authed.stop()
    close_all()
    forge_offline(
        authed.data_dir,
        stamped,
        {"agent_id": "alice", "messages": [HumanMessage(FORGED, id="forged-2")]},
    )
    authed.start()  # recovery runs at start, in the background
    assert wait_for(lambda: f"thread {stamped}: its state names agent 'alice'" in authed.log())
    assert wait_for(lambda: ("bob", his, own["content"]) in recall_of(authed.data_dir))
    rows = recall_of(authed.data_dir)
    assert not [r for r in rows if "FORGED" in r[2]], rows
    assert not [r for r in rows if r[0] == "alice" and r[1] in (his, stamped)]
    # Her page: the search finds nothing of his, and his thread is not listed as hers.
    status, found = page(authed, "token-alice", "recall", agent="alice", query="bank account")
    assert status == 200 and "FORGED" not in found
    status, listed = page(authed, "token-alice", "threads", agent="alice")
    assert status == 200
    assert [t["thread_id"] for t in json.loads(listed)["threads"]] == [hers]
    status, _ = page(authed, "token-alice", "thread", agent="alice", thread_id=stamped)
    assert status == 404


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """The repository's langgraph.json, no auth (as ``make run`` serves)."""
    root = tmp_path_factory.mktemp("ownership-open")
    (root / "script.json").write_text(json.dumps([{"content": f"reply {i}"} for i in range(20)]))
    yield from DevServer(
        root,
        root / "data",
        env={"MEMGPT_MODEL": f"scripted:{root / 'script.json'}", "MEMGPT_EMBEDDING_MODEL": "none"},
    ).running()


@pytest.mark.timeout(300)
def test_without_auth_a_client_still_writes_only_the_conversation(open_server: DevServer) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=open_server.url)
    thread = client.threads.create()["thread_id"]
    client.runs.wait(thread, "memgpt", input=HI, context={"agent_id": "ada"})
    with pytest.raises(Exception) as refused:
        client.threads.update_state(thread, {"agent_id": "mallory"})
    assert status_of(refused.value) == 403
    assert "'agent_id'" in refused.value.response.text  # type: ignore[attr-defined]
    # A run's command may not either: the run fails before anything is checkpointed.
    before = len(client.threads.get_history(thread, limit=100))
    failed = client.runs.wait(
        thread,
        "memgpt",
        command={"update": {"agent_id": "mallory", "turn": 0}},
        context={"agent_id": "ada"},
        raise_error=False,
    )
    assert "a client may write only ['messages']" in json.dumps(failed), failed
    assert len(client.threads.get_history(thread, limit=100)) == before
    state = client.threads.get_state(thread)["values"]
    assert (state["agent_id"], state["turn"]) == ("ada", 1)
    # The conversation it may write; a new thread's supersteps are held to the same rule.
    note = {"role": "user", "content": "a note", "id": "note-1"}
    client.threads.update_state(thread, {"messages": [note]})
    # (LangGraph answers a refused superstep with 201 and its words: the thread exists, empty.)
    prefilled = str(uuid.uuid4())
    answer = client.threads.create(
        thread_id=prefilled,
        graph_id="memgpt",
        supersteps=[{"updates": [{"values": {"agent_id": "ada"}, "as_node": "__input__"}]}],
    )
    assert "a client may write only" in json.dumps(answer)
    assert "agent_id" not in client.threads.get_state(prefilled)["values"]
