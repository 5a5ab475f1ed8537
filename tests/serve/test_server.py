"""The agent behind a real ``langgraph dev``: loaded from langgraph.json, run, restarted.

``langgraph dev`` runs its worker under blockbuster (sqlite3, sockets, sleeps and mkdir
raise ``BlockingError`` on the event loop), so a run completing here also shows the nodes
keep blocking I/O off the server's loop; ``test_blocking.py`` checks that more strictly.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.context import Context
from langgraph_memgpt.llm.local_server import stop_process_group
from langgraph_memgpt.serve.server import CHECKPOINT_FILENAME, langgraph_config
from langgraph_memgpt.stores.sqlite import close_all
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "langgraph.json"
LANGGRAPH = Path(sys.executable).parent / "langgraph"
NODES = {
    "open_turn",
    "check_pressure",
    "summarize_evict",
    "think",
    "call_memory_tool",
    "close_step",
    "respond",
}
EDGES = {
    ("__start__", "open_turn"),
    ("open_turn", "check_pressure"),
    ("check_pressure", "think"),
    ("check_pressure", "summarize_evict"),
    ("check_pressure", "respond"),
    ("summarize_evict", "think"),
    ("summarize_evict", "respond"),
    ("think", "call_memory_tool"),
    ("think", "close_step"),
    ("think", "summarize_evict"),
    ("think", "respond"),
    ("call_memory_tool", "close_step"),
    ("close_step", "check_pressure"),
    ("close_step", "respond"),
    ("respond", "__end__"),
}
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


def test_langgraph_json_is_the_config_serve_writes() -> None:
    assert json.loads(CONFIG.read_text()) == langgraph_config()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DevServer:
    """``langgraph dev`` on the repository's langgraph.json, in its own process group."""

    def __init__(
        self,
        workdir: Path,
        data_dir: Path,
        *,
        config: Path = CONFIG,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.data_dir = data_dir
        self.config = config
        self.extra_env = dict(env or {})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        env = {
            **os.environ,
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "LANGGRAPH_NO_VERSION_CHECK": "true",
            "LANGSMITH_TRACING": "false",
            "MEMGPT_DATA_DIR": str(self.data_dir),
            # The worktree's package, not only the editable install's.
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
            ),
            **self.extra_env,
        }
        log = (self.workdir / f"server-{self.starts}.log").open("wb")
        # cwd: a temporary folder, so the server's own thread list (./.langgraph_api)
        # never mixes with a developer's; the config is the repository's file.
        self.proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(self.port)]
            + ["--config", str(self.config)],
            cwd=self.workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"langgraph dev exited early:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/ok", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.25)
        pytest.fail(f"langgraph dev did not answer /ok in {START_TIMEOUT_S} s:\n{self.log()}")

    def stop(self) -> None:
        """Ctrl-C the whole process group (a graceful stop), then kill what is left."""
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process_group(proc, signal.SIGINT, STOP_TIMEOUT_S)

    def log(self) -> str:
        path = self.workdir / f"server-{self.starts}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def running(self) -> Iterator[DevServer]:
        """Start, hand the server to a fixture, then stop it and forget open memories."""
        try:
            self.start()
            yield self
        finally:
            self.stop()
            close_all()
            forget_loaded_indexes()


def script_path(tmp_path: Path) -> Path:
    """Where `scripted` writes the test's script: the served model is the server's choice
    (``MEMGPT_MODEL``), so the server is started pointing at it before it exists."""
    return tmp_path / "script.json"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DevServer]:
    yield from DevServer(
        tmp_path, tmp_path / "data", env={"MEMGPT_MODEL": f"scripted:{script_path(tmp_path)}"}
    ).running()


def scripted(tmp_path: Path, steps: list[dict[str, Any]]) -> str:
    path = script_path(tmp_path)
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


