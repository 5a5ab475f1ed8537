"""Many workers, one agent: servers on two machines share one Postgres and lose nothing.

Two ``langgraph dev`` servers with the same ``MEMGPT_DATABASE_URL`` and data directories of
their own (two machines: a file lock in one is invisible to the other) serve one agent.
Runs of the agent on different threads at once, spread over both, lose and duplicate
nothing in recall, archival or core memory. Two runs of the *same* thread at once, one on
each server, run one after the other (a Postgres advisory lock per thread,
`PostgresBackend.try_lock_thread`): the thread keeps both turns, never only the last
writer's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from thread_runner import SlowModel

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.stores.postgres import PostgresBackend
from langgraph_memgpt.turn.threads import ThreadBusyError, one_run

REPO = Path(__file__).resolve().parents[2]
SERVERS = ("A", "B")
WORDS = (
    "apricots badminton canoes dahlias espresso falconry gardening harmonicas igloos jazz "
    "kayaks lanterns marmalade nectarines origami pottery quilting radishes sailing tulips "
    "ukuleles violins walnuts xylophones yodelling zucchini"
).split()


def fact(n: int) -> str:
    """A core line with a content word of its own (a restated fact is not appended twice)."""
    return f"Likes {WORDS[n]}"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def remember(line: str) -> dict[str, Any]:
    return call("core_memory_append", label="human", content=line, request_heartbeat=True)


def step(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"content": "", "tool_calls": list(calls)}


@pytest.fixture
def backend(postgres_url: str) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(postgres_url, embedding_model="none")
    yield backend
    backend.close()


# -- the thread claim itself ---------------------------------------------------------------


def test_a_thread_claimed_in_postgres_is_refused_to_every_other_session_until_released(
    postgres_url: str,
) -> None:
    here = PostgresBackend(postgres_url, embedding_model="none")
    there = PostgresBackend(postgres_url, embedding_model="none")  # another machine's
    try:
        release = here.try_lock_thread("t1")
        assert release is not None
        assert there.try_lock_thread("t1") is None
        assert here.try_lock_thread("t1") is None  # a second run in the same process, too
        other = there.try_lock_thread("t2")  # other threads are free
        assert other is not None
        other()
        release()
        again = there.try_lock_thread("t1")
        assert again is not None
        again()
    finally:
        here.close()
        there.close()


HOLDER = textwrap.dedent(
    """
    import sys, time
    from langgraph_memgpt.stores.postgres import PostgresBackend

    backend = PostgresBackend(sys.argv[1], embedding_model="none")
    release = backend.try_lock_thread("t1")  # kept: the claim lives as long as its session
    assert release is not None
    print("holding", flush=True)
    time.sleep(600)
    """
)


def test_a_killed_worker_never_leaves_its_thread_claimed(postgres_url: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, postgres_url],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding", holder.stderr
        assert backend.try_lock_thread("t1") is None
        holder.kill()
        holder.wait(timeout=30)
        deadline = time.monotonic() + 30  # Postgres notices the closed session
        release = backend.try_lock_thread("t1")
        while release is None and time.monotonic() < deadline:
            time.sleep(0.1)
            release = backend.try_lock_thread("t1")
        assert release is not None
        release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        backend.close()


def test_runs_of_one_thread_on_two_machines_take_turns(postgres_url: str, tmp_path: Path) -> None:
    """Two graphs with data directories of their own (no shared file lock), one thread."""
    machines = {}
    for m, name in enumerate(SERVERS):
        model = SlowModel.from_steps(
            [
                s
                for i in range(3)
                for s in (
                    step(remember(fact(3 * m + i))),
                    step(call("send_message", message=f"{name} reply {i}")),
                )
            ]
        )
        backend = PostgresBackend(postgres_url, embedding_model="none")
        machines[name] = (build_graph(model=model, memory=backend), backend, tmp_path / name)
    checkpoints = InMemorySaver()  # shared, as a Postgres checkpointer is
    graphs = {name: g.compile(checkpointer=checkpoints) for name, (g, _, _) in machines.items()}
    config = {"configurable": {"thread_id": "shared"}}

    def turns(name: str) -> None:
        ctx = Context(agent_id="ada", data_dir=str(machines[name][2]), embedding_model="none")
        for i in range(3):
            message = {"messages": [HumanMessage(f"{name} says {i}")]}
            graphs[name].invoke(message, config, context=ctx)

    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(turns, SERVERS))
        values = graphs["A"].get_state(config).values
    finally:
        for _, backend, _ in machines.values():
            backend.close()
    said = [
        str(m.content)
        for m in values["messages"]
        if isinstance(m, HumanMessage | AIMessage) and m.content
    ]
    # Every turn is there, each user message directly followed by its own reply.
    assert sorted(said[0::2]) == sorted(f"{n} says {i}" for n in SERVERS for i in range(3))
    assert [s.replace("says", "reply") for s in said[0::2]] == said[1::2]
    assert values["turn"] == 6
    memory = PostgresBackend(postgres_url, embedding_model="none").open("ada")
    lines = memory.core.get("human").value.splitlines()
    assert sorted(lines) == sorted(fact(n) for n in range(6))


def test_a_thread_a_worker_elsewhere_keeps_too_long_is_a_clear_error(
    backend: PostgresBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_memgpt.turn import threads

    monkeypatch.setattr(threads, "THREAD_WAIT_SECONDS", 0.3)
    config = {"configurable": {"thread_id": "busy-thread"}}
    elsewhere = PostgresBackend(backend.url, embedding_model="none")
    release = elsewhere.try_lock_thread("busy-thread")
    assert release is not None
    try:
        with (
            pytest.raises(ThreadBusyError, match="thread 'busy-thread' is busy"),
            one_run(config, str(tmp_path), backend),
        ):
            pass
    finally:
        release()
        elsewhere.close()
    with one_run(config, str(tmp_path), backend):  # free again
        pass


# -- two real servers on one database -------------------------------------------------------


class TwoServers:
    """``langgraph dev`` twice: one Postgres, a data directory and a script each."""

    def __init__(self, root: Path, postgres_url: str, scripts: dict[str, list[Any]]) -> None:
        from tests.serve.test_server import DevServer

        self.servers = {}
        for name in SERVERS:
            home = root / name
            home.mkdir()
            (home / "script.json").write_text(json.dumps(scripts[name]))
            self.servers[name] = DevServer(
                home,
                home / "data",
                env={
                    "MEMGPT_MODEL": f"scripted:{home / 'script.json'}",
                    "MEMGPT_EMBEDDING_MODEL": "none",
                    "MEMGPT_DATABASE_URL": postgres_url,
                },
            )

    def __enter__(self) -> dict[str, Any]:
        from langgraph_sdk import get_sync_client

        for server in self.servers.values():
            server.start()
        return {name: get_sync_client(url=s.url) for name, s in self.servers.items()}

    def __exit__(self, *exc: object) -> None:
        for server in self.servers.values():
            server.stop()

    def logs(self) -> str:
        return "\n".join(s.log() for s in self.servers.values())


def texts_of(values: dict[str, Any]) -> list[str]:
    """User messages and replies of a served thread's state, in order."""
    return [
        str(m["content"])
        for m in values["messages"]
        if m["type"] in ("human", "ai") and isinstance(m["content"], str) and m["content"]
        and m.get("name") != "system_alert"
    ]  # fmt: skip


