"""What keeps a Postgres turn's store work from growing with the agent (docs/scale.md).

Behaviour, not timings: the planner knows an agent's rows after a bulk load (which also
leaves the loaded pages vacuumed) or a first start on loaded data (without statistics it
took a 100k-message agent's filter for a few hundred rows and scanned every vector instead
of walking the HNSW index), recording a message writes each row it changes once (every
row version is an insert into each index), and a recall row enters the HNSW graphs once,
when its context is final, settled beside the turns: until then it is searched exactly.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import pytest
from langchain_core.embeddings import Embeddings

import langgraph_memgpt.stores.postgres as pg
from langgraph_memgpt.stores.postgres import PostgresBackend, search
from langgraph_memgpt.stores.postgres.bulk import load_messages, load_passages
from langgraph_memgpt.stores.postgres.db import graphs_and_buffers, graphs_outgrow_buffers
from langgraph_memgpt.stores.postgres.settling import UNSETTLED_CAP
from langgraph_memgpt.stores.types import RecallMessage

ROWS = 600


def messages(agent: str, count: int, thread: str = "t") -> list[RecallMessage]:
    return [
        RecallMessage(
            agent,
            f"{thread}{i // 100}",
            f"m{i}",
            "user" if i % 2 == 0 else "assistant",
            f"message {i} about the garden and the weather",
            f"2026-01-{1 + i // 100:02d}T09:{(i // 60) % 60:02d}:{i % 60:02d}Z",
        )
        for i in range(count)
    ]


def estimated_rows(conn: psycopg.Connection[Any], table: str, agent: str) -> float:
    """The planner's estimate of the agent's rows in ``table``."""
    row = conn.execute(
        f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {table} WHERE agent_id = %s", (agent,)
    ).fetchone()
    assert row is not None
    return float(row[0][0]["Plan"]["Plan Rows"])


def test_a_bulk_load_leaves_the_planner_knowing_the_agents_rows(postgres_url: str) -> None:
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        load_messages(backend.pool(), "ada", None, messages("ada", ROWS))
        load_passages(backend.pool(), "ada", None, [f"passage {i}" for i in range(ROWS)])
        with backend.pool().connection() as conn:
            for table in ("memgpt_recall", "memgpt_archival"):
                assert estimated_rows(conn, table, "ada") == pytest.approx(ROWS, rel=0.2)
                # Vacuumed too: every loaded page is known all-visible (no autovacuum pass
                # left to run beside the first turns).
                pages = conn.execute(
                    "SELECT relpages, relallvisible FROM pg_class WHERE relname = %s", (table,)
                ).fetchone()
                assert pages is not None and pages[0] > 0 and pages[1] == pages[0]
    finally:
        backend.close()


def test_a_first_start_on_rows_loaded_elsewhere_gathers_their_statistics(
    postgres_url: str,
) -> None:
    PostgresBackend(postgres_url, embedding_model="none").pool().close()  # the schema
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # e.g. a restore's COPY
        conn.execute(
            "INSERT INTO memgpt_archival (agent_id, text, created_at) "
            "SELECT 'ada', 'passage ' || i, '2026-01-01T00:00:00.000000+00:00' "
            "FROM generate_series(1, %s) AS i",
            (ROWS,),
        )
        assert estimated_rows(conn, "memgpt_archival", "ada") < ROWS / 10  # the planner's guess
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        with backend.pool().connection() as conn:
            assert estimated_rows(conn, "memgpt_archival", "ada") == pytest.approx(ROWS, rel=0.2)
    finally:
        backend.close()


def test_a_column_added_to_rows_already_held_gets_statistics_at_the_next_start(
    postgres_url: str,
) -> None:
    # As migration 7 added ``settled`` to tables holding rows: until the planner knew the
    # column, it took half the rows for unsettled and read the whole table to find a few.
    backend = PostgresBackend(postgres_url, embedding_model="none")
    load_messages(backend.pool(), "ada", None, messages("ada", ROWS))
    backend.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE memgpt_recall ADD COLUMN later boolean NOT NULL DEFAULT true")
        assert unknown_columns(conn, "memgpt_recall") == ["later"]
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        with backend.pool().connection() as conn:
            assert unknown_columns(conn, "memgpt_recall") == []
            plan = conn.execute(
                "EXPLAIN (FORMAT JSON) SELECT 1 FROM memgpt_recall WHERE NOT later"
            ).fetchone()
            assert plan is not None and float(plan[0][0]["Plan"]["Plan Rows"]) < ROWS / 10
    finally:
        backend.close()


def unknown_columns(conn: psycopg.Connection[Any], table: str) -> list[str]:
    """The columns of ``table`` the planner has no statistics of."""
    return [
        str(r[0])
        for r in conn.execute(
            "SELECT a.attname FROM pg_attribute AS a WHERE a.attrelid = %s::regclass "
            "AND a.attnum > 0 AND NOT a.attisdropped AND NOT EXISTS (SELECT 1 FROM pg_stats "
            "AS s WHERE s.tablename = %s AND s.attname = a.attname)",
            (table, table),
        )
    ]


def test_recording_a_message_writes_each_row_it_changes_once(
    postgres_url: str, embeddings: Embeddings
) -> None:
    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    try:
        recall = backend.open("ada").recall
        recall.add(messages("ada", 6))
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE row_writes (id bigint)")
            conn.execute(
                "CREATE FUNCTION log_row_write() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN INSERT INTO row_writes VALUES (new.id); RETURN new; END $$"
            )
            conn.execute(
                # Settling (the graph insert, beside the turn) is not the write's.
                "CREATE TRIGGER log_row_write AFTER UPDATE ON memgpt_recall FOR EACH ROW "
                "WHEN (old.settled = new.settled) EXECUTE FUNCTION log_row_write()"
            )
        follow_up = RecallMessage(
            "ada", "t0", "m6", "user", "and the roses?", "2026-01-01T09:00:06Z"
        )
        recall.add([follow_up])
        with psycopg.connect(postgres_url) as conn:
            writes = conn.execute(
                "SELECT id, count(*) FROM row_writes GROUP BY id ORDER BY id"
            ).fetchall()
            stored = conn.execute(
                "SELECT count(*) FROM memgpt_recall WHERE agent_id = 'ada' "
                "AND (embedding IS NULL OR context_embedding IS NULL OR context IS NULL)"
            ).fetchone()
        # The new message and the two before it (their windows hold it), once each.
        assert len(writes) == 3
        assert {count for _, count in writes} == {1}
        assert stored == (0,)
    finally:
        backend.close()


def test_the_graphs_hold_half_precision_copies_and_scores_stay_the_stored_vectors(
    postgres_url: str, embeddings: Embeddings
) -> None:
    """A graph walk reads pages all over the graph, so the graphs hold ``halfvec`` copies
    (half the pages); they only choose the candidates, whose similarity is the stored
    vector's, exactly as an exact scan gives it. A database made with single-precision
    graphs loses them at its next open (each would still take every vector write)."""
    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    backend.pool()  # the schema
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # an older version's graph
        conn.execute(
            "CREATE INDEX memgpt_archival_embedding_hnsw_384 ON memgpt_archival USING hnsw "
            "((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384"
        )
    approximate = PostgresBackend(postgres_url, embeddings=embeddings, exact_scan_limit=0)
    try:
        memory = backend.open("ada")
        memory.archival.insert_many(
            [f"note {i}: the garden needs {i} litres of water" for i in range(30)]
        )
        with psycopg.connect(postgres_url) as conn:
            graphs = conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%' "
                "ORDER BY 1"
            ).fetchall()
        assert [name for name, _ in graphs] == [
            "memgpt_archival_embedding_hnswh_384",
            "memgpt_recall_context_embedding_hnsws_384",
            "memgpt_recall_embedding_hnsws_384",
        ]
        assert all("halfvec_cosine_ops" in definition for _, definition in graphs)
        exact = memory.archival.search("how much water for the garden?", mode="vector")
        walked = approximate.open("ada").archival.search(
            "how much water for the garden?", mode="vector"
        )
        assert [(h.item.id, h.score) for h in walked.hits] == [
            (h.item.id, h.score) for h in exact.hits
        ]
    finally:
        approximate.close()
        backend.close()


def test_a_recall_rows_word_columns_stay_in_the_row_when_it_is_too_long(
    postgres_url: str, embeddings: Embeddings
) -> None:
    """A word statement reads the tsvector of every match it scores; in TOAST, each match
    cost an index lookup more. Rows over Postgres' 2 kB keep their word columns and
    move their vectors and context text out instead."""
    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    words = [f"{stem}{n}" for n in range(12) for stem in ("fern", "basil", "quartz", "lupin")]
    talk = [
        RecallMessage(
            "ada",
            "t",
            f"m{i}",
            "user" if i % 2 == 0 else "assistant",
            " ".join(words[(i * 7 + j) % len(words)] + f"x{i}" for j in range(40)),
            f"2026-01-01T09:00:{i:02d}Z",
        )
        for i in range(6)
    ]
    try:
        backend.open("ada").recall.add(talk)
        with psycopg.connect(postgres_url) as conn:
            rows = conn.execute(
                "SELECT message_id, pg_column_toast_chunk_id(embedding) IS NOT NULL, "
                "pg_column_toast_chunk_id(context_tsv) IS NOT NULL, "
                "pg_column_toast_chunk_id(search_tsv) IS NOT NULL, pg_column_size(context_tsv) "
                "FROM memgpt_recall WHERE agent_id = 'ada' ORDER BY id"
            ).fetchall()
        assert len(rows) == 6
        assert all(vector_out for _, vector_out, *_ in rows)  # rows over the 2 kB
        assert max(size for *_, size in rows) > 1000  # a window of three long messages
        assert not any(context_out or search_out for _, _, context_out, search_out, _ in rows)
    finally:
        backend.close()


def unsettled(url: str, agent: str) -> list[str]:
    """The message ids of the agent's rows outside the graphs, oldest first."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT message_id FROM memgpt_recall WHERE agent_id = %s AND NOT settled ORDER BY id",
            (agent,),
        ).fetchall()
    return [str(r[0]) for r in rows]