@pytest.mark.server
@pytest.mark.timeout(120)
def test_the_served_agent_runs_and_its_threads_survive_a_restart(
    server: DevServer, tmp_path: Path
) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=server.url)
    assistants = client.assistants.search(graph_id="memgpt")
    assert len(assistants) == 1
    assistant_id = assistants[0]["assistant_id"]

    drawing = client.assistants.get_graph(assistant_id)
    assert NODES <= {node["id"] for node in drawing["nodes"]}
    edges = {(edge["source"], edge["target"]) for edge in drawing["edges"]}
    assert EDGES <= edges

    schema = client.assistants.get_schemas(assistant_id)["context_schema"]
    properties = schema["properties"]
    for name in ("agent_id", "context_window", "warning_fraction", "persona"):
        assert properties[name]["description"], name
    # What only the server decides is not in a client's form.
    assert not {"model", "data_dir", "embedding_model"} & set(properties)
    assert properties["agent_id"]["description"] == Context.model_fields["agent_id"].description

    scripted(
        tmp_path,
        [
            {
                "content": "Her name goes to core memory.",
                "tool_calls": [
                    call(
                        "core_memory_append",
                        label="human",
                        content="Name: Ada",
                        request_heartbeat=True,
                    )
                ],
            },
            {"content": "", "tool_calls": [call("send_message", message="Hello Ada!")]},
        ],
    )
    data_dir = tmp_path / "data"
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(
        thread_id,
        "memgpt",
        input={"messages": [{"role": "user", "content": "hi, I'm Ada"}]},
        # As from Studio: the server fills in the defaults on its event loop (a default
        # that touched the file system there once failed every run); the model is the
        # server's $MEMGPT_MODEL.
        context={"agent_id": "ada"},
    )
    run = client.runs.list(thread_id)[0]
    assert run["status"] == "success", server.log()
    values = client.threads.get_state(thread_id)["values"]
    assert values["messages"][-1]["content"] == "Hello Ada!"
    assert {"label": "human", "value": "Name: Ada"}.items() <= values["core_blocks"][1].items()

    assert (data_dir / "memory.sqlite").is_file()  # $MEMGPT_DATA_DIR of the server
    # The checkpoint is in the durable SQLite file of the data directory, not in memory.
    with sqlite3.connect(data_dir / CHECKPOINT_FILENAME) as conn:
        (rows,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread_id,)
        ).fetchone()
    assert rows > 0

    server.stop()
    server.start()
    client = get_sync_client(url=server.url)
    after = client.threads.get_state(thread_id)["values"]
    assert after["messages"] == values["messages"]
    assert after["turn"] == 1


