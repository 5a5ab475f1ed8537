"""Facts the small model left unsaved are noted for it in the step where it replies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel
from langgraph_memgpt.small_model.auto_save import AUTO_SAVE_FLAG, add_missing_notes, notes_for
from langgraph_memgpt.stores.sqlite import open_memory

COMPANIONS = ("core_memory_append", "core_memory_replace", "archival_memory_insert")


@pytest.mark.parametrize(
    ("said", "notes"),
    [
        ("Hi, I'm Lou. I play the oboe.", ["Name is Lou.", "Plays the oboe."]),
        ("Name's Kit.", ["Name is Kit."]),
        ("Okay, Pim here.", ["Name is Pim."]),
        ("By the way, I've kept bees for ten years.", ["Has kept bees for ten years."]),
        ("My sister Ola teaches yoga.", ["User's sister Ola teaches yoga."]),
        ("I'm allergic to shellfish.", ["Is allergic to shellfish."]),
        ("Our flat is in Porto.", ['Said: "Our flat is in Porto."']),
        # the name once: the rest of its sentence is noted without it, if it lasts
        (
            "Sade here, I nurse on a cardiac ward in Ibadan.",
            ["Name is Sade.", "Nurses on a cardiac ward in Ibadan."],
        ),
        ("Tomasz here, sorry for the typos, on the bus.", ["Name is Tomasz."]),
    ],
)
def test_a_fact_sentence_becomes_a_whole_note_about_the_user(said: str, notes: list[str]) -> None:
    assert notes_for(said) == notes


@pytest.mark.parametrize(
    "said",
    [
        "The weather is lovely.",
        "I'm so tired today.",
        "Do you like jazz?",
        "What is my name?",
        "lol my tea went cold",
        "Thanks, bye!",
    ],
)
def test_small_talk_questions_and_passing_states_give_no_note(said: str) -> None:
    assert notes_for(said) == []


def _step(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls)]
    )


def _prompt(said: str) -> list[Any]:
    return [
        SystemMessage("You are a MemGPT agent."),
        HumanMessage(f"[2026-12-01 09:30 UTC] {said}"),
    ]


def test_unsaved_facts_are_appended_before_the_reply() -> None:
    step = _step(("send_message", {"message": "Hi Lou!"}))
    out = add_missing_notes(
        step, _prompt("Hi, I'm Lou. I play the oboe."), "send_message", COMPANIONS
    )
    assert [(c["name"], c["args"].get("content")) for c in out.tool_calls] == [
        ("core_memory_append", "Name is Lou."),
        ("core_memory_append", "Plays the oboe."),
        ("send_message", None),
    ]
    assert out.additional_kwargs[AUTO_SAVE_FLAG] == 2
    assert all(c["id"] for c in out.tool_calls)


def test_a_fact_the_model_saved_itself_is_not_saved_twice() -> None:
    step = _step(
        ("core_memory_append", {"label": "human", "content": "Plays oboe."}),
        ("send_message", {"message": "Nice!"}),
    )
    out = add_missing_notes(step, _prompt("I play the oboe."), "send_message", COMPANIONS)
    assert out is step


def test_a_searching_step_or_a_later_step_is_left_alone() -> None:
    said = "I play the oboe."
    search = _step(("conversation_search", {"query": "oboe"}), ("send_message", {"message": "x"}))
    assert add_missing_notes(search, _prompt(said), "send_message", COMPANIONS) is search
    reply = _step(("send_message", {"message": "Nice!"}))
    later = [*_prompt(said), reply]
    assert add_missing_notes(reply, later, "send_message", COMPANIONS) is reply


def test_a_turn_on_the_small_model_ends_with_the_stated_facts_in_human(tmp_path: Path) -> None:
    reply = json.dumps([{"name": "send_message", "arguments": {"message": "Hi Lou!"}}])
    model = LocalToolCallingChatModel(
        inner=ScriptedChatModel.from_steps([reply]),
        reply_tool="send_message",
        companions=COMPANIONS,
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), agent_id="lou", embedding_model="none", auto_search="off")
    out = graph.invoke(
        {"messages": [HumanMessage("Hi, I'm Lou. I play the oboe.")]},
        {"configurable": {"thread_id": "t"}},
        context=ctx,
    )
    assert out["messages"][-1].content == "Hi Lou!"
    human = {
        b.label: b.value for b in open_memory(tmp_path, "lou", embedding_model="none").core.blocks()
    }
    assert human["human"].splitlines() == ["Name is Lou.", "Plays the oboe."]


def test_a_short_note_of_the_model_covers_the_longer_sentence_it_came_from() -> None:
    step = _step(
        ("core_memory_append", {"label": "human", "content": "Left-handed"}),
        ("send_message", {"message": "Noted!"}),
    )
    said = "FYI I'm left-handed, so those scissors never work for me."
    assert add_missing_notes(step, _prompt(said), "send_message", COMPANIONS) is step