def test_a_recall_row_enters_the_graphs_only_with_its_final_context(
    postgres_url: str, embeddings: Embeddings
) -> None:
    """Each message of a thread rewrites the rows of the two before it (their windows take
    it in); a row in the graphs would be inserted into each graph at every rewrite, so a
    row waits outside them until two messages follow it, searched exactly meanwhile. The
    backend's settler thread does the graph inserts after the write returns."""
    backend = PostgresBackend(postgres_url, embeddings=embeddings, exact_scan_limit=0)
    try:
        recall = backend.open("ada").recall
        recall.add(messages("ada", 6))
        with psycopg.connect(postgres_url) as conn:  # written unsettled, settled after
            rows = conn.execute(
                "SELECT count(*) FROM memgpt_recall WHERE agent_id = 'ada'"
            ).fetchone()
        assert rows == (6,)
        assert recall.settler is not None and recall.settler.drain()
        assert unsettled(postgres_url, "ada") == ["m4", "m5"]
        with psycopg.connect(postgres_url) as conn:
            walked = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM memgpt_recall "
                "WHERE agent_id = 'ada' AND vector_dims(embedding) = 384 AND settled "
                "ORDER BY embedding::halfvec(384) <=> "
                "(SELECT embedding FROM memgpt_recall WHERE message_id = 'm0')::halfvec(384) "
                "LIMIT 10"
            ).fetchone()
        assert walked is not None and "hnsws" in str(walked[0])
        recall.add(
            [RecallMessage("ada", "t0", "m6", "user", "and the roses?", "2026-01-01T09:01:00Z")]
        )
        assert recall.settler.drain()
        assert unsettled(postgres_url, "ada") == ["m5", "m6"]
        # The newest messages are found through their exact scan, the others by the walk.
        for text, wanted in (("and the roses?", "m6"), ("message 1 about the garden", "m1")):
            hits = recall.search(text, mode="vector").hits
            assert wanted in [h.item.message_id for h in hits[:3]]
    finally:
        backend.close()


