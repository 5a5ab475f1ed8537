"""Print a benchmark report as rich tables (the JSON form is the report dict itself)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from langgraph_memgpt.bench.locomo import CATEGORY_NAMES

_METRICS = (
    ("recall_any", "recall_any@k: any evidence turn in the top k"),
    ("recall_all", "recall_all@k: every evidence turn in the top k"),
    ("ndcg_any", "ndcg_any@k"),
)


def _systems(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, summary) rows: the default mode first and starred, then others, then BM25."""
    default = report["default_mode"]
    modes: Mapping[str, Any] = report["modes"]
    order = sorted(modes, key=lambda m: m != default)  # stable: the run's order otherwise
    rows = [(f"{m} *" if m == default else m, modes[m]) for m in order]
    rows += [(f"baseline {name}", s) for name, s in report["baseline"].items()]
    return rows


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float | int) else "-"


def print_report(report: Mapping[str, Any], console: Console | None = None) -> None:
    """Render overall figures per metric and k, then per-category figures at k = 10."""
    console = console or Console()
    ks: Sequence[int] = report["ks"]
    systems = _systems(report)
    console.print(
        f"LoCoMo turn retrieval: {report['questions']} questions "
        f"({report['conversations']} conversations, categories 1-4; "
        f"{report['dropped_questions']} without resolvable evidence skipped). "
        f"* = the mode the memory tools use."
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

    cut = 10 if 10 in ks else ks[len(ks) // 2]
    table = Table(title=f"per category @{cut}", title_justify="left")
    for col in ("system", "category", "n"):
        table.add_column(col, justify="right" if col == "n" else "left", no_wrap=True)
    for metric, _ in _METRICS:
        table.add_column(
            f"{metric.replace('recall_', '').replace('_any', '')}@{cut}", justify="right"
        )
    for label, summary in systems:
        for cat, figures in summary["per_category"].items():
            name = CATEGORY_NAMES.get(int(cat), cat) if cat.isdigit() else cat
            table.add_row(
                label,
                f"{cat} {name}",
                str(int(figures.get("n", 0))),
                *(_fmt(figures.get(f"{m}@{cut}")) for m, _ in _METRICS),
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
    latency = report.get("search_ms_per_query") or {}
    if latency:
        console.print(
            "search: " + ", ".join(f"{mode} {ms} ms/query" for mode, ms in latency.items())
        )
