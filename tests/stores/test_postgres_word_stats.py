"""BM25's statistics kept in tables equal the agent's rows counted, whatever changed them.

``stores.postgres.word_stats`` keeps per agent and text column the documents, their total
length and each term's document frequency, by triggers. After every kind of write (adds
with their context refreshes, deletes, forgetting a thread or everything, bulk loads,
writers of one agent on two connections at once, a database that predates the tables)
the tables must hold exactly what counting the rows gives, and word scores must not move.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

from langgraph_memgpt.stores.postgres import PostgresBackend
from langgraph_memgpt.stores.postgres.bulk import load_messages, load_passages
from langgraph_memgpt.stores.postgres.db import ensure_schema
from langgraph_memgpt.stores.postgres.word_stats import FIELDS, field_name
from langgraph_memgpt.stores.types import RecallMessage

WORDS = (
    "garden tomatoes bicycle lake lighthouse island painted herbs soup bridge lane closed "
    "winter fence roses compost beans locker code film keeper"
).split()

Stats = tuple[dict[tuple[str, str], tuple[int, int]], dict[tuple[str, str, str], int]]


def sentence(i: int) -> str:
    """A text of 3-8 words drawn from WORDS, different for each i."""
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(3 + i % 6)) + f" n{i % 5}"


def messages(agent: str, thread: str, start: int, count: int) -> list[RecallMessage]:
    return [
        RecallMessage(
            agent,
            thread,
            f"{thread}-m{i}",
            "user" if i % 2 == 0 else "assistant",
            sentence(i),
            f"2026-12-01T09:{i // 60:02d}:{i % 60:02d}Z",
        )
        for i in range(start, start + count)
    ]


def counted(conn: psycopg.Connection[Any]) -> Stats:
    """The statistics counted from the rows, as search counted them before the tables."""
    corpus: dict[tuple[str, str], tuple[int, int]] = {}
    df: dict[tuple[str, str, str], int] = {}
    for table, tsv, length in FIELDS:
        field = field_name(table, tsv)
        for agent, documents, tokens in conn.execute(
            f"SELECT agent_id, count({length}), coalesce(sum({length}), 0) FROM {table} "
            f"GROUP BY agent_id HAVING count({length}) > 0"
        ):
            corpus[(agent, field)] = (int(documents), int(tokens))
        for agent, lexeme, documents in conn.execute(
            f"SELECT agent_id, u.lexeme, count(*) FROM {table}, unnest({tsv}) AS u "
            "GROUP BY agent_id, u.lexeme"
        ):
            df[(agent, field, lexeme)] = int(documents)
    return corpus, df


def kept(conn: psycopg.Connection[Any]) -> Stats:
    """The statistics as the tables hold them (rows of no document left out)."""
    corpus = {
        (str(a), str(f)): (int(d), int(t))
        for a, f, d, t in conn.execute(
            "SELECT agent_id, field, documents, tokens FROM memgpt_word_corpus"
        )
        if d or t
    }
    df = {
        (str(a), str(f), str(w)): int(d)
        for a, f, w, d in conn.execute(
            "SELECT agent_id, field, lexeme, documents FROM memgpt_word_df"
        )
    }
    return corpus, df


def assert_kept_equals_counted(url: str) -> Stats:
    with psycopg.connect(url) as conn:
        expected = counted(conn)
        assert kept(conn) == expected
    return expected


def scores(backend: PostgresBackend, agent: str, query: str) -> list[tuple[str, float]]:
    page = backend.open(agent).recall.search(query, mode="fts", page_size=50)
    return [(hit.item.message_id, hit.score) for hit in page.hits]


def test_word_statistics_follow_adds_deletes_and_forgetting(postgres_url: str) -> None:
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        ada = backend.open("ada")
        ada.recall.add(messages("ada", "t1", 0, 12))
        ada.recall.add(messages("ada", "t2", 0, 6))
        ada.recall.add(messages("ada", "t1", 12, 3))  # appends refresh neighbours' contexts
        passages = ada.archival.insert_many([sentence(i) for i in range(10)])
        backend.open("bob").recall.add(messages("bob", "t1", 0, 5))
        corpus, df = assert_kept_equals_counted(postgres_url)
        assert corpus[("ada", "memgpt_recall.search_tsv")][0] == 21
        assert corpus[("ada", "memgpt_archival.tsv")][0] == 10

        ada.recall.delete(["t1-m5", "t1-m6"])  # mid-thread: neighbours' contexts change
        ada.archival.delete([passages[0].id, passages[3].id])
        assert_kept_equals_counted(postgres_url)
        ada.recall.delete_thread("t2")
        assert_kept_equals_counted(postgres_url)

        ada.recall.delete_all()
        ada.archival.delete_all()
        corpus, df = assert_kept_equals_counted(postgres_url)
        # Forgetting everything leaves none of the agent's words in the statistics.
        with psycopg.connect(postgres_url) as conn:
            left = conn.execute(
                "SELECT count(*) FROM memgpt_word_df WHERE agent_id = 'ada'"
            ).fetchone()
        assert left == (0,)
        assert any(agent == "bob" for agent, _, _ in df)
    finally:
        backend.close()


def test_word_statistics_follow_bulk_loads(postgres_url: str) -> None:
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        pool = backend.pool()
        load_messages(pool, "ada", None, messages("ada", "t1", 0, 40) + messages("ada", "t2", 0, 9))
        load_passages(pool, "ada", None, [sentence(i) for i in range(30)], batch=7)
        backend.open("ada").recall.add(messages("ada", "t1", 40, 2))
        assert_kept_equals_counted(postgres_url)
    finally:
        backend.close()


def test_word_statistics_survive_two_writers_of_one_agent(postgres_url: str) -> None:
    """Two connections adding to and deleting from one agent at once: nothing lost, no deadlock."""
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        backend = PostgresBackend(postgres_url, embedding_model="none")
        try:
            memory = backend.open("ada")
            for n in range(12):
                thread = f"{name}-{n % 3}"
                memory.recall.add(messages("ada", thread, n * 4, 4))
                memory.archival.insert_many([sentence(n * 5 + k) for k in range(5)])
                if n % 4 == 3:
                    memory.recall.delete([f"{thread}-m{n * 4 - 2}"])
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            errors.append(error)
        finally:
            backend.close()

    ensure_schema(postgres_url)
    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    corpus, _ = assert_kept_equals_counted(postgres_url)
    assert corpus[("ada", "memgpt_archival.tsv")][0] == 2 * 12 * 5


def test_an_older_database_gets_its_statistics_counted(postgres_url: str) -> None:
    """A database made before the tables (rows, no triggers) is filled once at start."""
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        backend.open("ada").recall.add(messages("ada", "t1", 0, 10))
        before = scores(backend, "ada", "garden tomatoes bicycle")
    finally:
        backend.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for table in ("memgpt_recall", "memgpt_archival"):
            for name in ("inserted", "deleted", "changed"):
                conn.execute(f"DROP TRIGGER {table}_words_{name} ON {table}")
        conn.execute("DROP TABLE memgpt_word_df, memgpt_word_corpus")
        conn.execute("DELETE FROM memgpt_schema WHERE name = 'word_stats'")
        # The version before the statistics' migration (stores.postgres.db.MIGRATIONS).
        conn.execute("UPDATE memgpt_schema SET version = 2 WHERE name = 'memory'")
        # Written by a version without the tables: no trigger counts these.
        conn.execute(
            "INSERT INTO memgpt_archival (agent_id, text, created_at) "
            "VALUES ('ada', 'garden fence', '2026-12-01T10:00:00.000000+00:00')"
        )
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        assert scores(backend, "ada", "garden tomatoes bicycle") == before
        assert_kept_equals_counted(postgres_url)
        ensure_schema(postgres_url)  # again: nothing counted twice
        assert_kept_equals_counted(postgres_url)
    finally:
        backend.close()
