"""The consolidation benchmark (benchmarks/sleeptime_quality.py) end to end, scripted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import sleeptime_quality  # noqa: E402


def test_the_ideal_answer_keeps_every_fact_and_drops_every_chatter_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "figures.json"
    ideal = BENCHMARKS / "sleeptime_ideal_answer.json"
    argv = ["sleeptime_quality.py", "--model", f"scripted:{ideal}", "--json", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    sleeptime_quality.main()
    figures = json.loads(out.read_text())
    before, after = figures["before"], figures["after"]
    assert (before["facts_in_core"], before["chatter_left"], before["duplicate_lines"]) == (
        "6/8",
        5,
        2,
    )
    assert before["user_facts_in_persona"] == 1
    assert (after["facts_in_core"], after["chatter_left"], after["duplicate_lines"]) == (
        "8/8",
        0,
        0,
    )
    assert after["user_facts_in_persona"] == 0 and after["lines_without_a_known_fact"] == 0
    assert figures["problems"] == []