def test_unsettled_rows_of_ended_threads_settle_past_the_cap(
    postgres_url: str, embeddings: Embeddings
) -> None:
    """Every thread's last two messages wait for a next message that may never come; the
    exact scan beside each walk stays bounded: past the cap, the oldest settle as they are."""
    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    try:
        recall = backend.open("ada").recall
        threads = UNSETTLED_CAP // 2 + 10
        for t in range(threads):
            recall.add(
                [
                    RecallMessage(
                        "ada",
                        f"t{t}",
                        f"t{t}-{i}",
                        "user",
                        f"note {t}.{i}",
                        f"2026-01-01T09:00:{i:02d}Z",
                    )
                    for i in range(3)
                ]
            )
        assert recall.settler is not None and recall.settler.drain()
        waiting = unsettled(postgres_url, "ada")
        # At most the cap; a thread written between a pass's two statements may have
        # counted towards it with a row that the next pass settles as final.
        assert UNSETTLED_CAP - 3 <= len(waiting) <= UNSETTLED_CAP
        assert waiting[-2:] == [f"t{threads - 1}-1", f"t{threads - 1}-2"]
    finally:
        backend.close()


def test_rows_a_stopped_process_left_unsettled_settle_at_the_next_write(
    postgres_url: str, embeddings: Embeddings
) -> None:
    """Settling runs beside the writes: a process killed before its pass leaves final rows
    unsettled (found all the same, by the exact scan); the next writer's pass settles them."""
    backend = PostgresBackend(postgres_url, embeddings=embeddings)
    try:
        recall = backend.open("ada").recall
        recall.add(messages("ada", 6))
        assert recall.settler is not None and recall.settler.drain()
        with psycopg.connect(postgres_url, autocommit=True) as conn:  # as if never settled
            conn.execute("UPDATE memgpt_recall SET settled = false WHERE agent_id = 'ada'")
        assert len(unsettled(postgres_url, "ada")) == 6
        assert "m2" in [h.item.message_id for h in recall.search("message 2", mode="vector").hits]
    finally:
        backend.close()
    later = PostgresBackend(postgres_url, embeddings=embeddings)
    try:
        recall = later.open("ada").recall
        recall.add(
            [RecallMessage("ada", "t0", "m6", "user", "and the roses?", "2026-01-01T09:01:00Z")]
        )
        assert recall.settler is not None and recall.settler.drain()
        assert unsettled(postgres_url, "ada") == ["m5", "m6"]
    finally:
        later.close()


