"""Labelled sections in a core block: an edit names one and never touches the others.

Every store test runs on both backends (``memory_backend``: SQLite and Postgres).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import BackendFactory
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.ops.transfer import export_agent, import_agent
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.sections import split
from langgraph_memgpt.stores.sqlite import SqliteBackend
from langgraph_memgpt.stores.types import BlockEditError

SECTIONS = ("User Profile", "Technical Environment", "Active Constraints")
START = (
    "## User Profile\nName: Ada\nLives in Paris.\n"
    "## Technical Environment\nPrefers JSON output.\nUses Python 3.12.\n"
    "## Active Constraints\nNo meetings on Friday."
)


@pytest.fixture
def core(memory_backend: MemoryBackend) -> Any:
    core = memory_backend.open("agent-s").core
    core.ensure_defaults(persona="I am Sam.", human="")
    core.create("profile", START, "The user, in sections.", 2000, sections=SECTIONS)
    return core


def _parts(value: str) -> dict[str, str]:
    """Each section's bytes, header included, cut at the header lines."""
    out: dict[str, str] = {}
    for name in SECTIONS:
        start = value.index(f"## {name}")
        ends = [value.index(f"## {n}") for n in SECTIONS if value.index(f"## {n}") > start]
        out[name] = value[start : min(ends) if ends else len(value)]
    return out


def test_an_edit_to_one_section_leaves_the_others_byte_identical(core: Any) -> None:
    before = _parts(core.get("profile").value)
    core.replace("profile", "JSON", "Parquet", section="Technical Environment")
    core.append("profile", "Runs Debian 12.", section="technical environment")
    after_value = core.get("profile").value
    after = _parts(after_value)
    assert after["User Profile"] == before["User Profile"]
    assert after["Active Constraints"] == before["Active Constraints"]
    assert after["Technical Environment"] == (
        "## Technical Environment\nPrefers Parquet output.\nUses Python 3.12.\nRuns Debian 12.\n"
    )


def test_a_replace_naming_a_section_finds_text_only_there(core: Any) -> None:
    core.append("profile", "Paris office on Mondays.", section="Active Constraints")
    # "Paris" is in two sections; naming one makes the match unique and keeps the other.
    core.replace("profile", "Paris office", "Lyon office", section="Active Constraints")
    value = core.get("profile").value
    assert "Lives in Paris." in value and "Lyon office on Mondays." in value
    with pytest.raises(Exception, match="not found in block 'profile' section 'User Profile'"):
        core.replace("profile", "Friday", "Monday", section="User Profile")
    assert "No meetings on Friday." in core.get("profile").value


def test_unknown_section_is_refused_naming_the_sections(core: Any) -> None:
    with pytest.raises(Exception, match="has no section 'Hobbies'. Its sections: 'User Profile'"):
        core.append("profile", "Chess", section="Hobbies")
    with pytest.raises(Exception, match="has no sections; leave section empty"):
        core.append("human", "Chess", section="Hobbies")


def test_an_edit_that_would_break_a_header_is_refused_and_nothing_changes(core: Any) -> None:
    with pytest.raises(Exception, match="must keep its header lines"):
        core.replace("profile", "## Active Constraints\n", "")
    with pytest.raises(Exception, match="holds the section header"):
        core.append("profile", "## User Profile", section="Active Constraints")
    with pytest.raises(Exception, match="must keep its header lines"):
        core.set("profile", "just text")
    assert core.get("profile").value == START


def test_emptying_and_refilling_a_section(core: Any) -> None:
    core.replace("profile", "No meetings on Friday.", "", section="Active Constraints")
    assert core.get("profile").value.endswith("## Active Constraints")
    core.append("profile", "Budget: 100 EUR.", section="Active Constraints")
    assert core.get("profile").value.endswith("## Active Constraints\nBudget: 100 EUR.")
    core.replace("profile", "Name: Ada\nLives in Paris.", "", section="User Profile")
    core.append("profile", "Name: Ada L.", section="User Profile")
    assert core.get("profile").value.startswith("## User Profile\nName: Ada L.\n## Technical")


def test_declaring_sections_on_an_old_block_keeps_its_text(core: Any) -> None:
    core.append("human", "Name: Bob")
    block = core.declare_sections("human", ["Profile", "Notes"])
    assert block.value == "Name: Bob\n## Profile\n## Notes"
    assert core.get("human").sections == ("Profile", "Notes")
    core.append("human", "Likes tea.", section="Notes")
    assert core.get("human").value == "Name: Bob\n## Profile\n## Notes\nLikes tea."
    assert [p["name"] for p in split(core.get("human"))] == ["", "Profile", "Notes"]


