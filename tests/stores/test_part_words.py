"""A long text is found on words by its best part, alike on both backends (``stores.bm25``).

A 120-word message whose one sentence holds every topic word of a lookup scored below a
short near-miss sharing two of them: BM25's length normalisation. Scored as its best part
(a row of the same corpus: the same statistics, the part's own words and length), it comes
first, in SQLite and in Postgres, with the same scores; short texts score as before. The
parts' words are counted when a text is written (``part_terms`` of each backend) and score
exactly as counting them from the text at search time did.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace as dataclasses_replace
from pathlib import Path
from typing import Any

import pytest
from corpora import TALK as EVERYDAY
from corpora import one_thread

from langgraph_memgpt.stores.bm25 import bm25_term
from langgraph_memgpt.stores.chunks import parts_of
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all, part_terms
from langgraph_memgpt.stores.sqlite.fts import bm25_scores
from langgraph_memgpt.stores.sqlite.fts_parts import (
    fts5_tokens,
    fts_corpus,
    occurrences,
    term_documents,
)
from langgraph_memgpt.stores.sqlite.part_terms import bm25_with_parts, with_best_parts
from langgraph_memgpt.stores.sqlite.recall_signals import RecallSignals
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.stores.words import query_terms

TALK = [
    *EVERYDAY,
    "Work has been calm this week, which feels suspicious after last month.",
]
FACT = "Oh and before I forget, my bike lock combination is 123456."
LONG = " ".join([*TALK[:4], FACT, *TALK[4:]])
NEAR_MISS = "I bought a new bike lock because the old one rusted shut."
QUERY = "bike lock combination"
CORPUS = [
    *[f"The bike ride {i} went along the river past the mill." for i in range(10)],
    *[f"The door lock {i} was stiff again this cold morning." for i in range(10)],
    NEAR_MISS,
    *TALK,
    LONG,
    "Nothing much happened today.",
]
""""bike" and "lock" are common (no exact-match lift, ``ranking.RARE_SHARE``); only the
long message holds "combination"."""


def _messages(agent: str) -> list[RecallMessage]:
    return one_thread(agent, CORPUS)


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Any]:
    close_all()
    memory = SqliteBackend(tmp_path / "memory", embedding_model="none").open("ada")
    memory.recall.add(_messages("ada"))
    memory.archival.insert_many(CORPUS)
    yield memory
    close_all()


def test_the_corpus_needs_parts_a_long_text_loses_to_a_near_miss_whole() -> None:
    assert parts_of(LONG) and not any(parts_of(t) for t in CORPUS if t != LONG)
    assert FACT in parts_of(LONG)


def _sqlite_archival(memory: Any, parts: bool) -> dict[str, float]:
    archival = memory.archival
    terms = query_terms(QUERY)
    if parts:
        scores = bm25_with_parts(
            archival.db, "archival_fts", "archival", "ada", terms, "b.agent_id = ?", ["ada"]
        )
    else:
        scores = bm25_scores(
            archival.db, "archival_fts", "archival", terms, "b.agent_id = ?", ["ada"]
        )
    return {archival.get(i).text: s for i, s in scores.items()}


def test_sqlite_a_long_text_scores_as_its_best_part_and_outranks_the_near_miss(lite: Any) -> None:
    whole = _sqlite_archival(lite, parts=False)
    best = _sqlite_archival(lite, parts=True)
    assert whole[NEAR_MISS] > whole[LONG]  # what BM25 of the whole text did
    assert best[LONG] > best[NEAR_MISS] and best[LONG] > whole[LONG]
    # Only the text with parts changes.
    assert {t: s for t, s in best.items() if t != LONG} == {
        t: s for t, s in whole.items() if t != LONG
    }
    for page in (
        lite.archival.search(QUERY, mode="fts").hits,
        lite.archival.search(QUERY, mode="hybrid").hits,
    ):
        assert page[0].item.text == LONG
    assert lite.recall.search(QUERY, mode="fts").hits[0].item.text == LONG


def test_sqlite_part_statistics_and_tokens_are_fts5s_own(lite: Any) -> None:
    """Scored with what a part is scored with (the table's averages record, document
    frequencies, FTS5's tokenizer), every whole row gets exactly FTS5's bm25()."""
    db = lite.archival.db
    corpus = fts_corpus(db, "archival_fts")
    assert corpus.documents == len(CORPUS)
    for term in ["bike", "lock", "combination", "river", "morning", "tomatoes", "running"]:
        phrase = fts5_tokens([term])[0]
        df = term_documents(db, "archival_fts", term)
        exact = bm25_scores(db, "archival_fts", "archival", [term], term_cap=None)
        assert exact
        for rowid, score in exact.items():
            tokens = fts5_tokens([lite.archival.get(rowid).text])[0]
            ours = bm25_term(occurrences(tokens, phrase), df, len(tokens), corpus)
            assert ours == pytest.approx(score, rel=1e-12)


def test_sqlite_texts_without_parts_score_exactly_as_before(lite: Any) -> None:
    db = lite.archival.db
    for query in ["river morning", "tomatoes balcony", "lock", "bike ride", QUERY]:
        terms = query_terms(query)
        plain = bm25_scores(db, "archival_fts", "archival", terms, "b.agent_id = ?", ["ada"])
        parts = bm25_with_parts(
            db, "archival_fts", "archival", "ada", terms, "b.agent_id = ?", ["ada"]
        )
        assert parts.keys() == plain.keys()
        for rowid, score in plain.items():
            if lite.archival.get(rowid).text == LONG:
                assert parts[rowid] >= score
            else:
                assert parts[rowid] == score


def test_sqlite_inside_a_writing_transaction_parts_never_fail(tmp_path: Path) -> None:
    """FTS5 writes its statistics at commit: a search between a first write and its commit
    scores the whole texts (no part scored with statistics that miss those rows)."""
    from langgraph_memgpt.stores.sqlite.db import transaction

    close_all()
    try:
        archival = SqliteBackend(tmp_path / "memory", embedding_model="none").open("ada").archival
        with transaction(archival.db):
            archival.db.conn.execute(
                "INSERT INTO archival (agent_id, text, tags, created_at) "
                "VALUES ('ada', ?, '[]', '2026-03-01T10:00:00.000000+00:00')",
                (LONG,),
            )
            scores = bm25_with_parts(
                archival.db,
                "archival_fts",
                "archival",
                "ada",
                query_terms(QUERY),
                "b.agent_id = ?",
                ["ada"],
            )
            assert len(scores) == 1
    finally:
        close_all()


@pytest.fixture
def both(lite: Any, postgres_url: str) -> Iterator[dict[str, Any]]:
    from langgraph_memgpt.stores.postgres import PostgresBackend

    postgres = PostgresBackend(postgres_url, embedding_model="none")
    memory = postgres.open("ada")
    memory.recall.add(_messages("ada"))
    memory.archival.insert_many(CORPUS)
    yield {"sqlite": lite, "postgres": memory}
    postgres.close()


@pytest.mark.parametrize("query", [QUERY, "bike lock", "combination 123456", "river morning"])
def test_postgres_scores_parts_like_sqlite(both: dict[str, Any], query: str) -> None:
    """The raw word signals, with parts, text by text: archival, and recall's message and
    context signals (a long message's context is scored by its parts too)."""
    from langgraph_memgpt.stores.postgres.search import TableSignals

    terms = query_terms(query)
    lite, pg = both["sqlite"], both["postgres"]
    sqlite_scores = bm25_with_parts(
        lite.archival.db, "archival_fts", "archival", "ada", terms, "b.agent_id = ?", ["ada"]
    )
    expected = {lite.archival.get(i).text: s for i, s in sqlite_scores.items()}
    with pg.archival.pool.connection() as conn:
        signals = _archival_signals(TableSignals, pg.archival, conn)
        (got,) = signals.word_signals(terms)
    by_text = {pg.archival.get(i).text: s for i, s in got.items()}
    assert by_text.keys() == expected.keys()
    for text, score in expected.items():
        assert by_text[text] == pytest.approx(score, rel=1e-9), text

    db = lite.recall.db
    message, context = RecallSignals(lite.recall, "b.agent_id = ?", ["ada"]).word_signals(terms)
    ids = {int(r[0]): str(r[1]) for r in db.conn.execute("SELECT id, message_id FROM recall")}
    with pg.recall.pool.connection() as conn:
        signals = _recall_signals(TableSignals, pg.recall, conn)
        pg_message, pg_context = signals.word_signals(terms)
        rows = conn.execute("SELECT id, message_id FROM memgpt_recall").fetchall()
    pg_ids = {int(r[0]): str(r[1]) for r in rows}
    for ours, theirs in ((message, pg_message), (context, pg_context)):
        a = {ids[i]: s for i, s in ours.items()}
        b = {pg_ids[i]: s for i, s in theirs.items()}
        assert a.keys() == b.keys()
        for key, score in a.items():
            assert b[key] == pytest.approx(score, rel=1e-9), key


def _archival_signals(base: Any, memory: Any, conn: Any) -> Any:
    class Signals(base):  # type: ignore[misc]
        table = "memgpt_archival"
        words = (("tsv", "text_len"),)
        vectors = ()

    return Signals(memory, conn, "b.agent_id = %s", ["ada"])


def _recall_signals(base: Any, memory: Any, conn: Any) -> Any:
    class Signals(base):  # type: ignore[misc]
        table = "memgpt_recall"
        words = (("search_tsv", "search_len"), ("context_tsv", "context_len"))
        vectors = ()

    return Signals(memory, conn, "b.agent_id = %s", ["ada"])


def test_postgres_a_long_text_outranks_the_near_miss(both: dict[str, Any]) -> None:
    pg = both["postgres"]
    assert pg.archival.search(QUERY, mode="fts").hits[0].item.text == LONG
    assert pg.recall.search(QUERY, mode="fts").hits[0].item.text == LONG


def test_sqlite_only_a_long_messages_context_is_split(lite: Any) -> None:
    """The contexts of the long message's neighbours hold it too, yet score as before."""
    terms = query_terms("bike lock combination river")
    _, context = RecallSignals(lite.recall, "b.agent_id = ?", ["ada"]).word_signals(terms)
    db = lite.recall.db
    plain = bm25_scores(db, "recall_context_fts", "recall", terms, "b.agent_id = ?", ["ada"])
    (long_id,) = [
        int(r[0]) for r in db.conn.execute("SELECT id FROM recall WHERE text = ?", (LONG,))
    ]
    assert context.keys() == plain.keys()
    assert context[long_id] > plain[long_id]
    for item, score in plain.items():
        if item != long_id:
            assert context[item] == score


def _every_term(texts: list[str]) -> list[str]:
    return sorted({w for text in texts for w in query_terms(text)})


def test_sqlite_a_search_reads_kept_counts_and_tokenizes_no_stored_text(
    lite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: Any) -> Any:
        raise AssertionError("a search split and tokenized a stored text")

    monkeypatch.setattr(part_terms, "part_words", refuse)
    monkeypatch.setattr(part_terms, "texts_with_parts", refuse)
    assert lite.archival.search(QUERY, mode="fts").hits[0].item.text == LONG
    assert lite.recall.search(QUERY, mode="fts").hits[0].item.text == LONG


def test_sqlite_a_text_written_outside_a_transaction_still_scores_by_its_parts(
    tmp_path: Path,
) -> None:
    """A writer that never catches up (raw SQL, another tool) leaves a stale mark: the
    search scores that text from its text; the next write transaction counts it."""
    from langgraph_memgpt.stores.sqlite.db import transaction

    close_all()
    try:
        archival = SqliteBackend(tmp_path / "memory", embedding_model="none").open("ada").archival
        archival.insert_many([t for t in CORPUS if t != LONG])
        archival.db.conn.execute(
            "INSERT INTO archival (agent_id, text, tags, created_at) "
            "VALUES ('ada', ?, '[]', '2026-03-01T10:00:00.000000+00:00')",
            (LONG,),
        )
        archival.db.conn.commit()
        stale = "SELECT count(*) FROM part_terms_stale"
        assert archival.db.conn.execute(stale).fetchone()[0] == 1
        assert archival.search(QUERY, mode="fts").hits[0].item.text == LONG
        with transaction(archival.db):
            pass
        assert archival.db.conn.execute(stale).fetchone()[0] == 0
        assert archival.search(QUERY, mode="fts").hits[0].item.text == LONG
    finally:
        close_all()


def test_sqlite_a_deleted_text_takes_its_counted_words_with_it(lite: Any) -> None:
    for memory, table, source in (
        (lite.archival, "archival", (3,)),
        (lite.recall, "recall", (1, 2)),
    ):
        db = memory.db
        (long_id,) = [
            int(r[0]) for r in db.conn.execute(f"SELECT id FROM {table} WHERE text = ?", (LONG,))
        ]
        held = (
            "SELECT count(*) FROM part_terms WHERE item = ? "
            "AND source IN (SELECT value FROM json_each(?))"
        )
        assert db.conn.execute(held, (long_id, json.dumps(source))).fetchone()[0] > 0
        with db.conn:
            db.conn.execute(f"DELETE FROM {table} WHERE id = ?", (long_id,))
        assert db.conn.execute(held, (long_id, json.dumps(source))).fetchone()[0] == 0


def test_sqlite_a_memory_written_before_kept_counts_gets_them_when_opened(tmp_path: Path) -> None:
    """Migration 8 counts the parts of every long text a file already holds."""
    import sqlite3

    close_all()
    folder = tmp_path / "memory"
    try:
        memory = SqliteBackend(folder, embedding_model="none").open("ada")
        memory.archival.insert_many(CORPUS)
        path = memory.archival.db.conn.execute("PRAGMA database_list").fetchone()[2]
    finally:
        close_all()
    conn = sqlite3.connect(path)
    with conn:  # the file as migration 7 left it
        conn.execute("DROP TABLE part_terms")
        conn.execute("DROP TABLE part_terms_stale")
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_parts_%'"
        ).fetchall():
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    try:
        archival = SqliteBackend(folder, embedding_model="none").open("ada").archival
        (long_id,) = [
            int(r[0])
            for r in archival.db.conn.execute("SELECT id FROM archival WHERE text = ?", (LONG,))
        ]
        rows = archival.db.conn.execute(
            "SELECT count(*) FROM part_terms WHERE source = 3 AND item = ?", (long_id,)
        ).fetchone()[0]
        assert rows > 0
        assert archival.search(QUERY, mode="fts").hits[0].item.text == LONG
    finally:
        close_all()


def test_the_part_tokenizer_keeps_no_deleted_rows_after_a_large_call() -> None:
    """FTS5 keeps deleted rows in its index until segments merge, and every later call read
    through them: after the many parts of a write, each search's few terms took longer
    (5 ms searches became 44 ms over three catch-ups). A large call leaves a new table."""
    from langgraph_memgpt.stores.sqlite import fts_parts

    fts_parts.fts5_tokens([f"part {i} of a long message about bikes" for i in range(500)])
    assert fts_parts.fts5_tokens(["bikes"]) == [["bike"]]
    (index_bytes,) = (
        fts_parts._tokenizer().execute("SELECT sum(length(block)) FROM t_data").fetchone()
    )
    assert index_bytes < 1000  # one word's index, not the 500 deleted parts' (~25 kB)


# -- Postgres: the part words kept when written (``stores.postgres.part_terms``) -----------

PG_SOURCES = (
    ("memgpt_archival", ("tsv", "text_len"), "archival", 3),
    ("memgpt_recall", ("search_tsv", "search_len"), "recall", 1),
    ("memgpt_recall", ("context_tsv", "context_len"), "recall", 2),
)
"""(table, (tsvector, length) columns, tier, source number) of each text scored by parts."""


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Any]:
    from langgraph_memgpt.stores.postgres import PostgresBackend

    postgres = PostgresBackend(postgres_url, embedding_model="none")
    memory = postgres.open("ada")
    memory.recall.add(_messages("ada"))
    memory.archival.insert_many(CORPUS)
    yield memory
    postgres.close()


