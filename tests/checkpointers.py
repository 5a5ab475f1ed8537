"""Where a test's threads live: a SQLite checkpoint file, or a Postgres database.

Tests that run a thread on both backends (and their subprocess helpers) name the place
with one string, a file path or a ``postgresql://`` URL, and open LangGraph's own saver
for it: ``SqliteSaver`` or ``langgraph-checkpoint-postgres``'s ``PostgresSaver``, as the
CLI and the server do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver


def is_postgres(where: str) -> bool:
    """Whether ``where`` names a Postgres database (else a SQLite file)."""
    return where.startswith(("postgresql://", "postgres://"))


def open_saver(where: str) -> tuple[BaseCheckpointSaver[Any], Callable[[], None]]:
    """The saver of ``where`` (tables created if missing) and the function closing it."""
    if is_postgres(where):
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        conn: Any = psycopg.connect(
            where, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        saver: BaseCheckpointSaver[Any] = PostgresSaver(conn)
        saver.setup()  # type: ignore[attr-defined]
        return saver, conn.close
    sqlite_conn = sqlite3.connect(where, check_same_thread=False, timeout=30)
    return SqliteSaver(sqlite_conn), sqlite_conn.close


def channels_holding(saver: BaseCheckpointSaver[Any], word: str) -> list[str]:
    """Every (thread, channel) of every checkpoint, pending write or metadata holding ``word``."""
    found: set[str] = set()
    for saved in saver.list(None):
        thread = saved.config["configurable"]["thread_id"]
        for channel, value in saved.checkpoint["channel_values"].items():
            if word in repr(value):
                found.add(f"{thread}:{channel}")
        for _, channel, value in saved.pending_writes or []:
            if word in repr(value):
                found.add(f"{thread}:write:{channel}")
        if word in repr(saved.metadata):
            found.add(f"{thread}:metadata")
    return sorted(found)


def memory_backend(where: str, embedding_model: str = "minilm") -> Any:
    """The memory backend for a Postgres ``where``; None (the embedded default) otherwise."""
    if not is_postgres(where):
        return None
    from langgraph_memgpt.stores.postgres import PostgresBackend

    return PostgresBackend(where, embedding_model=embedding_model)


@dataclass
class Place:
    """Where a test's memory and threads live: a folder (SQLite), or a Postgres database."""

    kind: str
    data_dir: Path
    url: str = ""
    _opened: dict[str, Any] = field(default_factory=dict)

    @property
    def threads(self) -> str:
        """Where threads live: the folder's checkpoint file, or the database."""
        return self.url or str(self.data_dir / "checkpoints.sqlite")

    def backend(self, embedding_model: str = "none") -> Any:
        """A Postgres backend on the database (None: the embedded one in ``data_dir``)."""
        return memory_backend(self.url, embedding_model) if self.url else None

    def open(self, agent_id: str = "default", embedding_model: str = "none") -> Any:
        """The agent's memory, as a fresh process would open it (closed by `close`)."""
        if not self.url:
            from langgraph_memgpt.stores.sqlite import open_memory

            return open_memory(self.data_dir, agent_id, embedding_model=embedding_model)
        if embedding_model not in self._opened:
            self._opened[embedding_model] = self.backend(embedding_model)
        return self._opened[embedding_model].open(agent_id)

    def close(self) -> None:
        """Close the backends `open` opened."""
        for backend in self._opened.values():
            backend.close()
        self._opened.clear()


def place_for(kind: str, data_dir: Path, request: pytest.FixtureRequest, scope: str) -> Place:
    """The `Place` of backend ``kind``; ``scope`` names the Postgres URL fixture to use."""
    if kind == "sqlite":
        return Place(kind, data_dir)
    return Place(kind, data_dir, str(request.getfixturevalue(scope)))
