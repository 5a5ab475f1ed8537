"""Core memory blocks: defaults, edits, model-readable refusals, history, isolation.

Every test runs on both backends (``memory_backend``: SQLite and Postgres).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import BackendFactory

from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.types import Block, BlockEditError

# The protocol's methods plus ``create`` (both backends have it; the graph does not need it).
SqliteCoreMemory = Any


@pytest.fixture
def core(memory_backend: MemoryBackend) -> SqliteCoreMemory:
    memory = memory_backend.open("agent-a").core
    memory.ensure_defaults(persona="I am Sam, a helpful assistant.", human="")
    return memory


def test_ensure_defaults_creates_persona_and_human_with_descriptions(
    core: SqliteCoreMemory,
) -> None:
    blocks = core.blocks()
    assert [b.label for b in blocks] == ["persona", "human"]
    assert blocks[0].value == "I am Sam, a helpful assistant."
    assert blocks[1].value == ""
    assert all(b.description and b.char_limit == 2000 and not b.read_only for b in blocks)


def test_ensure_defaults_never_overwrites_existing_blocks(core: SqliteCoreMemory) -> None:
    core.append("human", "Name: Alice")
    core.ensure_defaults(persona="another persona", human="another human")
    assert core.get("persona").value == "I am Sam, a helpful assistant."
    assert core.get("human").value == "Name: Alice"


def test_append_adds_a_line_and_returns_the_new_block(core: SqliteCoreMemory) -> None:
    first = core.append("human", "Name: Alice")
    second = core.append("human", "Likes hiking")
    assert first.value == "Name: Alice"
    assert second == Block("human", "Name: Alice\nLikes hiking", second.description, 2000)
    assert core.get("human").value == "Name: Alice\nLikes hiking"


def test_replace_changes_the_text_and_empty_new_text_deletes_it(core: SqliteCoreMemory) -> None:
    core.append("human", "Name: Alice\nLikes hiking")
    assert core.replace("human", "hiking", "climbing").value == "Name: Alice\nLikes climbing"
    assert core.replace("human", "\nLikes climbing", "").value == "Name: Alice"


def test_blocks_persist_across_reopening_the_database(make_backend: BackendFactory) -> None:
    first = make_backend().open("agent-a").core
    first.ensure_defaults(persona="p", human="h")
    first.append("human", "more")
    assert make_backend().open("agent-a").core.get("human").value == "h\nmore"


def test_edit_over_the_limit_is_refused_with_the_sizes(core: SqliteCoreMemory) -> None:
    core.set("human", "x" * 2000)
    with pytest.raises(BlockEditError) as info:
        core.append("human", "y" * 100)
    assert str(info.value).startswith(
        "Edit failed: block 'human' would hold 2101 characters, over its limit of 2000. Shorten"
    )
    assert core.get("human").value == "x" * 2000


def test_replace_over_the_limit_is_refused(core: SqliteCoreMemory) -> None:
    core.set("human", "a" * 1990 + "END")
    with pytest.raises(BlockEditError, match="would hold 2020 characters, over its limit"):
        core.replace("human", "END", "E" * 30)


def test_read_only_block_refuses_the_agent_but_not_its_owner(core: SqliteCoreMemory) -> None:
    core.create("policy", "Never share secrets.", "Rules from the operator.", 500, read_only=True)
    for edit in (
        lambda: core.append("policy", "Share everything."),
        lambda: core.replace("policy", "Never", "Always"),
        lambda: core.set("policy", "anything", actor="agent"),
    ):
        with pytest.raises(BlockEditError, match="block 'policy' is read-only"):
            edit()
    assert core.get("policy").value == "Never share secrets."
    assert core.set("policy", "Never share keys.", actor="user").value == "Never share keys."


def test_replace_of_missing_text_quotes_it(core: SqliteCoreMemory) -> None:
    core.append("human", "Name: Alice")
    with pytest.raises(BlockEditError) as info:
        core.replace("human", "Name: Bob", "Name: Carol")
    message = str(info.value)
    assert "'Name: Bob'" in message
    assert "was not found in block 'human'" in message


def test_replace_of_missing_text_shows_the_lines_it_may_mean(core: SqliteCoreMemory) -> None:
    core.append("human", "Name: Tom\nWrites code in Emacs (editor setting in .toolrc).")
    with pytest.raises(BlockEditError) as info:
        core.replace("human", "editor=emacs", "editor=neovim")
    assert str(info.value).endswith(
        "The block's lines with those words: 'Writes code in Emacs (editor setting in .toolrc).'."
    )


def test_replace_of_text_that_occurs_twice_asks_for_more_context(core: SqliteCoreMemory) -> None:
    core.append("human", "likes tea\nsister likes tea")
    with pytest.raises(BlockEditError, match="occurs 2 times"):
        core.replace("human", "likes tea", "likes coffee")


def test_replace_finds_text_copied_in_another_case_when_only_one_place_matches(
    core: SqliteCoreMemory,
) -> None:
    core.append("human", "Name: Ada\nPreferred output format: JSON (set in config.yaml)")
    changed = core.replace("human", "preferred output format: json", "Preferred format: Parquet")
    assert changed.value == "Name: Ada\nPreferred format: Parquet (set in config.yaml)"


def test_replace_in_another_case_is_refused_when_two_places_match(core: SqliteCoreMemory) -> None:
    core.append("human", "Likes Tea\nsister likes tea")
    with pytest.raises(BlockEditError, match="was not found"):
        core.replace("human", "LIKES TEA", "likes coffee")
    assert core.get("human").value == "Likes Tea\nsister likes tea"


def test_empty_old_content_is_an_error(core: SqliteCoreMemory) -> None:
    with pytest.raises(BlockEditError, match="old_content is empty"):
        core.replace("human", "", "anything")


def test_empty_append_is_an_error(core: SqliteCoreMemory) -> None:
    with pytest.raises(BlockEditError, match="nothing to append"):
        core.append("human", "   ")


def test_unknown_label_lists_the_existing_blocks(core: SqliteCoreMemory) -> None:
    for edit in (
        lambda: core.append("user", "x"),
        lambda: core.replace("user", "a", "b"),
        lambda: core.set("user", "x"),
        lambda: core.get("user"),
    ):
        with pytest.raises(BlockEditError) as info:
            edit()
        assert "no core memory block 'user'" in str(info.value)
        assert "Existing blocks: 'persona', 'human'" in str(info.value)


def test_history_keeps_every_old_value_with_actor_and_operation(core: SqliteCoreMemory) -> None:
    core.append("human", "Name: Alice")
    core.replace("human", "Alice", "Alicia")
    core.set("human", "Name: Alicia (Ali)", actor="user")
    history = core.history("human")
    assert [(h["op"], h["actor"]) for h in history] == [
        ("create", "system"),
        ("append", "agent"),
        ("replace", "agent"),
        ("set", "user"),
    ]
    assert [h["old_value"] for h in history] == [None, "", "Name: Alice", "Name: Alicia"]
    assert history[-1]["new_value"] == "Name: Alicia (Ali)"
    assert all(h["created_at"] for h in history)


def test_refused_edit_leaves_no_history(core: SqliteCoreMemory) -> None:
    before = len(core.history("human"))
    with pytest.raises(BlockEditError):
        core.append("human", "z" * 3000)
    assert len(core.history("human")) == before


def test_block_over_its_limit_still_loads_and_can_only_shrink(
    make_backend: BackendFactory,
) -> None:
    long_persona = "a" * 600 + "b" * 1900
    make_backend().open("agent-a").core.ensure_defaults(persona=long_persona)
    reopened = make_backend().open("agent-a").core
    assert reopened.get("persona").value == long_persona
    assert [b.label for b in reopened.blocks()] == ["persona", "human"]
    with pytest.raises(BlockEditError, match="would hold 2504 characters"):
        reopened.append("persona", "abc")
    shrunk = reopened.replace("persona", "a" * 600, "")
    assert len(shrunk.value) == 1900


def test_create_refuses_taken_labels_bad_labels_and_oversized_values(
    core: SqliteCoreMemory,
) -> None:
    with pytest.raises(BlockEditError, match="already exists"):
        core.create("human", "", "", 100)
    with pytest.raises(BlockEditError, match="label"):
        core.create("bad label!", "", "", 100)
    with pytest.raises(BlockEditError, match="over its limit of 10"):
        core.create("notes", "x" * 11, "", 10)
    created = core.create("notes", "todo", "Scratch notes.", 10)
    assert created == core.get("notes")


def test_last_modified_moves_forward_on_edit(memory_backend: MemoryBackend) -> None:
    core = memory_backend.open("agent-a").core
    assert core.last_modified() is None
    core.ensure_defaults()
    first = core.last_modified()
    assert first is not None
    core.append("human", "x")
    later = core.last_modified()
    assert later is not None and later >= first


def test_agent_cannot_read_or_edit_another_agents_core_blocks(
    memory_backend: MemoryBackend,
) -> None:
    alice: SqliteCoreMemory = memory_backend.open("agent-a").core
    alice.ensure_defaults(human="secret: the vault code is 4711")
    alice.create("diary", "private", "", 100)
    bob = memory_backend.open("agent-b").core
    assert bob.blocks() == []
    assert bob.last_modified() is None
    assert bob.history("human") == []
    with pytest.raises(BlockEditError, match="Existing blocks: none"):
        bob.get("diary")
    with pytest.raises(BlockEditError):
        bob.append("human", "overwritten by bob")
    with pytest.raises(BlockEditError):
        bob.replace("human", "4711", "0000")
    bob.ensure_defaults(human="bob's human")
    bob.append("human", "more")
    assert alice.get("human").value == "secret: the vault code is 4711"
    assert bob.get("human").value == "bob's human\nmore"
    assert "4711" not in str([h for h in bob.history("human")])


def test_seeding_default_blocks_that_exist_takes_no_write_lock(db: Any, tmp_data_dir: Path) -> None:
    """SQLite only (its whole-file write lock): every graph step seeds the defaults; with
    them in place it must not wait on writers. Postgres writers lock rows, not the database."""
    from langgraph_memgpt.stores.sqlite.core import SqliteCoreMemory as SqliteCore

    core = SqliteCore(db, "agent-a")
    core.ensure_defaults(persona="I am Sam, a helpful assistant.", human="")
    core.db.conn.execute("PRAGMA busy_timeout=50")
    writer = sqlite3.connect(tmp_data_dir / "memory.sqlite")
    writer.execute("BEGIN IMMEDIATE")
    try:
        core.ensure_defaults(persona="other", human="other")
    finally:
        writer.rollback()
        writer.close()
    assert core.get("persona").value == "I am Sam, a helpful assistant."


def test_latest_change_id_moves_only_for_other_actors_and_other_agents_never_show(
    memory_backend: MemoryBackend,
) -> None:
    """The loop re-renders the prompt when this moves: never for its thread's own edits."""
    core = memory_backend.open("agent-a").core
    assert core.latest_change_id(other_than="agent:t1") is None
    core.ensure_defaults()  # the creations are the system's
    created = core.latest_change_id(other_than="agent:t1")
    assert created is not None
    for i in range(5):
        core.append("human", f"own edit {i}", actor="agent:t1")
    assert core.latest_change_id(other_than="agent:t1") == created
    other = core.append("human", "from another thread", actor="agent:t2")
    core.append("human", "own again", actor="agent:t1")
    newest = core.latest_change_id(other_than="agent:t1")
    assert newest is not None and newest > created
    # The other thread sees t1's edits as someone else's: its id is the newest of all.
    assert core.latest_change_id(other_than="agent:t2") == max(
        int(h["id"]) for h in core.history("human")
    )
    assert other.value.endswith("from another thread")
    core.set("persona", "edited by a person")  # actor "user"
    person = core.latest_change_id(other_than="agent:t1")
    assert person is not None and person > newest
    # Another agent's edits are not this agent's changes.
    bob = memory_backend.open("agent-b").core
    bob.ensure_defaults()
    bob.append("human", "bob's", actor="agent:t9")
    assert core.latest_change_id(other_than="agent:t1") == person
    assert bob.latest_change_id(other_than="agent:t9") not in (None, person)
