"""LoCoMo ``--archival-summaries``: recursive session summaries, scored at session level."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from locomo_samples import sample, write_locomo

from benchmarks.bench.cli import main
from benchmarks.bench.locomo import load_locomo
from benchmarks.bench.summaries import evidence_sessions, session_transcript
from langgraph_memgpt.llm.factory import clear_model_cache, resolve_model
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.prompts import SUMMARIZER_INSTRUCTIONS
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.types import Passage


@pytest.fixture(autouse=True)
def _fresh_models() -> Iterator[None]:
    clear_model_cache()
    yield
    clear_model_cache()


# The two scripted summaries: every question's words are in one of them only, so the
# session-level rankings below can be worked out by hand.
SUMMARY_1 = "I learned that Ann adopted a puppy named Biscuit."
SUMMARY_2 = "Ann has a new dog. Bob started pottery classes on Monday."

QA = [
    # words puppy, called: summary 1 only -> [session_1]; evidence session_1: a hit at 1.
    {"question": "What is the puppy called?", "answer": "Biscuit",
     "evidence": ["D1:3"], "category": 4},
    # bob, start, pottery: summary 2 only -> [session_2]; evidence session_2: a hit at 1.
    {"question": "When did Bob start pottery?", "answer": "Monday",
     "evidence": ["D2:1"], "category": 2},
    # pottery (2) and puppy (1): both sessions, both relevant, in some order:
    # any@1 = 1, all@1 = 0, all@5 = 1, ndcg@1 = 1, ndcg@5 = 1.
    {"question": "What pottery and puppy news came up?", "answer": "x",
     "evidence": ["D1:1", "D2:1; D1:2"], "category": 1},
    # biscuit, adopted: summary 1 only -> [session_1]; evidence session_2: a miss.
    {"question": "When was Biscuit adopted?", "answer": "x",
     "evidence": ["D2:2"], "category": 2},
]  # fmt: skip


def _files(tmp_path: Path, replies: list[str] | None = None) -> tuple[Path, Path]:
    data = write_locomo(tmp_path, [sample("conv-a", QA)])
    script = tmp_path / "summaries.json"
    script.write_text(json.dumps([SUMMARY_1, SUMMARY_2] if replies is None else replies))
    return data, script


def _argv(data: Path, data_dir: Path, *extra: str) -> list[str]:
    return [
        "locomo", "--data", str(data), "--modes", "fts", "--k", "1,5",
        "--embedding-model", "none", "--no-progress", "--data-dir", str(data_dir), *extra,
    ]  # fmt: skip


def _run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(argv) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def _stored_summaries(data_dir: Path) -> list[Passage]:
    (folder,) = (data_dir / "conv-a").glob("summaries-*")
    db = open_db(folder / "memory.sqlite")
    try:
        memory = SqliteArchivalMemory(db, "conv-a", None, folder / "faiss")
        return sorted(memory.recent(10), key=lambda p: p.id)
    finally:
        db.conn.close()


def test_sessions_are_summarized_recursively_stored_and_scored_by_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, script = _files(tmp_path)
    argv = _argv(data, tmp_path / "data", "--archival-summaries", "--model", f"scripted:{script}")
    report = _run_json([*argv, "--json"], capsys)

    # The passages: the scripted texts, one per session, as the agent's eviction stores them.
    passages = _stored_summaries(tmp_path / "data")
    assert [p.text for p in passages] == [SUMMARY_1, SUMMARY_2]
    assert [p.tags for p in passages] == [["summary"], ["summary"]]
    assert [p.thread_id for p in passages] == ["session_1", "session_2"]
    assert [p.turn for p in passages] == [3, 2]  # the last turn each summary covers
    assert [datetime.fromisoformat(p.created_at) for p in passages] == [
        datetime.fromisoformat("2023-05-08T13:56:00+00:00"),
        datetime.fromisoformat("2023-06-09T19:55:00+00:00"),
    ]

    # The prompts: the agent's summarizer, the second one folding in the first summary.
    model = resolve_model(f"scripted:{script}")
    assert isinstance(model, ScriptedChatModel)
    assert model.remaining == 0
    first_system, first = (str(m.content) for m in model.calls[0])
    second = str(model.calls[1][-1].content)
    assert first_system == SUMMARIZER_INSTRUCTIONS.format(max_words=573)
    assert first.startswith("Previous summary:\n(none yet)\n")
    assert "date: 1:56 pm on 8 May, 2023\nAnn: I adopted a puppy last week." in first
    assert "Ann: Biscuit! Here he is. [shares an image: a photo of a dog]" in first
    assert "pottery" not in first  # one session per call
    assert second.startswith(f"Previous summary:\n{SUMMARY_1}\n")
    assert "date: 7:55 pm on 9 June, 2023\nBob: I started pottery classes on Monday." in second
    assert [kwargs["max_tokens"] for kwargs in model.call_kwargs] == [819, 819]

    # Session-level scores, worked out by hand in QA above.
    scored = report["modes"]["archival-summaries:fts"]
    assert scored["level"] == "session" and "session level" in scored["note"]
    assert scored["questions"] == 4
    overall = scored["overall"]
    assert overall["recall_any@1"] == pytest.approx(0.75)
    assert overall["recall_all@1"] == pytest.approx(0.5)
    assert overall["ndcg_any@1"] == pytest.approx(0.75)
    assert overall["recall_any@5"] == pytest.approx(0.75)
    assert overall["recall_all@5"] == pytest.approx(0.75)
    assert overall["ndcg_any@5"] == pytest.approx(0.75)
    per = scored["per_category"]
    assert (per["1"]["recall_any@1"], per["1"]["recall_all@1"], per["1"]["recall_all@5"]) == (
        1.0,
        0.0,
        1.0,
    )
    assert per["2"]["recall_any@5"] == 0.5 and per["2"]["n"] == 2.0
    assert per["4"]["ndcg_any@5"] == 1.0

    summaries = report["ingest"]["archival_summaries"]
    assert summaries["level"] == "session"
    assert summaries["model"] == f"scripted:{script}"
    assert summaries["model_resolved"] == "scripted"
    assert (summaries["max_words"], summaries["max_tokens"]) == (573, 819)
    assert (summaries["sessions_summarized"], summaries["sessions_reused"]) == (2, 0)
    assert summaries["seconds_per_session"]["p50"] is not None
    assert summaries["seconds_per_session"]["p95"] >= summaries["seconds_per_session"]["p50"]
    assert "archival-summaries:fts" in report["search_ms_per_query"]


def test_a_reused_data_dir_keeps_the_model_s_summaries_and_asks_it_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, script = _files(tmp_path)
    first = _run_json(
        _argv(data, tmp_path / "data", "--archival-summaries", "--model", f"scripted:{script}",
              "--json"),
        capsys,
    )  # fmt: skip
    clear_model_cache()
    script.write_text("[]")  # the same model spec, but any call would raise ScriptExhaustedError
    again = _run_json(
        _argv(data, tmp_path / "data", "--archival-summaries", "--model", f"scripted:{script}",
              "--json"),
        capsys,
    )  # fmt: skip
    assert again["modes"] == first["modes"]
    summaries = again["ingest"]["archival_summaries"]
    assert (summaries["sessions_summarized"], summaries["sessions_reused"]) == (0, 2)
    assert len(_stored_summaries(tmp_path / "data")) == 2


def test_without_the_flag_the_report_is_unchanged_and_turn_figures_do_not_move(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, script = _files(tmp_path)
    plain = _run_json(_argv(data, tmp_path / "plain", "--archival", "--json"), capsys)
    assert list(plain["modes"]) == ["fts", "archival:fts"]
    assert set(plain["ingest"]) == {
        "turns", "seconds", "turns_per_second", "embedding_model", "archival",
        "archival_seconds",
    }  # fmt: skip
    assert set(plain["search_ms_per_query"]) == {"fts", "archival:fts"}
    assert all("level" not in figures for figures in plain["modes"].values())
    assert not list((tmp_path / "plain" / "conv-a").glob("summaries-*"))

    both = _run_json(
        _argv(data, tmp_path / "both", "--archival", "--archival-summaries", "--model",
              f"scripted:{script}", "--json"),
        capsys,
    )  # fmt: skip
    assert list(both["modes"]) == ["fts", "archival:fts", "archival-summaries:fts"]
    # The summaries live in their own store: the turn-level figures are the same.
    for key in ("fts", "archival:fts"):
        assert both["modes"][key] == plain["modes"][key]
    assert both["baseline"] == plain["baseline"]


def test_summaries_work_next_to_the_answer_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One scripted model for both: the summaries come first (ingest), then answer, judge.
    replies = [SUMMARY_1, SUMMARY_2]
    for _ in QA:
        replies += ["Biscuit", '{"label": "CORRECT"}']
    data, script = _files(tmp_path, replies)
    argv = _argv(data, tmp_path / "data", "--archival-summaries", "--answer", "--model",
                 f"scripted:{script}", "--json")  # fmt: skip
    report = _run_json(argv, capsys)
    assert report["answer"]["questions"] == 4
    assert report["answer"]["overall"]["j"] == 1.0
    assert report["modes"]["archival-summaries:fts"]["overall"]["recall_any@1"] == 0.75
    assert [p.text for p in _stored_summaries(tmp_path / "data")] == [SUMMARY_1, SUMMARY_2]


def test_text_report_says_the_summaries_are_scored_by_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, script = _files(tmp_path)
    argv = _argv(data, tmp_path / "data", "--archival-summaries", "--model", f"scripted:{script}")
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps lines at its width
    assert "archival session summaries, SESSION level" in out
    assert "archival-summaries:fts (session)" in out  # per-category rows are labelled
    assert "session summaries: 2 written in" in out
    assert "= scripted, at most 573 words / 819 tokens" in out


def test_a_missing_script_fails_before_the_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = _files(tmp_path)
    missing = tmp_path / "nope.json"
    argv = _argv(data, tmp_path / "data", "--archival-summaries", "--model", f"scripted:{missing}")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--model scripted:{missing}: script file {missing} does not exist" in err
    assert not (tmp_path / "data").exists()  # refused before any ingest


def test_a_model_failing_mid_summaries_ends_with_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, script = _files(tmp_path, [SUMMARY_1])  # the second session finds no reply
    argv = _argv(data, tmp_path / "data", "--archival-summaries", "--model", f"scripted:{script}")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the summary model failed on conv-a session_2" in err
    assert "ScriptExhaustedError" in err


def test_model_flag_still_needs_answer_or_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, script = _files(tmp_path)
    assert main(_argv(data, tmp_path / "data", "--model", f"scripted:{script}")) == 2
    assert "--model: only used with --answer" in capsys.readouterr().err
    # --judge-model stays an --answer flag even with summaries.
    argv = _argv(data, tmp_path / "data", "--archival-summaries", "--judge-model", "local")
    assert main(argv) == 2
    assert "--judge-model: only used with --answer" in capsys.readouterr().err


def test_transcript_and_evidence_sessions(tmp_path: Path) -> None:
    (conv,) = load_locomo(write_locomo(tmp_path, [sample("conv-a", QA)]))
    assert session_transcript(conv.sessions[1]) == (
        "date: 7:55 pm on 9 June, 2023\n"
        "Bob: I started pottery classes on Monday.\n"
        "Ann: Pottery sounds relaxing, enjoy the clay."
    )
    # D2:1 and D1:2 were packed in one string; sessions keep first-appearance order.
    assert evidence_sessions(conv, conv.questions[2]) == ("session_1", "session_2")
    assert evidence_sessions(conv, conv.questions[3]) == ("session_2",)