@pytest.mark.server
@pytest.mark.timeout(90)
def test_serve_keeps_everything_in_the_data_dir_and_stops_cleanly_on_sigterm(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    env = {
        **os.environ,
        # A configured endpoint: serve skips the embedded model (not under test here).
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "MEMGPT_DATA_DIR": str(tmp_path / "elsewhere"),  # --data-dir wins
    }
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [str(LANGGRAPH.parent / "langgraph-memgpt"), "serve", "--port", str(port)]
        + ["--data-dir", str(data_dir)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    log.close()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        printed = (tmp_path / "serve.log").read_text()
        assert f"https://smith.langchain.com/studio/?baseUrl=http://127.0.0.1:{port}" in printed
        assert f"langgraph-memgpt chat --data-dir {data_dir}" in printed
        # The memory page's URL beside Studio's, and the page is there.
        assert f"Memory:   http://127.0.0.1:{port}/memory" in printed
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/memory", timeout=10) as page:
            assert b"<title>Memory" in page.read()
        assert json.loads((data_dir / "langgraph.json").read_text()) == langgraph_config()

        proc.send_signal(signal.SIGTERM)  # to serve only: it stops the server gracefully
        assert proc.wait(timeout=STOP_TIMEOUT_S + 5) == 0
        # The server's own thread list and the checkpoints are in the data directory.
        assert (data_dir / ".langgraph_api").is_dir()
        assert (data_dir / CHECKPOINT_FILENAME).is_file()
        assert not (tmp_path / "elsewhere").exists()
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.server
@pytest.mark.timeout(120)
def test_the_reply_streams_through_the_sdk_without_monologue_or_tool_json(
    server: DevServer, tmp_path: Path
) -> None:
    """A chat UI on ``messages-tuple`` (as the JS SDK's useStream reads it) shows the reply
    as it is written, and nothing of the agent's private steps."""
    from langgraph_sdk import get_sync_client

    reply = "Hello Ada, it is lovely to meet you. Tell me about your day!"
    script_path(tmp_path).write_text(
        json.dumps(
            {
                "stream_piece": 6,
                "script": [
                    {
                        "content": "PRIVATE: she introduced herself.",
                        "tool_calls": [
                            call("core_memory_append", label="human", content="Name: Ada"),
                            call("send_message", message=reply),
                        ],
                    }
                ],
            }
        )
    )
    client = get_sync_client(url=server.url)
    thread_id = client.threads.create()["thread_id"]
    events = list(
        client.runs.stream(
            thread_id,
            "memgpt",
            input={"messages": [{"role": "user", "content": "hi, I'm Ada"}]},
            context={"agent_id": "ada"},
            stream_mode="messages-tuple",
        )
    )
    texts = []
    for event in events:
        if event.event != "messages":
            continue
        message, _meta = event.data
        text = json.dumps(message.get("content"))
        assert "PRIVATE" not in text, "the monologue reached the client"
        assert "status" not in text, "a tool result reached the client"
        texts.append(message)
    chunks = [m["content"] for m in texts if m.get("type") == "AIMessageChunk"]
    assert len(chunks) >= 3, server.log()
    assert "".join(chunks) == reply


@pytest.mark.server
@pytest.mark.timeout(120)
def test_a_reply_held_back_beside_a_search_never_reaches_an_sdk_client(
    server: DevServer, tmp_path: Path
) -> None:
    """``messages-tuple`` shows the answer the loop sends, as one message (one id, no empty
    chunk), never the reply it held back because it was written before a search was read."""
    from langgraph_sdk import get_sync_client

    answer = "I found nothing about a bike in my memory; what colour is it?"
    script_path(tmp_path).write_text(
        json.dumps(
            {
                "stream_piece": 5,
                "script": [
                    {
                        "content": "PRIVATE: look it up.",
                        "tool_calls": [
                            call("send_message", message="Your bike is red."),
                            call("conversation_search", query="bike"),
                        ],
                    },
                    {"tool_calls": [call("send_message", message=answer)]},
                ],
            }
        )
    )
    client = get_sync_client(url=server.url)
    thread_id = client.threads.create()["thread_id"]
    events = list(
        client.runs.stream(
            thread_id,
            "memgpt",
            input={"messages": [{"role": "user", "content": "What colour is my bike?"}]},
            context={"agent_id": "ada"},
            stream_mode="messages-tuple",
        )
    )
    sent = [e.data[0] for e in events if e.event == "messages"]
    everything = "".join(
        c if isinstance(c := m.get("content"), str) else json.dumps(c) for m in sent
    )
    assert "bike is red" not in everything, "the held-back reply reached the client"
    assert "PRIVATE" not in everything and "status" not in everything
    ai = [m for m in sent if m.get("type", "").startswith("AIMessage")]
    assert len(ai) >= 3, server.log()
    assert all(m["content"] for m in ai), "an empty chunk (a second message in useStream)"
    assert {m["id"] for m in ai} == {
        client.threads.get_state(thread_id)["values"]["messages"][-1]["id"]
    }
    assert "".join(m["content"] for m in ai) == answer


JS_SDK = REPO / "tests" / "js"


@pytest.mark.server
@pytest.mark.timeout(120)
def test_the_reply_streams_through_the_js_sdk_messages_tuple(
    server: DevServer, tmp_path: Path
) -> None:
    """LangGraph's own JS SDK (``@langchain/langgraph-sdk``, installed by ``make test``)."""
    assert (JS_SDK / "node_modules" / "@langchain" / "langgraph-sdk").is_dir(), (
        "run `make test` (it installs tests/js with npm)"
    )
    reply = "Good morning! The sun is out and it is a fine day for a walk."
    script_path(tmp_path).write_text(
        json.dumps(
            {
                "stream_piece": 5,
                "script": [
                    {
                        "content": "PRIVATE: greet back.",
                        "tool_calls": [call("send_message", message=reply)],
                    }
                ],
            }
        )
    )
    done = subprocess.run(
        ["node", str(JS_SDK / "stream_reply.mjs"), server.url, "ada", "good morning"],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    chunks = []
    for event in events:
        if not str(event["event"]).startswith("messages"):
            continue
        message = event["data"][0]
        text = json.dumps(message.get("content"))
        assert "PRIVATE" not in text and "status" not in text, text
        if message.get("type") == "AIMessageChunk":
            chunks.append(message["content"])
    assert len(chunks) >= 3, done.stdout
    assert "".join(chunks) == reply


@pytest.mark.server
@pytest.mark.timeout(120)
def test_a_chat_ui_merging_by_id_shows_the_reply_the_loop_sends_as_one_message(
    server: DevServer, tmp_path: Path
) -> None:
    """``useStream``'s own merger (the JS SDK's ``MessageTupleManager``) over
    ``messages-tuple``: one AI message, the sent reply; not the one held back beside a
    search, not the monologue, no empty second message."""
    assert (JS_SDK / "node_modules" / "@langchain" / "langgraph-sdk").is_dir(), (
        "run `make test` (it installs tests/js with npm)"
    )
    script_path(tmp_path).write_text(
        json.dumps(
            {
                "stream_piece": 5,
                "script": [
                    {
                        "content": "PRIVATE: look it up.",
                        "tool_calls": [
                            call("send_message", message="Your bike is red."),
                            call("conversation_search", query="bike"),
                        ],
                    },
                    {
                        "tool_calls": [
                            call("send_message", message="I found nothing about a bike."),
                            call("send_message", message="What colour is it?"),
                        ]
                    },
                ],
            }
        )
    )
    done = subprocess.run(
        ["node", str(JS_SDK / "use_stream_messages.mjs"), server.url, "ada", "My bike?"],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    reply = "I found nothing about a bike.\n\nWhat colour is it?"
    assert result["last"]["content"] == reply
    shown = [(m["id"], m["content"]) for m in result["shown"] if m["type"] == "ai"]
    assert shown == [(result["last"]["id"], reply)], done.stdout
