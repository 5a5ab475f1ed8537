"""LoCoMo ``--answer`` mode: answer F1, judge parsing, the answer run and the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from locomo_samples import sample, write_locomo

from benchmarks.bench.answer import (
    AnswerOptions,
    AnswerRun,
    answer_messages,
    clean_answer,
    f1_score,
    locomo_f1,
    multi_answer_f1,
    normalize_answer,
    stem,
)
from benchmarks.bench.cli import main
from benchmarks.bench.judge import JUDGE_RESPONSE_FORMAT, parse_judgement
from benchmarks.bench.locomo import load_locomo
from benchmarks.bench.metrics import percentiles
from benchmarks.bench.runner import BenchOptions, run_locomo
from langgraph_memgpt.llm.factory import clear_model_cache, resolve_model
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.types import RecallMessage


@pytest.fixture(autouse=True)
def _fresh_models() -> Iterator[None]:
    clear_model_cache()
    yield
    clear_model_cache()


# -- F1 --------------------------------------------------------------------------------


def test_normalisation_drops_case_punctuation_articles_and_commas() -> None:
    assert normalize_answer("The Cat, and a Dog!") == "cat dog"
    assert normalize_answer("  Ann's  puppy. ") == "anns puppy"
    assert normalize_answer("An apple") == "apple"
    assert normalize_answer("Andrew and Anna") == "andrew anna"  # only whole words go


@pytest.mark.parametrize(
    ("word", "expected"),
    [  # PorterStemmer().stem in NLTK's default mode, the one LoCoMo's F1 uses ("skies",
        # "dying", "faithfully", "geology" stem otherwise in Porter's original algorithm)
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("dies", "die"),
        ("cried", "cri"),
        ("happily", "happili"),
        ("generalization", "gener"),
        ("geology", "geolog"),
        ("faithfully", "faith"),
        ("sky", "sky"),
        ("skies", "sky"),
        ("dying", "die"),
        ("agreed", "agre"),
        ("hopping", "hop"),
        ("sized", "size"),
        ("filing", "file"),
        ("relational", "relat"),
        ("electrical", "electr"),
        ("adjustment", "adjust"),
        ("effective", "effect"),
        ("roll", "roll"),
        ("running", "run"),
        ("puppies", "puppi"),
        ("classes", "class"),
        ("is", "is"),
    ],
)
def test_porter_stems_are_nltks_default_mode(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_f1_compares_stemmed_tokens() -> None:
    assert f1_score("Biscuit", "biscuit.") == 1.0
    # "adopted puppies" vs "adopting a puppy": adopt + puppi shared; she is extra.
    assert f1_score("She adopted puppies", "adopting a puppy") == pytest.approx(0.8)
    assert f1_score("a cat", "the dog") == 0.0
    assert f1_score("", "dog") == 0.0


def test_multi_hop_f1_averages_the_best_match_of_each_gold_part() -> None:
    gold = "pottery, camping, painting"
    # One predicted part against three gold parts: 2/3, 0, 2/3.
    assert multi_answer_f1("painting and pottery", gold) == pytest.approx(4 / 9)
    # Split predictions match parts exactly: 1, 0, 1.
    assert multi_answer_f1("pottery, painting", gold) == pytest.approx(2 / 3)
    assert multi_answer_f1("camping, painting, pottery", gold) == pytest.approx(1.0)
    assert locomo_f1("pottery, painting", gold, 1) == pytest.approx(2 / 3)
    # The other categories never split: the commas simply vanish.
    assert locomo_f1("pottery, painting", gold, 4) == pytest.approx(0.8)


def test_open_domain_gold_is_cut_at_its_first_semicolon() -> None:
    assert locomo_f1("likely yes", "Likely yes; she likes it", 3) == 1.0
    assert locomo_f1("likely yes", "Likely yes; she likes it", 4) < 1.0


def test_reply_cleanup_keeps_the_first_line_without_a_label() -> None:
    assert clean_answer("Answer: 7 May 2023\nBecause she said so.") == "7 May 2023"
    assert clean_answer("\n\n  Biscuit  ") == "Biscuit"
    assert clean_answer("") == ""


def test_percentiles_interpolate_and_handle_no_data() -> None:
    assert percentiles([40, 0, 10, 30, 20]) == {"p50": 20.0, "p95": 38.0}
    assert percentiles([]) == {"p50": None, "p95": None}


# -- judge -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ('{"label": "CORRECT"}', "CORRECT"),
        ('{"label": "wrong"}', "WRONG"),
        ('```json\n{"label": "CORRECT"}\n```', "CORRECT"),
        ('The answer names the same dog. {"reasoning": "same", "label": "Correct"}', "CORRECT"),
        ('{"LABEL": " WRONG "}', "WRONG"),
    ],
)
def test_judge_replies_with_a_label_are_read(reply: str, label: str) -> None:
    assert parse_judgement(reply) == label


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "CORRECT",  # a bare word is not the JSON the judge was asked for
        "I think the answer is right.",
        '{"label": "MAYBE"}',
        '{"verdict": "CORRECT"}',
        '["CORRECT"]',
        '{"label": "CORRECT"',
        '{"label": true}',
        '{"label": "CORRECT"} and then {"label": "WRONG"}',
    ],
)
def test_malformed_judge_replies_give_no_label(reply: str) -> None:
    assert parse_judgement(reply) is None


# -- the answer run --------------------------------------------------------------------


def _sample(sample_id: str) -> dict[str, Any]:
    return sample(
        sample_id,
        [
            {"question": "What is Ann's puppy called?", "answer": "Biscuit",
             "evidence": ["D1:3"], "category": 4},
            {"question": "What did Bob start and how did Ann find it?",
             "answer": "pottery, relaxing", "evidence": ["D2:1; D2:2"], "category": 1},
            {"question": "Unanswerable?", "adversarial_answer": "x",
             "evidence": ["D1:1"], "category": 5},
            {"question": "When did Bob start pottery?", "answer": "5 June 2023",
             "evidence": ["D2:1"], "category": 2},
        ],
    )  # fmt: skip


def _script(tmp_path: Path, replies: list[str], name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


# Answer and judge share one scripted model: answer 1, judge 1, answer 2, judge 2, ...
REPLIES = [
    "Biscuit",  # F1 1.0
    '{"label": "CORRECT"}',
    "pottery classes",  # multi-hop: pottery 2/3, relaxing 0 -> 1/3
    '```json\n{"label": "WRONG"}\n```',
    "Answer: 5 June, 2023",  # cleaned to "5 June, 2023": F1 1.0
    "I cannot decide.",  # judge error
]


def _bench_argv(data: Path, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "locomo", "--data", str(data), "--modes", "fts", "--k", "1,5",
        "--embedding-model", "none", "--no-progress", "--data-dir", str(tmp_path / "data"),
        *extra,
    ]  # fmt: skip


def test_cli_answer_mode_scores_scripted_replies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, [_sample("conv-a")])
    script = _script(tmp_path, REPLIES)
    argv = _bench_argv(data, tmp_path, "--answer", "--model", f"scripted:{script}", "--json")
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)

    answer = report["answer"]
    assert answer["questions"] == 3
    assert answer["model"] == answer["judge_model"] == f"scripted:{script}"
    assert answer["search_mode"] == "hybrid"
    overall = answer["overall"]
    assert overall["n"] == 3
    assert overall["f1"] == pytest.approx((1.0 + 1 / 3 + 1.0) / 3, abs=1e-4)
    assert overall["j"] == pytest.approx(1 / 3, abs=1e-4)
    assert overall["judge_errors"] == 1
    per = answer["per_category"]
    assert set(per) == {"1", "2", "4"}
    assert (per["4"]["f1"], per["4"]["j"], per["4"]["judge_errors"]) == (1.0, 1.0, 0)
    assert per["1"]["f1"] == pytest.approx(1 / 3, abs=1e-4)
    assert per["1"]["j"] == 0.0
    assert (per["2"]["f1"], per["2"]["j"], per["2"]["judge_errors"]) == (1.0, 0.0, 1)
    for key in ("search_ms", "answer_ms", "total_ms", "judge_ms", "prompt_tokens"):
        assert set(overall[key]) == {"p50", "p95"}
        assert overall[key]["p50"] is not None
    assert overall["prompt_tokens"]["p50"] > 0
    assert answer["prompt_tokens_source"].startswith("estimated with tokens.py")
    items = answer["items"]
    assert [i["answer"] for i in items] == ["Biscuit", "pottery classes", "5 June, 2023"]
    assert [i["judge"] for i in items] == ["CORRECT", "WRONG", None]
    assert items[2]["judge_reply"] == "I cannot decide."
    for item in items:
        assert item["search_ms"] + item["answer_ms"] >= item["search_ms"]
    # Retrieval metrics are reported as before, next to the answers.
    assert report["modes"]["fts"]["questions"] == 3

    model = resolve_model(f"scripted:{script}")
    assert isinstance(model, ScriptedChatModel)
    assert model.remaining == 0
    prompt = "\n".join(str(m.content) for m in model.calls[0])
    assert "[8 May 2023] Ann: Biscuit! Here he is. [shares an image: a photo of a dog]" in prompt
    assert "Question: What is Ann's puppy called?" in prompt
    assert model.call_kwargs[0]["max_tokens"] == 64
    judge_prompt = "\n".join(str(m.content) for m in model.calls[1])
    assert "Gold answer: Biscuit" in judge_prompt and "Generated answer: Biscuit" in judge_prompt
    assert model.call_kwargs[1]["extra_body"] == {"response_format": JUDGE_RESPONSE_FORMAT}


def test_limit_answers_the_first_questions_of_each_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, [_sample("conv-a"), _sample("conv-b")])
    answers = _script(tmp_path, ["Biscuit", "a dog"], "answers.json")
    judge = _script(tmp_path, ['{"label": "CORRECT"}', '{"label": "WRONG"}'], "judge.json")
    argv = _bench_argv(
        data, tmp_path, "--answer", "--limit", "1", "--top-k", "3", "--json",
        "--model", f"scripted:{answers}", "--judge-model", f"scripted:{judge}",
    )  # fmt: skip
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["questions"] == 6  # retrieval still covers every question
    answer = report["answer"]
    assert answer["limit"] == 1 and answer["top_k"] == 3
    assert [(i["conversation"], i["answer"]) for i in answer["items"]] == [
        ("conv-a", "Biscuit"),
        ("conv-b", "a dog"),
    ]
    assert answer["overall"]["f1"] == 0.5
    assert answer["overall"]["j"] == 0.5
    model = resolve_model(f"scripted:{answers}")
    assert isinstance(model, ScriptedChatModel)
    excerpts = str(model.calls[0][-1].content).split("Question:")[0]
    assert 1 <= excerpts.count("\n[") <= 3  # at most --top-k turns in the prompt


def test_text_report_shows_answer_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, [_sample("conv-a")])
    script = _script(tmp_path, REPLIES)
    assert main(_bench_argv(data, tmp_path, "--answer", "--model", f"scripted:{script}")) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps lines at its width
    assert "LoCoMo question answering: 3 questions" in out
    assert "= scripted, judge scripted:" in out  # the resolved model, not eaten as markup
    assert "LoCoMo F1 and LLM judge J" in out
    assert "p50 / p95" in out
    assert "estimated with tokens.py" in out


def test_without_answer_the_report_has_no_answer_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, [_sample("conv-a")])
    assert main(_bench_argv(data, tmp_path, "--json")) == 0
    assert "answer" not in json.loads(capsys.readouterr().out)


def test_answer_run_prefers_the_token_count_the_model_reports(tmp_path: Path) -> None:
    (conv,) = load_locomo(write_locomo(tmp_path, [_sample("conv-a")]))
    usage = {"input_tokens": 321, "output_tokens": 2, "total_tokens": 323}
    model = ScriptedChatModel.from_steps(
        [AIMessage(content="Biscuit", usage_metadata=usage), "pottery", "June 2023"]
    )
    judge = ScriptedChatModel.from_steps(['{"label": "CORRECT"}'] * 3)
    run = AnswerRun(model, judge, AnswerOptions())
    report = run_locomo([conv], BenchOptions(modes=["fts"], ks=(1,), embedding_model="none"),
                        tmp_path / "data", answerer=run)  # fmt: skip
    items = report["answer"]["items"]
    assert items[0]["prompt_tokens"] == 321
    assert items[1]["prompt_tokens"] != 321 and items[1]["prompt_tokens"] > 0
    assert report["answer"]["prompt_tokens_source"].startswith("mixed: 1 from model usage")
    assert report["answer"]["overall"]["j"] == 1.0


def test_answer_prompt_puts_turns_oldest_first_with_date_and_speaker() -> None:
    def msg(mid: str, when: str, text: str, name: str) -> RecallMessage:
        return RecallMessage("a", "s", mid, "user", text, when, 1, name=name)

    later = msg("x:D2:1", "2023-06-09T19:55:00+00:00", "Bob: pottery", "Bob")
    earlier = msg("x:D1:1", "2023-05-08T13:56:00+00:00", "a puppy", "Ann")
    human = str(answer_messages("Q?", [later, earlier])[-1].content)
    assert human.index("[8 May 2023] Ann: a puppy") < human.index("[9 June 2023] Bob: pottery")
    assert human.endswith("Question: Q?\nAnswer:")


# -- setup errors ----------------------------------------------------------------------


def test_openai_model_without_a_key_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    data = write_locomo(tmp_path, [_sample("conv-a")])
    argv = _bench_argv(data, tmp_path, "--answer", "--model", "openai:gpt-4o-mini")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and "--model local" in err
    assert not (tmp_path / "data").exists()  # refused before any ingest


def test_missing_script_and_bad_spec_are_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, [_sample("conv-a")])
    missing = tmp_path / "nope.json"
    assert main(_bench_argv(data, tmp_path, "--answer", "--model", f"scripted:{missing}")) == 2
    assert f"script file {missing} does not exist" in capsys.readouterr().err
    script = _script(tmp_path, REPLIES)
    argv = _bench_argv(
        data, tmp_path, "--answer", "--model", f"scripted:{script}", "--judge-model", "gpt9"
    )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--judge-model gpt9" in err and "unknown model spec" in err


def test_answer_flags_without_answer_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, [_sample("conv-a")])
    assert main(_bench_argv(data, tmp_path, "--limit", "3")) == 2
    assert "--limit: only used with --answer" in capsys.readouterr().err


def test_a_model_that_fails_mid_run_ends_with_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_locomo(tmp_path, [_sample("conv-a")])
    script = _script(tmp_path, REPLIES[:3])  # the second judge call finds no reply
    assert main(_bench_argv(data, tmp_path, "--answer", "--model", f"scripted:{script}")) == 2
    err = capsys.readouterr().err
    assert "the judge model failed on question" in err
    assert "ScriptExhaustedError" in err