def test_a_backend_says_when_its_graphs_outgrow_the_servers_buffers(
    postgres_url: str,
    embeddings: Embeddings,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Graph walks touch pages all over their graphs: graphs larger than ``shared_buffers``
    make a large agent's searches wait on pages read from outside them (1.6-1.7x a small
    agent's at 128MB, 1.3-1.5x at 512MB). The backend says so when it opens, with both
    sizes; a memory too small to matter never warns."""
    mb = 2**20
    assert graphs_outgrow_buffers(336 * mb, 128 * mb)  # a 100k agent at the default
    assert not graphs_outgrow_buffers(336 * mb, 512 * mb)
    assert not graphs_outgrow_buffers(30 * mb, 16 * mb)
    first = PostgresBackend(postgres_url, embeddings=embeddings)
    try:
        first.open("ada").archival.insert_many([f"note {i} on the garden" for i in range(20)])
        with first.pool().connection() as conn:
            graphs, buffers = graphs_and_buffers(conn)
            setting = conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))")
            assert (buffers,) == setting.fetchone()
        assert 0 < graphs < buffers
    finally:
        first.close()
    with caplog.at_level(logging.WARNING, logger="langgraph_memgpt.stores.postgres"):
        quiet = PostgresBackend(postgres_url, embeddings=embeddings)
        quiet.pool()
        quiet.close()
        assert not [r for r in caplog.records if "shared_buffers" in r.getMessage()]
        monkeypatch.setattr(pg, "graphs_outgrow_buffers", lambda graphs, buffers: True)
        told = PostgresBackend(postgres_url, embeddings=embeddings)
        told.pool()
        told.close()
    warned = [r.getMessage() for r in caplog.records if "shared_buffers" in r.getMessage()]
    assert warned == [
        f"the memory's HNSW graphs ({graphs // mb} MB) are larger than the server's "
        f"shared_buffers ({buffers // mb} MB): large agents' searches will read their pages "
        "from outside Postgres' buffers; give shared_buffers at least the graphs' size "
        "(docs/scale.md, 'What a Postgres server must be given')"
    ]


def test_a_walk_runs_with_the_stores_settings_and_they_end_with_it(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every graph walk runs with pgvector's iterative scan in strict order (a filter that
    drops neighbours makes it look further) and the package's candidate list, read when it
    runs (a benchmark that changes ``HNSW_EF_SEARCH`` changes every walk); the settings are
    the walk's transaction's, so nothing else on a pooled connection inherits them."""
    settings = (
        "SELECT 1, current_setting('hnsw.ef_search')::float8 UNION ALL "
        "SELECT 2, (current_setting('hnsw.iterative_scan') = 'strict_order')::int::float8"
    )
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert search.walk_scores(conn, settings, (), 2) == {1: search.HNSW_EF_SEARCH, 2: 1.0}
        monkeypatch.setattr(search, "HNSW_EF_SEARCH", 100)
        assert search.walk_scores(conn, settings, (), 2) == {1: 100.0, 2: 1.0}
        after = conn.execute(
            "SELECT current_setting('hnsw.ef_search', true), "
            "current_setting('hnsw.iterative_scan', true)"
        ).fetchone()
        assert after is not None
        assert after[0] in (None, "40") and after[1] in (None, "off")
