"""The memory tools as the model meets them: schemas, guards, and searches that never lie."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.context import Context
from langgraph_memgpt.llm.call_schema import build_tool_call_schema, describe_tools
from langgraph_memgpt.stores.sqlite import AgentMemory
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.tools.run import MEMORY_TOOLS, Provenance, execute_tool_call, tool_schemas

WHERE = Provenance(thread_id="t1", turn=1)
EDITS = tuple(t.name for t in MEMORY_TOOLS.values() if t.edits and t.for_small_models)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    memory = AgentMemory.open(tmp_path, "ada", None)
    memory.core.ensure_defaults(persona="I am a helpful assistant.", human="Name: Ada.")
    yield memory
    memory.close()


def run(memory: AgentMemory, name: str, **args: Any) -> dict[str, Any]:
    outcome = execute_tool_call(
        name, args, memory=memory, ctx=Context(), where=WHERE, user_tools={}
    )
    return dict(json.loads(outcome.content))


def said(memory: AgentMemory, text: str, created_at: str, message_id: str) -> None:
    memory.recall.add(
        [
            RecallMessage(
                agent_id="ada",
                thread_id="old",
                message_id=message_id,
                role="user",
                text=text,
                created_at=created_at,
                turn=1,
            )
        ]
    )


# --- what the model is offered ------------------------------------------------------------


def test_a_small_model_is_offered_no_optional_filters_to_fill() -> None:
    compact = {
        s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas(compact=True)
    }
    assert set(compact["conversation_search"]["properties"]) == {"query"}
    assert set(compact["archival_memory_search"]["properties"]) == {"query"}
    assert set(compact["core_memory_append"]["properties"]) == {"label", "content"}
    for params in compact.values():
        assert "request_heartbeat" not in params["properties"]
        assert set(params["required"]) == set(params["properties"])


def test_a_small_model_is_not_offered_a_tool_that_is_only_a_date_filter() -> None:
    names = {s["function"]["name"] for s in tool_schemas(compact=True)}
    assert "conversation_search_date" not in names and "conversation_search" in names
    assert "conversation_search_date" in {s["function"]["name"] for s in tool_schemas()}


def test_a_hosted_model_still_gets_every_argument() -> None:
    full = {s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas()}
    assert {"roles", "start_date", "end_date", "page"} <= set(
        full["conversation_search"]["properties"]
    )


def test_every_tool_description_carries_an_example_call() -> None:
    for schema in tool_schemas():
        assert "Example" in schema["function"]["description"], schema["function"]["name"]


def test_a_step_is_one_search_or_edits_followed_by_the_reply() -> None:
    schema = build_tool_call_schema(
        tool_schemas(compact=True), max_calls=3, reply_tool="send_message", companions=EDITS
    )
    shapes = schema["anyOf"]
    lone, *replies = shapes
    lone_names = {o["properties"]["name"]["const"] for o in lone["prefixItems"][0]["anyOf"]}
    assert lone_names == {t.name for t in MEMORY_TOOLS.values() if t.reads and t.for_small_models}
    assert [len(s["prefixItems"]) for s in replies] == [1, 2, 3]
    for shape in replies:
        assert shape["minItems"] == shape["maxItems"] == len(shape["prefixItems"])
        assert shape["prefixItems"][-1]["properties"]["name"] == {"const": "send_message"}
        for before in shape["prefixItems"][:-1]:
            assert {o["properties"]["name"]["const"] for o in before["anyOf"]} == set(EDITS)


def test_the_step_shapes_compile_to_a_llama_cpp_grammar() -> None:
    xllamacpp = pytest.importorskip("xllamacpp")
    schema = build_tool_call_schema(
        tool_schemas(compact=True), max_calls=3, reply_tool="send_message", companions=EDITS
    )
    assert xllamacpp.json_schema_to_grammar(schema)


def test_the_tools_text_names_each_tool_once_with_its_arguments() -> None:
    text = describe_tools(tool_schemas(compact=True), 3, "send_message", EDITS)
    for name, tool in MEMORY_TOOLS.items():
        assert text.count(f"- {name}(") == (1 if tool.for_small_models else 0)
    assert "- conversation_search(query: string)" in text
    assert "followed by send_message" in text


# --- guards against what a small model writes ---------------------------------------------


def test_a_question_is_not_saved_as_a_fact(memory: AgentMemory) -> None:
    result = run(memory, "core_memory_append", label="human", content="What colour do I love?")
    assert result["status"] == "OK" and "Not saved" in result["message"]
    assert memory.core.get("human").value == "Name: Ada."


def test_a_fact_restated_in_other_words_is_not_appended_again(memory: AgentMemory) -> None:
    run(memory, "core_memory_append", label="human", content="Trains for the Valencia marathon.")
    result = run(
        memory,
        "core_memory_append",
        label="human",
        content="I'm training for the Valencia marathon!",
    )
    assert "already says this: 'Trains for the Valencia marathon.'" in result["message"]
    assert "core_memory_replace" in result["message"]
    assert memory.core.get("human").value.count("marathon") == 1
    # A number is part of the fact.
    run(memory, "core_memory_append", label="human", content="Has 2 cats.")
    assert run(memory, "core_memory_append", label="human", content="Has 3 cats.")[
        "message"
    ].startswith("Appended")
    # Something new about the same topic is still a new fact.
    result = run(
        memory, "core_memory_append", label="human", content="Valencia marathon is in December."
    )
    assert result["message"].startswith("Appended")


def test_a_fuller_line_takes_the_place_of_a_short_one_it_says_all_of(memory: AgentMemory) -> None:
    run(memory, "core_memory_append", label="human", content="Plays the cello.")
    result = run(
        memory, "core_memory_append", label="human", content="Plays the cello in an orchestra."
    )
    assert result["message"].startswith("Updated 'human': 'Plays the cello.' became")
    assert memory.core.get("human").value == "Name: Ada.\nPlays the cello in an orchestra."
    # A line of one content word is no fact another one carries on.
    run(memory, "core_memory_append", label="human", content="Cellist.")
    run(memory, "core_memory_append", label="human", content="Cellist in Porto.")
    assert "Cellist.\nCellist in Porto." in memory.core.get("human").value


def test_a_fact_already_in_the_block_is_not_appended_twice(memory: AgentMemory) -> None:
    result = run(memory, "core_memory_append", label="human", content="name: ada")
    assert result["message"].startswith("Already saved: 'human' already says this: 'Name: Ada.'")
    assert memory.core.get("human").value == "Name: Ada."


def test_a_fact_about_the_user_written_to_persona_lands_in_human(memory: AgentMemory) -> None:
    result = run(
        memory, "core_memory_append", label="persona", content="The user is allergic to peanuts."
    )
    assert result["status"] == "OK" and "saved to 'human'" in result["message"]
    assert "peanuts" in memory.core.get("human").value
    assert "peanuts" not in memory.core.get("persona").value


def test_a_fact_about_the_assistant_stays_in_persona(memory: AgentMemory) -> None:
    run(memory, "core_memory_append", label="persona", content="I speak in short sentences.")
    assert "short sentences" in memory.core.get("persona").value


# --- searches that cannot come back empty by mistake --------------------------------------


def test_an_invented_date_filter_still_shows_the_matches_it_hid(memory: AgentMemory) -> None:
    said(memory, "I started learning the harp this year.", "2026-12-01T09:00:00+00:00", "m1")
    result = run(
        memory,
        "conversation_search",
        query="harp",
        start_date="2023-01-01",
        end_date="2023-01-31",
    )
    message = result["message"]
    assert "No match with the filters" in message and "2023-01-01" in message
    assert "harp" in message, "the model must see what it has"


def test_a_role_filter_that_hides_every_match_says_so(memory: AgentMemory) -> None:
    said(memory, "My sister Keiko is getting married in June.", "2026-12-01T09:00:00+00:00", "m1")
    result = run(memory, "conversation_search", query="Keiko wedding", roles=["assistant"])
    assert "No match with the filters" in result["message"] and "Keiko" in result["message"]


def test_a_filter_that_matches_keeps_its_page(memory: AgentMemory) -> None:
    said(memory, "Harp lesson on Monday.", "2026-11-30T09:00:00+00:00", "m1")
    said(memory, "Harp recital in January.", "2025-01-10T09:00:00+00:00", "m2")
    result = run(memory, "conversation_search", query="harp", start_date="2026-01-01")
    assert "No match" not in result["message"]
    assert "Monday" in result["message"] and "January" not in result["message"]


def test_a_search_with_no_match_anywhere_says_no_results(memory: AgentMemory) -> None:
    result = run(memory, "conversation_search", query="zeppelin", start_date="2026-01-01")
    assert result["message"].startswith("No results")


def test_an_empty_search_for_what_core_memory_holds_points_at_it(memory: AgentMemory) -> None:
    """Seen on the embedded model: 'allergy' searched with 'Allergic to peanuts.' in view."""
    memory.core.append("human", "Allergic to peanuts.")
    for tool in ("archival_memory_search", "conversation_search"):
        message = run(memory, tool, query="allergy")["message"]
        assert message.startswith("No results"), tool
        assert "core memory" in message and "- human: Allergic to peanuts." in message, tool


def test_an_empty_search_about_nothing_in_core_memory_says_only_no_results(
    memory: AgentMemory,
) -> None:
    memory.core.append("human", "Allergic to peanuts.")
    message = run(memory, "archival_memory_search", query="football team")["message"]
    assert message == "No results (page 0, 0 matches in all)."


def test_an_archival_tag_filter_that_hides_every_match_says_so(memory: AgentMemory) -> None:
    memory.archival.insert("Ada's trip plan: Lisbon in May.", tags=["travel"])
    result = run(memory, "archival_memory_search", query="Lisbon trip", tags=["work"])
    assert "No match with the filters" in result["message"] and "Lisbon" in result["message"]


def test_searches_are_always_read_before_the_turn_ends(memory: AgentMemory) -> None:
    for name in ("conversation_search", "archival_memory_search"):
        outcome = execute_tool_call(
            name, {"query": "x"}, memory=memory, ctx=Context(), where=WHERE, user_tools={}
        )
        assert outcome.heartbeat, name
    edit = execute_tool_call(
        "core_memory_append",
        {"label": "human", "content": "Likes tea."},
        memory=memory,
        ctx=Context(),
        where=WHERE,
        user_tools={},
    )
    assert not edit.heartbeat


@pytest.mark.parametrize("name", ["conversation_search", "archival_memory_search"])
def test_an_absurd_page_number_is_a_readable_error(memory: AgentMemory, name: str) -> None:
    result = run(memory, name, query="x", page=2**64)
    assert result["status"] == "Failed" and "page" in result["message"]


def test_an_absurd_page_of_the_date_listing_is_a_readable_error(memory: AgentMemory) -> None:
    result = run(
        memory,
        "conversation_search_date",
        start_date="2026-01-01",
        end_date="2026-12-31",
        page=2**61,
    )
    assert result["status"] == "Failed" and "page" in result["message"]
