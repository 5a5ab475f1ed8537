"""Nothing leaked: two agents share one data directory; neither reads nor changes the other.

Agent A (Alice) fills every tier with secrets. Agent B then runs through the graph with a
scripted model that calls every memory tool with adversarial arguments (A's words, A's
tags, all of time, many pages, A's core text, SQL injection) under several agent ids,
some of them injection strings themselves. No tool result, prompt or ``inspect`` table of
B holds anything of A's, the benchmark ingest sees only its own agent, and A's rows, FTS
entries and FAISS files are byte-for-byte what they were.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import _with_database
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from rich.console import Console

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.sqlite import close_all, open_memory
from langgraph_memgpt.stores.sqlite.faiss_cache import agent_cache_dir
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes

ALICE = "alice"
# Every secret of Alice's is built from these words, so any leak shows up as one of them.
SECRETS = ["zebrafish", "quillwort", "marzipan", "xylophonist", "obsidianite"]
SECRET_TAG = f"{SECRETS[2]}-private"  # a leaked tag shows up as a secret word too
INJECTIONS = [
    "'; DROP TABLE recall; --",
    '" OR 1=1 --',
    "alice' OR '1'='1",
    "%",
    "*",
    "alice%",
    "') UNION SELECT text FROM archival --",
    "\x00alice",
]
# Agent ids for B: plain, look-alikes of Alice's, and injection strings.
B_AGENTS = ["bob", "ALICE", "alice ", "alice\x00", "%", "alice' OR '1'='1", INJECTIONS[0]]


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": {**args, "request_heartbeat": True}}


def step(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"content": "", "tool_calls": list(calls)}


def send(text: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    yield
    close_all()
    forget_loaded_indexes()


def run_agent(
    data_dir: Path, agent_id: str, steps: list[Any], message: str, memory: Any = None
) -> list[Any]:
    """One turn of ``agent_id`` on a fresh thread; returns the prompts the model was sent.

    ``memory``: a backend (Postgres); default the embedded one in ``data_dir``.
    """
    model = ScriptedChatModel.from_steps(steps)
    graph = build_graph(
        model=model, summary_model=ScriptedChatModel.from_steps(["I chatted."] * 3), memory=memory
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"{agent_id}-{uuid.uuid4().hex[:6]}"}}
    # A window wide enough that the whole adversarial turn stays in view (no eviction).
    ctx = Context(
        data_dir=str(data_dir),
        agent_id=agent_id,
        max_steps=len(steps) + 1,
        context_window=1_000_000,
    )
    out = graph.invoke({"messages": [HumanMessage(message)]}, config, context=ctx)
    assert model.remaining == 0, "the scripted turn did not run to its end"
    return [*model.calls, out["messages"]]


def make_alice(data_dir: Path, memory: Any = None) -> None:
    """Alice's memory: core edits, archival passages with tags, a conversation.

    Her FAISS caches are written when her memory is closed (``close_all``) afterwards.
    """
    steps = [
        step(call("core_memory_append", label="human", content=f"Likes {SECRETS[0]} tanks")),
        step(
            call(
                "archival_memory_insert",
                content=f"Alice's {SECRETS[1]} garden is behind the {SECRETS[2]} bakery",
                tags=[SECRET_TAG, "garden"],
            ),
            call(
                "archival_memory_insert",
                content=f"Alice's bank PIN hint: {SECRETS[3]}",
                tags=[SECRET_TAG, "garden"],
            ),
        ),
        step(
            call(
                "core_memory_replace",
                label="human",
                old_content="tanks",
                new_content=f"tanks by the {SECRETS[1]}",
            )
        ),
        send(f"Noted, Alice: {SECRETS[4]}."),
    ]
    text = f"I am Alice; my {SECRETS[0]} and {SECRETS[4]} matter."
    run_agent(data_dir, ALICE, steps, text, memory)


def snapshot(data_dir: Path, agent_id: str) -> dict[str, Any]:
    """Every byte of an agent's memory: its rows in every table, FTS entries, FAISS files."""
    folder = agent_cache_dir(Path(data_dir) / "faiss", agent_id)
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}
    memory = open_memory(data_dir, agent_id)
    conn = memory.db.conn
    rows: dict[str, Any] = {}
    for table in (
        "core_blocks",
        "core_block_history",
        "recall",
        "archival",
        "archival_tags",
        "vectors",
        "vector_state",
    ):
        rows[table] = conn.execute(
            f"SELECT * FROM {table} WHERE agent_id = ? ORDER BY rowid", (agent_id,)
        ).fetchall()
    rows["recall_fts"] = conn.execute(
        "SELECT rowid, text FROM recall_fts WHERE rowid IN "
        "(SELECT id FROM recall WHERE agent_id = ?) ORDER BY rowid",
        (agent_id,),
    ).fetchall()
    rows["archival_fts"] = conn.execute(
        "SELECT rowid, text FROM archival_fts WHERE rowid IN "
        "(SELECT id FROM archival WHERE agent_id = ?) ORDER BY rowid",
        (agent_id,),
    ).fetchall()
    keys = [f"embedding:{tier}:{agent_id}" for tier in ("recall", "archival")]
    rows["meta"] = conn.execute(
        "SELECT key, value FROM meta WHERE key IN (?, ?) ORDER BY key", keys
    ).fetchall()
    rows["faiss"] = files
    close_all()
    forget_loaded_indexes()
    return rows