def ask(client: Any, thread_id: str, text: str) -> None:
    client.threads.create(thread_id=thread_id, if_exists="do_nothing")
    client.runs.wait(
        thread_id,
        "memgpt",
        input={"messages": [{"role": "user", "content": text}]},
        context={"agent_id": "ada"},
        raise_error=True,
    )


@pytest.mark.server
@pytest.mark.timeout(420)
def test_runs_of_one_agent_on_many_threads_over_two_servers_lose_and_duplicate_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    threads_, turns = 6, 2  # 12 runs, 6 on each server, all threads at once
    per_server = threads_ * turns // 2
    scripts = {
        name: [
            step(
                call("core_memory_append", label="human", content=fact(m * per_server + k)),
                call("archival_memory_insert", content=f"passage {name}{k}"),
                call("send_message", message=f"reply {name}{k}"),
            )
            for k in range(per_server)
        ]
        for m, name in enumerate(SERVERS)
    }
    served = TwoServers(tmp_path, postgres_url, scripts)
    ids = [str(uuid.uuid4()) for _ in range(threads_)]  # the server takes UUIDs only
    with served as clients:

        def talk(i: int) -> None:
            for turn in range(turns):
                server = SERVERS[(i + turn) % 2]  # each thread's turns alternate servers
                ask(clients[server], ids[i], f"thread {i} turn {turn}")

        with ThreadPoolExecutor(threads_) as pool:
            list(pool.map(talk, range(threads_)))
        states = {
            i: clients[SERVERS[i % 2]].threads.get_state(ids[i])["values"] for i in range(threads_)
        }

    runs = [f"{name}{k}" for name in SERVERS for k in range(per_server)]
    for i, values in states.items():
        said = texts_of(values)
        assert said[0::2] == [f"thread {i} turn {t}" for t in range(turns)], served.logs()
        assert all(s.startswith("reply ") for s in said[1::2]) and len(said) == 2 * turns
    memory = PostgresBackend(postgres_url, embedding_model="none").open("ada")
    lines = memory.core.get("human").value.splitlines()
    assert sorted(lines) == sorted(fact(n) for n in range(len(runs)))
    assert memory.archival.count() == len(runs)
    assert sorted(p.text for p in memory.archival.recent(100)) == sorted(
        f"passage {r}" for r in runs
    )
    users = Counter(m.text for m in memory.recall.latest(1000) if m.role == "user")
    assert users == Counter(f"thread {i} turn {t}" for i in range(threads_) for t in range(turns))
    replies = Counter(
        c["args"]["message"]
        for m in memory.recall.latest(1000)
        for c in m.tool_calls
        if c["name"] == "send_message"
    )
    assert replies == Counter(f"reply {r}" for r in runs)


