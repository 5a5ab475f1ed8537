"""The Postgres backend on a real server: the loop on it, concurrent edits, the served agent.

The store suites (core, recall, archival, the memory interface) already run on both
backends through the ``memory_backend`` / ``make_backend`` fixtures; this file holds what
only Postgres has: several processes on one database, its schema, and the served graph
with ``MEMGPT_DATABASE_URL``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.duplicates import same_fact
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.postgres import SCHEMA_VERSION, PostgresBackend, SchemaVersionError
from langgraph_memgpt.stores.postgres.db import pg_text
from langgraph_memgpt.stores.types import BlockEditError, EmbeddingMismatchError, RecallMessage

REPO = Path(__file__).resolve().parents[2]


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def remember(fact: str) -> dict[str, Any]:
    return step(call("core_memory_append", label="human", content=fact, request_heartbeat=True))


def reply(text: str) -> dict[str, Any]:
    return step(call("send_message", message=text))


@pytest.fixture
def backend(postgres_url: str) -> Any:
    backend = PostgresBackend(postgres_url, embedding_model="none")
    yield backend
    backend.close()


# -- the loop on Postgres ----------------------------------------------------------------


def test_the_loop_runs_turns_on_postgres_and_a_new_backend_sees_them(
    postgres_url: str, tmp_path: Path
) -> None:
    first = PostgresBackend(postgres_url, embedding_model="none")
    model = ScriptedChatModel.from_steps(
        [
            remember("Name: Ada"),
            reply("Nice to meet you, Ada."),
            step(
                call("archival_memory_insert", content="Ada's bike is a green Bianchi."),
                call("send_message", message="Noted your bike."),
            ),
            step(call("conversation_search", query="bike", request_heartbeat=True)),
            reply("You told me about your green Bianchi."),
        ]
    )
    graph = build_graph(model=model, memory=first).compile(checkpointer=InMemorySaver())
    ctx = Context(agent_id="ada", data_dir=str(tmp_path / "unused"))
    config = {"configurable": {"thread_id": "t1"}}
    replies = []
    for text in ("Hi, I'm Ada.", "My bike is a green Bianchi.", "What bike do I ride?"):
        out = graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
        replies.append(out["messages"][-1].content)
    first.close()

    assert replies == [
        "Nice to meet you, Ada.",
        "Noted your bike.",
        "You told me about your green Bianchi.",
    ]
    # The data dir holds at most the thread-run lock files: no memory is kept there.
    assert not (tmp_path / "unused" / "memory.sqlite").exists()
    assert not (tmp_path / "unused" / "faiss").exists()
    memory = PostgresBackend(postgres_url, embedding_model="none").open("ada")
    assert memory.core.get("human").value == "Name: Ada"
    assert [p.text for p in memory.archival.recent(5)] == ["Ada's bike is a green Bianchi."]
    found = memory.recall.search("bike", mode="fts")
    assert "My bike is a green Bianchi." in [h.item.text for h in found.hits]
    assert memory.recall.count() >= 9  # three user turns, the replies, tool calls, results
    # The search tool call itself was recorded, and is never found by a search.
    calls = [c["name"] for h in found.hits for c in h.item.tool_calls]
    assert "send_message" in calls and "conversation_search" not in calls
    assert state_turn(graph, config) == 3


def state_turn(graph: Any, config: dict[str, Any]) -> int:
    return int(graph.get_state(config).values["turn"])


def test_two_threads_of_one_agent_editing_core_memory_at_once_lose_no_edit(
    backend: PostgresBackend, tmp_path: Path
) -> None:
    edits = 12
    # A content word of its own per line: a restated fact is not appended again.
    words = (
        "apricots canoes dahlias espresso falconry igloos jazz kayaks origami quilts tulips yodels"
    )
    facts = {name: [f"{name} likes {w}" for w in words.split()] for name in ("left", "right")}

    def run(name: str) -> None:
        script = [remember(f) for f in facts[name]] + [reply(f"{name} done")]
        graph = build_graph(model=ScriptedChatModel.from_steps(script), memory=backend).compile(
            checkpointer=InMemorySaver()
        )
        out = graph.invoke(
            {"messages": [HumanMessage(f"remember things, {name}")]},
            {"configurable": {"thread_id": name}},
            context=Context(agent_id="ada", data_dir=str(tmp_path)),
        )
        assert out["messages"][-1].content == f"{name} done"

    threads = [threading.Thread(target=run, args=(name,)) for name in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    lines = backend.open("ada").core.get("human").value.splitlines()
    expected = {f for name in ("left", "right") for f in facts[name]}
    assert sorted(lines) == sorted(expected)
    history = backend.open("ada").core.history("human")
    assert [h["op"] for h in history] == ["create"] + ["append"] * (2 * edits)
    # Each edit started from the value the one before it left: a chain, no lost update.
    for before, after in zip(history, history[1:], strict=False):
        assert after["old_value"] == before["new_value"]


def test_another_agent_sees_nothing_of_alices_through_any_tool(
    backend: PostgresBackend, tmp_path: Path
) -> None:
    def run(agent_id: str, script: list[dict[str, Any]], text: str) -> ScriptedChatModel:
        model = ScriptedChatModel.from_steps(script)
        graph = build_graph(model=model, memory=backend).compile(checkpointer=InMemorySaver())
        graph.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": f"{agent_id}-thread"}},
            context=Context(agent_id=agent_id, data_dir=str(tmp_path)),
        )
        return model

    run(
        "alice",
        [
            remember("Vault code: 4711"),
            step(
                call("archival_memory_insert", content="The vault code is 4711.", tags=["vault"]),
                call("send_message", message="Saved."),
            ),
        ],
        "My vault code is 4711, please remember it.",
    )
    bob = run(
        "bob",
        [
            step(call("conversation_search", query="vault code 4711", request_heartbeat=True)),
            step(call("archival_memory_search", query="vault code", request_heartbeat=True)),
            step(call("conversation_search_date", start_date="2000-01-01", request_heartbeat=True)),
            reply("I know nothing about a vault."),
        ],
        "What is the vault code?",
    )
    seen = str([m.content for messages in bob.calls for m in messages])
    assert "vault" in seen  # bob's own question is there
    assert "4711" not in seen  # nothing of alice's: not in results, prompt or core blocks
    alice = backend.open("alice")
    assert "4711" in alice.core.get("human").value
    assert alice.archival.search("vault").total == 1


WRITER = textwrap.dedent(
    """
    import sys
    from langgraph_memgpt.stores.postgres import PostgresBackend
    from langgraph_memgpt.stores.types import RecallMessage

    url, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    memory = PostgresBackend(url, embedding_model="none").open("shared")
    memory.core.ensure_defaults()
    for i in range(count):
        memory.core.append("human", f"{worker}.{i}")
        # Every worker also re-records the same messages: stored once.
        memory.recall.add([
            RecallMessage("shared", "t", f"m{i}", "user", f"message {i}", "2026-12-01T09:00:00Z"),
            RecallMessage("shared", f"t-{worker}", f"m{i}", "user", f"mine {i}",
                          "2026-12-01T09:00:00Z"),
        ])
        memory.archival.insert(f"passage {worker}.{i}")
    """
)


def test_processes_on_one_database_lose_and_duplicate_nothing(postgres_url: str) -> None:
    workers, count = 4, 25
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, postgres_url, f"w{w}", str(count)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for w in range(workers)
    ]
    for proc in procs:
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, output.decode(errors="replace")

    memory = PostgresBackend(postgres_url, embedding_model="none").open("shared")
    lines = memory.core.get("human").value.splitlines()
    assert len(lines) == workers * count
    assert set(lines) == {f"w{w}.{i}" for w in range(workers) for i in range(count)}
    # Shared thread "t": one row per message id; each worker's own thread: its own rows.
    assert memory.recall.count() == count + workers * count
    assert memory.archival.count() == workers * count


# -- schema and embeddings ---------------------------------------------------------------


def test_the_schema_is_created_once_and_versioned(postgres_url: str) -> None:
    for _ in range(2):  # idempotent
        backend = PostgresBackend(postgres_url, embedding_model="none")
        backend.open("ada").core.ensure_defaults()
        backend.close()
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("SELECT version FROM memgpt_schema WHERE name = 'memory'").fetchone()
        assert version == (SCHEMA_VERSION,)
        conn.execute("UPDATE memgpt_schema SET version = version + 1")
    with pytest.raises(SchemaVersionError, match="newer than this package's"):
        PostgresBackend(postgres_url, embedding_model="none").open("ada")


class Letters(Embeddings):
    """A 16-dimensional bag of letters: another embedding model."""

    model = "letters-16"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = [0.01] + [0.0] * 15
        for char in text.lower():
            vector[ord(char) % 16] += 1.0
        return vector


def test_a_process_starting_beside_writers_locks_no_table(postgres_url: str) -> None:
    """With the schema current, opening memory runs no DDL: a transaction that has read
    the tables (as a writer checking what is stored does) never waits for a new worker,
    nor the worker for it (``ALTER TABLE ... IF NOT EXISTS`` locks even when it changes
    nothing, and such a pair deadlocked in CI)."""
    from langgraph_memgpt.stores.postgres.db import ensure_schema

    backend = PostgresBackend(postgres_url, embeddings=Letters())
    backend.open("ada").archival.insert("seeded")  # schema and HNSW indexes exist
    backend.close()
    impatient = f"{postgres_url}&options=-c%20lock_timeout%3D1000"
    with psycopg.connect(postgres_url) as reader:
        for table in ("memgpt_recall", "memgpt_archival", "memgpt_core_blocks"):
            reader.execute(f"SELECT 1 FROM {table} LIMIT 1")  # held until the end
        ensure_schema(impatient)
        worker = PostgresBackend(impatient, embeddings=Letters())
        try:
            assert worker.open("ada").archival.count() == 1
        finally:
            worker.close()


def test_an_agent_keeps_its_embedding_model(
    postgres_url: str, embeddings: MiniLMEmbeddings
) -> None:
    letters = PostgresBackend(postgres_url, embeddings=Letters())
    letters.open("ada").archival.insert("Ada rides a green bike.")
    letters.close()
    minilm = PostgresBackend(postgres_url, embeddings=embeddings)
    with pytest.raises(EmbeddingMismatchError, match="letters-16"):
        minilm.open("ada")
    # Another agent in the same database may use another model (its own dimension).
    bob = minilm.open("bob")
    bob.archival.insert("Bob's car is a red hatchback.")
    assert bob.archival.search("automobile", mode="vector").hits[0].item.text.startswith("Bob")
    minilm.close()


def test_context_vectors_are_the_mean_of_their_window(
    postgres_url: str, embeddings: MiniLMEmbeddings
) -> None:
    import numpy as np

    from langgraph_memgpt.stores.embeddings import embed_texts, normalize

    memory = PostgresBackend(postgres_url, embeddings=embeddings).open("ada")
    texts = ["I adopted a puppy!", "What is its name?", "Biscuit.", "Cute.", "Ten weeks."]
    for i, text in enumerate(texts):
        memory.recall.add(
            [RecallMessage("ada", "t", f"m{i}", "user", text, f"2026-12-01T09:0{i}:00Z")]
        )
    with memory.recall.pool.connection() as conn:
        (vector,) = conn.execute(
            "SELECT context_embedding FROM memgpt_recall WHERE message_id = 'm2'"
        ).fetchone()
    expected = normalize(embed_texts(embeddings, texts).mean(axis=0))[0]
    assert float(np.dot(vector.to_numpy(), expected)) == pytest.approx(1.0, abs=1e-4)
    page = memory.recall.search("what is the puppy called?", mode="hybrid")
    assert "m2" in [h.item.message_id for h in page.hits]


def test_hnsw_with_iterative_scan_finds_what_the_exact_scan_finds(
    postgres_url: str, embeddings: MiniLMEmbeddings
) -> None:
    texts = [
        "I bought a new car yesterday, a red hatchback.",
        "My favourite food is sushi with lots of wasabi.",
        "It has been raining all week here.",
        "My sister is getting married in June.",
    ]
    exact = PostgresBackend(postgres_url, embeddings=embeddings).open("ada")
    # Many rows of another agent, so a filter on ada is selective for the HNSW graph.
    exact.recall.add(
        [
            RecallMessage("ada", f"t{i}", f"m{i}", "user", t, "2026-12-01T09:00:00Z")
            for i, t in enumerate(texts)
        ]
    )
    crowd = PostgresBackend(postgres_url, embeddings=embeddings).open("crowd")
    crowd.recall.add(
        [
            RecallMessage(
                "crowd", "t", f"c{i}", "user", f"I drive a car, number {i}.", "2026-12-01T09:00:00Z"
            )
            for i in range(60)
        ]
    )
    approximate = PostgresBackend(postgres_url, embeddings=embeddings, exact_scan_limit=0)
    hnsw = approximate.open("ada")
    for query in ("automobile purchase", "wedding", "weather"):
        want = [h.item.message_id for h in exact.recall.search(query, mode="vector").hits]
        got = [h.item.message_id for h in hnsw.recall.search(query, mode="vector").hits]
        assert got == want and len(got) == 4
    # The agent holding most rows is where the planner walks the HNSW graph.
    for query in ("car number 7", "sushi"):
        want = [h.item.message_id for h in crowd.recall.search(query, mode="vector").hits]
        got = [
            h.item.message_id
            for h in approximate.open("crowd").recall.search(query, mode="vector").hits
        ]
        assert set(got) == set(want) and len(got) == 5


# -- the served agent on Postgres ----------------------------------------------------------


@pytest.mark.server
@pytest.mark.timeout(180)
def test_the_served_agent_keeps_memory_and_threads_in_postgres(
    postgres_url: str, tmp_path: Path
) -> None:
    from langgraph_sdk import get_sync_client

    from tests.serve.test_server import DevServer

    (tmp_path / "script.json").write_text(json.dumps([remember("Name: Ada"), reply("Hello Ada!")]))
    data_dir = tmp_path / "data"
    server = DevServer(
        tmp_path,
        data_dir,
        env={
            "MEMGPT_MODEL": f"scripted:{tmp_path / 'script.json'}",
            "MEMGPT_EMBEDDING_MODEL": "none",
            "MEMGPT_DATABASE_URL": postgres_url,
        },
    )
    try:
        server.start()
        client = get_sync_client(url=server.url)
        thread_id = client.threads.create()["thread_id"]
        client.runs.wait(
            thread_id,
            "memgpt",
            input={"messages": [{"role": "user", "content": "hi, I'm Ada"}]},
            context={"agent_id": "ada"},
        )
        run = client.runs.list(thread_id)[0]
        assert run["status"] == "success", server.log()
        values = client.threads.get_state(thread_id)["values"]
        assert values["messages"][-1]["content"] == "Hello Ada!"

        server.stop()
        server.start()  # threads survive a restart: their checkpoints are in Postgres
        client = get_sync_client(url=server.url)
        assert client.threads.get_state(thread_id)["values"]["messages"] == values["messages"]
    finally:
        server.stop()

    with psycopg.connect(postgres_url) as conn:
        (checkpoints,) = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread_id,)
        ).fetchone()
        (human,) = conn.execute(
            "SELECT value FROM memgpt_core_blocks WHERE agent_id = 'ada' AND label = 'human'"
        ).fetchone()
        (messages,) = conn.execute(
            "SELECT count(*) FROM memgpt_recall WHERE agent_id = 'ada' AND thread_id = %s",
            (thread_id,),
        ).fetchone()
    assert checkpoints > 0 and human == "Name: Ada" and messages >= 4
    # Nothing of the agent's went to SQLite files in the data directory.
    assert not (data_dir / "memory.sqlite").exists()
    assert not (data_dir / "checkpoints.sqlite").exists()


# -- any text is safe ----------------------------------------------------------------------


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(max_size=300),
    roles=st.sampled_from([None, ["user"], ["assistant", "system"]]),
)
def test_hypothesis_any_text_is_stored_and_searched_safely(
    backend: PostgresBackend, text: str, roles: list[str] | None
) -> None:
    memory = backend.open("fuzz")
    # Ids made of the text, so two examples never share one ("" and "m" once did).
    message = RecallMessage("fuzz", f"t:{text}", f"m:{text}", "user", text, "2026-12-01T09:00Z")
    memory.recall.add([message])
    # Kept, with U+FFFD for what Postgres cannot hold (NUL, a lone surrogate).
    (stored,) = memory.recall.get([message.message_id])
    assert stored.text == pg_text(text)
    for mode in ("hybrid", "fts"):
        page = memory.recall.search(text, roles=roles, mode=mode, start_date="2026-01-01")
        assert page.total >= len(page.hits)
    if text.strip():
        passage = memory.archival.insert(text, tags=[text[:50]])
        # Or an earlier example's passage that says the same ("[0" for "0"): already saved.
        assert passage.text == pg_text(text) or same_fact(pg_text(text), passage.text)
    page = memory.archival.search(text, tags=[text[:50]] if text.strip() else None)
    assert page.total >= len(page.hits)
    memory.core.ensure_defaults()
    try:
        memory.core.append("human", text[:100])
    except BlockEditError as refused:
        assert "Edit failed" in str(refused)
