"""Four runs at once behind a real ``langgraph dev``: two agents, two threads each.

The runs share one server process (its thread pool runs the sync nodes side by side) and
one data directory. Every run must complete, and each agent's memory must hold exactly
its own two threads' messages and passages, nothing of the other agent's.

It runs on both backends (`place`): the server's data directory, or Postgres through
``MEMGPT_DATABASE_URL`` (memory in `PostgresBackend`, threads in ``AsyncPostgresSaver``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from checkpointers import Place
from served_per_message import SCRIPTS_ENV

from langgraph_memgpt.serve.server import langgraph_config
from tests.serve.test_server import DevServer

AGENTS = ("ada", "bob")


@pytest.fixture
def server(place: Place, tmp_path: Path) -> Iterator[DevServer]:
    """The agent served with a model that replays one script per user message (the served
    graph takes its model from the server, so runs cannot bring their own scripts)."""
    config = langgraph_config()
    config["graphs"]["memgpt"] = f"{Path(__file__).parents[1] / 'served_per_message.py'}:graph"
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps(config))
    env = {SCRIPTS_ENV: str(tmp_path / "scripts.json")}
    if place.url:
        env["MEMGPT_DATABASE_URL"] = place.url
    yield from DevServer(tmp_path, tmp_path / "data", config=path, env=env).running()


def script_for(agent: str, n: int) -> list[dict[str, Any]]:
    """The script of one run (keyed by its user message in the server's script file)."""
    return [
        {
            "content": "",
            "tool_calls": [
                {
                    "name": "archival_memory_insert",
                    "args": {
                        "content": f"{agent} fact from run {n}",
                        "tags": [agent],
                        "request_heartbeat": True,
                    },
                }
            ],
        },
        {
            "content": "",
            "tool_calls": [{"name": "send_message", "args": {"message": f"{agent} reply {n}"}}],
        },
    ]


@pytest.mark.server
@pytest.mark.timeout(240)
def test_four_parallel_runs_of_two_agents_complete_and_stay_apart(
    server: DevServer, place: Place, tmp_path: Path
) -> None:
    from langgraph_sdk import get_sync_client

    data_dir = tmp_path / "data"
    setup = get_sync_client(url=server.url)
    jobs: list[dict[str, Any]] = []
    scripts: dict[str, list[dict[str, Any]]] = {}
    for agent in AGENTS:
        for n in range(2):
            scripts[f"{agent} message {n}"] = script_for(agent, n)
            jobs.append(
                {
                    "agent": agent,
                    "n": n,
                    "thread_id": setup.threads.create()["thread_id"],
                    "context": {"agent_id": agent},  # the data dir is the server's
                }
            )
    (tmp_path / "scripts.json").write_text(json.dumps(scripts))

    def run(job: dict[str, Any]) -> dict[str, Any]:
        client = get_sync_client(url=server.url)
        client.runs.wait(
            job["thread_id"],
            "memgpt",
            input={"messages": [{"role": "user", "content": f"{job['agent']} message {job['n']}"}]},
            context=job["context"],
        )
        return client.runs.list(job["thread_id"])[0]

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        runs = list(pool.map(run, jobs))
    for job, finished in zip(jobs, runs, strict=True):
        assert finished["status"] == "success", server.log()
        values = setup.threads.get_state(job["thread_id"])["values"]
        assert values["messages"][-1]["content"] == f"{job['agent']} reply {job['n']}"

    stored = Place(place.kind, data_dir, place.url)  # the server's memory
    for agent in AGENTS:
        other = next(a for a in AGENTS if a != agent)
        threads = {job["thread_id"] for job in jobs if job["agent"] == agent}
        memory = stored.open(agent, "minilm")
        rows = [(m.thread_id, m.role, m.text) for _, m in memory.recall.list_messages(limit=1000)]
        assert {row[0] for row in rows} == threads
        users = sorted(row[2] for row in rows if row[1] == "user")
        assert users == [f"{agent} message 0", f"{agent} message 1"]
        assert not [row for row in rows if other in row[2]], rows
        passages = memory.archival.search("fact from run", page_size=10)
        assert sorted(hit.item.text for hit in passages.hits) == [
            f"{agent} fact from run 0",
            f"{agent} fact from run 1",
        ]
    stored.close()
