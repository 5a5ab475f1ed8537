"""The ``langgraph-memgpt`` command line.

One registration convention for every subcommand: a *registrar*, a function
``add_*(subparsers)`` that adds its parser(s) and sets ``func`` (a ``cmd_*(args) -> int``)
with ``set_defaults``. `COMMANDS` lists the registrars as ``"module:function"`` and
`build_parser` imports each when the parser is built, so a command may live in a module of
its own (``serve`` to ``ingest`` are here, ``retention`` in ``cli.retention``, ``watch`` in
``cli.watch``) and a new one is one module and one line of `COMMANDS` (docs/extending.md).
Arguments several share are declared once in ``cli.args``; what a command prints goes
through ``cli.console`` (`print_error`, `progress_bars`); `run_parsed` is the one net for
what a command did not catch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph_memgpt.cli.args import (
    add_memory_place,
    data_dir,
    database_url,
    port,
    positive_int,
)
from langgraph_memgpt.stores.types import MemoryStoreError

Command = Callable[[argparse.Namespace], int]


def cmd_serve(args: argparse.Namespace) -> int:
    """Run ``serve``: the agent behind ``langgraph dev`` (Studio and the HTTP API)."""
    from langgraph_memgpt.cli.dev_server import serve

    return serve(
        port=args.port, host=args.host, data_dir=args.data_dir, database_url=database_url(args)
    )


def cmd_chat(args: argparse.Namespace) -> int:
    """Run ``chat``: a terminal conversation with one agent."""
    from langgraph_memgpt.cli.chat import chat
    from langgraph_memgpt.context import Context

    ctx = Context(agent_id=args.agent, model=args.model, data_dir=str(data_dir(args)))
    return chat(ctx, args.thread, database_url=database_url(args))


def cmd_inspect(args: argparse.Namespace) -> int:
    """Run ``inspect``: print an agent's memory."""
    from langgraph_memgpt.cli.console import inspect

    return inspect(data_dir(args), args.agent, recent=args.recent, database_url=database_url(args))


def cmd_reembed(args: argparse.Namespace) -> int:
    """Run ``reembed``: embed an agent's recall and archival memory with another model."""
    from langgraph_memgpt.cli.console import reembed

    url = database_url(args)
    if not url and args.data_dir is None:
        # Never the default folder by accident: re-embedding rewrites every vector.
        from langgraph_memgpt.cli.console import print_error

        print_error(
            "reembed: --data-dir is required (or --database-url / "
            "$MEMGPT_DATABASE_URL for memory in Postgres)"
        )
        return 2
    return reembed(
        args.data_dir or "",
        args.agent,
        embedding_model=args.embedding_model,
        database_url=url,
    )


def add_agent_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``serve``, ``chat``, ``inspect`` and ``reembed``."""
    serve = subparsers.add_parser(
        "serve",
        help="serve the agent with `langgraph dev` (Studio, HTTP API)",
        description="Start `langgraph dev` on the 'memgpt' graph with a durable SQLite "
        "checkpointer in the data directory. Without OPENAI_API_KEY / OPENAI_BASE_URL the "
        "embedded local model is started first and shared with the server.",
    )
    serve.add_argument(
        "--port", type=port, default=2024, help="HTTP port (default: 2024; taken: a free one)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface (default: 127.0.0.1)")
    add_memory_place(serve)
    serve.set_defaults(func=cmd_serve)

    chat = subparsers.add_parser(
        "chat",
        help="talk to an agent in the terminal",
        description="A conversation with one agent in this terminal, showing its inner "
        "monologue and memory edits. /memory shows its memory, /quit ends.",
    )
    chat.add_argument("--agent", default="default", help="agent id (default: default)")
    chat.add_argument("--thread", default="chat", help="conversation thread id (default: chat)")
    add_memory_place(chat)
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
    add_memory_place(inspect)
    inspect.add_argument(
        "--recent",
        type=positive_int,
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
    add_memory_place(reembed)
    reembed.add_argument("--agent", required=True, help="agent id")
    reembed.add_argument(
        "--embedding-model",
        default="minilm",
        help="'minilm' (default, embedded) or 'openai:<model>'",
    )
    reembed.set_defaults(func=cmd_reembed)


def _agent_memory(args: argparse.Namespace) -> dict[str, Any]:
    """The agent's memory a housekeeping command names: where it lives, whose, which model."""
    return {
        "data_dir": data_dir(args),
        "agent_id": args.agent,
        "embedding_model": args.embedding_model,
        "database_url": database_url(args),
    }


