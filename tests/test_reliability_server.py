"""Four runs at once behind a real ``langgraph dev``: two agents, two threads each.

The runs share one server process (its thread pool runs the sync nodes side by side) and
one data directory. Every run must complete, and each agent's memory must hold exactly
its own two threads' messages and passages, nothing of the other agent's.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_server import (
    DevServer,
    server,  # noqa: F401 - the shared `langgraph dev` fixture
)

from langgraph_memgpt.stores import open_memory

AGENTS = ("ada", "bob")


def script_for(tmp_path: Path, agent: str, n: int) -> str:
    """A script file of its own per run: the server caches models per spec."""
    steps = [
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
    path = tmp_path / f"script-{agent}-{n}.json"
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


@pytest.mark.server
@pytest.mark.timeout(240)
def test_four_parallel_runs_of_two_agents_complete_and_stay_apart(
    server: DevServer,  # noqa: F811 - pytest injects the imported fixture
    tmp_path: Path,
) -> None:
    from langgraph_sdk import get_sync_client

    data_dir = tmp_path / "data"
    setup = get_sync_client(url=server.url)
    jobs: list[dict[str, Any]] = []
    for agent in AGENTS:
        for n in range(2):
            jobs.append(
                {
                    "agent": agent,
                    "n": n,
                    "thread_id": setup.threads.create()["thread_id"],
                    "context": {
                        "model": script_for(tmp_path, agent, n),
                        "agent_id": agent,
                        "data_dir": str(data_dir),
                    },
                }
            )

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

    for agent in AGENTS:
        other = next(a for a in AGENTS if a != agent)
        threads = {job["thread_id"] for job in jobs if job["agent"] == agent}
        memory = open_memory(data_dir, agent)
        rows = memory.db.conn.execute(
            "SELECT thread_id, role, text FROM recall WHERE agent_id = ?", (agent,)
        ).fetchall()
        assert {row[0] for row in rows} == threads
        users = sorted(row[2] for row in rows if row[1] == "user")
        assert users == [f"{agent} message 0", f"{agent} message 1"]
        assert not [row for row in rows if other in row[2]], rows
        passages = memory.archival.search("fact from run", page_size=10)
        assert sorted(hit.item.text for hit in passages.hits) == [
            f"{agent} fact from run 0",
            f"{agent} fact from run 1",
        ]
