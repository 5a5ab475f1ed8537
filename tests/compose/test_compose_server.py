"""The example swarm (examples/compose) served by a real ``langgraph dev``, driven by the SDK.

The MemGPT agent hands the user to a plain LangGraph agent and gets them back, inside the
server's event loop (blocking store I/O there would raise ``BlockingError``); a second
thread shows the agent continuing with what it saved.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.stores.sqlite import open_memory
from tests.serve.test_server import DevServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "compose"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


@pytest.mark.server
@pytest.mark.timeout(180)
def test_the_served_swarm_hands_off_both_ways_and_keeps_the_agents_memory(
    tmp_path: Path,
) -> None:
    from langgraph_sdk import get_sync_client

    concierge = tmp_path / "concierge.json"
    concierge.write_text(
        json.dumps(
            [
                step(
                    call("core_memory_append", label="human", content="Ada; drinks green tea"),
                    call("transfer_to_helper"),
                ),
                step(call("send_message", message="The helper says it is sunny, Ada.")),
                step(call("send_message", message="Green tea, Ada.")),
            ]
        )
    )
    helper = tmp_path / "helper.json"
    helper.write_text(json.dumps([step(call("transfer_to_concierge"), content="It is sunny.")]))
    data = tmp_path / "data"
    # `langgraph dev` finds ./agents.py from its working folder: serve a copy of the example
    # from a temporary one (the server's own files land there, not in the repository).
    for name in ("langgraph.json", "agents.py"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    server = DevServer(
        tmp_path,
        data,
        config=tmp_path / "langgraph.json",
        env={
            "MEMGPT_MODEL": f"scripted:{concierge}",
            "HELPER_MODEL": f"scripted:{helper}",
            "MEMGPT_EMBEDDING_MODEL": "none",
        },
    )
    for running in server.running():
        client = get_sync_client(url=running.url)
        assert [a["graph_id"] for a in client.assistants.search(graph_id="swarm")] == ["swarm"]

        thread = client.threads.create()
        out = client.runs.wait(
            thread["thread_id"],
            "swarm",
            input={"messages": [{"role": "user", "content": "I'm Ada. Weather today?"}]},
        )
        assert isinstance(out, dict), out
        messages = out["messages"]
        assert out["active_agent"] == "concierge"
        assert messages[-1]["content"] == "The helper says it is sunny, Ada."
        calls = [c["id"] for m in messages if m["type"] == "ai" for c in m.get("tool_calls", [])]
        answered = {m["tool_call_id"] for m in messages if m["type"] == "tool"}
        assert calls and set(calls) <= answered, "every tool call has its result"

        other = client.threads.create()
        again = client.runs.wait(
            other["thread_id"],
            "swarm",
            input={"messages": [{"role": "user", "content": "What do I drink?"}]},
        )
        assert isinstance(again, dict), again
        assert again["messages"][-1]["content"] == "Green tea, Ada."

    blocks = {
        b.label: b.value
        for b in open_memory(data, "concierge", embedding_model="none").core.blocks()
    }
    assert "drinks green tea" in blocks["human"]
