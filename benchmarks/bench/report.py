"""Print a benchmark report as rich tables (the JSON form is the report dict itself)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from .locomo import CATEGORY_NAMES

_METRICS = (
    ("recall_any", "recall_any@k: any evidence turn in the top k"),
    ("recall_all", "recall_all@k: every evidence turn in the top k"),
    ("ndcg_any", "ndcg_any@k"),
)


def _systems(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, summary) rows: the default mode first and starred, then others, then BM25.

    Session-level entries (``--archival-summaries``) are left out: they score sessions,
    not turns, and get a table of their own (`_session_systems`).
    """
    default = report["default_mode"]
    modes: Mapping[str, Any] = {
        m: s for m, s in report["modes"].items() if s.get("level") != _SESSION
    }
    order = sorted(modes, key=lambda m: m != default)  # stable: the run's order otherwise
    rows = [(f"{m} *" if m == default else m, modes[m]) for m in order]
    rows += [(f"baseline {name}", s) for name, s in report["baseline"].items()]
    return rows


def _session_systems(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, summary) rows of the session-level entries, in the run's order."""
    return [(m, s) for m, s in report["modes"].items() if s.get("level") == _SESSION]


_SESSION = "session"


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float | int) else "-"


def _ms(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float | int) else "-"


def _category_name(cat: str) -> str:
    return CATEGORY_NAMES.get(int(cat), cat) if cat.isdigit() else cat


def _group_table(
    title: str, column: str, cut: int, rows: Sequence[tuple[str, str, Mapping[str, Any]]]
) -> Table:
    """Figures at ``cut`` per group of questions: ``(system, group, figures)`` rows.

    A new section starts with each system, so the groups of one system read together.
    """
    table = Table(title=title, title_justify="left")
    for col in ("system", column, "n"):
        table.add_column(col, justify="right" if col == "n" else "left", no_wrap=True)
    for metric, _ in _METRICS:
        table.add_column(
            f"{metric.replace('recall_', '').replace('_any', '')}@{cut}", justify="right"
        )
    previous = None
    for label, group, figures in rows:
        if previous is not None and label != previous:
            table.add_section()
        previous = label
        table.add_row(
            label,
            group,
            str(int(figures.get("n", 0))),
            *(_fmt(figures.get(f"{m}@{cut}")) for m, _ in _METRICS),
        )
    return table


