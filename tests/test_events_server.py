"""System events through ``langgraph_sdk`` against a real ``langgraph dev``.

Crons and webhooks send runs the same way, so what works here works for them.

The served model is the scripted one (``MEMGPT_MODEL=scripted:...``); memory is the real
SQLite file of the server's data directory, read after the runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_server import DevServer, call

from langgraph_memgpt.stores.sqlite import close_all, open_memory

CONFIG_CHANGED = {
    "source": "watcher",
    "time": "2026-12-02T09:30:00Z",
    "text": "config.yaml changed: output_format: json -> output_format: parquet",
    "id": "evt-parquet",
}


@pytest.mark.server
@pytest.mark.timeout(180)
def test_events_through_the_sdk_edit_memory_send_nothing_and_refuse_a_bad_field(
    tmp_path: Path,
) -> None:
    from langgraph_sdk import get_sync_client

    data = tmp_path / "data"
    script = tmp_path / "script.json"
    edit = call("core_memory_append", label="human", content="Preferred output format: Parquet")
    script.write_text(
        json.dumps([{"content": "The config says Parquet now.", "tool_calls": [edit]}])
    )
    env = {"MEMGPT_MODEL": f"scripted:{script}", "MEMGPT_EMBEDDING_MODEL": "none"}
    server = DevServer(tmp_path, data, env=env)
    for _ in server.running():
        client = get_sync_client(url=server.url)
        thread_id = client.threads.create()["thread_id"]
        output: Any = client.runs.wait(
            thread_id, "memgpt", input={"events": [CONFIG_CHANGED]}, context={"agent_id": "ada"}
        )
        assert client.runs.list(thread_id)[0]["status"] == "success", server.log()
        assert output["event_outcome"]["edits"] == [
            {"tool": "core_memory_append", "args": edit["args"], "ok": True}
        ]
        assert output["event_outcome"]["replied"] is False
        values = client.threads.get_state(thread_id)["values"]
        shown = [m for m in values["messages"] if m["type"] == "ai" and not m.get("tool_calls")]
        assert shown == []  # no reply went out

        refused: Any = client.runs.wait(
            thread_id,
            "memgpt",
            input={"events": [{"time": "2026-12-02T10:00:00Z", "text": "key rotated"}]},
            context={"agent_id": "ada"},
            raise_error=False,
        )
        assert client.runs.list(thread_id)[0]["status"] == "error"
        assert "events[0].source: must be a non-empty string" in json.dumps(refused), refused

    close_all()
    memory = open_memory(data, "ada", embedding_model="none")
    assert "Preferred output format: Parquet" in memory.core.get("human").value
    (stored,) = memory.recall.get(["evt-parquet"])
    assert stored.role == "event"
    close_all()