def _pg_count(memory: Any, sql: str, *params: object) -> int:
    with memory.archival.pool.connection() as conn:
        return int(conn.execute(sql, params).fetchone()[0])


def _pg_best_parts(conn: Any, table: str, columns: tuple[str, str], terms: list[str]) -> Any:
    """(whole scores, with parts) of one word column, as a search computes them."""
    from langgraph_memgpt.stores.postgres.part_terms import (
        LongMatches,
        long_column,
        with_best_parts,
    )
    from langgraph_memgpt.stores.postgres.search import bm25_scores

    matched: dict[str, list[int]] = {}
    text = long_column(table, columns[0])
    assert text is not None
    long = LongMatches(text)
    whole = bm25_scores(
        conn,
        table,
        columns,
        "ada",
        terms,
        "b.agent_id = %s",
        ["ada"],
        matched=matched,
        long=long,
    )
    return whole, with_best_parts(conn, table, columns[0], "ada", whole, matched, long)


def test_postgres_a_search_reads_kept_counts_and_tokenizes_no_stored_text(
    pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_memgpt.stores.postgres import part_terms as pg_part_terms
    from langgraph_memgpt.stores.postgres import part_words as pg_part_words

    def refuse(*_: Any) -> Any:
        raise AssertionError("a search split or tokenized a stored text")

    for module, name in (
        (pg_part_terms, "parts_of"),
        (pg_part_terms, "part_words"),
        (pg_part_terms, "texts_with_parts"),
        (pg_part_words, "parts_of"),
    ):
        monkeypatch.setattr(module, name, refuse)
    for tier in (pg.archival, pg.recall):
        assert tier.search(QUERY, mode="fts").hits[0].item.text == LONG
        assert tier.search("lock combination", mode="hybrid").hits[0].item.text == LONG
    # The whole long text's frequencies are the kept ones too, not its tsvector's.
    long_id = _pg_long_ids(pg)["archival"]
    columns = ("tsv", "text_len")
    with pg.archival.pool.connection() as conn:
        whole, _ = _pg_best_parts(conn, "memgpt_archival", columns, query_terms(QUERY))
        with conn.transaction(force_rollback=True):
            conn.execute("UPDATE memgpt_part_terms SET whole = whole + 5 WHERE source = 3")
            more, _ = _pg_best_parts(conn, "memgpt_archival", columns, query_terms(QUERY))
    assert more[long_id] > whole[long_id]
    assert {i: s for i, s in more.items() if i != long_id} == {
        i: s for i, s in whole.items() if i != long_id
    }


def test_postgres_a_text_written_outside_the_package_still_scores_by_its_parts(
    postgres_url: str,
) -> None:
    """A writer that never catches up (raw SQL, an older version) leaves a stale mark: the
    search scores that text from its text; the next write transaction counts it."""
    from langgraph_memgpt.stores.postgres import PostgresBackend

    postgres = PostgresBackend(postgres_url, embedding_model="none")
    try:
        archival = postgres.open("ada").archival
        archival.insert_many([t for t in CORPUS if t != LONG])
        with archival.pool.connection() as conn:
            conn.execute(
                "INSERT INTO memgpt_archival (agent_id, text, created_at) "
                "VALUES ('ada', %s, '2026-03-01T10:00:00.000000+00:00')",
                (LONG,),
            )
        stale = "SELECT count(*) FROM memgpt_part_terms_stale"
        assert _pg_count(archival_memory := _Tier(archival), stale) == 1
        assert archival.search(QUERY, mode="fts").hits[0].item.text == LONG
        archival.insert("Something else entirely.")
        assert _pg_count(archival_memory, stale) == 0
        held = "SELECT count(*) FROM memgpt_part_terms WHERE source = 3"
        assert _pg_count(archival_memory, held) > 0
        assert archival.search(QUERY, mode="fts").hits[0].item.text == LONG
        # Changed by another program: its counts go with the mark, none read stale.
        changed = LONG.replace("123456", "654321")
        with archival.pool.connection() as conn:
            conn.execute("UPDATE memgpt_archival SET text = %s WHERE text = %s", (changed, LONG))
        assert _pg_count(archival_memory, stale) == 1
        assert _pg_count(archival_memory, held) == 0
        assert archival.search("combination 654321", mode="fts").hits[0].item.text == changed
        archival.insert("One more thing.")
        assert _pg_count(archival_memory, stale) == 0
        lexeme = "SELECT count(*) FROM memgpt_part_terms WHERE source = 3 AND lexeme = %s"
        assert _pg_count(archival_memory, lexeme, "654321") == 1
        assert _pg_count(archival_memory, lexeme, "123456") == 0
    finally:
        postgres.close()


class _Tier:
    """What ``_pg_count`` needs of a memory: an archival tier with a pool."""

    def __init__(self, archival: Any) -> None:
        self.archival = archival


def _pg_long_ids(memory: Any) -> dict[str, int]:
    with memory.archival.pool.connection() as conn:
        (recall,) = conn.execute("SELECT id FROM memgpt_recall WHERE text = %s", (LONG,)).fetchone()
        (passage,) = conn.execute(
            "SELECT id FROM memgpt_archival WHERE text = %s", (LONG,)
        ).fetchone()
    return {"recall": int(recall), "archival": int(passage)}


def test_postgres_forgetting_a_text_takes_its_counted_words_with_it(pg: Any) -> None:
    """Forgetting a long message or passage deletes its rows; forgetting a long message's
    neighbour recounts its context (the neighbour's words leave it)."""
    ids = _pg_long_ids(pg)
    held = "SELECT count(*) FROM memgpt_part_terms WHERE source = ANY(%s) AND item = %s"
    word = "SELECT count(*) FROM memgpt_part_terms WHERE source = 2 AND item = %s AND lexeme = %s"
    assert _pg_count(pg, held, [1, 2], ids["recall"]) > 0
    assert _pg_count(pg, held, [3], ids["archival"]) > 0
    # The message after the long one is in its context, and its words only there.
    (after,) = [m for m in _messages("ada") if m.text == CORPUS[-1]]
    assert "happen" not in LONG
    assert _pg_count(pg, word, ids["recall"], "happen") > 0
    pg.recall.delete([after.message_id], thread_id="t1")
    assert _pg_count(pg, word, ids["recall"], "happen") == 0
    assert _pg_count(pg, "SELECT count(*) FROM memgpt_part_terms_stale") == 0
    (long,) = [m for m in _messages("ada") if m.text == LONG]
    pg.recall.delete([long.message_id], thread_id="t1")
    pg.archival.delete([ids["archival"]])
    assert _pg_count(pg, held, [1, 2], ids["recall"]) == 0
    assert _pg_count(pg, held, [3], ids["archival"]) == 0
    assert _pg_count(pg, "SELECT count(*) FROM memgpt_part_terms") == 0


def test_postgres_every_write_path_counts_what_it_writes_before_it_commits(
    postgres_url: str,
) -> None:
    """``recall.add``, ``archival.insert_many`` and the bulk loaders leave no text stale."""
    from langgraph_memgpt.stores.postgres import PostgresBackend, bulk

    postgres = PostgresBackend(postgres_url, embedding_model="none")
    try:
        memory = postgres.open("ada")
        loaded = [dataclasses_replace(m, thread_id="t2") for m in _messages("ada")]
        bulk.load_messages(memory.recall.pool, "ada", None, loaded)
        bulk.load_passages(memory.recall.pool, "ada", None, [LONG])
        memory.recall.add(_messages("ada"))
        memory.archival.insert_many([LONG + " Again."])
        assert _pg_count(memory, "SELECT count(*) FROM memgpt_part_terms_stale") == 0
        rows = (
            "SELECT count(DISTINCT (source, item)) FROM memgpt_part_terms "
            "WHERE agent_id = 'ada' AND lexeme = 'combin'"
        )
        # Two long messages (each with its context) and two long passages.
        assert _pg_count(memory, rows) == 6
    finally:
        postgres.close()


def test_postgres_a_memory_at_version_9_gets_kept_counts_when_migrated(postgres_url: str) -> None:
    """Migration 10 counts the parts of every long text a database already holds."""
    import psycopg

    from langgraph_memgpt.stores.postgres import PostgresBackend

    postgres = PostgresBackend(postgres_url, embedding_model="none")
    memory = postgres.open("ada")
    memory.recall.add(_messages("ada"))
    memory.archival.insert_many(CORPUS)
    postgres.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # as migration 9 left it
        for table in ("memgpt_recall", "memgpt_archival"):
            for name in ("inserted", "changed", "deleted"):
                conn.execute(f"DROP TRIGGER {table}_part_terms_{name} ON {table}")
                conn.execute(f"DROP FUNCTION {table}_part_terms_{name}()")
        conn.execute("DROP TABLE memgpt_part_terms, memgpt_part_terms_stale")
        conn.execute("UPDATE memgpt_schema SET version = 9 WHERE name = 'memory'")
    postgres = PostgresBackend(postgres_url, embedding_model="none")
    try:
        memory = postgres.open("ada")
        ids = _pg_long_ids(memory)
        held = "SELECT count(*) FROM memgpt_part_terms WHERE source = %s AND item = %s"
        for source, item in ((1, ids["recall"]), (2, ids["recall"]), (3, ids["archival"])):
            assert _pg_count(memory, held, source, item) > 0
        assert _pg_count(memory, "SELECT count(*) FROM memgpt_part_terms_stale") == 0
        assert _pg_count(memory, "SELECT version FROM memgpt_schema WHERE name = 'memory'") == 10
        assert memory.archival.search(QUERY, mode="fts").hits[0].item.text == LONG
        assert memory.recall.search(QUERY, mode="fts").hits[0].item.text == LONG
    finally:
        postgres.close()


def test_postgres_writers_at_once_count_every_long_text_once(postgres_url: str) -> None:
    """Two processes' worth of writers (own pools) adding long messages and passages to one
    agent at once: neither fails nor leaves a mark behind, and every long text is counted
    (each writer counts the marks no other holds, ``FOR UPDATE SKIP LOCKED``)."""
    import threading

    from langgraph_memgpt.stores.postgres import PostgresBackend

    backends = [PostgresBackend(postgres_url, embedding_model="none") for _ in range(2)]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def write(n: int) -> None:
        try:
            memory = backends[n].open("ada")
            start.wait()
            for round_ in range(4):
                texts = [f"{LONG} Writer {n} round {round_}.", *TALK[:2]]
                messages = one_thread("ada", texts)
                memory.recall.add(
                    [
                        dataclasses_replace(m, thread_id=f"w{n}-{round_}", message_id=f"{i}")
                        for i, m in enumerate(messages)
                    ]
                )
                memory.archival.insert_many([f"{LONG} Passage {n}.{round_}."])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors
        memory = backends[0].open("ada")
        assert _pg_count(memory, "SELECT count(*) FROM memgpt_part_terms_stale") == 0
        counted = (
            "SELECT count(DISTINCT (source, item)) FROM memgpt_part_terms WHERE lexeme = 'combin'"
        )
        assert _pg_count(memory, counted) == 8 * 2 + 8  # messages and contexts, passages
        for tier in (memory.recall, memory.archival):
            assert tier.search(QUERY, mode="fts").hits[0].item.text.startswith(LONG)
    finally:
        for backend in backends:
            backend.close()


# -- both backends: kept counts score exactly as counts made from the text ----------------


class _SqliteCounts:
    """An SQLite memory's kept part words, as the exactness test reads them."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.where = {
            3: (memory.archival.db, "archival_fts", "archival"),
            1: (memory.recall.db, "recall_fts", "recall"),
            2: (memory.recall.db, "recall_context_fts", "recall"),
        }

    def count(self, sql: str, *params: object) -> int:
        return int(self.memory.archival.db.conn.execute(sql, params).fetchone()[0])

    def rows(self, source: int) -> int:
        return self.count("SELECT count(*) FROM part_terms WHERE source = ?", source)

    def stale(self) -> int:
        return self.count("SELECT count(*) FROM part_terms_stale")

    def scores(self, source: int, terms: list[str], counted: bool) -> Any:
        """(whole, with parts) of a source's texts; ``counted`` False: as if none were."""
        db, fts_table, table = self.where[source]
        matched: dict[str, list[int]] = {}
        whole = bm25_scores(db, fts_table, table, terms, matched=matched)
        if counted:
            return whole, with_best_parts(db, fts_table, "ada", whole, matched)
        db.conn.execute(
            "INSERT INTO part_terms_stale (source, item) SELECT ?, value FROM json_each(?)",
            (source, json.dumps(list(whole))),
        )
        try:
            return whole, with_best_parts(db, fts_table, "ada", whole, matched)
        finally:
            db.conn.execute("DELETE FROM part_terms_stale")
            db.conn.commit()


class _PostgresCounts:
    """A Postgres memory's kept part words, as the exactness test reads them."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.where = {source: (table, columns) for table, columns, _, source in PG_SOURCES}

    def rows(self, source: int) -> int:
        sql = "SELECT count(*) FROM memgpt_part_terms WHERE source = %s"
        return _pg_count(self.memory, sql, source)

    def stale(self) -> int:
        return _pg_count(self.memory, "SELECT count(*) FROM memgpt_part_terms_stale")

    def scores(self, source: int, terms: list[str], counted: bool) -> Any:
        """(whole, with parts) of a source's texts; ``counted`` False: as if none were
        (marked, their rows gone, in a transaction undone afterwards)."""
        table, columns = self.where[source]
        with self.memory.archival.pool.connection() as conn:
            if counted:
                return _pg_best_parts(conn, table, columns, terms)
            with conn.transaction(force_rollback=True):
                conn.execute(
                    "INSERT INTO memgpt_part_terms_stale (source, item) "
                    "SELECT %s, b.id FROM " + table + " AS b",
                    (source,),
                )
                conn.execute("DELETE FROM memgpt_part_terms WHERE source = %s", (source,))
                return _pg_best_parts(conn, table, columns, terms)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_parts_words_are_counted_when_written_exactly_as_a_search_counted_them(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Every long text scores the same from its kept rows as from its text split and
    tokenized at search time (what a text not yet caught up gets), for every word of the
    corpus alone and for whole queries, on both backends; on Postgres the whole texts'
    kept frequencies give exactly the ``tsvector``'s scores too. A query word one backend
    reads as several tokens ("bike²lock") is scored from the texts."""
    memory = request.getfixturevalue("lite" if backend == "sqlite" else "pg")
    memory.archival.insert_many([LONG.replace("Oh and", "Oh and, bike bike lock,")])
    counts = _SqliteCounts(memory) if backend == "sqlite" else _PostgresCounts(memory)
    queries = [[w] for w in _every_term(CORPUS)] + [
        query_terms(q)
        for q in (QUERY, "bike lock", "combination 123456", "river morning", "bike²lock code")
    ]
    assert counts.stale() == 0
    for source in (3, 1, 2):  # passages, messages, long messages' contexts
        assert counts.rows(source)
        raised = 0
        for terms in queries:
            whole, kept = counts.scores(source, terms, counted=True)
            again, from_text = counts.scores(source, terms, counted=False)
            assert again == whole
            assert kept.keys() == from_text.keys() == whole.keys()
            for item, score in from_text.items():
                assert kept[item] == pytest.approx(score, rel=1e-12), (terms, item)
            raised += sum(kept[i] > whole[i] for i in whole)
        assert raised  # some long text's best part beat its whole
