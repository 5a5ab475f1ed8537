"""Which embedding model made an agent's vectors in SQLite, and refusing another one.

Vectors of two models live in unrelated spaces: comparing them returns confident nonsense.
So each tier of each agent records the (model, dimension) its vectors were made with (a
``meta`` row), an empty tier adopts the configured model, and a store opened with another
model is refused with the command that re-embeds it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import sqlite_utils

from langgraph_memgpt.stores.embeddings import embedding_spec
from langgraph_memgpt.stores.sqlite.db import get_meta, set_meta
from langgraph_memgpt.stores.types import EmbeddingMismatchError


def identity_key(tier: str, agent_id: str) -> str:
    """The meta key holding the embedding model of one tier of one agent."""
    return f"embedding:{tier}:{agent_id}"


def _data_dir_of(db: sqlite_utils.Database, cache_dir: Path) -> Path:
    for _seq, name, file in db.conn.execute("PRAGMA database_list").fetchall():
        if name == "main" and file:
            return Path(file).parent
    return cache_dir.parent


def check_embedding_identity(
    db: sqlite_utils.Database,
    *,
    tier: str,
    agent_id: str,
    model: str,
    dim: int,
    cache_dir: Path | str,
) -> None:
    """Record (model, dim) for a tier of an agent, or refuse a different one.

    An empty tier simply adopts the configured model.

    Raises:
        EmbeddingMismatchError: the tier holds vectors of another model or dimension; the
            message names the command that re-embeds it.
    """
    wanted = {"model": model, "dim": dim}
    stored_raw = get_meta(db, identity_key(tier, agent_id))
    stored = json.loads(stored_raw) if stored_raw else None
    if stored == wanted:
        return
    if stored is not None:
        has_vectors = db.conn.execute(
            "SELECT 1 FROM vectors WHERE tier = ? AND agent_id = ? LIMIT 1", (tier, agent_id)
        ).fetchone()
        if has_vectors:
            raise EmbeddingMismatchError(
                f"The {tier} memory of agent '{agent_id}' was built with embedding model "
                f"{stored.get('model')} (dim {stored.get('dim')}) but is configured with "
                f"{model} (dim {dim}); {_reembed_hint(db, Path(cache_dir), agent_id, model)}, "
                f"or configure {stored.get('model')} again."
            )
    set_meta(db, identity_key(tier, agent_id), json.dumps(wanted))


def recorded_identity(db: sqlite_utils.Database, agent_id: str) -> dict[str, object] | None:
    """The embedding model (``{"model", "dim"}``) an agent's vectors were made with, or None."""
    for tier in ("archival", "recall"):
        stored = get_meta(db, identity_key(tier, agent_id))
        if stored:
            value = json.loads(stored)
            if isinstance(value, dict):
                return value
    return None


def _reembed_hint(db: sqlite_utils.Database, cache_dir: Path, agent_id: str, model: str) -> str:
    """How to re-embed an agent's memory with ``model``: the CLI command when it can."""
    data_dir = shlex.quote(str(_data_dir_of(db, cache_dir)))
    command = f"langgraph-memgpt reembed --data-dir {data_dir} --agent {shlex.quote(agent_id)}"
    spec = embedding_spec(model)
    if spec is None:
        return (
            f"re-embed it with the configured model: drop the tier with "
            f"VectorIndex.drop_tier, then call SqliteRecallMemory.embed_missing / "
            f"SqliteArchivalMemory.reembed with it (`{command}` re-embeds with a named model only)"
        )
    if spec != "minilm":
        command += f" --embedding-model {spec}"
    return f"run `{command}` to re-embed it with the configured model"


__all__ = ["check_embedding_identity", "identity_key", "recorded_identity"]
