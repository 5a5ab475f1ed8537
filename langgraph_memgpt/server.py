"""Durable persistence for ``langgraph dev`` / the LangGraph server.

``langgraph.json`` points its ``checkpointer.path`` here so threads (the FIFO queue, the
summary, the counters) survive a server restart, in the same data directory as the
agent's long-term memory.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

CHECKPOINT_FILENAME = "checkpoints.sqlite"


def checkpoint_path() -> Path:
    """Where the server keeps checkpoints: ``$MEMGPT_DATA_DIR`` (default ``./.memgpt``)."""
    root = Path(os.environ.get("MEMGPT_DATA_DIR", ".memgpt")).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root / CHECKPOINT_FILENAME


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncSqliteSaver]:
    """An ``AsyncSqliteSaver`` over the data directory's checkpoint file, for the server."""
    async with AsyncSqliteSaver.from_conn_string(str(checkpoint_path())) as saver:
        yield saver
