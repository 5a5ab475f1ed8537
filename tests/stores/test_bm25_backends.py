"""Postgres ranks words as SQLite FTS5 does: the same BM25 scores, the same order of hits.

A small fixed corpus (words both stemmers treat alike) is stored through each backend's
own stores, one agent each; then the raw word signal of each backend is compared score by
score, and the pages of a words-only search hit by hit, for recall and archival.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from corpora import one_thread

from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all
from langgraph_memgpt.stores.types import RecallMessage

CORPUS = [
    "The garden tomatoes ripened late this summer.",
    "Tomatoes tomatoes tomatoes: the whole balcony smells of tomatoes.",
    "I repaired the old bicycle and rode it to the lake.",
    "The lake was cold, but the bicycle ride back was lovely.",
    "My locker code is ZX4417, please keep it safe.",
    "A long note about the garden: the beans, the herbs, the tomatoes, the roses, the "
    "compost heap and the fence that needs painting before the winter comes back again.",
    "We watched a film about a lighthouse keeper on a small island.",
    "The lighthouse on the island was painted red and white.",
    "Rode to work today; the bicycle lane was closed near the bridge.",
    "Herbs from the garden make the soup taste better.",
    "Nothing much happened today.",
    "Is ZX4417 the code for the locker or for the gate?",
]

QUERIES = [
    "garden tomatoes",
    "bicycle lake",
    "lighthouse island painted",
    "ZX4417",
    "herbs soup garden",
    "tomatoes",
    "bridge closed bicycle lane",
]


def _messages(agent: str) -> list[RecallMessage]:
    return one_thread(agent, CORPUS)


@pytest.fixture
def both(tmp_path: Path, postgres_url: str) -> Iterator[dict[str, Any]]:
    """The same corpus in recall and archival of an SQLite and of a Postgres backend."""
    from langgraph_memgpt.stores.postgres import PostgresBackend

    close_all()
    sqlite = SqliteBackend(tmp_path / "memory", embedding_model="none")
    postgres = PostgresBackend(postgres_url, embedding_model="none")
    memories = {"sqlite": sqlite.open("ada"), "postgres": postgres.open("ada")}
    for memory in memories.values():
        memory.recall.add(_messages("ada"))
        memory.archival.insert_many(CORPUS)
    yield memories
    postgres.close()
    close_all()


def _recall_page(memory: Any, query: str) -> list[str]:
    page = memory.recall.search(query, mode="fts", page_size=len(CORPUS))
    return [hit.item.message_id for hit in page.hits]


def _archival_page(memory: Any, query: str) -> list[str]:
    page = memory.archival.search(query, mode="fts", page_size=len(CORPUS))
    return [hit.item.text for hit in page.hits]


@pytest.mark.parametrize("query", QUERIES)
def test_postgres_recall_search_ranks_words_like_sqlite(both: dict[str, Any], query: str) -> None:
    expected = _recall_page(both["sqlite"], query)
    assert expected, f"the corpus should answer {query!r}"
    assert _recall_page(both["postgres"], query) == expected


@pytest.mark.parametrize("query", QUERIES)
def test_postgres_archival_search_ranks_words_like_sqlite(both: dict[str, Any], query: str) -> None:
    expected = _archival_page(both["sqlite"], query)
    assert expected
    assert _archival_page(both["postgres"], query) == expected


@pytest.mark.parametrize("query", QUERIES)
def test_postgres_bm25_scores_equal_fts5_bm25(both: dict[str, Any], query: str) -> None:
    """The raw word signal itself, passage by passage: FTS5's bm25() and Postgres' BM25."""
    from langgraph_memgpt.stores.postgres.search import bm25_scores as postgres_bm25
    from langgraph_memgpt.stores.sqlite.fts import bm25_scores as sqlite_bm25
    from langgraph_memgpt.stores.words import query_terms

    terms = query_terms(query)
    lite = both["sqlite"].archival
    sqlite_scores = sqlite_bm25(
        lite.db, "archival_fts", "archival", terms, "b.agent_id = ?", ["ada"]
    )
    by_text = {lite.get(i).text: score for i, score in sqlite_scores.items()}
    pg = both["postgres"].archival
    with pg.pool.connection() as conn:
        pg_scores = postgres_bm25(
            conn, "memgpt_archival", ("tsv", "text_len"), "ada", terms, "b.agent_id = %s", ["ada"]
        )
    pg_by_text = {pg.get(i).text: score for i, score in pg_scores.items()}
    assert pg_by_text.keys() == by_text.keys()
    for text, score in by_text.items():
        assert pg_by_text[text] == pytest.approx(score, rel=1e-9), text


def test_postgres_word_statistics_are_the_agents_own(tmp_path: Path, postgres_url: str) -> None:
    """Another agent's texts change neither the document count nor the scores of this one."""
    from langgraph_memgpt.stores.postgres import PostgresBackend

    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        ada = backend.open("ada").archival
        ada.insert_many(CORPUS)
        before = [(h.item.id, h.score) for h in ada.search("garden tomatoes", mode="fts").hits]
        backend.open("bob").archival.insert_many(["tomatoes " * 5, "garden gnomes"] * 20)
        after = [(h.item.id, h.score) for h in ada.search("garden tomatoes", mode="fts").hits]
        assert after == before
    finally:
        backend.close()


