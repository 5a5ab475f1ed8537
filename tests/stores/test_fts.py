"""Full-text scoring: per-term BM25 equals the OR-query's, capped to a term's newest matches;
the filter read from a small index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import sqlite_utils

from langgraph_memgpt.stores.sqlite.archival import NewPassage, SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.fts import bm25_scores, match_phrase
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.stores.words import query_terms

T = TypeVar("T")

DOCS = [
    ("a", "the red fox jumps over the lazy dog"),
    ("a", "a red apple and a green apple"),
    ("b", "red sky at night, shepherd's delight"),
    ("a", "the dog sleeps all day"),
    ("a", "foxes and dogs are not friends"),
    ("b", "green fields and a red barn"),
    ("a", "red red red"),
]


@pytest.fixture
def docs(db: sqlite_utils.Database) -> sqlite_utils.Database:
    db.conn.executescript(
        "CREATE TABLE docs (id INTEGER PRIMARY KEY, agent TEXT, text TEXT);"
        "CREATE VIRTUAL TABLE docs_fts USING fts5(text, tokenize='porter unicode61');"
    )
    for i, (agent, text) in enumerate(DOCS, start=1):
        db.conn.execute("INSERT INTO docs VALUES (?, ?, ?)", (i, agent, text))
        db.conn.execute("INSERT INTO docs_fts (rowid, text) VALUES (?, ?)", (i, text))
    return db


def or_query_scores(db: sqlite_utils.Database, terms: list[str]) -> dict[int, float]:
    match = " OR ".join(match_phrase(t) for t in terms)
    rows = db.conn.execute(
        "SELECT rowid, -bm25(docs_fts) FROM docs_fts WHERE docs_fts MATCH ?", (match,)
    )
    return {int(r): float(s) for r, s in rows}


@pytest.mark.parametrize(
    "query", ["red fox", "green apple dog", "the dog", "delight in red barns", "zebra"]
)
def test_term_by_term_scores_equal_the_or_query_scores(
    docs: sqlite_utils.Database, query: str
) -> None:
    terms = query_terms(query)
    ours = bm25_scores(docs, "docs_fts", "docs", terms, term_cap=None)
    expected = or_query_scores(docs, terms)
    assert ours.keys() == expected.keys()
    for rowid, score in expected.items():
        assert ours[rowid] == pytest.approx(score, rel=1e-9)


def test_a_term_is_scored_only_for_its_newest_matches_up_to_the_cap(
    docs: sqlite_utils.Database,
) -> None:
    # "red" matches rows 1, 2, 3, 6, 7; "fox" rows 1 and 5 (Porter: foxes -> fox).
    capped = bm25_scores(docs, "docs_fts", "docs", ["red", "fox"], term_cap=2)
    full = bm25_scores(docs, "docs_fts", "docs", ["red", "fox"], term_cap=None)
    assert set(capped) == {7, 6, 5, 1}  # red's newest two, and every fox match
    fox_only = bm25_scores(docs, "docs_fts", "docs", ["fox"], term_cap=None)
    assert capped[1] == pytest.approx(fox_only[1])  # red's old match no longer counts
    assert capped[7] == pytest.approx(full[7])


def test_the_filter_applies_before_the_cap(docs: sqlite_utils.Database) -> None:
    # Agent b's rows 3 and 6 are red's newest but one; the cap counts only a's rows.
    scores = bm25_scores(docs, "docs_fts", "docs", ["red"], "b.agent = ?", ["a"], term_cap=2)
    assert set(scores) == {7, 2}


def _recall_with(db: sqlite_utils.Database, folder: Path) -> SqliteRecallMemory:
    recall = SqliteRecallMemory(db, "ada", None, folder / "faiss")
    recall.add(
        [
            RecallMessage("ada", "t1", f"m{i}", "user", text, f"2026-12-0{i}T10:00:00+00:00")
            for i, text in enumerate(
                ["The red fox jumps.", "A red apple.", "The dog sleeps."], start=1
            )
        ]
    )
    return recall


def _plans_while(
    db: sqlite_utils.Database, fts_table: str, search: Callable[[], T]
) -> tuple[T, list[str]]:
    """What ``search`` returns, and the plan of each statement that scored ``fts_table``."""
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    try:
        found = search()
    finally:
        db.conn.set_trace_callback(None)
    scored = [sql for sql in seen if f"bm25({fts_table})" in sql]
    plans = [
        " ".join(str(r[3]) for r in db.conn.execute(f"EXPLAIN QUERY PLAN {sql}")) for sql in scored
    ]
    return found, plans


def test_a_word_search_filters_its_matches_through_the_search_rows_index(
    db: sqlite_utils.Database, tmp_data_dir: Path
) -> None:
    # A long message's row holds its text and context (several pages); the filter's
    # columns are read from the small index entry instead (schema.SEARCH_ROWS).
    recall = _recall_with(db, tmp_data_dir)
    page, plans = _plans_while(db, "recall_fts", lambda: recall.search("red", mode="fts"))
    assert {h.item.message_id for h in page.hits[:2]} == {"m1", "m2"}
    assert plans
    assert all("COVERING INDEX recall_search_rows" in plan for plan in plans)


def test_an_archival_word_search_filters_through_its_search_rows_index(
    db: sqlite_utils.Database, tmp_data_dir: Path
) -> None:
    archive = SqliteArchivalMemory(db, "ada", embeddings=None, cache_dir=tmp_data_dir / "faiss")
    archive.insert_many([NewPassage("The red fox jumps."), NewPassage("The dog sleeps.")])
    page, plans = _plans_while(
        db, "archival_fts", lambda: archive.search("red", mode="fts", start_date="2020-01-01")
    )
    assert [h.item.text for h in page.hits][:1] == ["The red fox jumps."]
    assert plans
    assert all("COVERING INDEX archival_search_rows" in plan for plan in plans)


def test_a_file_without_the_index_is_searched_through_its_table(tmp_path: Path) -> None:
    # A file opened read-only is not migrated: it may predate the index.
    db = open_db(tmp_path / "memory.sqlite")
    _recall_with(db, tmp_path)
    db.conn.execute("DROP INDEX recall_search_rows")
    db.conn.commit()
    db.conn.close()
    old = open_db(tmp_path / "memory.sqlite", read_only=True)
    recall = SqliteRecallMemory(old, "ada", None, tmp_path / "faiss")
    hits = recall.search("red", mode="fts").hits
    assert {h.item.message_id for h in hits[:2]} == {"m1", "m2"}
    old.conn.close()
