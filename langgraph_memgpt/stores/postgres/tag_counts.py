"""The tags each agent's passages use, kept in a table so listing them reads a few rows.

``archival.tags()`` is read whenever the system prompt is rendered (its memory statistics
name the tags in use: every new thread, every core edit, every eviction). Computed as
``SELECT DISTINCT unnest(tags)`` it reads every passage of the agent, growing with them.
``memgpt_archival_tag_counts`` holds per agent and tag
how many passages carry it, kept by triggers in the transaction that changes the passages,
whatever path changes them (inserts, the bulk loader's ``COPY``, deletes and forgetting, a
changed tag list), as ``word_stats`` keeps the word statistics; a tag no passage carries
any more is deleted.

Concurrent writers of one agent upsert their tags' rows in sorted order, so they never
wait for each other in a cycle. The table is created and filled from the passages already
stored by `ensure_tag_counts`, once per database (marked ``archival_tags`` in
``memgpt_schema``), with the passages locked against writers meanwhile.
"""

from __future__ import annotations

from typing import Any

import psycopg

TAG_COUNTS_VERSION = 1

_TABLE = """CREATE TABLE IF NOT EXISTS memgpt_archival_tag_counts (
    agent_id text NOT NULL,
    tag text NOT NULL,
    passages bigint NOT NULL,
    PRIMARY KEY (agent_id, tag)
)"""

# Applies signed (agent, tag) pairs, +1 a passage that carries the tag arrived, -1 one
# left: summed per pair and upserted in sorted order; pairs left with no passage deleted.
_APPLY = """CREATE OR REPLACE FUNCTION memgpt_tag_deltas(
        agents text[], tags text[], signs integer[]
    ) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        IF coalesce(cardinality(agents), 0) = 0 THEN
            RETURN;
        END IF;
        INSERT INTO memgpt_archival_tag_counts AS c (agent_id, tag, passages)
            SELECT a, t, sum(s) FROM unnest(agents, tags, signs) AS d(a, t, s)
            GROUP BY a, t HAVING sum(s) <> 0 ORDER BY a, t
            ON CONFLICT (agent_id, tag) DO UPDATE SET passages = c.passages + excluded.passages;
        IF -1 = ANY(signs) THEN
            DELETE FROM memgpt_archival_tag_counts AS c
            USING (SELECT DISTINCT a, t FROM unnest(agents, tags, signs) AS d(a, t, s)
                   WHERE s < 0) AS gone
            WHERE c.agent_id = gone.a AND c.tag = gone.t AND c.passages <= 0;
        END IF;
    END $$"""


def _pairs(rows: str, sign: int) -> str:
    """The (agent, tag, sign) of each distinct tag of each passage of ``rows``."""
    return (
        f"SELECT r.agent_id AS a, u.t, {sign} AS s FROM {rows} AS r, "
        "LATERAL (SELECT DISTINCT x AS t FROM unnest(r.tags) AS x WHERE x IS NOT NULL) AS u"
    )


_FUNCTIONS = (
    f"""CREATE OR REPLACE FUNCTION memgpt_archival_tags_inserted() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM memgpt_tag_deltas(array_agg(a), array_agg(t), array_agg(s))
            FROM ({_pairs("new_rows", 1)}) AS d;
            RETURN NULL;
        END $$""",
    f"""CREATE OR REPLACE FUNCTION memgpt_archival_tags_deleted() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM memgpt_tag_deltas(array_agg(a), array_agg(t), array_agg(s))
            FROM ({_pairs("old_rows", -1)}) AS d;
            RETURN NULL;
        END $$""",
    """CREATE OR REPLACE FUNCTION memgpt_archival_tags_changed() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM memgpt_tag_deltas(array_agg(a), array_agg(t), array_agg(s))
            FROM (SELECT OLD.agent_id, x, -1 FROM (SELECT DISTINCT x FROM unnest(OLD.tags)
                      AS x WHERE x IS NOT NULL) AS o
                  UNION ALL
                  SELECT NEW.agent_id, x, 1 FROM (SELECT DISTINCT x FROM unnest(NEW.tags)
                      AS x WHERE x IS NOT NULL) AS n) AS d(a, t, s);
            RETURN NULL;
        END $$""",
)

_TRIGGERS = (
    """CREATE TRIGGER memgpt_archival_tags_inserted AFTER INSERT ON memgpt_archival
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
        EXECUTE FUNCTION memgpt_archival_tags_inserted()""",
    """CREATE TRIGGER memgpt_archival_tags_deleted AFTER DELETE ON memgpt_archival
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
        EXECUTE FUNCTION memgpt_archival_tags_deleted()""",
    # Per row, and only for a changed tag list or owner: a re-embedding updates every
    # passage, and transition tables cannot be limited to some columns.
    """CREATE TRIGGER memgpt_archival_tags_changed AFTER UPDATE OF tags, agent_id
        ON memgpt_archival FOR EACH ROW
        WHEN (OLD.tags IS DISTINCT FROM NEW.tags OR OLD.agent_id <> NEW.agent_id)
        EXECUTE FUNCTION memgpt_archival_tags_changed()""",
)


def ddl() -> str:
    """Every statement `ensure_tag_counts` may run, as one text (the schema's fingerprint)."""
    return "\n".join([_TABLE, _APPLY, *_FUNCTIONS, *_TRIGGERS, _pairs("memgpt_archival", 1)])


def ensure_tag_counts(conn: psycopg.Connection[Any]) -> None:
    """Create the table, function and triggers, and fill the table once per database.

    Runs inside ``db.ensure_schema``'s transaction (under its advisory lock), after
    ``memgpt_archival`` exists; the backfill holds the passages against writers until the
    schema transaction commits.
    """
    conn.execute(_TABLE)
    conn.execute(_APPLY)
    for statement in _FUNCTIONS:
        conn.execute(statement)
    row = conn.execute("SELECT version FROM memgpt_schema WHERE name = 'archival_tags'").fetchone()
    if row is not None and int(row[0]) >= TAG_COUNTS_VERSION:
        return
    conn.execute("LOCK TABLE memgpt_archival IN SHARE ROW EXCLUSIVE MODE")
    for name in ("inserted", "deleted", "changed"):
        conn.execute(f"DROP TRIGGER IF EXISTS memgpt_archival_tags_{name} ON memgpt_archival")
    for statement in _TRIGGERS:
        conn.execute(statement)
    conn.execute("DELETE FROM memgpt_archival_tag_counts")
    conn.execute(
        "INSERT INTO memgpt_archival_tag_counts (agent_id, tag, passages) "
        f"SELECT a, t, count(*) FROM ({_pairs('memgpt_archival', 1)}) AS d GROUP BY a, t"
    )
    conn.execute(
        "INSERT INTO memgpt_schema (name, version) VALUES ('archival_tags', %s) "
        "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
        (TAG_COUNTS_VERSION,),
    )