def _common_term_corpus() -> list[str]:
    """600 notes all holding "tomatoes" (some several times), every third "garden", and
    "basil" only in the oldest 100: a term rarer lately than overall."""
    return [
        f"tomatoes note {i}"
        + (" garden" if i % 3 == 0 else "")
        + (" basil" if i < 100 else "")
        + (" tomatoes" * (i % 4))
        for i in range(600)
    ]


@pytest.mark.parametrize("way", ["index", "walk", "window", "short window"])
def test_postgres_bm25_of_common_terms_equals_fts5_bm25_whichever_way_they_are_read(
    tmp_path: Path, postgres_url: str, way: str
) -> None:
    """A term's newest matches are the same whether read through the index, by walking
    the rows newest first, or within a window of the newest rows, also when the window
    holds too few of them (``search.term_reading``): same scores, same cap as FTS5."""
    from langgraph_memgpt.stores.postgres import PostgresBackend
    from langgraph_memgpt.stores.postgres.search import Reading
    from langgraph_memgpt.stores.postgres.search import bm25_scores as postgres_bm25
    from langgraph_memgpt.stores.sqlite.fts import bm25_scores as sqlite_bm25
    from langgraph_memgpt.stores.words import TERM_MATCH_CAP

    reading = {
        "index": Reading("index"),
        "walk": Reading("walk"),
        "window": Reading("window", 400),
        "short window": Reading("window", 20),
    }[way]
    texts = _common_term_corpus()
    close_all()
    lite = SqliteBackend(tmp_path / "memory", embedding_model="none").open("ada").archival
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        pg = backend.open("ada").archival
        backend.open("bob").archival.insert_many(texts[:50])  # another agent's ids between
        lite.insert_many(texts)
        pg.insert_many(texts[:300])
        backend.open("bob").archival.insert_many(texts[:50])
        pg.insert_many(texts[300:])
        for query in ("tomatoes", "garden tomatoes", "basil garden"):
            sqlite_scores = sqlite_bm25(
                lite.db, "archival_fts", "archival", [*query.split()], "b.agent_id = ?", ["ada"]
            )
            with pg.pool.connection() as conn:
                pg_scores = postgres_bm25(
                    conn,
                    "memgpt_archival",
                    ("tsv", "text_len"),
                    "ada",
                    [*query.split()],
                    "b.agent_id = %s",
                    ["ada"],
                    reading=lambda df, documents: reading,
                )
            by_text = {lite.get(i).text: s for i, s in sqlite_scores.items()}
            pg_by_text = {pg.get(i).text: s for i, s in pg_scores.items()}
            assert len(by_text) >= TERM_MATCH_CAP
            assert pg_by_text.keys() == by_text.keys()
            for text, score in by_text.items():
                assert pg_by_text[text] == pytest.approx(score, rel=1e-9), text
    finally:
        backend.close()
        close_all()


def test_a_term_is_read_the_cheapest_way_for_its_frequency() -> None:
    """Rare terms through the index; very common ones by walking the newest rows; those
    in between, whose newest matches lie too far apart to walk to, within a window."""
    from langgraph_memgpt.stores.postgres.search import WINDOW_FROM_WALK, term_reading

    assert term_reading(200, 600).way == "index"  # fewer matches than the cap
    assert term_reading(600, 600).way == "walk"
    assert term_reading(1_000, 100_000).way == "index"
    assert term_reading(30_000, 100_000).way == "walk"
    middling = term_reading(3_000, 100_000)
    assert middling.way == "window"
    assert middling.rows > WINDOW_FROM_WALK
