"""Forget means gone: after each kind of forget no file (SQLite) and no table (Postgres) holds it.

Real turns of the graph (a scripted model saving a passage, then replying) write the text
everywhere the loop keeps it: recall and its full-text indexes, archival, the model's tool
call arguments, the thread's checkpoints and their history. Then each kind of forget runs
through the CLI (``--data-dir``, or ``--database-url`` on Postgres), and every byte of the
data directory, write-ahead logs included, or every row of every Postgres table, is
searched for the forgotten words. Each word is a token no stemmer changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from checkpointers import Place, channels_holding, open_saver
from langchain_core.messages import HumanMessage

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.ops.forget import forget_messages, forget_thread
from langgraph_memgpt.ops.transfer import export_agent
from langgraph_memgpt.stores.sqlite import close_all

MESSAGE_WORD = "walrus5512"
PASSAGE_WORD = "zebracorn8841"
THREAD_WORD = "flamingo3301"
AGENT_WORD = "yeti7719"


def reply(text: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}


def insert(content: str) -> dict[str, Any]:
    call = {"content": content, "request_heartbeat": True}
    return {"content": "", "tool_calls": [{"name": "archival_memory_insert", "args": call}]}


def search(query: str) -> dict[str, Any]:
    call = {"query": query, "request_heartbeat": True}
    return {"content": "", "tool_calls": [{"name": "conversation_search", "args": call}]}


class World:
    """Two agents' threads on one place, run through the real graph."""

    def __init__(self, place: Place) -> None:
        self.place = place
        self.saver, self._close = open_saver(place.threads)
        self.backend = place.backend()

    def graph(self, steps: list[dict[str, Any]]) -> Any:
        model = ScriptedChatModel.from_steps(steps)
        return build_graph(model=model, memory=self.backend).compile(checkpointer=self.saver)

    def say(
        self, agent: str, thread: str, text: str, steps: list[dict[str, Any]], mid: str
    ) -> None:
        ctx = Context(data_dir=str(self.place.data_dir), embedding_model="none", agent_id=agent)
        config: Any = {"configurable": {"thread_id": thread}}
        self.graph(steps).invoke({"messages": [HumanMessage(text, id=mid)]}, config, context=ctx)

    def memory(self, agent: str) -> Any:
        return self.place.open(agent)

    def close(self) -> None:
        self._close()
        if self.backend is not None:
            self.backend.close()


@pytest.fixture(autouse=True)
def _no_database_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMGPT_DATABASE_URL", raising=False)  # the place says where


@pytest.fixture
def world(place: Place) -> Any:
    w = World(place)
    w.say(
        "ada",
        "t1",
        f"My locker code is {MESSAGE_WORD}, keep it private.",
        [insert(f"Ada's passport number is {PASSAGE_WORD}."), reply("Noted.")],
        "m-secret",
    )
    w.say("ada", "t1", "Thanks, see you tomorrow.", [reply("Bye!")], "m-2")
    w.say("ada", "t2", f"I watched {THREAD_WORD} birds at the lake.", [reply("Lovely.")], "m-3")
    w.say("bob", "tb", f"My bank is {AGENT_WORD} savings.", [reply("Noted, Bob.")], "m-4")
    # A search in t1 finds t2's message: its result (a tool message in t1) quotes it.
    w.say(
        "ada",
        "t1",
        "Where did I watch birds?",
        [search("birds at the lake"), reply("At the lake.")],
        "m-6",
    )
    yield w
    w.close()


