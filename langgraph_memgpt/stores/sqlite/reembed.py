"""Re-embedding an agent's memory in the embedded backend (``reembed``).

The way out of an embedding model change: the agent's recall and archival vectors are
dropped and every message and passage is embedded again with the new model, which the
file then records. Stop any server or chat using the data directory first (they hold the
old vectors). The Postgres engine has its own (`stores.postgres.reembed`).
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.capabilities import ProgressFor
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import DB_FILENAME, close_db, open_db
from langgraph_memgpt.stores.sqlite.identity import recorded_identity
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.sqlite.recall_context import TIER as RECALL_TIER
from langgraph_memgpt.stores.sqlite.vectors import VectorIndex


def reembed_sqlite(
    data_dir: str | Path, agent_id: str, embeddings: Embeddings, progress_for: ProgressFor
) -> tuple[int, int]:
    """`Reembeddable.reembed` of the agent's memory in ``data_dir``: vectors dropped, redone.

    Raises:
        MemoryStoreError: the database cannot be used.
    """
    root = Path(data_dir).expanduser()
    db = open_db(root / DB_FILENAME)
    cache_dir = root / "faiss"
    try:
        # SqliteArchivalMemory.reembed drops its own tier; recall's is dropped here.
        VectorIndex.drop_tier(db, tier=RECALL_TIER, agent_id=agent_id, cache_dir=cache_dir)
        recall = SqliteRecallMemory(db, agent_id, embeddings, cache_dir)
        messages = recall.embed_missing(progress=progress_for("recall messages"))
        archive = SqliteArchivalMemory.reembed(
            db, agent_id, embeddings, cache_dir, progress=progress_for("archival passages")
        )
        return messages, archive.count()
    finally:
        close_db(db)


def recorded_embedding_sqlite(data_dir: str | Path, agent_id: str) -> dict[str, object] | None:
    """The model an agent's vectors in ``data_dir`` were made with, read-only, or None."""
    db = open_db(Path(data_dir).expanduser() / DB_FILENAME, read_only=True)
    try:
        return recorded_identity(db, agent_id)
    finally:
        db.conn.close()
