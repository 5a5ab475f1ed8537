"""``python -m benchmarks.bench``: the benchmarks' command (``locomo``).

The benchmarks are not in the wheel: this runs from the repository's root. Registering
``locomo`` imports only argparse and the shared arguments: the benchmark modules and the
``bench`` extra's libraries load when the command runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph_memgpt.cli.args import add_database_url, database_url, positive_int
from langgraph_memgpt.cli.commands import run_parsed
from langgraph_memgpt.cli.console import print_error, progress_bars
from langgraph_memgpt.stores.types import MemoryStoreError

from . import BenchExtraMissing, require_extra

if TYPE_CHECKING:
    from .answer import AnswerRun
    from .summaries import SessionSummarizer


DEFAULT_KS = (1, 5, 10, 20, 50)
"""The cut-offs ``bench locomo`` scores without ``--k``."""


def _ks(value: str) -> list[int]:
    """An argparse type: one ``--k`` value, comma-separated cut-offs."""
    return [positive_int(part) for part in value.split(",") if part.strip()]


def _locomo_answerer(args: argparse.Namespace) -> AnswerRun | None:
    """The ``--answer`` run of ``bench locomo``, its models resolved; None without ``--answer``.

    Resolving here makes a bad model fail before the ingest (and starts the local model).

    Raises:
        ValueError: answer flags without ``--answer``, or a model that cannot be used
            (`AnswerSetupError`); the message says what to change.
    """
    given = [
        flag
        for flag, value in (
            ("--model", None if args.archival_summaries else args.model),
            ("--judge-model", args.judge_model),
            ("--limit", args.limit),
            ("--top-k", args.top_k),
        )
        if value is not None
    ]
    if not args.answer:
        if given:
            also = " (--model also with --archival-summaries)" if "--model" in given else ""
            raise ValueError(f"{', '.join(given)}: only used with --answer{also}; add --answer")
        return None
    from .answer import (
        DEFAULT_TOP_K,
        AnswerOptions,
        AnswerRun,
        resolve_bench_model,
    )

    model_spec = args.model or "auto"  # as `chat` and Context.model
    judge_spec = args.judge_model or model_spec
    model = resolve_bench_model(model_spec, "--model")
    judge = resolve_bench_model(judge_spec, "--judge-model" if args.judge_model else "--model")
    options = AnswerOptions(
        top_k=args.top_k or DEFAULT_TOP_K,
        limit=args.limit,
        model_spec=model_spec,
        judge_spec=judge_spec,
    )
    return AnswerRun(model, judge, options)


def _locomo_summarizer(args: argparse.Namespace) -> SessionSummarizer | None:
    """The ``--archival-summaries`` summarizer, its model resolved; None without the flag.

    Raises:
        ValueError: the model cannot be used (`AnswerSetupError`, saying what to change).
    """
    if not args.archival_summaries:
        return None
    from .answer import resolve_bench_model
    from .summaries import SessionSummarizer

    model_spec = args.model or "auto"  # as --answer, `chat` and Context.model
    return SessionSummarizer(resolve_bench_model(model_spec, "--model"), model_spec)


def cmd_bench_locomo(args: argparse.Namespace) -> int:
    """Run ``bench locomo``: the agent's memory search on LoCoMo (and answers, with --answer)."""
    try:
        require_extra()
    except BenchExtraMissing as exc:
        print_error(str(exc))
        return 2
    # Imported here, never at module level: they need the `bench` extra.
    from .locomo import LocomoFormatError, load_locomo
    from .report import print_report
    from .runner import BenchOptions, parse_modes, run_locomo

    try:
        modes = parse_modes(args.modes)
        conversations = load_locomo(args.data)
    except (ValueError, LocomoFormatError) as exc:
        print_error(str(exc))
        return 2
    options = BenchOptions(
        modes=modes,
        ks=sorted({k for ks in args.k for k in ks} if args.k else DEFAULT_KS),
        data_dir=args.data_dir,
        archival=args.archival,
        embedding_model=args.embedding_model,
        database_url=database_url(args),
    )
    if options.database_url and args.archival_summaries:
        print_error("--archival-summaries keeps its summaries in SQLite; not with a database URL")
        return 2
    try:
        answerer = _locomo_answerer(args)
        summarizer = _locomo_summarizer(args)
    except ValueError as exc:  # answer flags without --answer, or a model that cannot run
        print_error(str(exc))
        return 2
    with tempfile.TemporaryDirectory(prefix="memgpt-locomo-") as tmp:
        data_dir = Path(args.data_dir) if args.data_dir else Path(tmp)
        try:
            with progress_bars(not args.no_progress, increments=True) as progress:
                report = run_locomo(
                    conversations,
                    options,
                    data_dir,
                    progress=progress,
                    answerer=answerer,
                    summarizer=summarizer,
                )
        except (MemoryStoreError, RuntimeError, ValueError) as exc:
            # A reused --data-dir built with another model, a corrupt file, a missing
            # embedding package, a failed answer-model call: say what, not a traceback.
            print_error(str(exc))
            return 2
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.bench BENCHMARK ...``; returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench",
        description="Measure the memory system on public benchmarks (the 'bench' extra).",
    )
    which = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    add_locomo_command(which)
    return run_parsed(parser.parse_args(argv))