@pytest.mark.server
@pytest.mark.timeout(420)
def test_two_runs_of_one_thread_on_two_servers_at_once_keep_both_turns(
    postgres_url: str, tmp_path: Path
) -> None:
    rounds, edits = 4, 3  # each run edits core memory a few times before it replies
    scripts = {
        name: [
            s
            for r in range(rounds)
            for s in [
                step(remember(fact((m * rounds + r) * edits + e))) for e in range(edits)
            ]
            + [step(call("send_message", message=f"{name} done {r}"))]
        ]
        for m, name in enumerate(SERVERS)
    }  # fmt: skip
    served = TwoServers(tmp_path, postgres_url, scripts)
    shared = str(uuid.uuid4())
    with served as clients:
        for name in SERVERS:
            clients[name].threads.create(thread_id=shared, if_exists="do_nothing")
        for r in range(rounds):
            start = threading.Barrier(2)

            def one(name: str, r: int = r, start: threading.Barrier = start) -> None:
                start.wait()
                ask(clients[name], shared, f"{name} asks {r}")

            with ThreadPoolExecutor(2) as pool:
                list(pool.map(one, SERVERS))
        values = clients["A"].threads.get_state(shared)["values"]

    said = texts_of(values)
    asked = [s for s in said if " asks " in s]
    assert sorted(asked) == sorted(f"{n} asks {r}" for n in SERVERS for r in range(rounds)), (
        said,
        served.logs(),
    )
    # One run after the other: each question directly followed by its own server's reply.
    assert said[1::2] == [s.replace(" asks ", " done ") for s in said[0::2]], said
    assert values["turn"] == 2 * rounds
    memory = PostgresBackend(postgres_url, embedding_model="none").open("ada")
    lines = memory.core.get("human").value.splitlines()
    assert sorted(lines) == sorted(fact(n) for n in range(2 * rounds * edits))
    users = Counter(m.text for m in memory.recall.latest(1000) if m.role == "user")
    assert users == Counter(asked)