def leaks(place: Place, word: str) -> list[str]:
    """Where ``word`` still is: files of the data directory, or Postgres tables."""
    if place.kind == "sqlite":
        close_all()
        found = []
        for path in sorted(place.data_dir.rglob("*")):
            if path.is_file() and word.encode() in path.read_bytes():
                found.append(path.name)
        return found
    import psycopg

    found = []
    with psycopg.connect(place.url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"').fetchall():
                for value in row:
                    raw = value if isinstance(value, bytes) else json.dumps(value, default=str)
                    if word.encode() in (raw if isinstance(raw, bytes) else raw.encode()):
                        found.append(table)
    return sorted(set(found))


def cli(place: Place, *args: str) -> int:
    """``forget`` as a user runs it: on the data directory, or on the database by its URL."""
    where = ["--database-url", place.url] if place.url else []
    argv = ["forget", *args, "--data-dir", str(place.data_dir), "--embedding-model", "none"]
    return main([*argv, *where])


def test_the_words_are_everywhere_before_forgetting(world: World) -> None:
    for word in (MESSAGE_WORD, PASSAGE_WORD, THREAD_WORD, AGENT_WORD):
        assert leaks(world.place, word), word


def test_forgetting_a_message_leaves_its_words_nowhere_export_included(
    world: World, tmp_path: Path
) -> None:
    assert cli(world.place, "--agent", "ada", "--message", "m-secret") == 0

    assert leaks(world.place, MESSAGE_WORD) == []
    assert channels_holding(world.saver, MESSAGE_WORD) == []  # no checkpoint channel or write
    export_agent(world.memory("ada"), tmp_path / "ada.jsonl")
    assert MESSAGE_WORD not in (tmp_path / "ada.jsonl").read_text()
    assert leaks(world.place, PASSAGE_WORD)  # the rest stays
    world.say("ada", "t1", "Are you still there?", [reply("Yes.")], "m-5")  # a valid queue


def test_forgetting_a_passage_leaves_its_words_nowhere_export_included(
    world: World, tmp_path: Path
) -> None:
    memory = world.memory("ada")
    (passage,) = [p for p, _ in memory.archival.list_passages() if PASSAGE_WORD in p.text]
    assert cli(world.place, "--agent", "ada", "--passage", str(passage.id)) == 0

    assert leaks(world.place, PASSAGE_WORD) == []
    assert channels_holding(world.saver, PASSAGE_WORD) == []  # no checkpoint channel or write
    export_agent(world.memory("ada"), tmp_path / "ada.jsonl")
    assert PASSAGE_WORD not in (tmp_path / "ada.jsonl").read_text()
    world.say("ada", "t1", "Are you still there?", [reply("Yes.")], "m-5")


def test_forgetting_a_thread_leaves_its_words_nowhere(world: World) -> None:
    quoted = [m for _, m in world.memory("ada").recall.list_messages() if m.role == "tool"]
    assert any(THREAD_WORD in m.text for m in quoted if m.thread_id == "t1")
    assert cli(world.place, "--agent", "ada", "--thread", "t2") == 0

    assert leaks(world.place, THREAD_WORD) == []
    assert channels_holding(world.saver, THREAD_WORD) == []  # no checkpoint channel or write
    world.say("ada", "t1", "Are you still there?", [reply("Yes.")], "m-5")  # a valid queue


def test_forgetting_an_agent_leaves_its_words_nowhere(world: World) -> None:
    assert cli(world.place, "--agent", "bob", "--all") == 0

    assert leaks(world.place, AGENT_WORD) == []
    assert channels_holding(world.saver, AGENT_WORD) == []  # no checkpoint channel or write
    assert leaks(world.place, MESSAGE_WORD)  # ada's memory is untouched


def test_another_agents_thread_is_refused_and_left_as_it_was(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(world.place, "--agent", "ada", "--thread", "tb") == 1
    assert "belongs to agent 'bob'" in capsys.readouterr().err

    config: Any = {"configurable": {"thread_id": "tb"}}
    queue = world.graph([]).get_state(config).values["messages"]
    assert any(AGENT_WORD in str(m.content) for m in queue)
    assert world.memory("ada").deletions.entries() == []


# -- consolidated facts ------------------------------------------------------------------

FACT_WORD = "pottery4412"


def consolidated(backend: Any, thread: str = "t1") -> Any:
    """Ana's messages in ``thread``, consolidated into one archived fact."""
    import json as _json

    from langgraph_memgpt.sleeptime import build_sleeptime_graph
    from langgraph_memgpt.stores.types import RecallMessage

    memory = backend.open("ana")
    memory.core.ensure_defaults()
    memory.recall.add(
        [
            RecallMessage(
                agent_id="ana",
                thread_id=thread,
                message_id=f"m{i}",
                role=role,
                text=text,
                created_at=f"2026-11-30T10:0{i}:00+00:00",
            )
            for i, (role, text) in enumerate(
                [("user", f"I started the {FACT_WORD} class today"), ("assistant", "Fun!")]
            )
        ]
    )
    answer = _json.dumps({"blocks": {}, "clear": [], "archive": [f"Ana takes {FACT_WORD}"]})
    graph = build_sleeptime_graph(
        model=ScriptedChatModel.from_steps([answer]), memory=backend
    ).compile()
    out = graph.invoke({}, context={"agent_id": "ana"})
    assert out["archived"] == [f"Ana takes {FACT_WORD}"]
    return memory


def fact_texts(memory: Any) -> list[str]:
    return [p.text for p, _ in memory.archival.list_passages() if FACT_WORD in p.text]


def test_a_consolidated_fact_is_forgotten_with_its_source_message(memory_backend: Any) -> None:
    memory = consolidated(memory_backend)

    report = forget_messages(memory, ["m0"], actor="user", thread_id="t1", checkpointer=None)

    assert fact_texts(memory) == [] and len(report.facts) == 1
    assert "consolidated fact" in report.describe()


def test_a_consolidated_fact_is_forgotten_with_its_source_thread(memory_backend: Any) -> None:
    memory = consolidated(memory_backend)
    other = memory.archival.insert(f"Unrelated note about {FACT_WORD}", thread_id="t9")

    report = forget_thread(memory, "t1", actor="user", checkpointer=None)

    assert fact_texts(memory) == [other.text] and len(report.facts) == 1


def test_a_fact_stays_when_a_message_it_was_not_read_from_is_forgotten(
    memory_backend: Any,
) -> None:
    from dataclasses import replace

    memory = consolidated(memory_backend)
    (first,) = memory.recall.get(["m0"])
    memory.recall.add([replace(first, message_id="later", text="A later message.")])

    report = forget_messages(memory, ["later"], actor="user", thread_id="t1", checkpointer=None)

    assert report.facts == [] and fact_texts(memory) == [f"Ana takes {FACT_WORD}"]


def test_the_memory_page_forgets_a_passage_with_the_call_that_saved_it(
    memory_backend: Any,
) -> None:
    from langgraph_memgpt.serve.web import views
    from langgraph_memgpt.stores.types import RecallMessage

    memory = memory_backend.open("ada")
    text = f"Ada's passport number is {PASSAGE_WORD}."
    passage = memory.archival.insert(text, thread_id="t1", key="call:t1:c1")
    call = {"name": "archival_memory_insert", "args": {"content": text}, "id": "c1"}
    memory.recall.add(
        [
            RecallMessage(
                agent_id="ada",
                thread_id="t1",
                message_id="ai-1",
                role="assistant",
                text="",
                created_at="2026-11-30T10:00:00+00:00",
                tool_calls=[call],
            )
        ]
    )

    views.forget_passage(memory, passage.id, "ada", None)

    assert memory.recall.get(["ai-1"]) == []
    assert all(
        PASSAGE_WORD not in json.dumps(m.tool_calls) for _, m in memory.recall.list_messages()
    )
