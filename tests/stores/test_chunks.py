"""Long messages and passages are found by their best part (``stores.chunks``), on both backends.

A fact stated once in the middle of a long text of everyday talk is found by its topic
words through its part's vector, even when short texts that share those words are in
memory; a fact beyond the embedding model's window (256 tokens) is no longer invisible to
vectors; forgetting a text forgets its parts; re-embedding an agent embeds them again.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpora import TALK

from langgraph_memgpt.stores.chunks import (
    LONG_WORDS,
    PART_WORDS,
    SENTENCE_WORDS,
    best_of,
    item_of,
    nearest_items,
    part_id,
    parts_of,
)
from langgraph_memgpt.stores.types import RecallMessage

FACT = "Oh, and before I forget, the code for the storage locker is ZX4417."
LONG = " ".join([*TALK[:4], FACT, *TALK[4:]])
NEAR_MISSES = [
    "The storage room in the basement is full of boxes nobody has opened in years.",
    "I bought a new bike lock because the old one rusted shut.",
    "Our team lunch turned into a two hour conversation about music from the nineties.",
    "The code review took all afternoon, nobody agreed on anything.",
]
TOPIC = "storage locker code"


def test_a_short_text_has_no_parts_and_a_long_one_is_cut_at_sentences() -> None:
    assert parts_of(FACT) == []
    assert parts_of(" ".join(TALK[:3])) == []  # not longer than LONG_WORDS
    parts = parts_of(LONG)
    assert len(LONG.split()) > LONG_WORDS
    assert " ".join(parts).split() == LONG.split()  # every word, in order, once
    assert FACT in parts  # a sentence is never cut below SENTENCE_WORDS
    assert all(len(p.split()) <= max(PART_WORDS, SENTENCE_WORDS) for p in parts)


def test_a_sentence_beyond_the_model_window_is_cut_into_windows() -> None:
    endless = " ".join(f"word{i}" for i in range(3 * SENTENCE_WORDS))
    parts = parts_of(endless)
    assert [len(p.split()) for p in parts] == [SENTENCE_WORDS] * 3


def test_a_part_maps_back_to_its_item_and_an_item_scores_its_best_vector() -> None:
    assert item_of(part_id(41, 0)) == 41 and item_of(part_id(41, 7)) == 41
    assert best_of({1: 0.2, 2: 0.5}, {1: 0.7}) == {1: 0.7, 2: 0.5}
    assert nearest_items({1: 0.2, 2: 0.5, 3: 0.1}, {1: 0.7}, 2) == {1: 0.7, 2: 0.5}


def _messages(agent: str, texts: list[str]) -> list[RecallMessage]:
    return [
        RecallMessage(
            agent_id=agent,
            thread_id=f"t{i}",  # one thread each: no shared context between them
            message_id=f"m{i}",
            role="user",
            text=text,
            created_at=f"2026-03-01T10:{i:02d}:00+00:00",
        )
        for i, text in enumerate(texts)
    ]


def _part_count(memory: Any, tier: str) -> int:
    store = memory.archival if tier == "archival" else memory.recall
    if hasattr(store, "pool"):
        with store.pool.connection() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM memgpt_{tier}_parts WHERE agent_id = %s",
                (memory.agent_id,),
            ).fetchone()
    else:
        row = store.db.conn.execute(
            "SELECT count(*) FROM vectors WHERE tier = ? AND agent_id = ? AND key LIKE '%.parts'",
            (tier, memory.agent_id),
        ).fetchone()
    return int(row[0])


@pytest.fixture
def memory(make_backend: Any, embeddings: Any) -> Any:
    return make_backend(embeddings=embeddings).open("ada")


def test_a_fact_inside_a_long_passage_is_found_by_its_topic_words_through_its_part(
    memory: Any,
) -> None:
    memory.archival.insert_many([*NEAR_MISSES, LONG])
    assert _part_count(memory, "archival") == len(parts_of(LONG))
    for mode in ("vector", "hybrid"):
        page = memory.archival.search(TOPIC, mode=mode, page_size=3)
        assert page.hits[0].item.text == LONG, mode


def test_a_fact_inside_a_long_message_is_found_by_its_topic_words_through_its_part(
    memory: Any,
) -> None:
    memory.recall.add(_messages(memory.agent_id, [*NEAR_MISSES, LONG]))
    assert _part_count(memory, "recall") == len(parts_of(LONG))
    page = memory.recall.search(TOPIC, mode="vector", page_size=3)
    assert page.hits[0].item.text == LONG


def test_a_fact_beyond_the_embedding_window_is_found_by_meaning(memory: Any) -> None:
    # ~400 words of talk, then the fact: past MiniLM's 256 tokens, where one whole-text
    # vector never sees it.
    document = " ".join([*(TALK * 5), FACT])
    memory.archival.insert_many([*NEAR_MISSES, document])
    page = memory.archival.search(TOPIC, mode="vector", page_size=3)
    assert page.hits[0].item.text == document


def test_a_forgotten_passage_or_message_takes_its_parts_along(memory: Any) -> None:
    from langgraph_memgpt.ops.forget import forget_messages, forget_passage

    kept = memory.archival.insert(" ".join(reversed(TALK)))
    gone = memory.archival.insert(LONG)
    memory.recall.add(_messages(memory.agent_id, [LONG, " ".join(reversed(TALK))]))
    before = _part_count(memory, "archival"), _part_count(memory, "recall")

    forget_passage(memory, gone.id, actor="user:test", checkpointer=None)
    forget_messages(memory, ["m0"], actor="user:test", checkpointer=None)

    assert _part_count(memory, "archival") == before[0] - len(parts_of(LONG))
    assert _part_count(memory, "recall") == before[1] - len(parts_of(LONG))
    for mode in ("vector", "hybrid"):
        assert [h.item.id for h in memory.archival.search(TOPIC, mode=mode).hits] == [kept.id]


def test_reembedding_an_agent_embeds_the_parts_again(
    make_backend: Any, backend_kind: str, embeddings: Any, tmp_path: Any
) -> None:
    backend = make_backend(embeddings=embeddings)
    memory = backend.open("ada")
    memory.archival.insert_many([*NEAR_MISSES, LONG])
    memory.recall.add(_messages("ada", [*NEAR_MISSES, LONG]))
    from langgraph_memgpt.stores.backends import close_backend, reembed_agent

    close_backend(backend)  # the embedded engine re-embeds with no memory of it open
    reembed_agent(backend, "ada", embeddings, lambda _: lambda d, t: None)
    memory = make_backend(embeddings=embeddings).open("ada")
    assert _part_count(memory, "archival") == len(parts_of(LONG))
    assert _part_count(memory, "recall") == len(parts_of(LONG))
    assert memory.archival.search(TOPIC, mode="vector").hits[0].item.text == LONG
    assert memory.recall.search(TOPIC, mode="vector").hits[0].item.text == LONG


def test_a_postgres_bulk_load_stores_the_parts_of_long_texts(
    postgres_url: str, embeddings: Any
) -> None:
    from langgraph_memgpt.stores.postgres import PostgresBackend
    from langgraph_memgpt.stores.postgres.bulk import load_messages, load_passages

    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    try:
        load_passages(backend.pool(), "ada", embeddings, [*NEAR_MISSES, LONG])
        load_messages(backend.pool(), "ada", embeddings, _messages("ada", [*NEAR_MISSES, LONG]))
        memory = backend.open("ada")
        assert _part_count(memory, "archival") == len(parts_of(LONG))
        assert _part_count(memory, "recall") == len(parts_of(LONG))
        assert memory.archival.search(TOPIC, mode="vector").hits[0].item.text == LONG
        assert memory.recall.search(TOPIC, mode="vector").hits[0].item.text == LONG
    finally:
        backend.close()