def print_report(report: Mapping[str, Any], console: Console | None = None) -> None:
    """Render overall figures per metric and k, then per-category figures at k = 10."""
    console = console or Console()
    ks: Sequence[int] = report["ks"]
    systems = _systems(report)
    abilities: Mapping[str, int] = report.get("beam_abilities") or {}
    beam = bool(abilities)
    console.print(
        f"LoCoMo turn retrieval: {report['questions']} questions "
        f"({report['conversations']} conversations, categories 1-4; "
        f"{report['dropped_questions']} without resolvable evidence skipped"
        + ("; BEAM abilities from qa[].beam_type, abstention has no evidence" if beam else "")
        + "). * = the mode the memory tools use.",
        markup=False,
    )
    for metric, title in _METRICS:
        table = Table(title=title, title_justify="left")
        table.add_column("system", no_wrap=True)
        for k in ks:
            table.add_column(f"@{k}", justify="right")
        for label, summary in systems:
            overall = summary["overall"]
            table.add_row(label, *(_fmt(overall.get(f"{metric}@{k}")) for k in ks))
        console.print(table)

    sessions = _session_systems(report)
    if sessions:
        table = Table(
            title="archival session summaries, SESSION level (a hit is a session's summary; "
            "the evidence is the sessions of the evidence turns): not comparable with the "
            "turn-level tables above",
            title_justify="left",
        )
        table.add_column("system", no_wrap=True)
        table.add_column("metric", no_wrap=True)
        for k in ks:
            table.add_column(f"@{k}", justify="right")
        for label, summary in sessions:
            for metric, _ in _METRICS:
                overall = summary["overall"]
                table.add_row(label, metric, *(_fmt(overall.get(f"{metric}@{k}")) for k in ks))
            table.add_section()
        console.print(table)

    cut = 10 if 10 in ks else ks[len(ks) // 2]
    labelled = systems + [(f"{label} (session)", s) for label, s in sessions]
    console.print(
        _group_table(
            f"per category @{cut}",
            "category",
            cut,
            [
                (label, cat if beam else f"{cat} {_category_name(cat)}", figures)
                for label, summary in labelled
                for cat, figures in summary["per_category"].items()
            ],
        )
    )
    if beam:
        legend: dict[int, list[str]] = {}
        for ability, category in abilities.items():
            legend.setdefault(category, []).append(ability)
        console.print(
            "BEAM categories: "
            + "; ".join(f"{cat} = {', '.join(names)}" for cat, names in sorted(legend.items())),
            markup=False,
        )
        console.print(
            _group_table(
                f"per BEAM ability @{cut}",
                "ability",
                cut,
                [
                    (label, ability, figures)
                    for label, summary in labelled
                    for ability, figures in summary.get("per_ability", {}).items()
                ],
            )
        )

    conv_rows = [(label, s["per_conversation"]) for label, s in systems if "per_conversation" in s]
    if conv_rows:
        table = Table(title=f"per conversation @{cut}", title_justify="left")
        for col in ("system", "conversation", "n", "any", "all"):
            table.add_column(col, justify="left" if col in ("system", "conversation") else "right")
        for label, per_conv in conv_rows:
            for sample_id, figures in per_conv.items():
                table.add_row(
                    label,
                    sample_id,
                    str(int(figures.get("n", 0))),
                    _fmt(figures.get(f"recall_any@{cut}")),
                    _fmt(figures.get(f"recall_all@{cut}")),
                )
            table.add_section()
        console.print(table)

    ingest = report.get("ingest") or {}
    if ingest:
        rate = ingest.get("turns_per_second")
        console.print(
            f"ingest: {ingest['turns']} turns in {ingest['seconds']:.1f} s"
            + (f" ({rate} turns/s)" if rate else "")
            + (f", embeddings {ingest['embedding_model']}" if ingest.get("embedding_model") else "")
            + (
                f"; archival passages in {ingest['archival_seconds']:.1f} s"
                if ingest.get("archival_seconds") is not None
                else ""
            )
        )
    summaries = ingest.get("archival_summaries")
    if summaries:
        per = summaries["seconds_per_session"]
        console.print(
            f"session summaries: {summaries['sessions_summarized']} written in "
            f"{summaries['seconds']:.1f} s (p50 / p95 "
            + (f"{per['p50']:.1f} / {per['p95']:.1f} s" if per["p50"] is not None else "-")
            + f" per session), {summaries['sessions_reused']} reused, model "
            f"{summaries['model']} = {summaries['model_resolved']}, at most "
            f"{summaries['max_words']} words / {summaries['max_tokens']} tokens",
            markup=False,
        )
    latency: Mapping[str, Mapping[str, Any]] = report.get("search_ms_per_query") or {}
    if latency:
        table = Table(
            title="search ms per query (each search call timed alone)", title_justify="left"
        )
        for col in ("system", "queries", "p50", "p95", "mean"):
            table.add_column(col, justify="left" if col == "system" else "right", no_wrap=True)
        for key, times in latency.items():
            table.add_row(
                key,
                str(times.get("n", "-")),
                *(_ms(times.get(stat)) for stat in ("p50", "p95", "mean")),
            )
        console.print(table)
    if report.get("answer"):
        print_answer_report(report["answer"], console)


def _category_table(title: str, figures: Sequence[str]) -> Table:
    """A table with a "category" column followed by right-aligned figure columns."""
    table = Table(title=title, title_justify="left")
    table.add_column("category", no_wrap=True)
    for col in figures:
        table.add_column(col, justify="right", no_wrap=True)
    return table


def _pct(figures: Mapping[str, Any], key: str, digits: int = 0) -> str:
    values = figures.get(key) or {}
    p50, p95 = values.get("p50"), values.get("p95")
    if p50 is None or p95 is None:
        return "-"
    return f"{p50:.{digits}f} / {p95:.{digits}f}"


def print_answer_report(answer: Mapping[str, Any], console: Console | None = None) -> None:
    """Render the ``--answer`` section: F1 and J per category, then latency and tokens."""
    console = console or Console()
    limit = answer.get("limit")
    console.print(
        f"\nLoCoMo question answering: {answer['questions']} questions"
        + (f" (first {limit} per conversation)" if limit else "")
        + f", model {answer['model']} = {answer.get('model_resolved', '?')}, "
        f"judge {answer['judge_model']} = {answer.get('judge_resolved', '?')}, "
        f"top {answer['top_k']} turns of {answer['search_mode']} search per prompt.",
        markup=False,
    )
    rows = [("overall", answer["overall"])]
    for cat, figures in answer["per_category"].items():
        rows.append((f"{cat} {_category_name(cat)}", figures))

    table = _category_table(
        "answers: LoCoMo F1 and LLM judge J", ("n", "F1", "J", "judge errors", "evidence in top k")
    )
    for label, figures in rows:
        table.add_row(
            label,
            str(figures["n"]),
            _fmt(figures.get("f1")),
            _fmt(figures.get("j")),
            str(figures.get("judge_errors", 0)),
            _fmt(figures.get("evidence_retrieved")),
        )
    console.print(table)

    table = _category_table(
        "cost per question, p50 / p95",
        ("search ms", "answer ms", "total ms", "judge ms", "prompt tokens"),
    )
    for label, figures in rows:
        table.add_row(
            label,
            _pct(figures, "search_ms", 1),
            _pct(figures, "answer_ms"),
            _pct(figures, "total_ms"),
            _pct(figures, "judge_ms"),
            _pct(figures, "prompt_tokens"),
        )
    console.print(table)
    console.print(
        f"total = search + answer (judge excluded). Prompt tokens: "
        f"{answer['prompt_tokens_source']}. J counts judge errors as not correct."
    )
