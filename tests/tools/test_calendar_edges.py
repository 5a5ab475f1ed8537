"""Calendar edges: the first and last days Python can hold are dates like any other.

``0001-01-01`` and ``9999-12-31`` (and offsets that push year 1 or 9999 out of range in
UTC) once raised ``OverflowError`` from the memory tools and from ``bench locomo``: a
range end plus one day, a date named in a query plus a week, a year-1 time moved to UTC.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from locomo_samples import ann_and_bob, turn, write_locomo

from benchmarks.bench.cli import main
from langgraph_memgpt import Context
from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.sqlite import AgentMemory
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.tools.run import Provenance, execute_tool_call

WHOLE_CALENDAR = {"start_date": "0001-01-01", "end_date": "9999-12-31"}
EDGE_ARGS = [
    ("conversation_search_date", WHOLE_CALENDAR),
    ("conversation_search", {"query": "puppy", **WHOLE_CALENDAR}),
    ("conversation_search", {"query": "what happened on 9999-12-31"}),
    ("conversation_search", {"query": "the puppy on 0001-01-01"}),
    ("conversation_search", {"query": "January 1, 0001 or December 9999"}),
    ("conversation_search", {"query": "puppy", "start_date": "0001-01-01T00:00:00+05:00"}),
    ("conversation_search", {"query": "puppy", "end_date": "9999-12-31T23:59:59-05:00"}),
    ("archival_memory_search", {"query": "puppy", **WHOLE_CALENDAR}),
    (
        "archival_memory_search",
        {"query": "puppy", "start_date": "0001-01-01T00:00:00+05:00",
         "end_date": "9999-12-31T23:59:59-05:00"},
    ),
]  # fmt: skip


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    memory = AgentMemory.open(tmp_path / "data", "ada", None)
    memory.core.ensure_defaults()
    memory.archival.insert("Ada adopted a puppy")
    memory.recall.add(
        [
            RecallMessage("ada", "t", "m1", "user", "I adopted a puppy", "0001-01-01T00:00:00"),
            RecallMessage("ada", "t", "m2", "user", "The puppy is fine", "9999-12-31T23:00:00"),
        ]
    )
    yield memory
    memory.close()


@pytest.mark.parametrize(("name", "args"), EDGE_ARGS)
def test_the_first_and_last_calendar_days_are_searchable_dates_in_every_tool(
    memory: AgentMemory, name: str, args: dict[str, str]
) -> None:
    outcome = execute_tool_call(
        name,
        args,
        memory=memory,
        ctx=Context(data_dir=str(memory.data_dir), agent_id="ada", embedding_model="none"),
        where=Provenance(thread_id="t", turn=1),
        user_tools={},
    )
    result = json.loads(outcome.content)
    assert result["status"] == "OK", result
    assert "puppy" in result["message"]


def test_a_whole_calendar_range_finds_messages_on_its_first_and_last_days(
    memory: AgentMemory,
) -> None:
    page = memory.recall.search_date("0001-01-01", "9999-12-31", page_size=10)
    assert [hit.item.message_id for hit in page.hits] == ["m1", "m2"]


def test_times_utc_cannot_hold_stop_at_the_calendar_edge() -> None:
    assert to_utc_iso("0001-01-01T00:00:00+05:00") == "0001-01-01T00:00:00.000000+00:00"
    assert to_utc_iso("9999-12-31T23:59:59-05:00") == "9999-12-31T23:59:59.999999+00:00"


def test_bench_locomo_runs_on_sessions_dated_year_1_and_year_9999(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qa = [
        {"question": "When did Ann adopt a puppy?", "answer": "1 January 1", "category": 2,
         "evidence": ["D1:1"]},
        {"question": "What did Bob do on 31 December 9999?", "answer": "pottery", "category": 2,
         "evidence": ["D2:1"]},
        {"question": "What happened on 1 January, 0001?", "answer": "a puppy", "category": 2,
         "evidence": ["D1:1"]},
    ]  # fmt: skip
    edge = ann_and_bob(
        "edge",
        qa,
        session_1_date_time="12:00 am on 1 January, 0001",
        session_1=[turn("Ann", "D1:1", "I adopted a puppy."), turn("Bob", "D1:2", "Nice!")],
        session_2_date_time="11:59 pm on 31 December, 9999",
        session_2=[turn("Bob", "D2:1", "I made pottery."), turn("Ann", "D2:2", "Lovely.")],
    )
    path = write_locomo(tmp_path, [edge])
    code = main(
        ["locomo", "--data", str(path), "--modes", "fts", "--json", "--no-progress",
         "--embedding-model", "none", "--data-dir", str(tmp_path / "data")]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["questions"] == 3


def test_queries_naming_the_calendar_edges_search_on_both_backends(
    memory_backend: Any,
) -> None:
    """A named day widened by the date signal's reach stops at the calendar's edge.

    Postgres recall built that bound with ``timedelta`` and raised OverflowError for a query
    naming 31 December 9999; recall and archival now share ``mentions.date_scores``.
    """
    memory = memory_backend.open("ada")
    memory.recall.add(
        [RecallMessage("ada", "t", "m1", "user", "The puppy is fine", "9999-12-31T23:00:00")]
    )
    memory.archival.insert("Ada adopted a puppy", created_at="0001-01-01T00:00:00")
    for query in ("what happened to the puppy on 31 December 9999?", "puppy on 1 January 0001"):
        assert memory.recall.search(query, mode="fts").hits
        assert memory.archival.search(query, mode="fts").hits
