"""The turn benchmark (benchmarks/local_turns.py) end to end, on a scripted model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import local_turns  # noqa: E402


def step(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": n, "args": a} for n, a in calls]}


def test_the_turn_benchmark_measures_turns_answers_and_edits(tmp_path: Path) -> None:
    scenarios = {
        "scenarios": [
            {
                "agent": "kim",
                "facts": [["kayak"]],
                "sessions": [["Hi there!", "I paddle a red kayak."]],
                "questions": [
                    {"q": "What do I paddle?", "expect": ["kayak"]},
                    {"q": "What is my dog called?", "expect": [], "unknown": True},
                ],
            }
        ]
    }
    script = [
        step(("send_message", {"message": "Hello!"})),
        step(
            ("core_memory_append", {"label": "human", "content": "Paddles a red kayak."}),
            ("send_message", {"message": "Nice!"}),
        ),
        step(("send_message", {"message": "A red kayak."})),
        step(("conversation_search", {"query": "dog", "start_date": "2020-01-01"})),
        step(("send_message", {"message": "I don't know your dog's name."})),
    ]
    (tmp_path / "scenarios.json").write_text(json.dumps(scenarios))
    (tmp_path / "script.json").write_text(json.dumps(script))
    out = tmp_path / "report.json"

    local_turns.main(
        [
            "--model",
            f"scripted:{tmp_path / 'script.json'}",
            "--layouts",
            "cached",
            "--scenarios",
            str(tmp_path / "scenarios.json"),
            "--json",
            str(out),
        ]
    )

    summary = json.loads(out.read_text())["layouts"]["cached"]["summary"]
    assert summary["turns"] == 4
    assert summary["by_kind"]["edit"]["turns"] == 1
    assert summary["by_kind"]["search"]["model_calls_mean"] == 2
    assert summary["accuracy"] == 1.0
    assert summary["searches"] == 1 and summary["searches_with_filters"] == 1
    assert summary["core_edits"]["fact"] == 1 and summary["clean_edit_share"] == 1.0
    assert summary["model_calls_per_ordinary_turn"] == 1.0


def test_a_reply_is_right_only_with_a_word_starting_as_expected_or_an_honest_dont_know() -> None:
    assert local_turns.answered("You play the harp.", ["harp"], unknown=False)
    assert local_turns.answered("You are allergic to peanuts.", ["peanut"], unknown=False)
    assert not local_turns.answered("You love grapes.", ["ape"], unknown=False)
    assert local_turns.answered("I don't know that yet.", [], unknown=True)
    assert not local_turns.answered("Your dog is Max.", [], unknown=True)