def cmd_forget(args: argparse.Namespace) -> int:
    """Run ``forget``: delete a passage, a message, a thread or a whole agent."""
    from langgraph_memgpt.cli.manage import forget

    return forget(
        **_agent_memory(args),
        passage=args.passage,
        message=args.message,
        thread=args.thread,
        everything=args.all,
    )


def cmd_export(args: argparse.Namespace) -> int:
    """Run ``export``: write an agent's memory to one portable file."""
    from langgraph_memgpt.cli.manage import export

    return export(data_dir(args), args.agent, args.out, database_url=database_url(args))


def cmd_import(args: argparse.Namespace) -> int:
    """Run ``import``: restore an exported memory under a new agent id."""
    from langgraph_memgpt.cli.manage import import_file

    return import_file(
        args.file,
        **_agent_memory(args),
        mode="replace" if args.replace else "merge" if args.merge else "new",
        progress=not args.no_progress,
    )


def cmd_ingest(args: argparse.Namespace) -> int:
    """Run ``ingest``: put documents into an agent's archival memory."""
    from langgraph_memgpt.cli.manage import ingest

    return ingest(
        args.paths, **_agent_memory(args), max_chars=args.chunk_chars, progress=not args.no_progress
    )


def add_memory_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``forget``, ``export``, ``import`` and ``ingest``."""
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
    add_memory_place(forget)
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
    add_memory_place(export)
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
    add_memory_place(restore)
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
    add_memory_place(ingest)
    ingest.add_argument("--embedding-model", default="minilm", help=embedding_help)
    ingest.add_argument(
        "--chunk-chars", type=positive_int, default=1200, help="chunk size (default: 1200)"
    )
    ingest.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    ingest.set_defaults(func=cmd_ingest)


#: Every subcommand's registrar, ``"module:function"``, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "langgraph_memgpt.cli.commands:add_agent_commands",
    "langgraph_memgpt.cli.commands:add_memory_commands",
    "langgraph_memgpt.cli.retention:add_retention_command",
    "langgraph_memgpt.cli.watch:add_watch_command",
)


def build_parser(commands: Sequence[str] = COMMANDS) -> argparse.ArgumentParser:
    """The argument parser with each registrar of ``commands`` run on its subparsers."""
    parser = argparse.ArgumentParser(
        prog="langgraph-memgpt",
        description="MemGPT's tiered memory as a LangGraph agent: tools around it.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for registrar in commands:
        module, _, name = registrar.partition(":")
        register: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None] = getattr(
            importlib.import_module(module), name
        )
        register(subparsers)
    return parser


def run_parsed(args: argparse.Namespace) -> int:
    """Run a parsed command's ``func``; what it did not catch is one red line, exit 2."""
    func: Command = args.func
    from langgraph_memgpt.cli.console import print_error
    from langgraph_memgpt.stores.backends import engine_errors

    caught: tuple[type[Exception], ...] = (MemoryStoreError, OSError, *engine_errors())
    try:
        return func(args)
    except caught as exc:
        # The commands report what they expect; this is the net for the rest: a file
        # that cannot be used is one line naming it, never a traceback.
        print_error(" ".join(str(exc).split()))
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``langgraph-memgpt``; returns the process exit code."""
    return run_parsed(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
