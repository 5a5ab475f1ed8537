"""Forget and `langgraph dev`'s own saved copy of runs and threads in the data directory.

`serve` runs the server in the data directory, and its in-memory runtime saves every run's
input and each thread's values to `.langgraph_api/.langgraph_ops.pckl`. After `forget`
(the server stopped), no file of the data directory holds the words, and the server starts
again on the cleaned file with its threads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.ops.dev_state import STATE_FILE, serving
from langgraph_memgpt.stores.sqlite import close_all
from tests.serve.test_server import DevServer, call

WORD = "walrus5512"
OTHER = "flamingo3301"


def served_threads(tmp_path: Path) -> tuple[Path, DevServer, dict[str, str]]:
    """Two threads of agent ada run by a real `langgraph dev` in the data directory."""
    from langgraph_sdk import get_sync_client

    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "script.json"
    reply = {"content": "", "tool_calls": [call("send_message", message="Noted.")]}
    script.write_text(json.dumps([reply, reply]))
    env = {"MEMGPT_MODEL": f"scripted:{script}", "MEMGPT_EMBEDDING_MODEL": "none"}
    server = DevServer(data, data, env=env)
    threads: dict[str, str] = {}
    for _ in server.running():
        client = get_sync_client(url=server.url)
        for name, text, mid in (("a", f"code {WORD} secret", "m-secret"), ("b", OTHER, "m-b")):
            thread = client.threads.create()
            message = {"role": "user", "content": text, "id": mid}
            client.runs.wait(
                thread["thread_id"],
                "memgpt",
                input={"messages": [message]},
                context={"agent_id": "ada"},
            )
            threads[name] = thread["thread_id"]
    return data, server, threads


def leaks(data: Path, word: str) -> list[str]:
    close_all()
    return sorted(
        str(p.relative_to(data))
        for p in data.rglob("*")
        if p.is_file() and word.encode() in p.read_bytes()
    )


def forget(data: Path, *args: str) -> int:
    return main(["forget", "--agent", "ada", *args, "--data-dir", str(data)])


@pytest.mark.server
@pytest.mark.timeout(180)
def test_forget_cleans_the_servers_saved_runs_and_threads(tmp_path: Path) -> None:
    from langgraph_sdk import get_sync_client

    data, server, threads = served_threads(tmp_path)
    assert str(STATE_FILE) in leaks(data, WORD)

    assert forget(data, "--message", "m-secret", "--embedding-model", "none") == 0
    assert leaks(data, WORD) == []
    assert forget(data, "--thread", threads["b"], "--embedding-model", "none") == 0
    assert leaks(data, OTHER) == []

    for _ in server.running():  # the server loads the cleaned file
        client = get_sync_client(url=server.url)
        listed = {t["thread_id"] for t in client.threads.search(limit=10)}
        assert listed == {threads["a"]}
        assert "Unable to load cached data" not in server.log()


@pytest.mark.server
@pytest.mark.timeout(180)
def test_while_served_the_saved_state_is_left_and_forget_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _, _ = served_threads(tmp_path)
    before = (data / STATE_FILE).read_bytes()

    with serving(data):  # what `serve` holds while it runs
        assert forget(data, "--message", "m-secret", "--embedding-model", "none") == 0

    assert "A server is serving" in capsys.readouterr().out
    assert (data / STATE_FILE).read_bytes() == before
