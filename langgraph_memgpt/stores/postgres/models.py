"""Which embedding model made an agent's vectors in Postgres (``memgpt_embeddings``).

An agent's vectors must all come from one model: a query embedded by another model would
be compared with vectors it cannot be compared with. The first writer with vectors records
the model; any other is refused with ``EmbeddingMismatchError`` until ``reembed`` switches
the agent (``stores.postgres.reembed``), which holds `model_lock_key` exclusively while it
swaps the vectors and the record, so no writer adds a vector of the old model after it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from langgraph_memgpt.stores.types import EmbeddingMismatchError


def model_lock_key(agent_id: str) -> int:
    """The advisory-lock key of an agent's embedding model (writers share it, reembed not)."""
    digest = hashlib.blake2b(f"memgpt-embedding-model:{agent_id}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


def recorded_model(conn: psycopg.Connection[Any], agent_id: str) -> tuple[str, int] | None:
    """The (model, dimensions) the agent's vectors were made with, or None (no vectors yet)."""
    row = conn.execute(
        "SELECT model, dims FROM memgpt_embeddings WHERE agent_id = %s", (agent_id,)
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def claim_model(conn: psycopg.Connection[Any], agent_id: str, identity: tuple[str, int]) -> None:
    """Record ``identity`` as the agent's model if it has none; refuse another one.

    Raises:
        EmbeddingMismatchError: the agent's vectors were made by another model.
    """
    model, dims = identity
    conn.execute(
        "INSERT INTO memgpt_embeddings (agent_id, model, dims) VALUES (%s, %s, %s) "
        "ON CONFLICT (agent_id) DO NOTHING",
        (agent_id, model, dims),
    )
    check_model(conn, agent_id, identity)


def check_model(conn: psycopg.Connection[Any], agent_id: str, identity: tuple[str, int]) -> None:
    """Refuse to write vectors of ``identity`` for an agent recorded with another model.

    Raises:
        EmbeddingMismatchError: the agent's vectors were made by another model.
    """
    recorded = recorded_model(conn, agent_id)
    if recorded is not None and recorded != identity:
        raise EmbeddingMismatchError(
            f"agent {agent_id!r}'s memory in Postgres was embedded with {recorded[0]} "
            f"({recorded[1]} dimensions), not {identity[0]} ({identity[1]}): configure that "
            "model again, or switch the agent with `langgraph-memgpt reembed`"
        )


def hold_model(conn: psycopg.Connection[Any], agent_id: str, identity: tuple[str, int]) -> None:
    """In a transaction writing vectors: keep the agent's model until commit, and claim it.

    A shared advisory lock (writers run side by side; ``reembed``'s switch waits for them
    and they for it), then `claim_model`: a writer whose model is no longer the agent's
    (a server still configured with the old one after a ``reembed``) is refused instead of
    adding vectors that search would compare with the new model's.

    Raises:
        EmbeddingMismatchError: the agent's vectors were made by another model.
    """
    conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (model_lock_key(agent_id),))
    claim_model(conn, agent_id, identity)
