"""Bulk loading into Postgres (``stores.postgres.bulk``) writes what the stores write.

Same rows as ``recall.add`` / ``archival.insert_many`` (texts, contexts, full-text, message
and context vectors, tags, provenance), so a benchmark seeded in bulk measures the memory a
user would have; and the same refusals (another model, a thread it would have to merge
into, a passage key already used).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.postgres import PostgresBackend
from langgraph_memgpt.stores.postgres.bulk import load_messages, load_passages
from langgraph_memgpt.stores.types import EmbeddingMismatchError, RecallMessage

TEXTS = [
    "I adopted a puppy last week!",
    "What is its name?",
    "Biscuit. He is a beagle.",
    "Cute. How old is he?",
    "Ten weeks, and he chews everything.",
    "My sister Mia is getting married in June.",
    "Where is the wedding?",
    "In Lisbon, by the river.",
]


def conversation(agent: str) -> list[RecallMessage]:
    """Two threads, interleaved in time, with a tool result (not searchable) in one."""
    out = []
    for i, text in enumerate(TEXTS):
        thread = "t-dog" if i < 5 else "t-wedding"
        role = "user" if i % 2 == 0 else "assistant"
        out.append(
            RecallMessage(agent, thread, f"m{i}", role, text, f"2026-12-01T09:{i:02d}:00Z", turn=i)
        )
    out.insert(3, RecallMessage(agent, "t-dog", "tool1", "tool", "ok", "2026-12-01T09:02:30Z"))
    return out


def recall_rows(backend: PostgresBackend, agent: str) -> list[tuple[Any, ...]]:
    with backend.pool().connection() as conn:
        return conn.execute(
            "SELECT thread_id, message_id, role, text, created_at, turn, searchable, "
            "search_text, context, search_tsv::text, context_tsv::text, embedding, "
            "context_embedding FROM memgpt_recall WHERE agent_id = %s "
            "ORDER BY thread_id, created_at, id",
            (agent,),
        ).fetchall()


def same_rows(left: list[tuple[Any, ...]], right: list[tuple[Any, ...]]) -> None:
    assert len(left) == len(right) > 0
    for a, b in zip(left, right, strict=True):
        assert a[:-2] == b[:-2]
        for va, vb in zip(a[-2:], b[-2:], strict=True):
            assert (va is None) == (vb is None)
            if va is not None:
                np.testing.assert_allclose(va.to_numpy(), vb.to_numpy(), atol=1e-5)


def test_bulk_loaded_messages_are_the_rows_recall_add_writes(
    postgres_url: str, embeddings: MiniLMEmbeddings
) -> None:
    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    # One message at a time through the store (each refreshing its neighbours' contexts).
    stored = backend.open("ada")
    for message in conversation("ada"):
        stored.recall.add([message])
    written = load_messages(backend.pool(), "bob", embeddings, conversation("bob"))
    assert written == len(TEXTS) + 1
    same_rows(recall_rows(backend, "ada"), recall_rows(backend, "bob"))
    # And search finds the same messages, in the same order.
    bob = backend.open("bob")
    for query in ("what breed is the dog?", "wedding city", "Mia"):
        want = [h.item.message_id for h in stored.recall.search(query).hits]
        got = [h.item.message_id for h in bob.recall.search(query).hits]
        assert got == want and got
    backend.close()


def test_bulk_loading_refuses_what_the_stores_would_not_write(
    postgres_url: str, embeddings: MiniLMEmbeddings
) -> None:
    from tests.stores.test_postgres_backend import Letters

    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    memory = backend.open("ada")
    memory.recall.add(conversation("ada")[:2])
    # A thread the agent already has: its contexts would span old and new rows.
    with pytest.raises(ValueError, match="whole new threads only"):
        load_messages(backend.pool(), "ada", embeddings, conversation("ada")[2:])
    # Another agent's message.
    with pytest.raises(ValueError, match="belongs to agent"):
        load_messages(backend.pool(), "ada", embeddings, conversation("bob"))
    # Another model than the agent's.
    with pytest.raises(EmbeddingMismatchError, match="letters-16"):
        load_passages(backend.pool(), "ada", Letters(), ["Ada rides a green bike."])
    # Nothing of the refused loads was written.
    assert memory.recall.count() == 2 and memory.archival.count() == 0
    backend.close()


def test_bulk_loaded_passages_are_the_rows_insert_many_writes(
    postgres_url: str, embeddings: MiniLMEmbeddings
) -> None:
    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    texts = TEXTS[:5]
    ada = backend.open("ada")
    ada.archival.insert_many(texts, tags=["Pets", "seed"], thread_id="t1", turn=3)
    ada.archival.insert("Keyed fact.", key="k1")
    written = load_passages(
        backend.pool(),
        "bob",
        embeddings,
        [*texts, NewPassage("Keyed fact.", ["seed"], key="k1")],
        tags=["Pets", "seed"],
        thread_id="t1",
        turn=3,
        batch=2,
    )
    assert written == 6
    # A key already used is skipped, as insert() returns the stored passage instead.
    again = load_passages(
        backend.pool(), "bob", embeddings, [NewPassage("Other text.", [], key="k1")]
    )
    assert again == 0
    query = (
        "SELECT text, tags, thread_id, turn, tsv::text, fact_key, embedding "
        "FROM memgpt_archival WHERE agent_id = %s ORDER BY id"
    )
    with backend.pool().connection() as conn:
        a = conn.execute(query, ("ada",)).fetchall()
        b = conn.execute(query, ("bob",)).fetchall()
    # The fact key too: a later insert finds a bulk-loaded passage as a duplicate.
    assert [r[:6] for r in a[:-1]] == [r[:6] for r in b[:-1]]
    assert a[-1][0] == b[-1][0] == "Keyed fact."
    for ra, rb in zip(a, b, strict=True):
        np.testing.assert_allclose(ra[6].to_numpy(), rb[6].to_numpy(), atol=1e-5)
    hits = backend.open("bob").archival.search("beagle puppy", tags=["pets"]).hits
    assert hits and hits[0].item.text == "Biscuit. He is a beagle."
    backend.close()
