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

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
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
    # A deleted checkpoint's bytes are overwritten, not left in free pages (forget).
    conn.execute("PRAGMA secure_delete=ON")
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


def keep_latest(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """Delete every checkpoint of a thread but its latest (per namespace), with their writes.

    What ``forget`` does to a thread whose history held forgotten text: earlier checkpoints
    (the thread's time-travel history) and their pending writes go; the latest, already
    cleaned, stays. LangGraph's Postgres saver does it itself (``prune``, blobs included);
    for the SQLite saver it is done here, with SQLite's ``secure_delete`` so the bytes are
    overwritten, and the write-ahead log emptied afterwards.

    Raises:
        NotImplementedError: a saver that cannot prune (the thread is left as it was).
    """
    if isinstance(saver, SqliteSaver):
        with saver.lock, saver.conn:
            saver.conn.execute("PRAGMA secure_delete=ON")
            kept = (
                "SELECT checkpoint_ns, max(checkpoint_id) FROM checkpoints "
                "WHERE thread_id = ? GROUP BY checkpoint_ns"
            )
            saver.conn.execute(
                "DELETE FROM writes WHERE thread_id = ? AND (checkpoint_ns, checkpoint_id) "
                f"NOT IN ({kept})",
                (thread_id, thread_id),
            )
            saver.conn.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND (checkpoint_ns, checkpoint_id) "
                f"NOT IN ({kept})",
                (thread_id, thread_id),
            )
        empty_wal(saver)
        return
    if isinstance(saver, InMemorySaver):
        _keep_latest_in_memory(saver, thread_id)
        return
    saver.prune([thread_id], strategy="keep_latest")


def _keep_latest_in_memory(saver: InMemorySaver, thread_id: str) -> None:
    """`keep_latest` for LangGraph's in-memory saver (tests, notebooks)."""
    referenced: set[tuple[str, str, Any]] = set()
    for ns, checkpoints in saver.storage.get(thread_id, {}).items():
        if not checkpoints:
            continue
        latest = max(checkpoints)
        for checkpoint_id in [c for c in checkpoints if c != latest]:
            del checkpoints[checkpoint_id]
            saver.writes.pop((thread_id, ns, checkpoint_id), None)
        checkpoint = saver.serde.loads_typed(checkpoints[latest][0])
        referenced |= {(ns, ch, v) for ch, v in checkpoint["channel_versions"].items()}
    for key in [k for k in saver.blobs if k[0] == thread_id and k[1:] not in referenced]:
        del saver.blobs[key]


def empty_wal(saver: BaseCheckpointSaver[Any]) -> None:
    """Copy a SQLite saver's write-ahead log into its file and truncate it (forget).

    Deleted checkpoints' pages may still sit in the log; a reader holding an old snapshot
    can keep it from emptying, so this is best effort: the next checkpoint empties it.
    """
    if isinstance(saver, SqliteSaver):
        with saver.lock:
            saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