def test_blocks_without_sections_are_edited_as_before(core: Any) -> None:
    core.append("human", "## not a section")
    core.replace("human", "## not a section", "Name: Bob")
    assert core.get("human").value == "Name: Bob"
    assert core.get("human").sections == ()


def test_sections_survive_reopening(make_backend: BackendFactory) -> None:
    make_backend().open("a").core.create("p", "", "d", 500, sections=["One", "Two"])
    block = make_backend().open("a").core.get("p")
    assert block.sections == ("One", "Two") and block.value == "## One\n## Two"


def test_the_prompt_and_the_page_show_the_section_labels(
    memory_backend: MemoryBackend, tmp_path: Path
) -> None:
    memory = memory_backend.open("agent-s")
    memory.core.ensure_defaults(persona="I am Sam.", human="")
    memory.core.create("profile", START, "The user, in sections.", 2000, sections=SECTIONS)
    step = {
        "content": "",
        "tool_calls": [
            {
                "name": "core_memory_replace",
                "args": {
                    "label": "profile",
                    "old_content": "Prefers JSON output.",
                    "new_content": "Prefers Parquet output.",
                    "section": "Technical Environment",
                },
            },
            {"name": "send_message", "args": {"message": "Noted."}},
        ],
    }
    model = ScriptedChatModel.from_steps([step])
    graph = build_graph(model=model, memory=memory_backend).compile(checkpointer=InMemorySaver())
    graph.invoke(
        {"messages": [HumanMessage("I now prefer Parquet.")]},
        {"configurable": {"thread_id": "t1"}},
        context=Context(agent_id="agent-s"),
    )
    prompt = model.calls[0][0].text
    assert '<profile sections="User Profile; Technical Environment; Active Constraints">' in prompt
    assert "## Technical Environment\nPrefers JSON output." in prompt
    value = memory.core.get("profile").value
    assert value == START.replace("Prefers JSON", "Prefers Parquet")
    # A block without sections renders as it always did.
    assert "<human>\n" in prompt

    from langgraph_memgpt.serve.web.views import core_view

    view = next(b for b in core_view(memory)["blocks"] if b["label"] == "profile")
    assert [s["name"] for s in view["sections"]] == list(SECTIONS)
    assert view["sections"][1]["text"] == "Prefers Parquet output.\nUses Python 3.12."
    human = next(b for b in core_view(memory)["blocks"] if b["label"] == "human")
    assert human["sections"] == []


def test_sections_travel_through_export_and_import(tmp_path: Path) -> None:
    source = SqliteBackend(tmp_path / "a", embedding_model="none")
    source.open("x").core.create("profile", START, "d", 2000, sections=SECTIONS)
    path = tmp_path / "x.jsonl"
    export_agent(source.open("x"), path)
    record = next(
        json.loads(line) for line in path.read_text().splitlines() if '"type": "block"' in line
    )
    assert record["sections"] == list(SECTIONS)
    target = SqliteBackend(tmp_path / "b", embedding_model="none")
    import_agent(target.open("x"), path)
    assert target.open("x").core.get("profile").sections == SECTIONS


def test_a_file_made_before_sections_opens_and_gains_the_column(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    SqliteBackend(folder, embedding_model="none").open("x").core.ensure_defaults("p", "h")
    conn = sqlite3.connect(folder / "memory.sqlite")
    conn.execute("ALTER TABLE core_blocks DROP COLUMN sections")
    conn.execute("PRAGMA user_version = 3")  # the version before sections (migration 4)
    conn.commit()
    conn.close()
    from langgraph_memgpt.stores.sqlite import close_all

    close_all()
    core = SqliteBackend(folder, embedding_model="none").open("x").core
    assert core.get("human").value == "h" and core.get("human").sections == ()


@pytest.mark.parametrize("name", ["Bad\ud800", "\udfffTail", "Mid\ud83dle"])
def test_a_section_name_with_a_lone_surrogate_is_refused_and_never_freezes_the_block(
    core: Any, name: str
) -> None:
    with pytest.raises(BlockEditError, match="lone surrogate"):
        core.create("notes", "", "Notes.", 2000, sections=(name, "Ok"))
    with pytest.raises(BlockEditError, match="lone surrogate"):
        core.declare_sections("profile", (*SECTIONS, name))
    # Nothing was declared: the block edits as before.
    core.append("profile", "Speaks French.", section="User Profile")
    assert "Speaks French." in core.get("profile").value
    assert [b.label for b in core.blocks()].count("notes") == 0
    # A whole character outside the BMP is a fine name.
    core.create("emoji", "", "Notes.", 2000, sections=("Pets 🐈", "Ok"))
    core.append("emoji", "Miso.", section="Pets 🐈")
    assert "Miso." in core.get("emoji").value
