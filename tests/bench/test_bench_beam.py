"""`bench locomo` on BEAM chats converted to LoCoMo's schema: figures per BEAM ability, beside
the per-category ones, for every mode and the BM25 baseline; search time per query as p50 /
p95 per mode; the ingest rate.

The files are tiny BEAM-shaped conversations written here (the real data never enters the
repo), small enough that which turn each question finds first is known by reading them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from locomo_samples import turn, write_locomo

from benchmarks.bench.cli import main
from benchmarks.bench.locomo import LocomoFormatError, load_locomo
from benchmarks.bench.runner import BenchOptions, run_locomo


def _chat(sample_id: str, qa: list[dict[str, Any]], **sessions: Any) -> dict[str, Any]:
    """A BEAM chat as the converted file holds it: User and Assistant, one session a batch."""
    return {
        "sample_id": sample_id,
        "conversation": {"speaker_a": "User", "speaker_b": "Assistant", **sessions},
        "qa": qa,
    }


def _q(question: str, evidence: list[str], category: int, beam_type: str) -> dict[str, Any]:
    return {
        "question": question,
        "answer": "-",
        "evidence": evidence,
        "category": category,
        "beam_type": beam_type,
    }


def _beam_chats() -> list[dict[str, Any]]:
    """Two chats; at k = 1 every question is found except the contradiction one.

    Knowledge update and contradiction resolution are both category 3, so the category
    figure (0.5) cannot tell them apart; only the per-ability figures can (1.0 and 0.0).
    """
    project = _chat(
        "beam-a",
        [
            _q("Which blueprint holds the homepage route?", ["D1:1"], 3, "knowledge_update"),
            # The evidence says nothing the question says: the Postgres turns come first.
            _q("Have I used Postgres?", ["D1:4"], 3, "contradiction_resolution"),
            _q("When did I switch the database to Postgres?", ["D2:1"], 2, "temporal_reasoning"),
            # BEAM's abstention questions have no evidence: never scored.
            _q("What is my manager's name?", [], 4, "abstention"),
        ],
        session_1_date_time="9:00 am on 1 March, 2024",
        session_1=[
            turn("User", "D1:1", "I moved my Flask homepage route into a blueprint called pages."),
            turn("Assistant", "D1:2", "Blueprints keep routes tidy; register pages in the app."),
            turn("User", "D1:3", "My database is SQLite for now, maybe Postgres later."),
            turn("Assistant", "D1:4", "SQLite is fine for a prototype."),
        ],
        session_2_date_time="9:00 am on 15 March, 2024",
        session_2=[
            turn("User", "D2:1", "I switched the database to Postgres this week."),
            turn("Assistant", "D2:2", "Good, remember to run the migrations."),
        ],
    )
    pet = _chat(
        "beam-b",
        [_q("What is my cat called?", ["D1:1"], 4, "information_extraction")],
        session_1_date_time="9:00 am on 2 March, 2024",
        session_1=[
            turn("User", "D1:1", "My cat is called Miso."),
            turn("Assistant", "D1:2", "Lovely name for a kitten."),
        ],
    )
    return [project, pet]


def _run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(argv) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def _argv(data: Path, tmp_path: Path, *more: str) -> list[str]:
    return [
        "locomo", "--data", str(data), "--k", "1", "--no-progress",
        "--data-dir", str(tmp_path / "data"), *more,
    ]  # fmt: skip


def test_beam_questions_are_scored_per_ability_beside_their_category(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, _beam_chats())
    # hybrid without embeddings is hybrid's code path on words alone: every mode asked for
    # gets the figures, words only so the test stays fast.
    report = _run_json(
        _argv(data, tmp_path, "--modes", "fts,hybrid", "--embedding-model", "none", "--json"),
        capsys,
    )
    assert report["questions"] == 4
    assert report["dropped_questions"] == 1  # the abstention question, no evidence
    assert report["beam_abilities"] == {
        "temporal_reasoning": 2,
        "contradiction_resolution": 3,
        "knowledge_update": 3,
        "information_extraction": 4,
    }
    systems = {**report["modes"], "bm25": report["baseline"]["bm25"]}
    assert list(systems) == ["fts", "hybrid", "bm25"]
    for name, figures in systems.items():
        per_ability = figures["per_ability"]
        # Ordered by the category each ability belongs to, then by name.
        assert list(per_ability) == [
            "temporal_reasoning",
            "contradiction_resolution",
            "knowledge_update",
            "information_extraction",
        ], name
        found = {ability: f["recall_any@1"] for ability, f in per_ability.items()}
        assert found == {
            "temporal_reasoning": 1.0,
            "contradiction_resolution": 0.0,
            "knowledge_update": 1.0,
            "information_extraction": 1.0,
        }, name
        assert {ability: f["n"] for ability, f in per_ability.items()} == dict.fromkeys(found, 1)
        # The category holding both abilities averages them.
        assert figures["per_category"]["3"]["recall_any@1"] == 0.5, name
        assert figures["per_category"]["3"]["n"] == 2, name
        # Per conversation, the baseline as the modes.
        per_conv = figures["per_conversation"]
        assert per_conv["beam-a"]["n"] == 3 and per_conv["beam-b"]["n"] == 1, name
        assert per_conv["beam-a"]["recall_any@1"] == pytest.approx(2 / 3), name
        assert per_conv["beam-b"]["recall_any@1"] == 1.0, name


def test_the_printed_report_has_a_table_per_beam_ability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, _beam_chats())
    assert main(_argv(data, tmp_path, "--modes", "fts")) == 0
    out = capsys.readouterr().out
    table = out[out.index("per BEAM ability @1") :]
    rows = [line for line in table.splitlines() if "contradiction_resolution" in line]
    # One row each for fts and the baseline: n = 1, nothing found at 1.
    assert len(rows) == 2
    assert all("0.000" in row for row in rows)
    assert "abstention" not in table[: table.index("per conversation")]
    # The categories are BEAM's groups of abilities, not LoCoMo's names.
    assert "3 = contradiction_resolution, knowledge_update" in " ".join(out.split())
    assert "open-domain" not in out
    # The baseline's per-conversation figures are printed too.
    conversation = out[out.index("per conversation @1") :]
    assert "baseline bm25" in conversation and "beam-b" in conversation


def test_locomo_files_without_beam_types_get_no_ability_figures(tmp_path: Path) -> None:
    chats = _beam_chats()
    for chat in chats:
        for qa in chat["qa"]:
            del qa["beam_type"]
    conversations = load_locomo(write_locomo(tmp_path, chats))
    report = run_locomo(conversations, BenchOptions(modes=["fts"], ks=(1,)), tmp_path / "d")
    assert "per_ability" not in report["modes"]["fts"]
    assert "per_ability" not in report["baseline"]["bm25"]
    assert "beam_abilities" not in report
    assert set(report["modes"]["fts"]["per_category"]) == {"2", "3", "4"}


def test_a_beam_type_that_is_not_a_name_is_a_clear_format_error(tmp_path: Path) -> None:
    chats = _beam_chats()
    chats[0]["qa"][0]["beam_type"] = 7
    with pytest.raises(LocomoFormatError, match="'beam_type' must be a BEAM ability name"):
        load_locomo(write_locomo(tmp_path, chats))


def test_search_time_is_reported_per_query_as_p50_and_p95_per_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, _beam_chats())
    report = _run_json(_argv(data, tmp_path, "--modes", "fts", "--archival", "--json"), capsys)
    timing = report["search_ms_per_query"]
    assert list(timing) == ["fts", "archival:fts"]
    for key, figures in timing.items():
        assert figures["n"] == report["questions"] == 4, key  # every query timed alone
        assert 0 <= figures["p50"] <= figures["p95"], key
        assert figures["mean"] >= 0, key
    ingest = report["ingest"]
    assert ingest["turns"] == 8
    assert ingest["turns_per_second"] > 0


def test_the_printed_report_gives_search_p50_and_p95_and_the_ingest_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, _beam_chats())
    assert main(_argv(data, tmp_path, "--modes", "fts")) == 0
    out = capsys.readouterr().out
    table = out[out.index("search ms per query") :]
    header = next(line for line in table.splitlines() if "p50" in line)
    assert "p95" in header and "queries" in header
    row = next(line for line in table.splitlines() if line.strip("│┃ ").startswith("fts"))
    assert "4" in row.split()
    assert "ingest: 8 turns" in out and "turns/s" in out