def add_locomo_command(which: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``locomo``, as every command registers (`langgraph_memgpt.cli.commands`)."""
    locomo = which.add_parser(
        "locomo",
        help="turn-retrieval quality of recall search on a LoCoMo file",
        description="Ingest each LoCoMo conversation into a fresh agent's recall memory "
        "and score the agent's own search on every question outside category 5 "
        "(LongMemEval's recall_any@k, recall_all@k, ndcg_any@k), next to a plain BM25 "
        "baseline (the bm25s library's), overall, per category and per conversation, with "
        "each mode's search time per query (p50 / p95) and the ingest rate. A BEAM file "
        "converted to LoCoMo's schema (questions with qa[].beam_type) is also scored per "
        "BEAM ability. Needs the 'bench' extra: pip install 'langgraph-memgpt[bench]'.",
    )
    locomo.add_argument(
        "--data", required=True, type=Path, help="LoCoMo JSON file (or BEAM in its schema)"
    )
    locomo.add_argument(
        "--modes",
        default="hybrid,fts,vector",
        help="comma-separated search modes among fts, vector, hybrid (default: all three; "
        "hybrid is what the memory tools use)",
    )
    locomo.add_argument(
        "--k",
        nargs="+",
        type=_ks,
        default=None,
        help="cut-offs, comma- or space-separated (default: 1,5,10,20,50)",
    )
    locomo.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep the memory stores here (reused on a re-run); default: a temporary folder",
    )
    locomo.add_argument(
        "--archival",
        action="store_true",
        help="also insert every turn into archival memory and score archival search",
    )
    locomo.add_argument(
        "--archival-summaries",
        action="store_true",
        help="also summarize each session with --model (recursively, with the agent's "
        "summarizer prompt), store the summaries in archival memory as the agent's eviction "
        "does, and score their search at SESSION level (archival-summaries:<mode>)",
    )
    locomo.add_argument(
        "--embedding-model", default="minilm", help="'minilm' (default) or 'openai:<model>'"
    )
    answer = locomo.add_argument_group(
        "question answering",
        "With --answer, a chat model also answers the questions from the agent's hybrid "
        "recall search; answers are scored with LoCoMo's F1 and an LLM judge (J), with "
        "p50/p95 search, answer and total latency and prompt tokens per question.",
    )
    answer.add_argument(
        "--answer",
        action="store_true",
        help="answer the questions from retrieved memory and score the answers",
    )
    answer.add_argument(
        "--model",
        default=None,
        help="answering (and --archival-summaries) model: 'auto' (default: OPENAI_API_KEY / "
        "OPENAI_BASE_URL if set, else the embedded model), 'openai:<name>', 'local' or "
        "'scripted:<path.json>'",
    )
    answer.add_argument(
        "--judge-model", default=None, help="judge model spec (default: the --model one)"
    )
    answer.add_argument(
        "--limit",
        type=positive_int,
        default=None,
        help="answer only the first N questions of each conversation (retrieval metrics "
        "still cover all of them)",
    )
    answer.add_argument(
        "--top-k",
        type=positive_int,
        default=None,
        help="retrieved turns put into the answer prompt (default: 10)",
    )
    add_database_url(locomo)
    locomo.add_argument("--json", action="store_true", help="print one JSON object")
    locomo.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    locomo.set_defaults(func=cmd_bench_locomo)


__all__ = ["DEFAULT_KS", "add_locomo_command", "cmd_bench_locomo", "main"]
