"""Any context from a client, and who may use which agent, behind a real ``langgraph dev``.

The served graph's data directory and models are the server's (its environment); a client
may set only `CLIENT_FIELDS`, and a run that tries more is refused with an error naming
them, whichever way the context arrives (run context, ``configurable``, an assistant).
With the example auth (`langgraph_memgpt.serve.auth`), the authenticated user decides the agent:
another user's agent and threads are out of reach.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.serve.server import langgraph_config
from langgraph_memgpt.serve.settings import CLIENT_FIELDS
from langgraph_memgpt.stores.sqlite.db import DB_FILENAME
from tests.serve.test_server import DevServer

SECRET = "the contents of a file the server never meant to show"
HI = {"messages": [{"role": "user", "content": "hi"}]}


def reply(text: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """One server for the module: scripted model and data dir from its environment."""
    root = tmp_path_factory.mktemp("served")
    (root / "script.json").write_text(json.dumps([reply(f"reply {i}") for i in range(20)]))
    yield from DevServer(
        root,
        root / "data",
        env={"MEMGPT_MODEL": f"scripted:{root / 'script.json'}", "MEMGPT_EMBEDDING_MODEL": "none"},
    ).running()


def recall_agents(data_dir: Path) -> set[str]:
    with sqlite3.connect(data_dir / DB_FILENAME) as conn:
        return {row[0] for row in conn.execute("SELECT DISTINCT agent_id FROM recall")}


@pytest.mark.server
@pytest.mark.timeout(180)
def test_a_client_cannot_choose_the_data_dir_the_models_or_a_database(
    served: DevServer, tmp_path: Path
) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=served.url)
    elsewhere = tmp_path / "elsewhere"
    secret = tmp_path / "secret.json"  # a JSON file on the server, readable as a script
    secret.write_text(json.dumps([reply(SECRET)]))
    attempts = [
        {"data_dir": str(elsewhere)},
        {"model": f"scripted:{secret}"},
        {"embedding_model": "openai:text-embedding-3-small"},
        {"database_url": f"sqlite:///{elsewhere}/x.db"},
        {"agent_id": "ada", "data_dir": str(elsewhere)},  # mixed with allowed fields
    ]
    thread_id = client.threads.create()["thread_id"]
    for context in attempts:
        field = next(k for k in context if k != "agent_id")
        with pytest.raises(Exception) as refused:
            client.runs.wait(thread_id, "memgpt", input=HI, context=context)
        message = str(refused.value)
        assert field in message and "set by the server" in message, message
        assert str(list(CLIENT_FIELDS)) in message, message  # says what a client may set
        assert client.runs.list(thread_id)[0]["status"] == "error"

    # The same through the older `configurable`, and through an assistant's context.
    with pytest.raises(Exception, match="data_dir"):
        client.runs.wait(
            thread_id, "memgpt", input=HI, config={"configurable": {"data_dir": str(elsewhere)}}
        )
    assistant = client.assistants.create(graph_id="memgpt", context={"model": f"scripted:{secret}"})
    with pytest.raises(Exception, match="model"):
        client.runs.wait(thread_id, assistant["assistant_id"], input=HI)

    assert not elsewhere.exists()
    values = client.threads.get_state(thread_id)["values"] or {}
    assert SECRET not in json.dumps(values)

    # Allowed fields work, numbers as text included; memory is in the server's data dir.
    fresh = client.threads.create()["thread_id"]
    out = client.runs.wait(
        fresh, "memgpt", input=HI, context={"agent_id": "ada", "context_window": "4096"}
    )
    assert isinstance(out, dict) and out["messages"][-1]["content"].startswith("reply ")
    assert "ada" in recall_agents(served.data_dir)


@pytest.mark.server
@pytest.mark.timeout(120)
def test_a_client_gets_a_clear_error_for_an_unknown_field_or_a_bad_value(
    served: DevServer,
) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=served.url)
    thread_id = client.threads.create()["thread_id"]
    cases = {
        "agentid": ({"agentid": "ada"}, "unknown field(s) ['agentid']"),
        "window": ({"context_window": "lots"}, "context_window='lots'"),
        "repeats": ({"max_repeated_calls": 1}, "max_repeated_calls=1"),
        "limit": ({"core_block_limit": 0}, "core_block_limit=0"),
        "agent": ({"agent_id": None}, "agent_id=None"),
    }
    for name, (context, expected) in cases.items():
        with pytest.raises(Exception) as refused:
            client.runs.wait(thread_id, "memgpt", input=HI, context=context)
        assert expected in str(refused.value), (name, str(refused.value))
    # The Studio form shows what a client may set, and only that.
    (assistant,) = client.assistants.search(graph_id="memgpt", metadata={"created_by": "system"})
    schema = client.assistants.get_schemas(assistant["assistant_id"])["context_schema"]
    assert set(schema["properties"]) == set(CLIENT_FIELDS)


@pytest.mark.server
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"MEMGPT_MODEL": "gpt-4o"}, "MEMGPT_MODEL (model)='gpt-4o' is not allowed"),
        ({"MEMGPT_DATABASE_URL": "mysql://db/memgpt"}, "MEMGPT_DATABASE_URL (database_url)="),
    ],
)
def test_a_bad_server_setting_stops_the_server_at_start(
    tmp_path: Path, env: dict[str, str], says: str
) -> None:
    dev = DevServer(tmp_path, tmp_path / "data", env=env)
    try:
        with pytest.raises(pytest.fail.Exception) as failed:
            dev.start()
        assert says in str(failed.value)
    finally:
        dev.stop()


# --- who may use which agent ----------------------------------------------------------

TOKENS = {"token-alice": "alice", "token-bob": "bob"}


@pytest.fixture(scope="module")
def authed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """The agent served with the example auth enabled by a langgraph.json of its own."""
    root = tmp_path_factory.mktemp("authed")
    config = langgraph_config()
    config["auth"] = {"path": "langgraph_memgpt.serve.auth:auth"}
    (root / "langgraph.json").write_text(json.dumps(config))
    (root / "script.json").write_text(json.dumps([reply(f"reply {i}") for i in range(20)]))
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


def as_user(server: DevServer, token: str | None, **headers: str) -> Any:
    from langgraph_sdk import get_sync_client

    if token:
        headers["Authorization"] = f"Bearer {token}"
    return get_sync_client(url=server.url, headers=headers)


def status_of(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


@pytest.mark.server
@pytest.mark.timeout(180)
def test_with_auth_a_user_cannot_read_or_write_another_users_agent(authed: DevServer) -> None:
    alice = as_user(authed, "token-alice")
    bob = as_user(authed, "token-bob")

    # Alice talks to her agent; without agent_id a run gets the one named after her.
    mine = alice.threads.create()["thread_id"]
    alice.runs.wait(mine, "memgpt", input=HI)
    alice.runs.wait(mine, "memgpt", input=HI, context={"agent_id": "alice"})
    work = alice.threads.create()["thread_id"]
    alice.runs.wait(work, "memgpt", input=HI, context={"agent_id": "alice/work"})
    assert alice.threads.get_state(mine)["values"]["agent_id"] == "alice"

    # Bob cannot see her threads, read their state, or run them.
    assert mine not in {t["thread_id"] for t in bob.threads.search(limit=100)}
    for attempt in (
        lambda: bob.threads.get(mine),
        lambda: bob.threads.get_state(mine),
        lambda: bob.runs.list(mine),
        lambda: bob.runs.wait(mine, "memgpt", input=HI, context={"agent_id": "bob"}),
    ):
        with pytest.raises(Exception) as hidden:
            attempt()
        assert status_of(hidden.value) == 404, hidden.value

    # Nor use her agents from a thread of his own, however he names them.
    his = bob.threads.create()["thread_id"]
    for agent_id in ("alice", "alice/work", "default", "alicex", "", 7):
        with pytest.raises(Exception) as refused:
            bob.runs.wait(his, "memgpt", input=HI, context={"agent_id": agent_id})
        assert status_of(refused.value) == 403, refused.value
        assert "may use agent_id 'bob'" in refused.value.response.text  # type: ignore[attr-defined]
    # Not through an assistant's context (assistants cannot be created), nor a cron.
    with pytest.raises(Exception) as refused:
        bob.assistants.create(graph_id="memgpt", context={"agent_id": "alice"})
    assert status_of(refused.value) == 403
    with pytest.raises(Exception) as refused:
        bob.crons.create("memgpt", schedule="* * * * *", input=HI)
    assert status_of(refused.value) == 403
    # Not by claiming to be Studio (`langgraph dev` lets that header skip the token).
    studio = as_user(authed, None, **{"x-auth-scheme": "langsmith"})
    theirs = studio.threads.create()["thread_id"]
    with pytest.raises(Exception) as refused:
        studio.runs.wait(theirs, "memgpt", input=HI, context={"agent_id": "alice"})
    assert status_of(refused.value) == 403
    assert mine not in {t["thread_id"] for t in studio.threads.search(limit=100)}

    bob.runs.wait(his, "memgpt", input=HI)  # his own agent works
    assert recall_agents(authed.data_dir) == {"alice", "alice/work", "bob"}

    # No token, or a wrong one: nothing at all.
    for token in (None, "token-mallory"):
        with pytest.raises(Exception) as unknown:
            as_user(authed, token).threads.search()
        assert status_of(unknown.value) == 401
