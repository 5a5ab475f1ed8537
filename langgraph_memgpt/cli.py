"""The ``langgraph-memgpt`` command line.

One ``cmd_*`` function per subcommand, each registered by its own ``_add_*`` function, so
further subcommands (``chat``, ``inspect``) are added without touching the existing ones.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph_memgpt.stores.types import MemoryStoreError

if TYPE_CHECKING:
    from langgraph_memgpt.bench.answer import AnswerRun
    from langgraph_memgpt.bench.summaries import SessionSummarizer

Command = Callable[[argparse.Namespace], int]


def _parse_ks(values: Sequence[str]) -> list[int]:
    ks: list[int] = []
    for value in values:
        for part in value.split(","):
            if not part.strip():
                continue
            try:
                k = int(part)
            except ValueError:
                raise argparse.ArgumentTypeError(f"--k takes integers, got {part!r}") from None
            if k <= 0:
                raise argparse.ArgumentTypeError(f"--k values must be positive, got {k}")
            ks.append(k)
    return sorted(set(ks))


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
    from langgraph_memgpt.bench.answer import (
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
    from langgraph_memgpt.bench.answer import resolve_bench_model
    from langgraph_memgpt.bench.summaries import SessionSummarizer

    model_spec = args.model or "auto"  # as --answer, `chat` and Context.model
    return SessionSummarizer(resolve_bench_model(model_spec, "--model"), model_spec)


def cmd_bench_locomo(args: argparse.Namespace) -> int:
    """Run ``bench locomo``: the agent's memory search on LoCoMo (and answers, with --answer)."""
    # Imported here, never at module level: the benchmarks are the `bench` extra.
    from langgraph_memgpt.bench import BenchExtraMissing, require_extra

    try:
        require_extra()
    except BenchExtraMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from langgraph_memgpt.bench.locomo import LocomoFormatError, load_locomo
    from langgraph_memgpt.bench.report import print_report
    from langgraph_memgpt.bench.runner import BenchOptions, parse_modes, run_locomo

    try:
        modes = parse_modes(args.modes)
        conversations = load_locomo(args.data)
    except (ValueError, LocomoFormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    options = BenchOptions(
        modes=modes,
        ks=args.k,
        data_dir=args.data_dir,
        archival=args.archival,
        embedding_model=args.embedding_model,
        database_url=_database_url(args),
    )
    if options.database_url and args.archival_summaries:
        print(
            "error: --archival-summaries keeps its summaries in SQLite; not with a database URL",
            file=sys.stderr,
        )
        return 2
    try:
        answerer = _locomo_answerer(args)
        summarizer = _locomo_summarizer(args)
    except ValueError as exc:  # answer flags without --answer, or a model that cannot run
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="memgpt-locomo-") as tmp:
        data_dir = Path(args.data_dir) if args.data_dir else Path(tmp)
        try:
            from langgraph_memgpt.manage import progress_bars

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
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def _add_bench(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = subparsers.add_parser("bench", help="measure the memory system on public benchmarks")
    which = bench.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    locomo = which.add_parser(
        "locomo",
        help="turn-retrieval quality of recall search on a LoCoMo file",
        description="Ingest each LoCoMo conversation into a fresh agent's recall memory "
        "and score the agent's own search on every question outside category 5 "
        "(LongMemEval's recall_any@k, recall_all@k, ndcg_any@k), next to a plain BM25 "
        "baseline (the bm25s library's). Needs the 'bench' extra: "
        "pip install 'langgraph-memgpt[bench]'.",
    )
    locomo.add_argument("--data", required=True, type=Path, help="LoCoMo JSON file")
    locomo.add_argument(
        "--modes",
        default="hybrid,fts,vector",
        help="comma-separated search modes among fts, vector, hybrid (default: all three; "
        "hybrid is what the memory tools use)",
    )
    locomo.add_argument(
        "--k",
        nargs="+",
        default=["1,5,10,20,50"],
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
        type=_positive_int,
        default=None,
        help="answer only the first N questions of each conversation (retrieval metrics "
        "still cover all of them)",
    )
    answer.add_argument(
        "--top-k",
        type=_positive_int,
        default=None,
        help="retrieved turns put into the answer prompt (default: 10)",
    )
    _add_database_url(locomo)
    locomo.add_argument("--json", action="store_true", help="print one JSON object")
    locomo.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    locomo.set_defaults(func=cmd_bench_locomo)


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {number}")
    return number


def _port(value: str) -> int:
    port = _positive_int(value)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535, got {port}")
    return port


def _add_data_dir(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    default = "" if required else " (default: $MEMGPT_DATA_DIR or ./.memgpt)"
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=required,
        default=None,
        help=f"folder of the agent's memory and the threads' checkpoints{default}",
    )


def _add_database_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        default=None,
        help="postgresql://user:password@host/db holding the memory and threads instead of "
        "the data directory (default: $MEMGPT_DATABASE_URL; unset: the data directory)",
    )


