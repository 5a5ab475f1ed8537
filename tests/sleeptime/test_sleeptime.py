"""Sleep-time consolidation: a second graph tends an agent's memory between turns.

It reads what was said since its last run (a watermark kept in recall), asks the model
for tidier core blocks and facts to archive, checks the answer, and writes it without
losing an edit a conversation made meanwhile. Run on both memory backends.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langgraph_memgpt.graph import build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.sleeptime import ACTOR, WATERMARK, build_sleeptime_graph
from langgraph_memgpt.sleeptime.proposal import MalformedAnswerError, parse_proposal
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.types import Block, RecallMessage

AGENT = "ana"
NOISY_HUMAN = "\n".join(
    [
        "Name: Ana",
        "hi there!",
        "Ana likes hiking",
        "thanks so much :)",
        "Ana likes hiking",
        "lol the weather is nice today",
        "Works as a nurse in Porto",
    ]
)
NOISY_PERSONA = "I am Sam, a helpful companion.\nThe user is allergic to peanuts."
CLEAN_HUMAN = "Name: Ana\nLikes hiking\nWorks as a nurse in Porto\nAllergic to peanuts"
CLEAN_PERSONA = "I am Sam, a helpful companion."
TURNS = [
    ("user", "hi there! thanks for yesterday"),
    ("assistant", "You're welcome, Ana!"),
    ("user", "btw I'm allergic to peanuts, and I started a pottery class"),
    ("assistant", "Noted. Pottery sounds fun."),
]


def answer(blocks: dict[str, str], archive: list[str], clear: list[str] | None = None) -> str:
    return json.dumps({"blocks": blocks, "clear": clear or [], "archive": archive})


CLEAN_ANSWER = answer(
    {"human": CLEAN_HUMAN, "persona": CLEAN_PERSONA}, ["Ana started a pottery class"]
)


def seeded(backend: MemoryBackend, turns: list[tuple[str, str]] = TURNS, start: int = 0) -> Memory:
    """The agent with noisy blocks and a short conversation in recall."""
    memory = backend.open(AGENT)
    memory.core.ensure_defaults()
    if start == 0:
        memory.core.set("human", NOISY_HUMAN, actor="user")
        memory.core.set("persona", NOISY_PERSONA, actor="user")
    add_turns(memory, turns, start)
    return memory


def add_turns(memory: Memory, turns: list[tuple[str, str]], start: int = 0) -> None:
    memory.recall.add(
        [
            RecallMessage(
                agent_id=AGENT,
                thread_id="t1",
                message_id=f"m{start + i}",
                role=role,
                text=text,
                created_at=f"2026-11-30T10:{start + i:02d}:00+00:00",
            )
            for i, (role, text) in enumerate(turns)
        ]
    )


def consolidate(backend: MemoryBackend, model: ScriptedChatModel) -> dict[str, Any]:
    graph = build_sleeptime_graph(model=model, memory=backend).compile()
    out = graph.invoke({}, context={"agent_id": AGENT})
    assert isinstance(out, dict)
    return out


def snapshot(memory: Memory) -> tuple[Any, ...]:
    """Everything a consolidation may change."""
    return (
        [(b.label, b.value) for b in memory.core.blocks()],
        [len(memory.core.history(b.label)) for b in memory.core.blocks()],
        memory.archival.count(),
        memory.recall.mark(WATERMARK),
    )


def test_recall_gives_messages_after_a_position_and_keeps_marks(
    memory_backend: MemoryBackend,
) -> None:
    memory = seeded(memory_backend)
    rows = memory.recall.since(0)
    assert [m.text for _, m in rows] == [text for _, text in TURNS]
    positions = [p for p, _ in rows]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert [m.text for _, m in memory.recall.since(positions[1], limit=1)] == [TURNS[2][1]]
    assert memory.recall.since(positions[-1]) == []

    assert memory.recall.mark("reader") == 0
    assert memory.recall.set_mark("reader", positions[2]) == positions[2]
    assert memory.recall.set_mark("reader", positions[0]) == positions[2]  # never back
    assert memory.recall.mark("reader") == positions[2]
    assert memory_backend.open("bob").recall.mark("reader") == 0  # per agent
    assert memory_backend.open("bob").recall.since(0) == []


def test_a_message_recorded_after_the_newest_was_forgotten_is_still_after_the_mark(
    memory_backend: MemoryBackend,
) -> None:
    """Deleting the newest messages must not hand their positions out again: a reader
    resuming after its mark would skip the next message for good."""
    memory = seeded(memory_backend)
    rows = memory.recall.since(0)
    top, newest = rows[-1]
    memory.recall.set_mark("reader", top)
    memory.recall.delete([newest.message_id], thread_id=newest.thread_id)
    memory.recall.add([replace(newest, message_id="after-forget", text="New fact after.")])
    after = memory.recall.since(memory.recall.mark("reader"))
    assert [m.text for _, m in after] == ["New fact after."]
    assert after[0][0] > top


def test_a_noisy_memory_is_cleaned_as_the_model_proposes_by_the_consolidator(
    memory_backend: MemoryBackend,
) -> None:
    memory = seeded(memory_backend)
    model = ScriptedChatModel.from_steps([CLEAN_ANSWER])
    out = consolidate(memory_backend, model)

    assert memory.core.get("human").value == CLEAN_HUMAN
    assert memory.core.get("persona").value == CLEAN_PERSONA
    for label in ("human", "persona"):
        last = memory.core.history(label)[-1]
        assert last["actor"] == ACTOR and last["new_value"] == memory.core.get(label).value
    assert {e["label"]: e["outcome"] for e in out["edits"]} == {
        "human": "rewritten",
        "persona": "rewritten",
    }
    assert out["archived"] == ["Ana started a pottery class"]
    # What went is listed for review: the chatter, nothing that is still there.
    dropped = out["proposal"]["dropped"]
    assert {"hi there!", "thanks so much :)", "lol the weather is nice today"} <= set(dropped)
    assert not {"Name: Ana", "Works as a nurse in Porto"} & set(dropped)
    found = memory.archival.search("pottery", tags=["consolidated"], mode="fts")
    assert [h.item.text for h in found.hits] == ["Ana started a pottery class"]
    assert memory.recall.mark(WATERMARK) == memory.recall.since(0)[-1][0]
    # The model saw the blocks and what was said since the last run.
    prompt = "\n".join(str(m.content) for m in model.calls[0])
    assert "lol the weather is nice today" in prompt and "pottery class" in prompt


def test_a_rerun_with_nothing_new_calls_no_model_and_changes_nothing(
    memory_backend: MemoryBackend,
) -> None:
    memory = seeded(memory_backend)
    consolidate(memory_backend, ScriptedChatModel.from_steps([CLEAN_ANSWER]))
    before = snapshot(memory)
    idle = ScriptedChatModel.from_steps([])  # any call would raise ScriptExhaustedError
    out = consolidate(memory_backend, idle)
    assert idle.calls == []
    assert out["transcript"] == [] and out["edits"] == []
    assert snapshot(memory) == before


def test_a_fact_archived_twice_is_stored_once(memory_backend: MemoryBackend) -> None:
    memory = seeded(memory_backend)
    consolidate(memory_backend, ScriptedChatModel.from_steps([CLEAN_ANSWER]))
    count = memory.archival.count()
    add_turns(memory, [("user", "did I mention the pottery class?")], start=len(TURNS))
    again = answer({}, ["Ana started a  POTTERY class", "Ana's class is on Mondays"])
    out = consolidate(memory_backend, ScriptedChatModel.from_steps([again]))
    assert out["archived"] == ["Ana's class is on Mondays"]
    assert memory.archival.count() == count + 1


class EditsDuringTheCall(ScriptedChatModel):
    """A model that is slow enough for a conversation to edit the block meanwhile."""

    memory: Any = None

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.memory.core.append("human", "Has a cat called Miso", actor="agent:t2")
        return super()._generate(messages, *args, **kwargs)


def test_an_edit_made_while_the_model_thinks_is_not_lost(memory_backend: MemoryBackend) -> None:
    memory = seeded(memory_backend)
    model = EditsDuringTheCall(script=[AIMessage(content=CLEAN_ANSWER)], memory=memory)
    out = consolidate(memory_backend, model)

    human = memory.core.get("human").value
    assert human == NOISY_HUMAN + "\nHas a cat called Miso"  # the conversation's edit stands
    assert {e["label"]: e["outcome"] for e in out["edits"]}["human"] == "skipped"
    assert memory.core.get("persona").value == CLEAN_PERSONA  # untouched blocks still tended
    assert all(h["actor"] != ACTOR for h in memory.core.history("human"))
    # The messages are read again next time, against the block as it is then.
    assert memory.recall.mark(WATERMARK) == 0
    retry = answer({"human": CLEAN_HUMAN + "\nHas a cat called Miso"}, [])
    consolidate(memory_backend, ScriptedChatModel.from_steps([retry]))
    assert memory.core.get("human").value.endswith("Has a cat called Miso")
    assert memory.core.history("human")[-1]["actor"] == ACTOR
    assert memory.recall.mark(WATERMARK) > 0


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("Sure! I cleaned up the memory for you.", "no JSON object"),
        ('{"blocks": {"human": "Name: Ana", "persona": "I am', "not valid JSON"),
        ('["Name: Ana"]', "not an object"),
        ('{"blocks": {"human": ["Name: Ana"]}}', "'blocks' must map"),
        ('{"blocks": {}, "facts": ["x"]}', "unknown keys"),
    ],
)
def test_a_malformed_answer_leaves_memory_unchanged_with_the_reason(
    memory_backend: MemoryBackend, reply: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory = seeded(memory_backend)
    before = snapshot(memory)
    out = consolidate(memory_backend, ScriptedChatModel.from_steps([reply]))
    assert snapshot(memory) == before
    assert out["proposal"] is None
    assert len(out["problems"]) == 1 and reason in out["problems"][0]
    assert reason in caplog.text


def test_a_block_emptied_or_overlong_by_the_model_is_kept(memory_backend: MemoryBackend) -> None:
    memory = seeded(memory_backend)
    limit = memory.core.get("persona").char_limit
    reply = answer({"human": "   ", "persona": "x" * (limit + 1)}, ["Ana likes hiking"])
    out = consolidate(memory_backend, ScriptedChatModel.from_steps([reply]))
    assert memory.core.get("human").value == NOISY_HUMAN
    assert memory.core.get("persona").value == NOISY_PERSONA
    assert any("emptied without being named in 'clear'" in p for p in out["problems"])
    assert any(f"over its limit of {limit}" in p for p in out["problems"])
    assert out["archived"] == ["Ana likes hiking"]  # the valid part still applies


def test_a_block_named_in_clear_is_emptied(memory_backend: MemoryBackend) -> None:
    memory = seeded(memory_backend)
    consolidate(
        memory_backend,
        ScriptedChatModel.from_steps([answer({"human": CLEAN_HUMAN}, [], clear=["persona"])]),
    )
    assert memory.core.get("persona").value == ""
    assert memory.core.history("persona")[-1]["actor"] == ACTOR


def test_read_only_and_unknown_blocks_are_refused() -> None:
    blocks = {
        "human": Block("human", "Name: Ana", "", 100),
        "policy": Block("policy", "Be kind", "", 100, read_only=True),
    }
    proposal = parse_proposal(
        '```json\n{"blocks": {"policy": "", "notes": "x", "human": "Ana"}}\n```', blocks
    )
    assert proposal.blocks == {"human": "Ana"}
    assert any("'policy' is read-only" in p for p in proposal.problems)
    assert any("'notes' does not exist" in p for p in proposal.problems)
    with pytest.raises(MalformedAnswerError):
        parse_proposal("", blocks)


def test_only_what_was_said_is_shown_and_tool_traffic_just_moves_the_watermark(
    memory_backend: MemoryBackend,
) -> None:
    memory = memory_backend.open(AGENT)
    memory.core.ensure_defaults()
    memory.recall.add(
        [
            RecallMessage(AGENT, "t1", "c1", "tool", '{"status": "OK"}', "2026-11-30T10:00:00Z"),
            RecallMessage(AGENT, "t1", "c2", "system", "memory pressure", "2026-11-30T10:01:00Z"),
        ]
    )
    idle = ScriptedChatModel.from_steps([])
    out = consolidate(memory_backend, idle)
    assert idle.calls == [] and out["transcript"] == []
    assert memory.recall.mark(WATERMARK) == memory.recall.since(0)[-1][0]


def test_it_mounts_in_a_parent_graph_after_a_chat_turn(memory_backend: MemoryBackend) -> None:
    """A parent graph: the agent answers, then its memory is tended, in one run."""
    memory = memory_backend.open(AGENT)
    memory.core.ensure_defaults()
    memory.core.set("human", NOISY_HUMAN, actor="user")
    chat_model = ScriptedChatModel.from_steps(
        [
            {
                "content": "",
                "tool_calls": [{"name": "send_message", "args": {"message": "Nice, pottery!"}}],
            }
        ]
    )
    sleep_model = ScriptedChatModel.from_steps(
        [answer({"human": CLEAN_HUMAN}, ["Ana started a pottery class"])]
    )
    parent: StateGraph[State, Any, Any, Any] = StateGraph(State)
    parent.add_node("chat", build_graph(model=chat_model, memory=memory_backend).compile())
    parent.add_node(
        "consolidate", build_sleeptime_graph(model=sleep_model, memory=memory_backend).compile()
    )
    parent.add_edge(START, "chat")
    parent.add_edge("chat", "consolidate")
    parent.add_edge("consolidate", END)
    app = parent.compile(checkpointer=InMemorySaver())
    out = app.invoke(
        {"messages": [{"role": "user", "content": "I started a pottery class"}]},
        {"configurable": {"thread_id": "t1"}},
        context={"agent_id": AGENT},
    )
    assert out["messages"][-1].content == "Nice, pottery!"
    assert memory.core.get("human").value == CLEAN_HUMAN
    assert "I started a pottery class" in "\n".join(str(m.content) for m in sleep_model.calls[0])


class EditsJustBeforeTheWrite:
    """A backend whose agent's blocks get a conversation's edit just before each write.

    The narrowest window: after the consolidator re-read the block, before its write.
    """

    def __init__(self, backend: MemoryBackend, edit: Any) -> None:
        self.backend, self.edit = backend, edit

    def open(self, agent_id: str) -> Any:
        memory = self.backend.open(agent_id)
        edit = self.edit

        class Core:
            def __getattr__(self, name: str) -> Any:
                return getattr(memory.core, name)

            def replace(self, label: str, old: str, new: str, actor: str = "agent") -> Any:
                edit(memory)
                return memory.core.replace(label, old, new, actor=actor)

        class Wrapped:
            agent_id = memory.agent_id
            core = Core()
            recall = memory.recall
            archival = memory.archival

        return Wrapped()


@pytest.mark.parametrize("kind", ["append", "replace"])
def test_an_edit_landing_between_the_reread_and_the_write_is_not_lost(
    memory_backend: MemoryBackend, kind: str
) -> None:
    memory = seeded(memory_backend)

    def conversation_edit(m: Memory) -> None:
        if kind == "append":
            m.core.append("human", "Has a cat called Miso", actor="agent:t2")
        else:
            m.core.replace("human", "Works as a nurse", "Works as a doctor", actor="agent:t2")

    racing = EditsJustBeforeTheWrite(memory_backend, conversation_edit)
    graph = build_sleeptime_graph(
        model=ScriptedChatModel.from_steps([answer({"human": CLEAN_HUMAN}, [])]),
        memory=racing,  # type: ignore[arg-type]
    ).compile()
    graph.invoke({}, context={"agent_id": AGENT})
    human = memory.core.get("human").value
    if kind == "append":  # the rewrite replaced what it read; the new line follows it
        assert human == CLEAN_HUMAN + "\nHas a cat called Miso"
    else:  # the text it read is gone: the rewrite is refused, the edit stands
        assert human == NOISY_HUMAN.replace("Works as a nurse", "Works as a doctor")
        assert memory.recall.mark(WATERMARK) == 0


def test_studio_draws_the_consolidation_graph_with_its_real_edges() -> None:
    from langgraph_memgpt.sleeptime.graph import graph

    drawn = graph.get_graph()
    assert set(drawn.nodes) == {
        "__start__",
        "read_new_messages",
        "propose_rewrite",
        "apply_rewrite",
        "__end__",
    }
    assert {(e.source, e.target) for e in drawn.edges} == {
        ("__start__", "read_new_messages"),
        ("read_new_messages", "propose_rewrite"),
        ("read_new_messages", "__end__"),
        ("propose_rewrite", "apply_rewrite"),
        ("propose_rewrite", "__end__"),
        ("apply_rewrite", "__end__"),
    }


def test_the_consolidation_graph_routes_by_edges_that_read_its_state() -> None:
    """Its nodes return state updates (no ``Command(goto)``); the edges read them."""
    import inspect

    from langgraph_memgpt.sleeptime import graph as sleep_graph
    from langgraph_memgpt.sleeptime import propose_rewrite, read_new_messages

    for module in (read_new_messages, propose_rewrite):
        assert "Command" not in vars(module), module.__name__
        assert "goto" not in inspect.getsource(module), module.__name__
    assert sleep_graph.after_read({"transcript": []}) == END
    assert sleep_graph.after_read({"transcript": ["user: hi"]}) == "propose_rewrite"
    assert sleep_graph.after_proposal({"proposal": None}) == END
    assert sleep_graph.after_proposal({"proposal": {"blocks": {}}}) == "apply_rewrite"


def test_line_edits_drop_chatter_move_user_facts_and_merge_repeats(
    memory_backend: MemoryBackend,
) -> None:
    """The answer a small model gives: line numbers, nothing rephrased, nothing else lost."""
    memory = seeded(memory_backend)
    model = ScriptedChatModel.from_steps(
        [
            json.dumps(
                {
                    "drop": [4, 6, 8],  # hi there!, thanks so much :), lol the weather ...
                    "move": {"human": [2]},  # The user is allergic to peanuts.
                    "add": {"human": ["Takes a pottery class"]},
                    "archive": ["Ana started a pottery class"],
                }
            )
        ]
    )
    out = consolidate(memory_backend, model)
    prompt = str(model.calls[0][-1].content)
    assert "[4] hi there!" in prompt and "[2] The user is allergic to peanuts." in prompt
    assert memory.core.get("human").value == "\n".join(
        [
            "Name: Ana",
            "Ana likes hiking",  # its repeat merged away
            "Works as a nurse in Porto",
            "The user is allergic to peanuts.",
            "Takes a pottery class",
        ]
    )
    assert memory.core.get("persona").value == "I am Sam, a helpful companion."
    assert memory.core.history("human")[-1]["actor"] == ACTOR
    assert out["problems"] == []


def test_line_edits_that_name_no_line_or_empty_a_block_are_refused() -> None:
    blocks = {
        "persona": Block("persona", "I am Sam", "", 100),
        "human": Block("human", "Name: Ana\nhi!", "", 100),
    }
    proposal = parse_proposal('{"drop": [1, 2, 3, 7]}', blocks)  # all of them, and line 7
    assert proposal.blocks == {}
    assert any("line 7 does not exist" in p for p in proposal.problems)
    assert any("'persona' would be emptied" in p for p in proposal.problems)
    assert any("'human' would be emptied" in p for p in proposal.problems)
    assert parse_proposal('{"drop": [3]}', blocks).blocks == {"human": "Name: Ana"}
    with pytest.raises(MalformedAnswerError, match="'drop' must be a list of line numbers"):
        parse_proposal('{"drop": ["hi!"]}', blocks)


def test_sorted_lines_keep_user_facts_in_human_agent_facts_in_persona_and_drop_chatter(
    memory_backend: MemoryBackend,
) -> None:
    """The embedded model's answer: one kind per numbered line (its grammar requires all)."""
    memory = seeded(memory_backend)
    kinds = {"1": "agent", "2": "user", "3": "user", "4": "chatter", "5": "user"}
    kinds |= {"6": "chatter", "7": "user", "8": "chatter", "9": "user"}
    new_facts = ["Takes a pottery class", "Works as a nurse in Porto, Portugal"]  # 2nd: fuller
    reply = {"lines": kinds, "new_facts": new_facts, "archive": []}
    out = consolidate(memory_backend, ScriptedChatModel.from_steps([json.dumps(reply)]))
    assert memory.core.get("persona").value == "I am Sam, a helpful companion."
    assert memory.core.get("human").value == "\n".join(
        [
            "Name: Ana",
            "Ana likes hiking",
            "Works as a nurse in Porto, Portugal",  # in the place of the line it covers
            "The user is allergic to peanuts.",
            "Takes a pottery class",
        ]
    )
    assert out["problems"] == []


