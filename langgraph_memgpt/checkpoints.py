"""Where threads' checkpoints live: one SQLite file in the data directory, or Postgres.

The server, the CLI's chat and the management commands (forget, export) all open the
same checkpoints; this is the one place that knows the file's name and how to connect, so
none of them talks to SQLite itself. Memory (recall, core, archival) is the stores'
business (`stores.backends`); these are LangGraph's own checkpoint savers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

CHECKPOINT_FILENAME = "checkpoints.sqlite"
"""The threads' checkpoints in a data directory (``langgraph_memgpt.server`` and the CLI)."""

BUSY_TIMEOUT_SECONDS = 30
"""How long a connection waits for another process's write (a server, a CLI command)."""


@contextmanager
def sqlite_checkpointer(path: Path) -> Iterator[SqliteSaver]:
    """A synchronous saver on a checkpoint file, closed on exit.

    ``check_same_thread=False``: LangGraph runs sync nodes in worker threads.
    """
    conn = sqlite3.connect(path, check_same_thread=False, timeout=BUSY_TIMEOUT_SECONDS)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@contextmanager
def existing_checkpointer(data_dir: Path) -> Iterator[SqliteSaver | None]:
    """The data directory's checkpointer, or None when it has no checkpoint file yet.

    For commands that read or delete threads: they must not create an empty file.
    """
    path = data_dir / CHECKPOINT_FILENAME
    if not path.is_file():
        yield None
        return
    with sqlite_checkpointer(path) as saver:
        yield saver


def open_checkpointer(data_dir: Path, database_url: str = "") -> AbstractContextManager[Any]:
    """Threads' checkpoints: the data directory's SQLite file, or the Postgres database."""
    if database_url:
        from langgraph.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(database_url)
    data_dir.mkdir(parents=True, exist_ok=True)
    return sqlite_checkpointer(data_dir / CHECKPOINT_FILENAME)
