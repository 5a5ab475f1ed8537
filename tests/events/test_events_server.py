"""System events through ``langgraph_sdk`` against a real ``langgraph dev``.

Crons and webhooks send runs the same way, so what works here works for them.

The served model is the scripted one (``MEMGPT_MODEL=scripted:...``); memory is the real
SQLite file of the server's data directory, read after the runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.llm.local_server import stop_process_group
from langgraph_memgpt.stores.sqlite import close_all, open_memory
from tests.serve.test_server import DevServer, call

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

        # A user's message named like the event it would overwrite in recall: refused, by a
        # run and by a state write, naming the id.
        forged = {"role": "user", "content": "My salary is 91,400.", "id": "event:evt-parquet"}
        refused = client.runs.wait(
            thread_id,
            "memgpt",
            input={"messages": [forged]},
            context={"agent_id": "ada"},
            raise_error=False,
        )
        assert client.runs.list(thread_id)[0]["status"] == "error"
        assert "messages[0].id: 'event:evt-parquet' is in the events" in json.dumps(refused)
        with pytest.raises(Exception, match="is in the events' namespace") as written:
            client.threads.update_state(thread_id, {"messages": [forged]})
        assert getattr(written.value, "status_code", None) == 403, repr(written.value)

    close_all()
    memory = open_memory(data, "ada", embedding_model="none")
    assert "Preferred output format: Parquet" in memory.core.get("human").value
    (stored,) = memory.recall.get(["event:evt-parquet"])  # the events' own ids
    assert stored.role == "event" and stored.text == CONFIG_CHANGED["text"]
    close_all()


def hear_ctrl_c() -> None:
    """The watcher hears Ctrl-C as in a terminal, however the test run was started.

    A command a non-interactive shell starts in the background (``cmd &``) ignores SIGINT,
    and so does every process it starts: a test suite started that way saw its watcher
    ignore the test's Ctrl-C and be killed after 90 s.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.server
@pytest.mark.timeout(300)
def test_the_watch_command_posts_a_file_change_to_the_server(tmp_path: Path) -> None:
    """``langgraph-memgpt watch PATH --agent ada --url ...``: a real process, folder and server."""
    from langgraph_sdk import get_sync_client

    from langgraph_memgpt.cli.watch import watch_thread

    data = tmp_path / "data"
    project = tmp_path / "project"
    project.mkdir()
    config = project / "config.yaml"
    config.write_text("output_format: json\n")
    script = tmp_path / "script.json"
    edit = call("core_memory_append", label="human", content="Preferred output format: Parquet")
    script.write_text(json.dumps([{"content": "", "tool_calls": [edit]}]))
    env = {"MEMGPT_MODEL": f"scripted:{script}", "MEMGPT_EMBEDDING_MODEL": "none"}
    server = DevServer(tmp_path, data, env=env)
    for _ in server.running():
        watcher = subprocess.Popen(
            [sys.executable, "-m", "langgraph_memgpt.cli", "watch", str(project)]
            + ["--agent", "ada", "--url", server.url, "--debounce-ms", "200"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            start_new_session=True,
            preexec_fn=hear_ctrl_c,
        )
        try:
            assert watcher.stdout is not None
            said = [watcher.stdout.readline().decode()]
            while said[-1] and not said[-1].startswith("Watching"):
                said.append(watcher.stdout.readline().decode())
            assert said[-1].startswith("Watching"), said
            config.write_text("output_format: parquet\n")
            client = get_sync_client(url=server.url)
            thread_id = watch_thread("ada")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                runs = client.runs.list(thread_id) if _exists(client, thread_id) else []
                if runs and runs[0]["status"] in ("success", "error"):
                    break
                time.sleep(0.2)
            assert runs and runs[0]["status"] == "success", server.log()
            values = client.threads.get_state(thread_id)["values"]
            (event,) = [m for m in values["messages"] if m.get("name") == "system_event"]
            assert "+ output_format: parquet" in event["content"]
            assert values["event_outcome"]["edits"][0]["ok"] is True
        finally:
            # Ctrl-C; the interpreter's own shutdown is slow on a loaded machine.
            stop_process_group(watcher, signal.SIGINT, 90)
        assert watcher.returncode == 0, watcher.stdout.read() if watcher.stdout else ""


def _exists(client: Any, thread_id: str) -> bool:
    try:
        client.threads.get(thread_id)
    except Exception:  # noqa: BLE001 - not created yet
        return False
    return True