def schema(data_dir: Path) -> list[Any]:
    memory = open_memory(data_dir, "schema-reader")
    found = memory.db.conn.execute("SELECT type, name FROM sqlite_master ORDER BY name").fetchall()
    close_all()
    return found


@pytest.fixture(scope="module")
def alice_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("shared")
    make_alice(data_dir)
    close_all()
    forget_loaded_indexes()
    before = snapshot(data_dir, ALICE)
    assert len(before["archival"]) == 2 and before["faiss"], "Alice's memory was not built"
    assert any(SECRETS[0] in str(r) for r in before["core_blocks"])
    return data_dir


def adversarial_steps() -> list[Any]:
    """B's model: every tool, with every argument aimed at Alice's memory."""
    wide = {"start_date": "1970-01-01", "end_date": "2999-12-31"}
    steps: list[Any] = []
    for query in [*SECRETS, " ".join(SECRETS), "Alice", "", *INJECTIONS]:
        steps.append(
            step(
                call("conversation_search", query=query, **wide),
                call("conversation_search", query=query, roles=["user", "assistant"], page=1),
                call("archival_memory_search", query=query, tags=[SECRET_TAG], **wide),
                call(
                    "archival_memory_search",
                    query=query,
                    tags=[SECRET_TAG, "garden"],
                    tag_match="all",
                ),
                call("archival_memory_search", query=query, page=0),
            )
        )
    for page in range(3):
        steps.append(
            step(
                call("conversation_search_date", page=page, **wide),
                call("archival_memory_search", query="", tags=[], page=page),
                call("conversation_search", query="", page=page),
            )
        )
    for text in [*INJECTIONS, f"Likes {SECRETS[0]} tanks"]:
        steps.append(
            step(
                call("core_memory_replace", label="human", old_content=text, new_content="pwned"),
                call("core_memory_replace", label=text, old_content=text, new_content="pwned"),
                call("core_memory_append", label=text, content=text),
                call("conversation_search_date", start_date=text, end_date=text),
                call("archival_memory_search", query=text, tags=[text], start_date=text),
            )
        )
    steps.append(
        step(
            call("core_memory_append", label="human", content="Bob's own note"),
            call("archival_memory_insert", content="Bob's own passage", tags=["garden"]),
            call("archival_memory_insert", content=INJECTIONS[0], tags=INJECTIONS),
        )
    )
    steps.append(step(call("archival_memory_search", query="own passage", tags=["garden"])))
    steps.append(send("done"))
    return steps


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text.lower()]


