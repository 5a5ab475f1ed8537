"""Arguments several ``langgraph-memgpt`` subcommands share, and how they resolve.

The subcommands register themselves (``cli``, ``retention_cli``, ``bench.cli``); where they
take the same flag (``--data-dir``, ``--database-url``, a count) it is declared here once, so
its help and its fallback (``$MEMGPT_DATA_DIR``, ``$MEMGPT_DATABASE_URL``) read the same
everywhere.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def positive_int(value: str) -> int:
    """An argparse type: a whole number above 0."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {number}")
    return number


def port(value: str) -> int:
    """An argparse type: a TCP port."""
    number = positive_int(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535, got {number}")
    return number


def add_data_dir(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """Declare ``--data-dir`` (read back with `data_dir`)."""
    default = "" if required else " (default: $MEMGPT_DATA_DIR or ./.memgpt)"
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=required,
        default=None,
        help=f"folder of the agent's memory and the threads' checkpoints{default}",
    )


def add_database_url(parser: argparse.ArgumentParser) -> None:
    """Declare ``--database-url`` (read back with `database_url`)."""
    parser.add_argument(
        "--database-url",
        default=None,
        help="postgresql://user:password@host/db holding the memory and threads instead of "
        "the data directory (default: $MEMGPT_DATABASE_URL; unset: the data directory)",
    )


def add_memory_place(parser: argparse.ArgumentParser) -> None:
    """Declare where the memory lives: ``--data-dir``, or ``--database-url`` for Postgres.

    Every command that opens memory takes both (read back with `data_dir`, `database_url`).
    """
    add_data_dir(parser)
    add_database_url(parser)


def database_url(args: argparse.Namespace) -> str:
    """``--database-url``, else ``$MEMGPT_DATABASE_URL``, else '' (the data directory)."""
    from langgraph_memgpt.serve.settings import DATABASE_URL_ENV

    given = args.database_url if args.database_url is not None else os.environ.get(DATABASE_URL_ENV)
    return (given or "").strip()


def data_dir(args: argparse.Namespace) -> Path:
    """``--data-dir``, else the default data directory (``$MEMGPT_DATA_DIR`` or ./.memgpt)."""
    from langgraph_memgpt.context import Context

    return Path(args.data_dir) if args.data_dir else Path(Context().data_dir)


__all__ = [
    "add_data_dir",
    "add_database_url",
    "add_memory_place",
    "data_dir",
    "database_url",
    "port",
    "positive_int",
]
