"""Durable persistence for ``langgraph dev`` / the LangGraph server, and its configuration.

``langgraph.json`` points its ``checkpointer.path`` here (module form,
``langgraph_memgpt.server.checkpointer``) so threads (the FIFO queue, the summary, the
counters) survive a server restart, in the same data directory as the agent's long-term
memory. ``langgraph-memgpt serve`` writes the same configuration (`langgraph_config`)
into the data directory, so an installed package serves exactly what the repository does.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

CHECKPOINT_FILENAME = "checkpoints.sqlite"
DATA_DIR_ENV = "MEMGPT_DATA_DIR"
GRAPH_ID = "memgpt"
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
}
"""Keeps ``langgraph dev`` from calling home: no analytics, version check or tracing."""


def langgraph_config() -> dict[str, Any]:
    """The ``langgraph.json`` that serves the agent (the repository's file holds the same)."""
    return {
        "dependencies": ["."],
        "graphs": {GRAPH_ID: "langgraph_memgpt.graph:graph"},
        "checkpointer": {"path": "langgraph_memgpt.server.checkpointer"},
        "env": dict(OFFLINE_ENV),
    }


def checkpoint_path() -> Path:
    """Where the server keeps checkpoints: ``$MEMGPT_DATA_DIR`` (default ``./.memgpt``)."""
    root = Path(os.environ.get(DATA_DIR_ENV, ".memgpt")).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root / CHECKPOINT_FILENAME


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncSqliteSaver]:
    """An ``AsyncSqliteSaver`` over the data directory's checkpoint file, for the server."""
    # mkdir is blocking file-system I/O: keep it off the server's event loop.
    path = await asyncio.to_thread(checkpoint_path)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver
