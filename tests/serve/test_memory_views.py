"""What the memory page's endpoints answer, on each real backend (no server, no browser).

`test_memory_page.py` drives the same through ``langgraph dev`` and Chromium; these pin
the rules: what a diff marks, who an edit is recorded as, what the page may not change,
and that the page searches with the tools' own search and filters.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langgraph_memgpt import Context
from langgraph_memgpt.serve.web import views
from langgraph_memgpt.serve.web.views import PageError
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.types import BlockEditError, RecallMessage
from langgraph_memgpt.tools.run import Provenance, execute_tool_call, tool_schemas
from langgraph_memgpt.turn.main_context import build_prompt, prompt_tokens
from langgraph_memgpt.turn.tokens import TokenCounter

RULE = "Never share secrets."


@pytest.fixture
def memory(memory_backend: MemoryBackend) -> Memory:
    """Agent 'ada' on each backend (SQLite files, Postgres), with an operator's rule."""
    memory = memory_backend.open("ada")
    memory.core.ensure_defaults(persona="I am a helpful agent.", human="Name: Ada")
    memory.core.create("policy", RULE, "Rules from the operator.", 500, read_only=True)  # type: ignore[attr-defined]
    return memory


def agent_edit(memory: Memory, name: str, **args: object) -> None:
    outcome = execute_tool_call(
        name,
        dict(args),
        memory=memory,
        ctx=Context(agent_id="ada", embedding_model="none"),
        where=Provenance(thread_id="thread-7", turn=3),
        user_tools={},
    )
    assert json.loads(outcome.content)["status"] == "OK", outcome.content


def test_a_word_diff_marks_only_the_words_that_changed() -> None:
    assert views.word_diff("Likes tea and cake.", "Likes coffee and cake.") == [
        ["=", "Likes "],
        ["-", "tea"],
        ["+", "coffee"],
        ["=", " and cake."],
    ]
    assert views.word_diff("", "new") == [["+", "new"]]
    assert views.word_diff("same", "same") == [["=", "same"]]


def test_the_history_names_the_agent_and_its_thread_or_the_person(memory: Memory) -> None:
    agent_edit(
        memory, "core_memory_replace", label="human", old_content="Ada", new_content="Ada L."
    )
    views.set_block(memory, "human", "Name: Ada Lovelace", None, "Name: Ada L.")
    views.set_block(
        memory, "human", "Name: Ada Lovelace, mathematician", "alice", "Name: Ada Lovelace"
    )

    edits = views.history_view(memory, "human")["edits"]
    assert [(e["op"], e["actor"], e["thread_id"]) for e in edits] == [
        ("set", "user:alice", None),
        ("set", "user", None),
        ("replace", "agent", "thread-7"),
        ("create", "system", None),
    ]
    assert edits[2]["diff"] == [["=", "Name: Ada"], ["+", " L."]]
    assert edits[0]["old"] == "Name: Ada Lovelace"
    with pytest.raises(PageError) as missing:
        views.history_view(memory, "nope")
    assert missing.value.status == 404


def test_the_page_cannot_change_a_read_only_block_even_as_a_person(memory: Memory) -> None:
    for user in (None, "ada"):
        with pytest.raises(PageError) as refused:
            views.set_block(memory, "policy", "Share everything.", user=user)
        assert refused.value.status == 403 and "read-only" in str(refused.value)
    assert memory.core.get("policy").value == RULE
    assert [h["op"] for h in memory.core.history("policy")] == ["create"]


def test_the_page_gets_the_stores_refusals_and_clear_errors(memory: Memory) -> None:
    with pytest.raises(BlockEditError, match="over its limit of 2000"):
        views.set_block(memory, "human", "x" * 2001, None, memory.core.get("human").value)
    with pytest.raises(PageError) as not_text:
        views.set_block(memory, "human", 42, user=None)
    assert not_text.value.status == 400 and '{"value"' in str(not_text.value)
    with pytest.raises(PageError) as missing:
        views.set_block(memory, "mood", "happy", user=None)
    assert missing.value.status == 404
    with pytest.raises(PageError, match="page_size must be 1 to 100"):
        views.recall_view(memory, page_size=0)
    with pytest.raises(PageError, match="date"):
        views.recall_view(memory, start_date="yesterday")


def test_core_view_gives_each_blocks_fill_level(memory: Memory) -> None:
    blocks = {b["label"]: b for b in views.core_view(memory)["blocks"]}
    assert list(blocks) == ["persona", "human", "policy"]
    assert blocks["policy"]["chars"] == len(RULE) and blocks["policy"]["char_limit"] == 500
    assert blocks["policy"]["fill"] == round(len(RULE) / 500, 4)
    assert blocks["policy"]["read_only"] and not blocks["human"]["read_only"]