def test_new_facts_are_merged_by_the_rule_core_appends_keep() -> None:
    """A restatement is left out; a new place is a new fact, not "much the same" words."""
    blocks = {
        "persona": Block("persona", "I am Sam", "", 200),
        "human": Block(
            "human", "Name: Ana\nThe user lives in Leeds.\nTakes a pottery class", "", 200
        ),
    }
    answer = {"add": {"human": ["User lives in York", "takes pottery classes"]}}
    proposal = parse_proposal(json.dumps(answer), blocks)
    assert proposal.blocks == {
        "human": "Name: Ana\nThe user lives in Leeds.\nTakes a pottery class\nUser lives in York"
    }


def test_the_embedded_model_is_held_to_one_kind_for_every_line() -> None:
    from langgraph_memgpt.sleeptime.proposal import answer_schema

    blocks = {
        "persona": Block("persona", "I am Sam", "", 100),
        "human": Block("human", "Name: Ana\nhi!", "", 100),
    }
    lines = answer_schema(blocks)["properties"]["lines"]
    assert lines["required"] == ["1", "2", "3"]
    assert lines["properties"]["1"] == {"enum": ["user", "agent", "chatter"]}
    assert lines["properties"]["3"] == {"enum": ["user", "chatter"]}  # never into persona
    with pytest.raises(MalformedAnswerError, match="'lines' must map line numbers"):
        parse_proposal('{"lines": {"1": "fact"}}', blocks)


