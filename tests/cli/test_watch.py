"""The watcher on a real temporary folder: real file writes, deletions and re-creations.

The watcher runs in a thread and hands its events to a list (the sink); the test waits for
what it expects with a generous deadline, never for a fixed time.
"""

from __future__ import annotations

import queue
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_memgpt.cli.watch import Watcher
from langgraph_memgpt.cli.watch_text import changed_lines
from langgraph_memgpt.tools.file_rules import looks_like_credential

DEADLINE_S = 60.0


class Watching:
    """A `Watcher` over ``paths`` in a thread; its batches arrive in ``batches``."""

    def __init__(self, paths: list[Path], **options: Any) -> None:
        self.batches: queue.Queue[list[dict[str, str]]] = queue.Queue()
        self.ready = threading.Semaphore(0)
        self.stop = threading.Event()
        self.watcher = Watcher(
            paths,
            self.batches.put,
            debounce_ms=200,
            poll_ms=100,
            on_ready=self.ready.release,
            **options,
        )
        self.thread = threading.Thread(target=self.watcher.run, args=(self.stop,), daemon=True)

    def live(self) -> None:
        """Wait until the watch is live (it sees changes from now on)."""
        assert self.ready.acquire(timeout=DEADLINE_S), "the watch did not start"

    def next_batch(self) -> list[dict[str, str]]:
        return self.batches.get(timeout=DEADLINE_S)

    def texts(self) -> list[str]:
        return [event["text"] for event in self.next_batch()]


@pytest.fixture
def watching(tmp_path: Path) -> Iterator[Watching]:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "config.yaml").write_text("name: reports\noutput_format: json\n")
    running = Watching([folder])
    running.thread.start()
    running.live()
    yield running
    running.stop.set()
    running.thread.join(timeout=DEADLINE_S)
    assert not running.thread.is_alive()


def test_one_file_change_becomes_one_event_with_its_changed_lines(
    watching: Watching, tmp_path: Path
) -> None:
    config = tmp_path / "project" / "config.yaml"
    config.write_text("name: reports\noutput_format: parquet\n")

    (event,) = watching.next_batch()
    assert event["source"] == "watcher" and event["time"]
    assert event["text"] == (
        f"config.yaml (in {config.parent}) was modified. Changed lines:\n"
        "- output_format: json\n+ output_format: parquet"
    )
    # Nothing more for that change: the next batch is the next change's alone.
    (config.parent / "notes.txt").write_text("hello\n")
    (after,) = watching.texts()
    assert after.startswith("notes.txt") and "was added" in after


def test_a_credential_files_content_is_withheld(watching: Watching, tmp_path: Path) -> None:
    env = tmp_path / "project" / ".env"
    env.write_text("OPENAI_API_KEY=sk-live-abcdefghijklmnopqrstuvwxyz123456\n")

    (text,) = watching.texts()
    assert (
        text
        == f".env (in {env.parent}) was added: it looks like a credential file, content withheld."
    )
    assert "sk-live" not in text


def test_a_secret_in_an_ordinary_file_is_withheld(watching: Watching, tmp_path: Path) -> None:
    config = tmp_path / "project" / "config.yaml"
    config.write_text("name: reports\npassword = hunter2hunter2\n")

    (text,) = watching.texts()
    assert "content withheld" in text
    assert "hunter2" not in text


def test_the_watch_survives_its_folder_being_deleted_and_picks_it_up_again(
    watching: Watching, tmp_path: Path
) -> None:
    folder = tmp_path / "project"
    shutil.rmtree(folder)
    assert watching.texts() == [f"Watched {folder} was deleted."]
    assert watching.thread.is_alive()

    folder.mkdir()
    assert watching.texts() == [f"Watched {folder} is back."]
    watching.live()  # watched again
    (folder / "config.yaml").write_text("output_format: parquet\n")
    (text,) = watching.texts()
    assert text.startswith("config.yaml") and "+ output_format: parquet" in text


