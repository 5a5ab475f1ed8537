"""The consolidation graph behind a real ``langgraph dev``, scheduled the LangGraph way.

A chat turn on ``memgpt``, then a background run of ``memgpt_sleeptime`` for the same
agent (what an app starts after a turn), then a server cron that tends the memory after
the next turn, all through ``langgraph_sdk``; the model is a script shared by both graphs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from langgraph_memgpt.sleeptime import ACTOR
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all
from tests.serve.test_server import DevServer

AGENT = "ana"
CRON_WAIT_S = 120.0  # a "* * * * *" cron fires at the next minute, seen within seconds


def reply(text: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}


def consolidation(human: str, archive: list[str]) -> str:
    return json.dumps({"blocks": {"human": human}, "clear": [], "archive": archive})


SCRIPT = [
    reply("Nice to meet you, Ana!"),
    consolidation("Name: Ana\nLikes hiking", ["Ana likes hiking"]),
    reply("Pottery, lovely."),
    consolidation("Name: Ana\nLikes hiking\nDoes pottery", ["Ana does pottery"]),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    root = tmp_path_factory.mktemp("sleeptime")
    (root / "script.json").write_text(json.dumps(SCRIPT))
    yield from DevServer(
        root,
        root / "data",
        env={"MEMGPT_MODEL": f"scripted:{root / 'script.json'}", "MEMGPT_EMBEDDING_MODEL": "none"},
    ).running()


def human_history(served: DevServer) -> list[dict[str, Any]]:
    close_all()
    memory = SqliteBackend(served.data_dir, embedding_model="none").open(AGENT)
    return memory.core.history("human")


def chat(client: Any, thread_id: str, text: str) -> None:
    client.runs.wait(
        thread_id,
        "memgpt",
        input={"messages": [{"role": "user", "content": text}]},
        context={"agent_id": AGENT},
    )


@pytest.mark.server
@pytest.mark.timeout(300)
def test_consolidation_runs_in_the_background_after_a_turn_and_on_a_cron(
    served: DevServer,
) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=served.url)
    graphs = {a["graph_id"] for a in client.assistants.search(limit=20)}
    assert {"memgpt", "memgpt_sleeptime"} <= graphs

    chat_thread = client.threads.create()["thread_id"]
    chat(client, chat_thread, "Hi, I'm Ana and I like hiking. lol")

    # After the turn: a background run on the agent's consolidation thread. The chat
    # turn has already returned; "enqueue" queues it behind a consolidation in progress.
    sleep_thread = client.threads.create(metadata={"agent_id": AGENT})["thread_id"]
    run = client.runs.create(
        sleep_thread,
        "memgpt_sleeptime",
        input={},
        context={"agent_id": AGENT},
        multitask_strategy="enqueue",
    )
    out = client.runs.join(sleep_thread, run["run_id"])
    assert out["edits"] == [
        {"label": "human", "outcome": "rewritten", "reason": "cleaned by the consolidator"}
    ]
    assert out["archived"] == ["Ana likes hiking"]
    history = human_history(served)
    assert (history[-1]["actor"], history[-1]["new_value"]) == (ACTOR, "Name: Ana\nLikes hiking")

    # A server cron tends the memory after the next turn, with no client involved.
    chat(client, chat_thread, "I started pottery!")
    cron = client.crons.create_for_thread(
        sleep_thread,
        "memgpt_sleeptime",
        schedule="* * * * *",
        input={},
        context={"agent_id": AGENT},
        multitask_strategy="reject",
    )
    try:
        deadline = time.monotonic() + CRON_WAIT_S
        while time.monotonic() < deadline:
            runs = client.runs.list(sleep_thread)
            if len(runs) > 1 and runs[0]["status"] in ("success", "error"):
                break
            time.sleep(2)
        assert len(runs) > 1, f"the cron did not run within {CRON_WAIT_S} s"
        assert runs[0]["status"] == "success", runs[0]
    finally:
        client.crons.delete(cron["cron_id"])
    values = client.threads.get_state(sleep_thread)["values"]
    assert values["archived"] == ["Ana does pottery"]
    assert human_history(served)[-1]["new_value"] == "Name: Ana\nLikes hiking\nDoes pottery"


@pytest.mark.server
@pytest.mark.timeout(120)
def test_a_client_cannot_point_the_consolidator_at_another_data_dir(served: DevServer) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=served.url)
    thread_id = client.threads.create()["thread_id"]
    with pytest.raises(Exception, match="data_dir"):
        client.runs.wait(
            thread_id, "memgpt_sleeptime", input={}, context={"data_dir": "/tmp/elsewhere"}
        )
