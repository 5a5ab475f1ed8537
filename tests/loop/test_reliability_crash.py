"""Nothing lost: the agent is SIGKILLed at every risky point, reopened, and carries on.

Each scenario runs turns in a real subprocess (``crash_harness.py``) that kills itself at
one point: inside a tool call, between a recall write and the checkpoint that would hold
the message, inside summarize-evict, halfway through a FAISS cache write. The test then
reopens the same data directory and thread from scratch (``stores.close_all()`` and
``vectors.forget_loaded_indexes()``, so nothing survives from an earlier open) and checks:

- the checkpoint loads;
- recall memory holds every message of every completed checkpoint, exactly once;
- archival memory and FAISS agree: every passage has its vector, the FAISS cache holds
  exactly those, vector search returns each passage, the cache file on disk is intact
  and no half-written temporary file is left behind;
- the queue is well formed (every tool call has exactly one result);
- the conversation continues: another turn completes, and the checks hold again.

The kill points that are about memory and the loop also run on Postgres (memory through
`PostgresBackend`, the thread through langgraph-checkpoint-postgres's ``PostgresSaver``, on
the session's server): there the same promises hold with pgvector in place of FAISS. What
stays SQLite-only says why beside it (FAISS cache files, a damaged SQLite file).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from checkpointers import is_postgres, memory_backend, open_saver
from crash_harness import weather
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.ops.recovery import recover_thread
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.sqlite import close_all, open_memory
from langgraph_memgpt.stores.sqlite.faiss_cache import agent_cache_dir
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes
from langgraph_memgpt.stores.types import StoreCorruptError

HARNESS = Path(__file__).parents[1] / "crash_harness.py"
AGENT = "default"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def send(text: str) -> dict[str, Any]:
    return step(call("send_message", message=text))


def long_message(i: int) -> str:
    return f"story part {i}: " + " ".join(["the quick brown fox jumps over the lazy dog"] * 55)


@dataclass
class Scenario:
    point: str
    messages: list[str]
    script: list[Any]
    completed: int  # turns that finish before the kill
    summaries: list[str] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    arm_from: int | None = None  # default: the last message


REMEMBER = step(
    call(
        "archival_memory_insert", content="The user's cat is called Biscuit", request_heartbeat=True
    ),
    content="worth keeping",
)
SAVE_TEA = step(
    call("archival_memory_insert", content="Ada likes green tea", tags=["drinks"]),
    call("send_message", message="Noted."),
)
SAVE_SISTER = step(
    call("archival_memory_insert", content="Ada's sister is called Grace"),
    call("send_message", message="Noted."),
)
EVICTING = {  # the second message fills the 3,200-token window: the first is evicted
    "messages": [long_message(i) for i in range(3)],
    "script": [send(f"noted part {i}") for i in range(3)],
    "summaries": [f"I heard parts of the user's story ({i})." for i in range(3)],
    "context": {"context_window": 3200},
    "arm_from": 1,
}

SCENARIOS = {
    "during a tool call": Scenario(
        "tool",
        ["my cat is Biscuit", "what's the weather in Oslo?"],
        [REMEMBER, send("Saved."), step(call("weather", city="Oslo"))],
        completed=1,
    ),
    "after LangGraph checkpointed the input, before the user message reached recall": Scenario(
        "input_checkpointed", ["hello", "my name is Ada"], [send("hi"), send("never")], completed=1
    ),
    "after the user message reached recall, before the checkpoint": Scenario(
        "recall_write:user", ["hello", "my name is Ada"], [send("hi"), send("never")], completed=1
    ),
    "while recall embeds the user message (Postgres: inside its write transaction)": Scenario(
        "recall_embedding:user",
        ["hello", "my name is Ada"],
        [send("hi"), send("never")],
        completed=1,
    ),
    "after the model's reply reached recall, before the checkpoint": Scenario(
        "recall_write:assistant",
        ["hello", "my name is Ada"],
        [send("hi"), send("Hi Ada")],
        completed=1,
    ),
    "after a tool result reached recall, before the checkpoint": Scenario(
        "recall_write:tool", ["hello", "remember: green tea"], [send("hi"), SAVE_TEA], completed=1
    ),
    "inside the summarizer call of summarize_evict": Scenario("summarize", completed=1, **EVICTING),
    "after the eviction summary reached archival, before the checkpoint": Scenario(
        "summary_archived", completed=1, **EVICTING
    ),
    "halfway through writing a FAISS index file": Scenario(
        "faiss_index_write", ["note: tea", "note: sister"], [SAVE_TEA, SAVE_SISTER], completed=1
    ),
    "halfway through writing a FAISS checksum sidecar": Scenario(
        "faiss_sidecar_write", ["note: tea", "note: sister"], [SAVE_TEA, SAVE_SISTER], completed=1
    ),
}


@pytest.fixture(autouse=True)
def fresh_process_state() -> Iterator[None]:
    """Every open in a test starts from disk, as a new process would."""
    close_all()
    forget_loaded_indexes()
    yield
    close_all()
    forget_loaded_indexes()


def write_plan(
    tmp_path: Path, scenario: Scenario, durability: str | None = "sync", database_url: str = ""
) -> dict[str, Any]:
    """The harness's plan; with ``database_url``, memory and the thread live in Postgres."""
    plan = {
        "durability": durability,
        "data_dir": str(tmp_path / "data"),
        "checkpoint_db": database_url or str(tmp_path / "checkpoints.sqlite"),
        "thread_id": "thread-1",
        "script": scenario.script,
        "summaries": scenario.summaries,
        "messages": scenario.messages,
        "context": scenario.context,
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    return plan


def run_harness(tmp_path: Path, scenario: Scenario) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMGPT_CRASH_AT": scenario.point}
    if scenario.arm_from is not None:
        env["MEMGPT_CRASH_FROM_TURN"] = str(scenario.arm_from)
    # The harness imports its helper module (checkpointers) from this folder.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(HARNESS.parent), env.get("PYTHONPATH", "")) if p
    )
    return subprocess.run(
        [sys.executable, str(HARNESS), str(tmp_path / "plan.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


class Reopened:
    """The thread and memory of a plan, opened from disk as a fresh process would.

    Like ``langgraph-memgpt chat`` (and any process serving threads), it first records what
    the thread's checkpoint holds that recall lacks (`recover_thread`).
    """

    def __init__(
        self,
        plan: dict[str, Any],
        script: list[Any] = (),
        summaries: list[str] = (),
        *,
        recover: bool = True,
    ):
        close_all()
        forget_loaded_indexes()
        self.plan = plan
        saver, self._close_saver = open_saver(plan["checkpoint_db"])
        self.backend = memory_backend(plan["checkpoint_db"])
        self.model = ScriptedChatModel.from_steps(list(script))
        self.graph = build_graph(
            model=self.model,
            summary_model=ScriptedChatModel.from_steps(list(summaries)),
            tools=[weather],
            memory=self.backend,
        ).compile(checkpointer=saver)
        self.config = {"configurable": {"thread_id": plan["thread_id"]}}
        self.ctx = Context(data_dir=plan["data_dir"], **plan["context"])
        if recover:
            recover_thread(self.graph, self.config, self.ctx, memory=self.backend)

    def say(self, text: str) -> str:
        out = self.graph.invoke({"messages": [HumanMessage(text)]}, self.config, context=self.ctx)
        return str(out["messages"][-1].content)

    def queue(self) -> list[Any]:
        return list(self.graph.get_state(self.config).values["messages"])

    def checkpointed_messages(self) -> dict[str, Any]:
        """Every message of every checkpoint of the thread, by id."""
        found: dict[str, Any] = {}
        for snapshot in self.graph.get_state_history(self.config):
            for message in snapshot.values.get("messages", []):
                found[str(message.id)] = message
        return found

    def close(self) -> None:
        self._close_saver()
        if self.backend is not None:
            self.backend.close()


class Tiers:
    """The agent's memory of a plan, opened afresh (``with Tiers(plan) as memory``)."""

    def __init__(self, plan: dict[str, Any]) -> None:
        self.backend = memory_backend(plan["checkpoint_db"])
        self.data_dir = plan["data_dir"]

    def __enter__(self) -> Memory:
        if self.backend is None:
            return open_memory(self.data_dir, AGENT)
        memory: Memory = self.backend.open(AGENT)
        return memory

    def __exit__(self, *exc: object) -> None:
        if self.backend is not None:
            self.backend.close()
        close_all()


def _all_messages(memory: Memory) -> list[Any]:
    rows, after = [], 0
    while page := memory.recall.list_messages(after=after, limit=500):
        rows += [m for _, m in page]
        after = page[-1][0]
    return rows


def _all_passages(memory: Memory) -> list[tuple[Any, str | None]]:
    rows, after = [], 0
    while page := memory.archival.list_passages(after=after, limit=500):
        rows += page
        after = page[-1][0].id
    return rows


def assert_memory_consistent(plan: dict[str, Any], *, settled: bool = True) -> None:
    """The promises above; ``settled=False`` right after a kill, before the next turn."""
    reopened = Reopened(plan)
    try:
        checkpointed = reopened.checkpointed_messages()
        queue = reopened.queue()
        summaries = {
            s.values.get("summary") for s in reopened.graph.get_state_history(reopened.config)
        }
    finally:
        reopened.close()
    assert checkpointed, "the checkpoint did not load"
    with Tiers(plan) as memory:
        # Recall: every checkpointed message, exactly once.
        counts = Counter(m.message_id for m in _all_messages(memory))
        missing = sorted(set(checkpointed) - set(counts))
        assert not missing, f"checkpointed messages missing from recall: {missing}"
        assert all(n == 1 for n in counts.values()), counts
        for message_id, message in checkpointed.items():
            if isinstance(message, HumanMessage) and "[message truncated" not in message.content:
                assert memory.recall.get([message_id])[0].text == message.content

        # The queue: every tool call answered exactly once, every result after its call.
        # Until the next turn, the call a kill interrupted (the last AI message's) may be
        # unanswered.
        calls_seen: set[str] = set()
        answers: Counter[str] = Counter()
        last_calls: set[str] = set()
        for message in queue:
            if isinstance(message, AIMessage):
                last_calls = {str(c["id"]) for c in message.tool_calls}
                calls_seen |= last_calls
            if isinstance(message, ToolMessage):
                assert message.tool_call_id in calls_seen, (
                    "tool result before (or without) its call"
                )
                answers[message.tool_call_id] += 1
        unanswered = calls_seen - set(answers)
        assert set(answers.values()) <= {1}, answers
        assert not unanswered or (not settled and unanswered <= last_calls), unanswered

        passages = [p for p, _ in _all_passages(memory)]
        # No duplicates: a replayed archival_memory_insert or eviction writes nothing twice.
        provenance = Counter((p.text, p.thread_id, p.turn) for p in passages)
        assert all(n == 1 for n in provenance.values()), f"duplicated passages: {provenance}"
        if settled:  # every archived summary is the one its eviction put in the thread
            archived = [p.text for p in passages if "summary" in p.tags]
            orphans = [text for text in archived if text not in summaries]
            assert not orphans, f"summaries of an eviction that was replayed: {orphans}"
        # Every passage has its vector: vector search returns each one.
        same_text = Counter(p.text for p in passages)
        for passage in passages:
            page = memory.archival.search(
                passage.text, mode="vector", page_size=same_text[passage.text]
            )
            assert passage.id in [hit.item.id for hit in page.hits], passage.text
        if is_postgres(plan["checkpoint_db"]):
            _assert_postgres_vectors(plan["checkpoint_db"])
        else:
            _assert_sqlite_and_faiss_agree(plan, memory, len(passages))
    if not is_postgres(plan["checkpoint_db"]):
        _assert_faiss_files_intact(plan)


def _assert_postgres_vectors(url: str) -> None:
    """Every passage and every searchable message has its vector (one row holds both)."""
    import psycopg

    with psycopg.connect(url) as conn:
        bare = conn.execute(
            "SELECT (SELECT count(*) FROM memgpt_archival WHERE agent_id = %s "
            "AND embedding IS NULL), (SELECT count(*) FROM memgpt_recall WHERE agent_id = %s "
            "AND searchable AND embedding IS NULL)",
            (AGENT, AGENT),
        ).fetchone()
    assert bare == (0, 0), f"(passages, messages) without their vector: {bare}"


def _assert_sqlite_and_faiss_agree(plan: dict[str, Any], memory: Any, passages: int) -> None:
    """Archival and FAISS agree, whatever state the cache file was left in."""
    conn = memory.db.conn
    ids = {row[0] for row in conn.execute("SELECT id FROM archival WHERE agent_id = ?", (AGENT,))}
    vectors = {
        row[0]
        for row in conn.execute(
            "SELECT item_id FROM vectors WHERE tier = 'archival' AND agent_id = ?", (AGENT,)
        )
    }
    assert vectors == ids, "a passage without its vector (or the reverse)"
    assert memory.archival.index is not None
    assert memory.archival.index.count() == passages
    searchable = conn.execute(
        "SELECT count(*) FROM recall WHERE agent_id = ? AND searchable = 1", (AGENT,)
    ).fetchone()[0]
    assert memory.recall.vectors is not None
    assert memory.recall.vectors.turn.count() == searchable
    memory.close()  # writes the caches: they must come out intact


def _assert_faiss_files_intact(plan: dict[str, Any]) -> None:
    folder = agent_cache_dir(Path(plan["data_dir"]) / "faiss", AGENT)
    leftovers = [p.name for p in folder.glob(".*.tmp")]
    assert not leftovers, f"half-written temporary files left behind: {leftovers}"
    for index_file in folder.glob("*.faiss"):
        sidecar = json.loads(index_file.with_name(index_file.name + ".json").read_text())
        assert sidecar["sha256"] == hashlib.sha256(index_file.read_bytes()).hexdigest()
    close_all()
    forget_loaded_indexes()


FAISS_POINTS = ("faiss_index_write", "faiss_sidecar_write")
CASES = [(where, "sync") for where in SCENARIOS] + [
    # LangGraph's default: a step's checkpoint is written while the next step runs, so the
    # kill may also land before the previous checkpoint reached the disk.
    ("during a tool call", None),
    ("halfway through writing a FAISS index file", None),
    ("inside the summarizer call of summarize_evict", None),
]
# Postgres: a kill inside recall's write transaction (rows inserted, nothing committed),
# right after a commit (a tool result), inside a user tool and inside the summarizer; the
# eviction summary's commit and the checkpointed input are killed and replayed below. Not
# the FAISS cache files (Postgres keeps vectors in their rows: no cache file to tear), nor
# the kill points that test nothing more of Postgres than a listed one (the user message
# and the reply commit like the tool result; LangGraph's default durability is LangGraph's
# own, the same on either checkpointer), to keep the suite's time in budget.
POSTGRES_POINTS = {
    ("tool", "sync"),
    ("recall_embedding:user", "sync"),
    ("recall_write:tool", "sync"),
    ("summarize", "sync"),
}
BOTH_BACKENDS = [
    pytest.param(where, d, "sqlite", id=f"{where}-{d}-sqlite") for where, d in CASES
] + [
    pytest.param(where, d, "postgres", id=f"{where}-{d}-postgres")
    for where, d in CASES
    if (SCENARIOS[where].point, d) in POSTGRES_POINTS
]


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """Where a replay test's memory and thread live: "" (a SQLite folder), or Postgres."""
    if request.param == "sqlite":
        return ""
    return str(request.getfixturevalue("postgres_url"))


@pytest.mark.parametrize(("where", "durability", "backend"), BOTH_BACKENDS)
def test_a_killed_agent_loses_nothing_and_the_conversation_continues(
    tmp_path: Path, where: str, durability: str | None, backend: str, request: pytest.FixtureRequest
) -> None:
    scenario = SCENARIOS[where]
    url = str(request.getfixturevalue("postgres_url")) if backend == "postgres" else ""
    plan = write_plan(tmp_path, scenario, durability, url)
    proc = run_harness(tmp_path, scenario)
    assert proc.returncode == -signal.SIGKILL, (
        f"the kill point {scenario.point!r} was never reached:\n{proc.stdout}\n{proc.stderr}"
    )
    done = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(done) >= scenario.completed, done

    assert_memory_consistent(plan, settled=False)

    reopened = Reopened(
        plan,
        script=[send("Yes, still here.")],
        summaries=[f"I heard the user's story (after the crash {i})." for i in range(3)],
    )
    try:
        assert reopened.say("are you still there?") == "Yes, still here."
        queue = reopened.queue()
    finally:
        reopened.close()
    assert_memory_consistent(plan)

    killed_in_a_call = ("tool", "recall_write:tool", "faiss_index_write", "faiss_sidecar_write")
    if durability == "sync" and scenario.point in killed_in_a_call:
        # The call the kill interrupted was checkpointed without its result; the next turn
        # answered it with an error the model can read.
        results = [json.loads(m.content) for m in queue if isinstance(m, ToolMessage)]
        interrupted = [r for r in results if "the run stopped" in r["message"]]
        assert interrupted, results  # one per call of the interrupted AI message
        for result in interrupted:
            assert result["status"] == "Failed"
            assert result["message"].startswith("Error executing function ")


def test_the_interrupted_turn_can_also_be_resumed_where_it_stopped(tmp_path: Path) -> None:
    """Resuming (``invoke(None)``) instead of sending a new message runs the pending node.

    SQLite only: resuming is LangGraph's (the pending node rerun from the checkpoint); the
    Postgres replays below resume the same way and check what the backend must add.
    """
    scenario = SCENARIOS["during a tool call"]
    plan = write_plan(tmp_path, scenario)
    assert run_harness(tmp_path, scenario).returncode == -signal.SIGKILL
    assert_memory_consistent(plan, settled=False)
    reopened = Reopened(plan, script=[send("It is sunny in Oslo.")])
    try:
        out = reopened.graph.invoke(None, reopened.config, context=reopened.ctx)
        assert out["messages"][-1].content == "It is sunny in Oslo."
        weather_result = [m for m in reopened.queue() if m.name == "weather"]
    finally:
        reopened.close()
    assert json.loads(weather_result[0].content)["message"] == "sunny in Oslo"
    assert_memory_consistent(plan)


def test_an_interrupted_insert_replayed_adds_no_second_passage(
    tmp_path: Path, database_url: str
) -> None:
    """Killed after archival_memory_insert ran, before its result was checkpointed; resumed."""
    scenario = SCENARIOS["after a tool result reached recall, before the checkpoint"]
    plan = write_plan(tmp_path, scenario, database_url=database_url)
    assert run_harness(tmp_path, scenario).returncode == -signal.SIGKILL
    reopened = Reopened(plan, script=[send("Noted, again.")])
    try:
        reopened.graph.invoke(None, reopened.config, context=reopened.ctx)  # replays the call
        results = [m for m in reopened.queue() if m.name == "archival_memory_insert"]
    finally:
        reopened.close()
    assert json.loads(results[-1].content)["status"] == "OK"
    with Tiers(plan) as memory:
        saved = memory.archival.search("", page_size=50).hits
    assert [hit.item.text for hit in saved] == ["Ada likes green tea"]
    assert_memory_consistent(plan)


def test_a_replayed_eviction_archives_no_second_summary(tmp_path: Path, database_url: str) -> None:
    """Killed after the eviction summary was archived; the turn is resumed, then goes on."""
    scenario = SCENARIOS["after the eviction summary reached archival, before the checkpoint"]
    plan = write_plan(tmp_path, scenario, database_url=database_url)
    assert run_harness(tmp_path, scenario).returncode == -signal.SIGKILL
    replayed = [f"I heard the user's story (replayed {i})." for i in range(3)]
    reopened = Reopened(plan, script=[send("noted part 1")], summaries=replayed)
    try:
        reopened.graph.invoke(None, reopened.config, context=reopened.ctx)
        summary = reopened.graph.get_state(reopened.config).values["summary"]
    finally:
        reopened.close()
    with Tiers(plan) as memory:
        archived = [h.item.text for h in memory.archival.search("", tags=["summary"]).hits]
    assert archived == [summary] == ["I heard parts of the user's story (0)."]
    assert_memory_consistent(plan)


def test_a_message_checkpointed_before_recall_is_recorded_at_restart_in_its_own_turn(
    tmp_path: Path, database_url: str
) -> None:
    """Killed after LangGraph checkpointed the input, before the write-ahead; never continued."""
    scenario = SCENARIOS[
        "after LangGraph checkpointed the input, before the user message reached recall"
    ]
    plan = write_plan(tmp_path, scenario, database_url=database_url)
    assert run_harness(tmp_path, scenario).returncode == -signal.SIGKILL
    with Tiers(plan) as memory:
        assert [m.text for m in memory.recall.latest(10) if m.role == "user"] == ["hello"]

    reopened = Reopened(plan)  # a restart: nothing is sent on the thread
    try:
        snapshot = reopened.graph.get_state(reopened.config)
    finally:
        reopened.close()
    orphan = snapshot.values["messages"][-1]
    with Tiers(plan) as memory:
        [recorded] = memory.recall.get([str(orphan.id)])
    assert recorded.text == "my name is Ada"
    assert recorded.turn == 2  # the turn it would have opened, not a later one
    again = Reopened(plan)
    try:
        arrived = min(
            s.created_at
            for s in again.graph.get_state_history(again.config)
            if orphan.id in {m.id for m in s.values.get("messages", [])}
        )
    finally:
        again.close()
    assert recorded.created_at == arrived  # when it was checkpointed, not when recovered

    # The next message opens the turn after it; the orphan keeps its turn and time.
    reopened = Reopened(plan, script=[send("Hi Ada!")])
    try:
        assert reopened.say("are you there?") == "Hi Ada!"
        state = reopened.graph.get_state(reopened.config).values
    finally:
        reopened.close()
    assert state["turn"] == 3
    with Tiers(plan) as memory:
        users = sorted((m.turn, m.text) for m in memory.recall.latest(20) if m.role == "user")
        assert users == [(1, "hello"), (2, "my name is Ada"), (3, "are you there?")]
        assert memory.recall.get([str(orphan.id)])[0].created_at == arrived
    assert_memory_consistent(plan)


def test_the_server_records_every_threads_unrecorded_messages_when_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: `recover_at_start` reads the server's checkpoint file. With Postgres the
    served app recovers its threads at start the same way
    (`test_recovery_threads.py::test_the_postgres_server_records_checkpointed_unrecorded_messages_when_it_restarts`)."""
    from langgraph_memgpt.serve.server import recover_at_start

    data_dir, checkpoints = tmp_path / "data", tmp_path / "checkpoints.sqlite"
    conn = sqlite3.connect(checkpoints, check_same_thread=False)
    graph = build_graph(model=ScriptedChatModel.from_steps([send("hi"), send("hi")])).compile(
        checkpointer=SqliteSaver(conn)
    )
    ctx = Context(data_dir=str(data_dir))
    for thread in ("a", "b"):
        config = {"configurable": {"thread_id": thread}}
        graph.invoke({"messages": [HumanMessage("hello")]}, config, context=ctx)
        # As LangGraph leaves it when the process dies before open_turn: checkpointed.
        graph.update_state(config, {"messages": [HumanMessage(f"orphan of {thread}")]})
    conn.close()
    close_all()
    monkeypatch.setenv("MEMGPT_DATA_DIR", str(data_dir))
    assert recover_at_start(checkpoints) == 2
    memory = open_memory(data_dir, AGENT)
    orphans = [m for m in memory.recall.latest(20) if m.text.startswith("orphan")]
    assert sorted((m.thread_id, m.turn) for m in orphans) == [("a", 2), ("b", 2)]
    assert recover_at_start(checkpoints) == 0  # idempotent


# -- damaged files ---------------------------------------------------------------------
# SQLite only: these damage the embedded backend's own files (FAISS caches, memory.sqlite).
# Postgres keeps vectors in their rows and its files are the server's business.


def _agent_with_passages(tmp_path: Path) -> dict[str, Any]:
    plan = write_plan(
        tmp_path,
        Scenario("", ["note: tea", "note: sister"], [SAVE_TEA, SAVE_SISTER], completed=2),
    )
    reopened = Reopened(plan, script=[SAVE_TEA, SAVE_SISTER])
    try:
        reopened.say("note: tea")
        reopened.say("note: sister")
    finally:
        reopened.close()
    close_all()  # writes every FAISS cache file
    forget_loaded_indexes()
    return plan


def _damage(path: Path, how: str) -> None:
    if how == "deleted":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "emptied":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(os.urandom(path.stat().st_size))


@pytest.mark.parametrize("how", ["deleted", "truncated", "emptied", "garbage"])
def test_a_damaged_faiss_file_is_rebuilt_from_sqlite_on_next_open(tmp_path: Path, how: str) -> None:
    plan = _agent_with_passages(tmp_path)
    folder = agent_cache_dir(Path(plan["data_dir"]) / "faiss", AGENT)
    files = sorted(folder.glob("*.faiss")) + sorted(folder.glob("*.faiss.json"))
    assert {f.name for f in files} >= {"archival.text.faiss", "recall.turn.faiss"}
    for path in files:
        _damage(path, how)

    search = step(
        call("archival_memory_search", query="what does Ada drink?", request_heartbeat=True)
    )
    reopened = Reopened(plan, script=[search, send("Green tea.")])
    try:
        assert reopened.say("what does Ada drink?") == "Green tea."
        found = [m for m in reopened.queue() if m.name == "archival_memory_search"]
        result = json.loads(found[0].content)
    finally:
        reopened.close()
    assert result["status"] == "OK" and "green tea" in result["message"], result
    assert_memory_consistent(plan)  # also checks the rewritten files' checksums
    assert (folder / "archival.text.faiss").exists()


def _corrupt_database(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "garbage":
        path.write_bytes(b"this is not a database " * 200)
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "zeroed header":
        path.write_bytes(b"\0" * 100 + data[100:])
    elif how == "scrambled page":
        middle = len(data) // 2 // 4096 * 4096
        path.write_bytes(data[:middle] + os.urandom(4096) + data[middle + 4096 :])


@pytest.mark.parametrize("how", ["garbage", "truncated", "zeroed header", "scrambled page"])
def test_a_corrupt_memory_database_is_a_clear_error_naming_the_file(
    tmp_path: Path, how: str
) -> None:
    plan = _agent_with_passages(tmp_path)
    db_file = Path(plan["data_dir"]) / "memory.sqlite"
    with closing(sqlite3.connect(db_file)) as conn:
        # Data on enough pages that a scrambled middle page holds some of it, all of it in
        # the main file (no WAL), so the damage hits the real data.
        with conn:
            for _ in range(8):
                conn.execute(
                    "INSERT INTO archival (agent_id, text, created_at) VALUES ('x', ?, '')",
                    ("pad " * 1000,),
                )
        conn.execute("PRAGMA journal_mode=DELETE")
    assert not Path(f"{db_file}-wal").exists()
    _corrupt_database(db_file, how)

    with pytest.raises(StoreCorruptError, match=str(db_file)):
        open_memory(plan["data_dir"], AGENT)
    reopened = Reopened(plan, script=[send("should never be called")], recover=False)
    try:
        with pytest.raises(StoreCorruptError, match=str(db_file)) as err:
            reopened.say("hello?")
    finally:
        reopened.close()
    assert "move it aside" in str(err.value)
    assert reopened.model.calls == [], "the model ran on an empty memory"
