"""The turn benchmark (benchmarks/local_turns.py) end to end, on a scripted model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
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


def test_an_answer_counts_as_said_to_the_user_only_in_the_second_person() -> None:
    assert local_turns.addresses_user("Your name is Ada.", ["ada"])
    assert local_turns.addresses_user("Sure! You're allergic to hazelnuts.", ["hazelnut"])
    assert not local_turns.addresses_user("My name is Ada.", ["ada"])
    assert not local_turns.addresses_user("I'm allergic to hazelnuts.", ["hazelnut"])
    assert not local_turns.addresses_user(
        "Teal is a beautiful color. Do you have any other favorite colors?", ["teal"]
    )
    assert not local_turns.addresses_user("At work we switched to CockroachDB.", ["cockroach"])


def test_capture_small_talk_garbled_and_stale_lines_are_judged_from_core_memory() -> None:
    facts = [
        {"session": 0, "keys": ["solaris"], "whole": [["solaris"], ["recommend"]]},
        {"session": 0, "keys": ["teal"], "whole": [["teal"]], "superseded": True},
        {"session": 1, "keys": ["orange"], "whole": [["orange"]], "stale": ["teal"]},
        {"session": 1, "keys": ["peanut"], "whole": [["peanut"]]},
    ]
    after = [
        "Keeps 'Solaris'.\nLoves teal.\nTraffic was bad this morning.",
        "Keeps 'Solaris'.\nLoves teal.\nTraffic was bad this morning.\nLoves orange now.",
    ]
    capture = local_turns.judge_capture(facts, after)
    assert [c["captured"] for c in capture] == [True, True, True, False]
    assert [c["whole"] for c in capture] == [False, True, True, False]
    core = local_turns.judge_core(facts, after[-1].splitlines())
    assert core["chatter"] == ["Traffic was bad this morning."]
    assert core["stale"] == ["Loves teal."]
    assert core["repeated"] == []
    twice = local_turns.judge_core(facts, ["Allergic to peanuts.", "Can't eat peanuts at all."])
    assert twice["repeated"] == [["Allergic to peanuts.", "Can't eat peanuts at all."]]


def test_an_answer_reciting_memories_the_question_did_not_ask_for_is_counted() -> None:
    facts = [
        {"session": 0, "keys": ["karl", "ghent"]},
        {"session": 0, "keys": ["priya"]},
        {"session": 1, "keys": ["harp"]},
    ]
    asked = ["ghent"]
    assert local_turns.volunteered("You bought a flat in Ghent with Karl.", asked, facts) == []
    assert local_turns.volunteered(
        "You bought it in Ghent. Your sister Priya is getting married, and you play the harp.",
        asked,
        facts,
    ) == ["priya", "harp"]


def test_the_benchmark_reports_what_a_person_judges_per_half(tmp_path: Path) -> None:
    scenarios = {
        "scenarios": [
            {
                "agent": "kim",
                "half": "tune",
                "facts": [{"session": 0, "keys": ["kayak"], "whole": [["kayak"]]}],
                "sessions": [["Traffic was awful.", "I paddle a red kayak."]],
                "questions": [{"q": "What do I paddle?", "expect": ["kayak"]}],
            },
            {
                "agent": "lou",
                "half": "held-out",
                "facts": [
                    {"session": 0, "keys": ["lou"], "whole": [["lou"]]},
                    {"session": 0, "keys": ["oboe"], "whole": [["oboe"], ["play"]]},
                ],
                "sessions": [["I'm Lou and I play the oboe.", "Rainy again."]],
                "questions": [
                    {"q": "What is my name?", "expect": ["lou"]},
                    {"q": "What do I play?", "expect": ["oboe"]},
                ],
            },
        ]
    }
    script = [
        step(
            ("core_memory_append", {"label": "human", "content": "Name is Lou."}),
            ("core_memory_append", {"label": "human", "content": "Oboe."}),
            ("send_message", {"message": "Hi Lou!"}),
        ),
        step(
            ("core_memory_append", {"label": "human", "content": "Says it is rainy again."}),
            ("send_message", {"message": "Stay dry!"}),
        ),
        step(("send_message", {"message": "My name is Lou."})),
        step(("send_message", {"message": "You play the oboe."})),
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
            "--half",
            "held-out",
            "--json",
            str(out),
        ]
    )

    report = json.loads(out.read_text())
    person = report["layouts"]["cached"]["summary"]["person"]
    assert report["half"] == "held-out"
    assert report["layouts"]["cached"]["summary"]["turns"] == 4  # only lou's
    assert person["known_questions"] == 2 and person["answers_with_fact_to_user"] == 1
    assert person["facts_stated"] == 2 and person["facts_captured"] == 2
    assert person["facts_garbled"] == 1  # "Oboe." lost that Lou plays it
    assert person["core_lines"] == 3 and person["chatter_lines"] == 1


def test_the_rules_alone_are_judged_without_a_model() -> None:
    scenarios = [
        {
            "agent": "kim",
            "facts": [
                {"session": 0, "keys": ["kayak"], "whole": [["kayak"], ["red"]]},
                {"session": 0, "keys": ["oslo"], "whole": [["oslo"]]},
            ],
            "sessions": [
                [
                    "I paddle a red kayak.",
                    "I'm starving right now.",
                    "I am wearing odd socks, honestly.",
                    "Oslo is home.",
                ]
            ],
            "questions": [],
        }
    ]
    gate = local_turns.judge_gate(scenarios)
    assert gate["facts_stated"] == 2
    assert gate["chatter"] == ["I am wearing odd socks, honestly."]
    assert gate["missed"] == ["Oslo is home."]
    assert gate["garbled"] == []
    assert gate["stale"] == []