def check_nothing_leaked(prompts_and_queue: list[Any]) -> None:
    """No prompt, tool result or queue of B's holds anything of Alice's; B's own search works."""
    queue = prompts_and_queue[-1]
    results = [json.loads(m.content) for m in queue if isinstance(m, ToolMessage)]
    assert len(results) > 80
    # What B's model itself wrote may come back (an error quotes its arguments); nothing
    # else of Alice's may.
    asked = {
        str(c["id"]): json.dumps(c["args"], ensure_ascii=False).lower()
        for m in queue
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    }
    for prompt in prompts_and_queue:  # every prompt B's model saw, and B's final queue
        for message in prompt:
            if isinstance(message, ToolMessage):
                echoed = asked[message.tool_call_id]
                found = [s for s in leaks(str(message.content)) if s not in echoed]
                assert not found, message.content
            elif message.type == "system":
                assert not leaks(str(message.content)), message.content
    # B's own memory works (the searches are not vacuous): it finds its own passage by a
    # tag Alice uses too, and nothing of hers.
    own = results[-2]
    assert own["status"] == "OK" and "Bob's own passage" in own["message"]
    assert "Alice" not in own["message"]


@pytest.mark.parametrize("agent_b", B_AGENTS)
def test_another_agent_cannot_read_or_change_anything_through_any_tool(
    alice_dir: Path, agent_b: str
) -> None:
    before = snapshot(alice_dir, ALICE)
    tables = schema(alice_dir)
    check_nothing_leaked(run_agent(alice_dir, agent_b, adversarial_steps(), "show me everything"))
    close_all()
    forget_loaded_indexes()
    assert snapshot(alice_dir, ALICE) == before
    assert schema(alice_dir) == tables, "a table or index was dropped or added"


# -- the same on Postgres ------------------------------------------------------------------

PG_TABLES = (
    "memgpt_core_blocks",
    "memgpt_core_block_history",
    "memgpt_recall",
    "memgpt_archival",
    "memgpt_embeddings",
)


def pg_snapshot(url: str, agent_id: str) -> dict[str, Any]:
    """Every row of an agent's in every memory table, and the database's tables and indexes."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = {
            table: [
                tuple(str(v) for v in row)
                for row in conn.execute(
                    f"SELECT * FROM {table} WHERE agent_id = %s ORDER BY 1, 2", (agent_id,)
                ).fetchall()
            ]
            for table in PG_TABLES
        }
        rows["schema"] = conn.execute(
            "SELECT relkind::text, relname FROM pg_class "
            "WHERE relnamespace = 'public'::regnamespace ORDER BY relname"
        ).fetchall()
    return rows


@pytest.fixture(scope="module")
def alice_on_postgres(
    postgres_server: str, embeddings: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    """Alice's memory in a database of its own, for the module; yields (url, backend)."""
    import psycopg

    from langgraph_memgpt.stores.postgres import PostgresBackend

    name = f"memgpt_isolation_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = _with_database(postgres_server, name)
    backend = PostgresBackend(url, embeddings=embeddings)
    try:
        make_alice(tmp_path_factory.mktemp("pg-locks"), backend)
        before = pg_snapshot(url, ALICE)
        assert len(before["memgpt_archival"]) == 2, "Alice's memory was not built"
        assert any(SECRETS[0] in str(r) for r in before["memgpt_core_blocks"])
        yield url, backend
    finally:
        backend.close()
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("agent_b", [a for a in B_AGENTS if "\x00" not in a])
def test_on_postgres_another_agent_cannot_read_or_change_anything_through_any_tool(
    alice_on_postgres: tuple[str, Any], agent_b: str, tmp_path: Path
) -> None:
    url, backend = alice_on_postgres
    before = pg_snapshot(url, ALICE)
    check_nothing_leaked(
        run_agent(tmp_path, agent_b, adversarial_steps(), "show me everything", backend)
    )
    assert pg_snapshot(url, ALICE) == before


def test_on_postgres_an_agent_id_postgres_cannot_hold_is_refused(
    alice_on_postgres: tuple[str, Any],
) -> None:
    _, backend = alice_on_postgres
    with pytest.raises(ValueError, match="not valid Unicode text"):
        backend.open("alice\x00")


def test_inspect_shows_only_the_agents_own_memory(alice_dir: Path) -> None:
    from langgraph_memgpt.cli.console import memory_tables

    before = snapshot(alice_dir, ALICE)
    # Fresh agents (the others' own recall quotes the secrets their models searched for).
    for agent_b in ["carol", "Alice", "alice\t", "_", "alice' --", "' OR 1=1 --"]:
        memory = open_memory(alice_dir, agent_b)
        memory.core.ensure_defaults(human="Carol's notes")
        memory.archival.insert(f"{agent_b}'s own passage", tags=["garden"])
        console = Console(record=True, width=300)
        for table in memory_tables(memory, recent=100):
            console.print(table)
        shown = console.export_text()
        assert not leaks(shown), (agent_b, shown)
        assert "garden" in shown  # its own passage is shown
        close_all()
    alice = open_memory(alice_dir, ALICE)
    console = Console(record=True, width=300)
    for table in memory_tables(alice, recent=100):
        console.print(table)
    assert SECRETS[1] in console.export_text()  # the check above can see a leak
    close_all()
    forget_loaded_indexes()
    assert snapshot(alice_dir, ALICE) == before


def test_the_benchmark_ingest_reads_and_writes_only_its_own_agent(
    alice_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = pytest.importorskip("benchmarks.bench.runner")
    from benchmarks.bench.locomo import load_locomo
    from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
    from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory

    sample = {
        "sample_id": "alice",  # the same id as the agent: the bench must still not leak
        "conversation": {
            "speaker_a": "Carol",
            "speaker_b": "Dave",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Carol", "dia_id": "D1:1", "text": "My dog is called Rex."},
                {"speaker": "Dave", "dia_id": "D1:2", "text": "Rex is a fine name."},
            ],
        },
        "qa": [
            {"question": q, "answer": "Rex", "evidence": ["D1:1"], "category": 1}
            for q in ["What is Carol's dog called?", *SECRETS, " ".join(SECRETS), *INJECTIONS]
        ],
    }
    sample_b = {**sample, "sample_id": "' OR '1'='1"}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample_b]), encoding="utf-8")
    conversations = load_locomo(path)
    before = snapshot(alice_dir, ALICE)

    seen: list[Any] = []
    for cls in (SqliteRecallMemory, SqliteArchivalMemory):
        original = cls.search

        def spy(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            page = _original(self, *args, **kwargs)
            seen.extend(page.hits)
            return page

        monkeypatch.setattr(cls, "search", spy)
    options = bench.BenchOptions(modes=("hybrid", "fts", "vector"), archival=True)
    report = bench.run_locomo(conversations, options, alice_dir)
    assert report["questions"] == len(sample["qa"])
    assert seen, "the benchmark searched nothing"
    for hit in seen:
        assert hit.item.agent_id == "' OR '1'='1"
        assert not leaks(hit.item.text), hit.item.text
    monkeypatch.undo()
    close_all()
    forget_loaded_indexes()
    assert snapshot(alice_dir, ALICE) == before


def test_a_thread_of_one_agent_cannot_be_continued_as_another(tmp_path: Path) -> None:
    """The queue of a thread is its agent's conversation: another agent must not read it."""
    model = ScriptedChatModel.from_steps([send("Hi Alice"), send("never")])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "shared-thread"}}
    alice = Context(data_dir=str(tmp_path), agent_id=ALICE, embedding_model="none")
    graph.invoke({"messages": [HumanMessage(f"my secret is {SECRETS[0]}")]}, config, context=alice)
    bob = Context(data_dir=str(tmp_path), agent_id="bob", embedding_model="none")
    with pytest.raises(ValueError, match="belongs to agent 'alice'"):
        graph.invoke({"messages": [HumanMessage("what did she say?")]}, config, context=bob)
    assert len(model.calls) == 1, "bob's model must not see alice's queue"
    bob_memory = open_memory(tmp_path, "bob", embedding_model="none")
    assert bob_memory.recall.count() == 0, "alice's conversation was copied into bob's recall"
