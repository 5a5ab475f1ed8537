"""Which backend holds agents' memory: the embedded one in a folder, or a Postgres database.

The command line (and anything else outside the graph) picks its backend here, from a
data directory and an optional ``postgresql://`` URL, so it speaks only the memory
interface (`stores.base`) and never opens an engine itself: every command that reads or
writes memory (``chat``, ``serve``, ``inspect``, ``reembed``, ``retention``, ``watch``,
``forget``, ``export``, ``import``, ``ingest``) opens it with `open_backend`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.sqlite import DB_FILENAME, SqliteBackend
from langgraph_memgpt.stores.types import StoreAccessError


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


class BackendSetupError(StoreAccessError):
    """The chosen backend cannot be used as configured (the message says what to change)."""


def open_backend(
    data_dir: str | Path,
    *,
    database_url: str = "",
    embedding_model: str = "minilm",
    core_block_limit: int = 2000,
    read_only: bool = False,
) -> MemoryBackend:
    """The backend of ``database_url`` (Postgres) when set, else the embedded one in ``data_dir``.

    ``read_only``: for reading memory only (``inspect``), without an embedding model, so it
    works after an embedding change and, on SQLite, in a read-only folder.

    Raises:
        BackendSetupError: the URL is not a ``postgresql://`` one, or the Postgres extra is
            not installed.
    """
    url = database_url.strip()
    if not url:
        return SqliteBackend(
            Path(data_dir).expanduser(),
            embedding_model=embedding_model,
            core_block_limit=core_block_limit,
            read_only=read_only,
        )
    if not url.startswith(("postgresql://", "postgres://")):
        shown = url.split("@")[-1]  # never echo a password
        raise BackendSetupError(
            f"database URL '...{shown}' is not a postgresql://user:password@host/db URL "
            "(leave it unset for the embedded memory in the data directory)"
        )
    try:
        from langgraph_memgpt.stores.postgres import PostgresBackend
    except ImportError as exc:
        raise BackendSetupError(
            f"a database URL is set but {exc.name} is not installed: "
            "pip install 'langgraph-memgpt[postgres]'"
        ) from exc
    return PostgresBackend(
        url,
        embedding_model="none" if read_only else embedding_model,
        core_block_limit=core_block_limit,
    )


def close_backend(backend: MemoryBackend) -> None:
    """Close a backend `open_backend` gave, the embedded memory's FAISS caches written.

    What a command does before its process ends: the embedded backend keeps its opened
    memories per process (``stores.sqlite.close_all`` writes and closes them).
    """
    backend.close()
    from langgraph_memgpt.stores.sqlite import close_all

    close_all()


def recorded_embedding(backend: MemoryBackend, agent_id: str) -> dict[str, object] | None:
    """The embedding model an agent's vectors were made with (``{"model", "dim"}``), or None.

    What ``export`` records for the importing side; read without an embedding model (the
    memory's own record: the SQLite file's, or Postgres' ``memgpt_embeddings``). None when
    the agent has no vectors yet, or the backend keeps no such record.
    """
    if isinstance(backend, SqliteBackend):
        from langgraph_memgpt.stores.sqlite.db import open_db
        from langgraph_memgpt.stores.sqlite.identity import recorded_identity

        db = open_db(Path(backend.data_dir).expanduser() / DB_FILENAME, read_only=True)
        try:
            return recorded_identity(db, agent_id)
        finally:
            db.conn.close()
    try:
        from langgraph_memgpt.stores.postgres import PostgresBackend
        from langgraph_memgpt.stores.postgres.models import recorded_model
    except ImportError:  # no Postgres extra: the backend is not a Postgres one
        return None
    if isinstance(backend, PostgresBackend):
        with backend.pool().connection() as conn:
            found = recorded_model(conn, agent_id)
        return None if found is None else {"model": found[0], "dim": found[1]}
    return None


def where(data_dir: str | Path, database_url: str = "") -> str:
    """Where memory lives, for messages: the folder, or the database without its password."""
    if database_url.strip():
        return f"the database at {database_url.split('@')[-1]}"
    return str(Path(data_dir).expanduser())


def reembed_database(
    database_url: str,
    agent_id: str,
    embeddings: Embeddings,
    progress_for: Callable[[str], Callable[[int, int], None]],
) -> tuple[int, int]:
    """Re-embed an agent's memory in the Postgres database at ``database_url``.

    New vectors are written aside and switched in one transaction with the agent's new
    model (``stores.postgres.reembed``): a crash halfway leaves the old ones. Returns
    (messages embedded, passages embedded).

    Raises:
        BackendSetupError: the URL is not a ``postgresql://`` one, or the extra is missing.
        MemoryStoreError: the database cannot be used.
    """
    backend = open_backend("", database_url=database_url, read_only=True)
    from langgraph_memgpt.stores.postgres.reembed import reembed_postgres

    try:
        return reembed_postgres(backend, agent_id, embeddings, progress_for)
    finally:
        backend.close()


def reembed_embedded(
    data_dir: str | Path,
    agent_id: str,
    embeddings: Embeddings,
    progress_for: Callable[[str], Callable[[int, int], None]],
) -> tuple[int, int]:
    """Drop an agent's recall and archival vectors in ``data_dir`` and embed all again.

    ``progress_for(task)`` returns the progress callback of one task (done, total).
    Returns (messages embedded, passages in the archive).

    Raises:
        MemoryStoreError: the database cannot be used.
    """
    from langgraph_memgpt.stores.sqlite.archival import ArchivalMemory
    from langgraph_memgpt.stores.sqlite.db import open_db
    from langgraph_memgpt.stores.sqlite.recall import RecallMemory
    from langgraph_memgpt.stores.sqlite.recall_context import TIER as RECALL_TIER
    from langgraph_memgpt.stores.sqlite.vectors import VectorIndex

    root = Path(data_dir).expanduser()
    db = open_db(root / DB_FILENAME)
    cache_dir = root / "faiss"
    try:
        # ArchivalMemory.reembed drops its own tier; recall's is dropped here.
        VectorIndex.drop_tier(db, tier=RECALL_TIER, agent_id=agent_id, cache_dir=cache_dir)
        recall = RecallMemory(db, agent_id, embeddings, cache_dir)
        messages = recall.embed_missing(progress=progress_for("recall messages"))
        archive = ArchivalMemory.reembed(
            db, agent_id, embeddings, cache_dir, progress=progress_for("archival passages")
        )
        return messages, archive.count()
    finally:
        db.conn.close()