def test_on_postgres_a_read_waits_for_an_earlier_message_still_being_recorded(
    postgres_url: str,
) -> None:
    """Ids can commit out of order; `since` must not hand out id N+1 while N is in flight."""
    import threading

    import psycopg

    from langgraph_memgpt.stores.postgres import PostgresBackend
    from langgraph_memgpt.stores.postgres.recall_writes import writers_key

    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        memory = backend.open(AGENT)
        with psycopg.connect(postgres_url) as writer:  # a recording still in flight
            writer.execute("SELECT pg_advisory_xact_lock_shared(%s)", (writers_key(AGENT),))
            writer.execute(
                "INSERT INTO memgpt_recall (agent_id, thread_id, message_id, role, text, "
                "created_at, searchable) VALUES (%s, 't1', 'early', 'user', 'I am first', "
                "'2026-11-30T10:00:00+00:00', true)",
                (AGENT,),
            )
            add_turns(memory, [("user", "I am second")], start=1)  # commits a larger id
            read: list[Any] = []
            reader = threading.Thread(target=lambda: read.extend(memory.recall.since(0)))
            reader.start()
            with psycopg.connect(postgres_url, autocommit=True) as watcher:
                for _ in range(600):  # until the reader waits on the writers' lock
                    waiting = watcher.execute(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    ).fetchone()
                    if waiting and waiting[0]:
                        break
                    reader.join(0.05)
            assert reader.is_alive(), "the read did not wait for the message in flight"
            writer.commit()
        reader.join(30)
        assert [m.text for _, m in read] == ["I am first", "I am second"]
    finally:
        backend.close()
