"""The served erasers leave nothing: the memory page's Forget and the sleep-time run's retention.

A real ``langgraph dev`` (cwd: the data directory, as ``serve`` runs it) on SQLite, and on a
throwaway Postgres. A turn saves a passage and replies in the same step (the step's calls
stay in the checkpoint's ``repeat_key``, the thread's saved values and ``messages``); another
thread's search shows it. Then the page's Forget (``DELETE /memory/api/archival``) forgets one
passage, and a ``memgpt_sleeptime`` run through ``langgraph_sdk`` purges the other by its
retention rule. After each, while the server still runs and again after it stopped: no file
of the data directory (checkpoints and their write-ahead logs, the memory database, the
server's own saved runs and threads) and no row of any Postgres table holds the words, and
the threads API shows none of them. Then the model's ``forget`` tool, called in a run of a
thread of its own, leaves every other thread clean.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from checkpointers import Place

from langgraph_memgpt.ops.retention import rule
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all
from tests.ops.test_forget_gone import leaks
from tests.serve.test_server import DevServer

PAGE_WORD = "okapi6620"
RETENTION_WORD = "narwhal4471"
KEPT_WORD = "capybara2093"


def call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": cid}


def save_and_reply(cid: str, content: str, tag: str) -> dict[str, Any]:
    """One step: a passage saved and the reply sent (the calls stay in ``repeat_key``)."""
    return {
        "content": "",
        "tool_calls": [
            call("archival_memory_insert", f"{cid}-a", content=content, tags=[tag]),
            call("send_message", f"{cid}-b", message="Noted."),
        ],
    }


SCRIPT = [
    save_and_reply("c1", f"Ada's passport number is {PAGE_WORD}.", "personal"),
    save_and_reply("c2", f"The vault code is now {RETENTION_WORD}.", "ephemeral"),
    save_and_reply("c3", f"Ada likes {KEPT_WORD} videos.", "keep"),
    {
        "content": "",
        "tool_calls": [
            call("archival_memory_search", "c4", query="passport vault", request_heartbeat=True)
        ],
    },
    {"content": "", "tool_calls": [call("send_message", "c5", message="Your passport.")]},
    "nothing to tidy",  # the sleep-time run's proposal (not JSON: it changes nothing)
    {
        "content": "",
        "tool_calls": [call("forget", "c6", about=f"{KEPT_WORD} videos", request_heartbeat=True)],
    },
    {"content": "", "tool_calls": [call("send_message", "c7", message="Forgotten.")]},
]


class Served:
    """A running ``langgraph dev`` of agent ada, with the memory it uses."""

    def __init__(self, server: DevServer, url: str) -> None:
        self.server = server
        self.url = url
        self.backend: MemoryBackend | None = None

    def memory(self) -> Any:
        if not self.url:
            close_all()
            return SqliteBackend(self.server.data_dir, embedding_model="none").open("ada")
        if self.backend is None:
            from langgraph_memgpt.stores.postgres import PostgresBackend

            self.backend = PostgresBackend(self.url, embedding_model="none")
        return self.backend.open("ada")

    def leaks(self, word: str) -> list[str]:
        """Every file of the data directory, and every Postgres row, holding ``word``."""
        close_all()
        found = sorted(
            str(p.relative_to(self.server.data_dir))
            for p in self.server.data_dir.rglob("*")
            if p.is_file() and word.encode() in p.read_bytes()
        )
        if not self.url:
            return found
        return found + leaks(Place("postgres", self.server.data_dir, self.url), word)


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = {"MEMGPT_MODEL": f"scripted:{script}", "MEMGPT_EMBEDDING_MODEL": "none"}
    url = ""
    if request.param == "postgres":
        url = str(request.getfixturevalue("postgres_url"))
        env["MEMGPT_DATABASE_URL"] = url
    server = DevServer(data, data, env=env)  # cwd: the data directory, as `serve` runs it
    for _ in server.running():
        it = Served(server, url)
        yield it
        if it.backend is not None:
            it.backend.close()


def ask(client: Any, thread_id: str, text: str) -> None:
    client.runs.wait(
        thread_id,
        "memgpt",
        input={"messages": [{"role": "user", "content": text}]},
        context={"agent_id": "ada"},
    )


def passage_id(served: Served, word: str) -> int:
    answer = httpx.get(f"{served.server.url}/memory/api/archival?agent=ada&page_size=50")
    assert answer.status_code == 200, answer.text
    (found,) = [p["id"] for p in answer.json()["passages"] if word in p["text"]]
    return int(found)


def thread_texts(client: Any, threads: list[str]) -> str:
    """What the threads API shows of the threads (state and saved values)."""
    return json.dumps(
        [[client.threads.get_state(t)["values"], client.threads.get(t)["values"]] for t in threads],
        default=str,
    )


@pytest.mark.server
@pytest.mark.timeout(300)
def test_the_pages_forget_the_servers_retention_and_the_forget_tool_leave_no_copy(
    served: Served,
) -> None:
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=served.server.url)
    threads = [client.threads.create()["thread_id"] for _ in range(4)]
    ask(client, threads[0], "Please keep my passport number safe.")
    ask(client, threads[1], "The vault code changed, note it.")
    ask(client, threads[2], "Note what videos I like.")
    ask(client, threads[3], "What did I ask you to keep?")  # a search shows both
    for word in (PAGE_WORD, RETENTION_WORD, KEPT_WORD):
        assert served.leaks(word), word
        assert word in thread_texts(client, threads), word

    # The memory page's Forget.
    gone = httpx.delete(
        f"{served.server.url}/memory/api/archival?agent=ada&id={passage_id(served, PAGE_WORD)}"
    )
    assert gone.status_code == 200, gone.text
    assert served.leaks(PAGE_WORD) == []
    assert PAGE_WORD not in thread_texts(client, threads)
    assert served.leaks(RETENTION_WORD)  # only what was forgotten went

    # The server's sleep-time run purges by its retention rule.
    served.memory().archival.set_retention_rule(rule("ephemeral", "1s"))
    time.sleep(1.1)  # the rule's age passes (nothing is timed: it only has to be over)
    tidy = client.threads.create()["thread_id"]
    out = client.runs.wait(tidy, "memgpt_sleeptime", input={}, context={"agent_id": "ada"})
    assert isinstance(out, dict) and out["retention"]["count"] == 1, out
    assert served.leaks(RETENTION_WORD) == []
    assert RETENTION_WORD not in thread_texts(client, [*threads, tidy])

    # The model's forget tool, in a run of its own thread: every other thread is clean.
    assert KEPT_WORD in thread_texts(client, threads)  # what was not forgotten stayed
    asker = client.threads.create()["thread_id"]
    ask(client, asker, "Forget which videos I like.")
    assert KEPT_WORD not in thread_texts(client, threads)

    # A stopped server's files stay clean.
    served.server.stop()
    for word in (PAGE_WORD, RETENTION_WORD):
        assert served.leaks(word) == [], word