def test_a_watched_file_is_seen_through_a_save_by_rename(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("output_format: json\n")
    (tmp_path / "other.txt").write_text("not watched\n")
    running = Watching([config])
    running.thread.start()
    try:
        running.live()
        (tmp_path / "other.txt").write_text("still not watched\n")
        saved = tmp_path / ".config.yaml.tmp"
        saved.write_text("output_format: parquet\n")
        saved.replace(config)  # how editors save
        texts = running.texts()
        assert texts == [
            f"config.yaml (in {tmp_path}) was modified. Changed lines:\n"
            "- output_format: json\n+ output_format: parquet"
        ]
    finally:
        running.stop.set()
        running.thread.join(timeout=DEADLINE_S)


def test_a_failed_delivery_is_retried_with_the_next_batch(tmp_path: Path) -> None:
    delivered: list[list[dict[str, str]]] = []
    attempts = 0

    def flaky(events: list[dict[str, str]]) -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("server restarting")
        delivered.append(events)

    watcher = Watcher([tmp_path], flaky)
    first = watcher.events_for([])
    assert first == []
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    from watchfiles import Change

    watcher._deliver(watcher.events_for([(Change.added, str(tmp_path / "a.txt"))]))
    watcher._deliver(watcher.events_for([(Change.added, str(tmp_path / "b.txt"))]))
    assert [[e["text"].split(" ")[0] for e in batch] for batch in delivered] == [["a.txt", "b.txt"]]


def test_the_agents_own_data_dir_is_never_reported(tmp_path: Path) -> None:
    data = tmp_path / ".memgpt"
    data.mkdir()
    watcher = Watcher([tmp_path], lambda events: None, ignore=[data])
    from watchfiles import Change

    assert watcher.events_for([(Change.modified, str(data / "memory.sqlite"))]) == []


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.local",
        "server.pem",
        "deploy_key",
        "api-token.txt",
        "credentials.json",
        "client_secret.json",
        "id_ed25519",
    ],
)
def test_credential_names(name: str) -> None:
    assert looks_like_credential(Path("/p") / name)


def test_files_under_ssh_are_credentials_and_ordinary_names_are_not() -> None:
    assert looks_like_credential(Path("/home/u/.ssh/config"))
    assert not looks_like_credential(Path("/p/config.yaml"))


def test_a_long_diff_is_cut() -> None:
    old = "".join(f"line {i}\n" for i in range(1000))
    new = "".join(f"row {i}\n" for i in range(1000))
    shown = changed_lines(old, new, limit=300)
    assert len(shown) < 400 and shown.endswith("(more changes not shown)")


def test_a_file_change_reaches_the_agent_as_an_event_it_acts_on(tmp_path: Path) -> None:
    """End to end in-process: the watcher's batch is a run whose event edits core memory."""
    from langgraph.checkpoint.memory import InMemorySaver

    from langgraph_memgpt import Context, build_graph
    from langgraph_memgpt.llm.scripted import ScriptedChatModel
    from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all

    backend = SqliteBackend(tmp_path / "data", embedding_model="none")
    edit = {
        "name": "core_memory_replace",
        "args": {"label": "human", "old_content": "JSON", "new_content": "Parquet"},
    }
    model = ScriptedChatModel.from_steps([{"content": "", "tool_calls": [edit]}])
    graph = build_graph(model=model, memory=backend).compile(checkpointer=InMemorySaver())
    ctx = Context(agent_id="ada", data_dir=str(tmp_path / "data"), human="Output format: JSON")
    backend.open("ada").core.ensure_defaults(persona="I help.", human=ctx.human)
    config: Any = {"configurable": {"thread_id": "watch"}}
    outputs: queue.Queue[dict[str, Any]] = queue.Queue()

    def run(events: list[dict[str, str]]) -> None:
        outputs.put(graph.invoke({"events": events}, config, context=ctx))

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "config.yaml").write_text("output_format: json\n")
    running = Watching([folder])
    running.watcher.send = run
    running.thread.start()
    try:
        running.live()
        (folder / "config.yaml").write_text("output_format: parquet\n")
        output = outputs.get(timeout=DEADLINE_S)
    finally:
        running.stop.set()
        running.thread.join(timeout=DEADLINE_S)

    assert backend.open("ada").core.get("human").value == "Output format: Parquet"
    assert output["event_outcome"]["edits"][0]["ok"] is True
    prompt = model.calls[0][-1]
    assert isinstance(prompt, HumanMessage) and "+ output_format: parquet" in str(prompt.content)
    backend.close()
    close_all()
