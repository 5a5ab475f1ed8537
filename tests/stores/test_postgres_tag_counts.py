"""The tags an agent's passages carry, kept in a table, equal the passages counted.

``stores.postgres.tag_counts`` keeps per agent and tag how many passages carry it, by
triggers, so ``archival.tags()`` reads a few rows instead of every passage. After every kind
of write (inserts, the bulk loader, deletes, forgetting everything, a changed tag list,
another agent's passages, a database that predates the table) the table must hold exactly
what counting the passages gives, with no tag left that no passage carries.
"""

from __future__ import annotations

from typing import Any

import psycopg

from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.postgres import PostgresBackend
from langgraph_memgpt.stores.postgres.bulk import load_passages


def counted(conn: psycopg.Connection[Any]) -> dict[tuple[str, str], int]:
    """Passages per (agent, tag), counted from the passages themselves."""
    return {
        (str(a), str(t)): int(n)
        for a, t, n in conn.execute(
            "SELECT agent_id, t, count(*) FROM memgpt_archival, "
            "LATERAL (SELECT DISTINCT x AS t FROM unnest(tags) AS x) AS u GROUP BY agent_id, t"
        )
    }


def kept(conn: psycopg.Connection[Any]) -> dict[tuple[str, str], int]:
    """Passages per (agent, tag) as the table holds them."""
    return {
        (str(a), str(t)): int(n)
        for a, t, n in conn.execute(
            "SELECT agent_id, tag, passages FROM memgpt_archival_tag_counts"
        )
    }


def assert_in_step(url: str) -> None:
    with psycopg.connect(url) as conn:
        assert kept(conn) == counted(conn)


def test_tags_follow_inserts_deletes_and_forgetting(postgres_url: str) -> None:
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        ada = backend.open("ada").archival
        bob = backend.open("bob").archival
        first = ada.insert("The locker code is ZX4417.", tags=["codes", "home"])
        ada.insert_many(
            [NewPassage("Bike lock 4411.", tags=["codes"]), NewPassage("Tomatoes ripen late.")]
        )
        bob.insert("Bob's garden plan.", tags=["garden", "home"])
        assert ada.tags() == ["codes", "home"]
        assert bob.tags() == ["garden", "home"]
        assert_in_step(postgres_url)

        ada.delete([first.id])
        assert ada.tags() == ["codes"]  # "home" went with its only passage of ada's
        assert bob.tags() == ["garden", "home"]
        assert_in_step(postgres_url)

        ada.delete_all()
        assert ada.tags() == []
        assert bob.tags() == ["garden", "home"]
        assert_in_step(postgres_url)
    finally:
        backend.close()


def test_tags_follow_bulk_loads_and_changed_tag_lists(postgres_url: str) -> None:
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        load_passages(
            backend.pool(), "ada", None, [f"note {i}" for i in range(300)], tags=["seed", "bulk"]
        )
        ada = backend.open("ada").archival
        assert ada.tags() == ["bulk", "seed"]
        assert_in_step(postgres_url)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE memgpt_archival SET tags = ARRAY['seed', 'seed', 'kept'] "
                "WHERE agent_id = 'ada'"
            )
        assert ada.tags() == ["kept", "seed"]
        assert_in_step(postgres_url)
    finally:
        backend.close()


def test_an_older_database_gets_its_tags_counted(postgres_url: str) -> None:
    """A database made before the table (passages, no triggers) is counted once at start."""
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        backend.open("ada").archival.insert("Locker code ZX4417.", tags=["codes"])
    finally:
        backend.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for name in ("inserted", "deleted", "changed"):
            conn.execute(f"DROP TRIGGER memgpt_archival_tags_{name} ON memgpt_archival")
        conn.execute("DROP TABLE memgpt_archival_tag_counts")
        conn.execute("DELETE FROM memgpt_schema WHERE name = 'archival_tags'")
        # The version before the tag counts' migration (stores.postgres.db.MIGRATIONS).
        conn.execute("UPDATE memgpt_schema SET version = 3 WHERE name = 'memory'")
        # Written by a version without the table: no trigger counts this one.
        conn.execute(
            "INSERT INTO memgpt_archival (agent_id, text, tags, created_at) VALUES "
            "('ada', 'Garden fence.', ARRAY['garden'], '2026-12-01T10:00:00.000000+00:00')"
        )
    backend = PostgresBackend(postgres_url, embedding_model="none")
    try:
        ada = backend.open("ada").archival
        assert ada.tags() == ["codes", "garden"]
        assert_in_step(postgres_url)
        ada.insert("Another code.", tags=["codes"])
        assert_in_step(postgres_url)
    finally:
        backend.close()
