"""Which backend holds agents' memory: the embedded one in a folder, or a Postgres database.

The command line (and anything else outside the graph) picks its backend here, from a
data directory and an optional database URL whose scheme names the engine
(`stores.registry`), so it speaks only the memory interface (`stores.base`, and the
optional `stores.capabilities`) and never names an engine itself: every command that reads or
writes memory (``chat``, ``serve``, ``inspect``, ``reembed``, ``retention``, ``watch``,
``forget``, ``export``, ``import``, ``ingest``) opens it with `open_backend`.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.capabilities import (
    ProgressFor,
    Reembeddable,
    SharedOpenMemories,
    require,
)
from langgraph_memgpt.stores.registry import BackendSetupError, engine_for


def engine_errors() -> tuple[type[Exception], ...]:
    """The storage engines' own error types, for a command's last-resort error message."""
    import sqlite3

    errors: list[type[Exception]] = [sqlite3.Error]
    try:
        import psycopg
    except ImportError:
        pass
    else:
        errors.append(psycopg.Error)
    return tuple(errors)


def open_backend(
    data_dir: str | Path,
    *,
    database_url: str = "",
    embedding_model: str = "minilm",
    core_block_limit: int = 2000,
    read_only: bool = False,
    embeddings: Embeddings | None = None,
) -> MemoryBackend:
    """The backend of ``database_url`` when set, else the embedded one in ``data_dir``.

    The URL's scheme picks the engine (`stores.registry`: ``postgresql://`` is Postgres);
    no URL is the embedded SQLite + FAISS memory in ``data_dir``.

    ``read_only``: for reading memory only (``inspect``), without an embedding model, so it
    works after an embedding change and, on SQLite, in a read-only folder.
    ``embeddings``: an embeddings object to use instead of ``embedding_model``.

    Raises:
        BackendSetupError: no engine serves the URL's scheme, or its extra is not installed.
    """
    return engine_for(database_url).from_url(
        database_url.strip(),
        data_dir=Path(data_dir).expanduser(),
        embedding_model=embedding_model,
        core_block_limit=core_block_limit,
        read_only=read_only,
        embeddings=embeddings,
    )


def close_backend(backend: MemoryBackend) -> None:
    """Close a backend `open_backend` gave, its shared caches written.

    What a command does before its process ends: an engine that keeps its opened memories
    per process (`SharedOpenMemories`: the embedded one) writes and closes them.
    """
    backend.close()
    if isinstance(backend, SharedOpenMemories):
        backend.close_shared()


def recorded_embedding(backend: MemoryBackend, agent_id: str) -> dict[str, object] | None:
    """The embedding model an agent's vectors were made with (``{"model", "dim"}``), or None.

    What ``export`` records for the importing side, read by the engine from its own record
    (`Reembeddable.recorded_embedding`) without an embedding model. None when the agent
    has no vectors yet, or the engine keeps no such record.
    """
    if isinstance(backend, Reembeddable):
        return backend.recorded_embedding(agent_id)
    return None


def where(data_dir: str | Path, database_url: str = "") -> str:
    """Where memory lives, for messages: the folder, or the database without its password."""
    if database_url.strip():
        return f"the database at {database_url.split('@')[-1]}"
    return str(Path(data_dir).expanduser())


def reembed_agent(
    backend: MemoryBackend, agent_id: str, embeddings: Embeddings, progress_for: ProgressFor
) -> tuple[int, int]:
    """`Reembeddable.reembed` of ``backend``: the agent's memory embedded again, its own way.

    Raises:
        MissingCapability: the engine cannot re-embed (`Reembeddable`).
        MemoryStoreError: the memory cannot be used.
    """
    return require(backend, Reembeddable, "reembed").reembed(agent_id, embeddings, progress_for)


__all__ = [
    "BackendSetupError",
    "close_backend",
    "engine_errors",
    "open_backend",
    "recorded_embedding",
    "reembed_agent",
    "where",
]