def _database_url(args: argparse.Namespace) -> str:
    """``--database-url``, else ``$MEMGPT_DATABASE_URL``, else '' (the data directory)."""
    from langgraph_memgpt.context import DATABASE_URL_ENV

    given = args.database_url if args.database_url is not None else os.environ.get(DATABASE_URL_ENV)
    return (given or "").strip()


def _data_dir(args: argparse.Namespace) -> Path:
    from langgraph_memgpt.context import Context

    return Path(args.data_dir) if args.data_dir else Path(Context().data_dir)


def cmd_serve(args: argparse.Namespace) -> int:
    """Run ``serve``: the agent behind ``langgraph dev`` (Studio and the HTTP API)."""
    from langgraph_memgpt.console import serve

    return serve(
        port=args.port, host=args.host, data_dir=args.data_dir, database_url=_database_url(args)
    )


def cmd_chat(args: argparse.Namespace) -> int:
    """Run ``chat``: a terminal conversation with one agent."""
    from langgraph_memgpt.console import chat
    from langgraph_memgpt.context import Context

    ctx = Context(agent_id=args.agent, model=args.model, data_dir=str(_data_dir(args)))
    return chat(ctx, args.thread, database_url=_database_url(args))


def cmd_inspect(args: argparse.Namespace) -> int:
    """Run ``inspect``: print an agent's memory."""
    from langgraph_memgpt.console import inspect

    return inspect(
        _data_dir(args), args.agent, recent=args.recent, database_url=_database_url(args)
    )


def cmd_reembed(args: argparse.Namespace) -> int:
    """Run ``reembed``: embed an agent's recall and archival memory with another model."""
    from langgraph_memgpt.console import reembed

    database_url = _database_url(args)
    if not database_url and args.data_dir is None:
        # Never the default folder by accident: re-embedding rewrites every vector.
        print(
            "langgraph-memgpt reembed: error: --data-dir is required (or --database-url / "
            "$MEMGPT_DATABASE_URL for memory in Postgres)",
            file=sys.stderr,
        )
        return 2
    return reembed(
        args.data_dir or "",
        args.agent,
        embedding_model=args.embedding_model,
        database_url=database_url,
    )


def _add_agent_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="serve the agent with `langgraph dev` (Studio, HTTP API)",
        description="Start `langgraph dev` on the 'memgpt' graph with a durable SQLite "
        "checkpointer in the data directory. Without OPENAI_API_KEY / OPENAI_BASE_URL the "
        "embedded local model is started first and shared with the server.",
    )
    serve.add_argument("--port", type=_port, default=2024, help="HTTP port (default: 2024)")
    serve.add_argument("--host", default="127.0.0.1", help="interface (default: 127.0.0.1)")
    _add_data_dir(serve)
    _add_database_url(serve)
    serve.set_defaults(func=cmd_serve)

    chat = subparsers.add_parser(
        "chat",
        help="talk to an agent in the terminal",
        description="A conversation with one agent in this terminal, showing its inner "
        "monologue and memory edits. /memory shows its memory, /quit ends.",
    )
    chat.add_argument("--agent", default="default", help="agent id (default: default)")
    chat.add_argument("--thread", default="chat", help="conversation thread id (default: chat)")
    _add_data_dir(chat)
    _add_database_url(chat)
    chat.add_argument(
        "--model",
        default="auto",
        help="'auto' (default: OPENAI_API_KEY / OPENAI_BASE_URL if set, else the embedded "
        "model), 'openai:<name>', 'local' or 'scripted:<path.json>'",
    )
    chat.set_defaults(func=cmd_chat)

    inspect = subparsers.add_parser(
        "inspect",
        help="print an agent's memory",
        description="Core memory blocks, tier counts, latest messages and archival passages.",
    )
    inspect.add_argument("--agent", default="default", help="agent id (default: default)")
    _add_data_dir(inspect)
    _add_database_url(inspect)
    inspect.add_argument(
        "--recent",
        type=_positive_int,
        default=5,
        help="latest messages and passages to show (default: 5)",
    )
    inspect.set_defaults(func=cmd_inspect)

    reembed = subparsers.add_parser(
        "reembed",
        help="re-embed an agent's memory after the embedding model changed",
        description="Embed every message and passage of the agent again with "
        "--embedding-model. Data directory: stop servers and chats using it first. Postgres "
        "(--database-url): the new vectors and model are switched in one transaction while "
        "servers run; restart them with the new model.",
    )
    _add_data_dir(reembed)
    _add_database_url(reembed)
    reembed.add_argument("--agent", required=True, help="agent id")
    reembed.add_argument(
        "--embedding-model",
        default="minilm",
        help="'minilm' (default, embedded) or 'openai:<model>'",
    )
    reembed.set_defaults(func=cmd_reembed)


def cmd_forget(args: argparse.Namespace) -> int:
    """Run ``forget``: delete a passage, a message, a thread or a whole agent."""
    from langgraph_memgpt.manage import forget

    return forget(
        _data_dir(args),
        args.agent,
        passage=args.passage,
        message=args.message,
        thread=args.thread,
        everything=args.all,
        embedding_model=args.embedding_model,
    )


def cmd_export(args: argparse.Namespace) -> int:
    """Run ``export``: write an agent's memory to one portable file."""
    from langgraph_memgpt.manage import export

    return export(_data_dir(args), args.agent, args.out)


def cmd_import(args: argparse.Namespace) -> int:
    """Run ``import``: restore an exported memory under a new agent id."""
    from langgraph_memgpt.manage import import_file

    return import_file(
        args.file,
        _data_dir(args),
        args.agent,
        embedding_model=args.embedding_model,
        mode="replace" if args.replace else "merge" if args.merge else "new",
        progress=not args.no_progress,
    )


def cmd_ingest(args: argparse.Namespace) -> int:
    """Run ``ingest``: put documents into an agent's archival memory."""
    from langgraph_memgpt.manage import ingest

    return ingest(
        args.paths,
        _data_dir(args),
        args.agent,
        embedding_model=args.embedding_model,
        max_chars=args.chunk_chars,
        progress=not args.no_progress,
    )


def _add_memory_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    embedding_help = "'minilm' (default, embedded), 'openai:<model>' or 'none'"
    forget = subparsers.add_parser(
        "forget",
        help="delete a passage, a message, a thread or a whole agent from memory",
        description="Delete from an agent's memory everywhere it lives (rows, full-text "
        "index, vectors and FAISS caches, the eviction summaries written from a deleted "
        "message, the thread's checkpoint). Each deletion is logged without its content; "
        "`inspect` shows the log.",
    )
    forget.add_argument("--agent", required=True, help="agent id")
    what = forget.add_mutually_exclusive_group(required=True)
    what.add_argument("--passage", type=int, metavar="N", help="archival passage id")
    what.add_argument("--message", metavar="ID", help="recall message id")
    what.add_argument("--thread", metavar="T", help="thread id: its messages, passages, checkpoint")
    what.add_argument("--all", action="store_true", help="everything the agent has")
    _add_data_dir(forget)
    forget.add_argument("--embedding-model", default="minilm", help=embedding_help)
    forget.set_defaults(func=cmd_forget)

    export = subparsers.add_parser(
        "export",
        help="write an agent's memory to one portable file (JSON Lines)",
        description="Core blocks with their history, every recall message, every archival "
        "passage (summaries included) and the embedding model's name; no vectors.",
    )
    export.add_argument("--agent", required=True, help="agent id")
    export.add_argument("--out", required=True, type=Path, help="file to write")
    _add_data_dir(export)
    export.set_defaults(func=cmd_export)

    restore = subparsers.add_parser(
        "import",
        help="restore an exported memory under an agent id",
        description="Check the whole file, then restore it; idempotent (importing twice "
        "adds nothing). Messages and passages are embedded with --embedding-model. An agent "
        "that already has memory is refused unless --merge or --replace says how to combine.",
    )
    restore.add_argument("file", type=Path, help="a file written by `export`")
    restore.add_argument("--agent", required=True, help="agent id to restore into")
    combine = restore.add_mutually_exclusive_group()
    combine.add_argument(
        "--merge",
        action="store_true",
        help="into an existing agent: keep its blocks as they are, add what it lacks",
    )
    combine.add_argument(
        "--replace",
        action="store_true",
        help="into an existing agent: the file's blocks replace its writable ones "
        "(read-only blocks are kept; nothing is deleted)",
    )
    _add_data_dir(restore)
    restore.add_argument("--embedding-model", default="minilm", help=embedding_help)
    restore.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    restore.set_defaults(func=cmd_import)

    ingest = subparsers.add_parser(
        "ingest",
        help="put text, Markdown or HTML documents into an agent's archival memory",
        description="Chunk each file (whole paragraphs, about --chunk-chars characters) "
        "into archival passages that name their source (file, chunk, character offsets). "
        "Ingesting an unchanged file again adds nothing; a changed file replaces its chunks.",
    )
    ingest.add_argument("paths", nargs="+", help="files, or folders to read recursively")
    ingest.add_argument("--agent", required=True, help="agent id")
    _add_data_dir(ingest)
    ingest.add_argument("--embedding-model", default="minilm", help=embedding_help)
    ingest.add_argument(
        "--chunk-chars", type=_positive_int, default=1200, help="chunk size (default: 1200)"
    )
    ingest.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    ingest.set_defaults(func=cmd_ingest)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="langgraph-memgpt",
        description="MemGPT's tiered memory as a LangGraph agent: tools around it.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_bench(subparsers)
    _add_agent_commands(subparsers)
    _add_memory_commands(subparsers)
    from langgraph_memgpt.retention_cli import add_retention_command

    add_retention_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``langgraph-memgpt``; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "k", None) is not None:
        try:
            args.k = _parse_ks(args.k)
        except argparse.ArgumentTypeError as exc:
            parser.error(str(exc))
    func: Command = args.func
    from langgraph_memgpt.stores.backends import engine_errors

    caught: tuple[type[Exception], ...] = (MemoryStoreError, OSError, *engine_errors())
    try:
        return func(args)
    except caught as exc:
        # The commands report what they expect; this is the net for the rest: a file
        # that cannot be used is one line naming it, never a traceback.
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
