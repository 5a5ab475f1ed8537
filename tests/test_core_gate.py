"""Only what the user says about themselves enters ``human``: small talk stays out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.core_gate import NOT_ABOUT_THE_USER, grounded_in_user_words
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores import open_memory


def _turn(tmp_path: Path, said: str, *calls: dict[str, Any]) -> tuple[str, list[str]]:
    steps = [
        {
            "content": "",
            "tool_calls": [*calls, {"name": "send_message", "args": {"message": "Ok!"}}],
        }
    ]
    graph = build_graph(model=ScriptedChatModel.from_steps(steps)).compile(
        checkpointer=InMemorySaver()
    )
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage(said)]}, config, context=ctx)
    results = [
        json.loads(str(m.content))["message"]
        for m in graph.get_state(config).values["messages"]
        if isinstance(m, ToolMessage)
    ]
    human = next(
        b.value
        for b in open_memory(tmp_path, "ada", embedding_model="none").core.blocks()
        if b.label == "human"
    )
    return human, results


def _append(content: str) -> dict[str, Any]:
    return {"name": "core_memory_append", "args": {"label": "human", "content": content}}


@pytest.mark.parametrize(
    ("said", "note"),
    [
        (
            "Weather has been odd lately, warm one day and freezing the next.",
            "Weather has been odd lately.",
        ),
        ("Traffic was bad this morning.", "Traffic was bad this morning."),
        ("lol the office printer is jammed again", "Office printer is jammed."),
    ],
)
def test_small_talk_is_not_saved_to_human(tmp_path: Path, said: str, note: str) -> None:
    human, results = _turn(tmp_path, said, _append(note))
    assert human == ""
    assert results[0] == NOT_ABOUT_THE_USER


@pytest.mark.parametrize(
    ("said", "note"),
    [
        ("I'm allergic to hazelnuts, so keep that in mind.", "Allergic to hazelnuts."),
        (
            "My husband Karl and I just bought a flat in Ghent.",
            "Husband Karl; bought a flat in Ghent.",
        ),
        ("Hey there. Name's Bram.", "Name is Bram."),
        ("Hiya, Dev here.", "User's name is Dev."),
    ],
)
def test_what_the_user_says_about_themselves_is_saved(tmp_path: Path, said: str, note: str) -> None:
    human, _ = _turn(tmp_path, said, _append(note))
    assert human == note


def test_a_correction_into_small_talk_is_refused_but_a_real_one_applies(tmp_path: Path) -> None:
    memory = open_memory(tmp_path, "ada", embedding_model="none")
    memory.core.ensure_defaults()
    memory.core.append("human", "Lives in Leeds.")
    replace = {
        "name": "core_memory_replace",
        "args": {
            "label": "human",
            "old_content": "Lives in Leeds.",
            "new_content": "Weather is grey.",
        },
    }
    human, results = _turn(tmp_path, "Such a grey day today.", replace)
    assert human == "Lives in Leeds." and results[0] == NOT_ABOUT_THE_USER
    replace["args"]["new_content"] = "Lives in York."
    human, _ = _turn(tmp_path, "Correction: we live in York now.", replace)
    assert human == "Lives in York."


def test_a_note_must_share_words_with_a_lasting_statement_of_the_user() -> None:
    assert not grounded_in_user_words("Loves sailing.", ["I'm so tired today."])
    assert not grounded_in_user_words("Tired today.", ["I'm so tired today."])
    assert grounded_in_user_words("Tired of night shifts.", ["I'm tired of my night shifts."])