def recall(memory: Memory, role: str, text: str, when: str, n: int) -> None:
    memory.recall.add([RecallMessage("ada", "t1", f"m{n}", role, text, created_at=when, turn=n)])


def test_recall_search_is_the_tools_search_with_role_and_date_filters(
    memory: Memory,
) -> None:
    recall(memory, "user", "My cat Pixel likes tuna.", "2026-11-01T10:00:00+00:00", 1)
    recall(memory, "assistant", "Pixel sounds lovely.", "2026-11-02T10:00:00+00:00", 2)
    recall(memory, "user", "Pixel chased a bird today.", "2026-11-20T10:00:00+00:00", 3)

    timeline = views.recall_view(memory)
    assert timeline["mode"] == "timeline" and timeline["total"] == 3
    assert [m["message_id"] for m in timeline["messages"]] == ["m3", "m2", "m1"]

    found = views.recall_view(memory, "Pixel", roles=["user"])
    assert found["mode"] == "search"
    assert {m["message_id"] for m in found["messages"]} == {"m1", "m3"}
    assert all(m["score"] is not None for m in found["messages"])
    dated = views.recall_view(memory, "Pixel", start_date="2026-11-02", end_date="2026-11-02")
    assert [m["message_id"] for m in dated["messages"]] == ["m2"]
    assert views.recall_view(memory, "Pixel", page_size=1, page=1)["pages"] == 3


def test_archival_passages_keep_tags_and_provenance(memory: Memory) -> None:
    memory.archival.insert("Trip to Lisbon in May.", tags=["travel"], thread_id="t1", turn=4)
    memory.archival.insert("Summary of turns 1-3.", tags=["summary"], thread_id="t2", turn=3)
    listed = views.archival_view(memory)
    assert listed["total"] == 2 and set(listed["tags_in_use"]) == {"travel", "summary"}
    trip = views.archival_view(memory, "Lisbon")["passages"][0]
    assert (trip["tags"], trip["thread_id"], trip["turn"]) == (["travel"], "t1", 4)
    assert [p["text"] for p in views.archival_view(memory, tags=["summary"])["passages"]] == [
        "Summary of turns 1-3."
    ]
    # A thread's eviction history: its own summaries only.
    assert [e["thread_id"] for e in views.evictions(memory, "t2")] == ["t2"]
    assert views.evictions(memory, "t1") == []


def test_a_passage_forgotten_from_the_page_is_gone_and_logged_as_the_user(
    memory: Memory,
) -> None:
    kept = memory.archival.insert("Trip to Lisbon in May.", tags=["travel"])
    gone = memory.archival.insert("Old locker code 1234.")
    answer = views.forget_passage(memory, gone.id, "ada", None)
    assert [p["id"] for p in answer["forgotten"]] == [gone.id]
    assert [p["id"] for p in views.archival_view(memory)["passages"]] == [kept.id]
    assert views.archival_view(memory, "locker code")["passages"] == []
    assert memory.deletions.entries(1)[0].actor == "user:ada"
    with pytest.raises(views.PageError, match="no passage") as missing:
        views.forget_passage(memory, gone.id, None, None)
    assert missing.value.status == 404


def test_the_gauge_counts_the_prompt_check_pressure_counts() -> None:
    queue = [
        HumanMessage("hello", id="u1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "send_message", "args": {"message": "hi"}, "id": "c1"}],
        ),
        ToolMessage('{"status": "OK"}', tool_call_id="c1", id="r1"),
    ]
    values = {
        "messages": [m.model_dump() for m in queue],  # as the threads API sends them
        "system_prompt": "You are an agent.",
        "summary": "We met before.",
        "evicted_count": 4,
    }
    ctx = Context(context_window=2048, warning_fraction=0.5)
    counted = views.gauge(values, ctx)
    prompt = build_prompt("You are an agent.", "We met before.", 4, queue)
    expected = prompt_tokens(TokenCounter(), prompt, tool_schemas([]))
    assert counted["tokens"] == expected
    assert (counted["window"], counted["warning_at"], counted["flush_at"]) == (2048, 1024, 2048)
    assert counted["queue_messages"] == 3
    compact = views.gauge(values, ctx, compact_tools=True)["tokens"]
    assert compact < expected  # the embedded model's compact tool schemas are smaller


def test_a_threads_window_is_its_last_runs() -> None:
    assert views.window_of({"context_window": 4096, "agent_id": "ada"}).context_window == 4096
    assert views.window_of({"context_window": "2048"}).context_window == 2048  # Studio's text
    assert views.window_of(None).context_window == Context().context_window
