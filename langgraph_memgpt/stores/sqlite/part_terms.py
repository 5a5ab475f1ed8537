"""The words of long texts' parts, kept when a text is written (``stores.bm25``).

A long text scores on words as its best part (``bm25.best_part_scores``), which needs each
part's length and its terms' frequencies. Computed at search time, that re-tokenized every
long match of every query through FTS5's tokenizer, a cost growing with the memory
(``benchmarks/README.md``, ``beam_scale.py``). They are kept instead, when
the text is written, in ``part_terms``: one row per (source, item, term) holding the parts
that have the term and how often (``"part:count part:count"``), and one row per item under
the empty term holding every part's length. A search reads the rows of its long matches
for its own terms only: a few index lookups per match, whatever the memory's size.

Sources (:data:`SOURCES`): a recall message's searchable text (``recall_fts``), a long
message's context (``recall_context_fts``; a short message's context has no parts, as at
search time before), a passage (``archival_fts``).

Who keeps them: triggers mark every written text *stale* (``part_terms_stale``: any
writer, even one that never imports this package, leaves a mark), the delete triggers
remove a text's rows with it, and :func:`catch_up` turns the marks into rows before a
write transaction commits (``db.transaction``). A search scores a text still marked stale
from its text, as it did before (``fts_parts.part_words``), so it is never wrong, only
slower, until the next write catches up.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import sqlite_utils

from langgraph_memgpt.stores.bm25 import (
    Corpus,
    best_kept_parts,
    best_part_scores,
    bm25_idf,
    long_text_sql,
    raised_to_parts,
)
from langgraph_memgpt.stores.chunks import parts_of
from langgraph_memgpt.stores.search import RECENT_TEXTS
from langgraph_memgpt.stores.sqlite.fts import bm25_scores
from langgraph_memgpt.stores.sqlite.fts_parts import (
    fts5_tokens,
    fts_corpus,
    part_words,
    term_documents,
    term_tokens,
)


@dataclass(frozen=True)
class Source:
    """Where one kind of scored text is read, and the number its rows carry."""

    number: int
    table: str
    key: str
    column: str
    owner: str = "recall"
    """The table whose ``agent_id`` the text's row carries (same id)."""
    gate: str | None = None
    """The FTS table whose text must have parts for this one to be split (a message's
    context only for a long message)."""


SOURCES: dict[str, Source] = {
    "recall_fts": Source(1, "recall_fts_content", "id", "c0"),
    "recall_context_fts": Source(2, "recall", "id", "context", gate="recall_fts"),
    "archival_fts": Source(3, "archival", "id", "text", owner="archival"),
}
"""Each FTS5 table scored with parts (its name is the key) and where its texts are."""

INT32 = np.dtype("<i4")
"""How ``counts`` are stored (see :func:`term_rows`)."""

CATCH_UP_BATCH = 500
"""Stale items read and tokenized at a time (a migration marks every text)."""

SCHEMA = (
    # Keyed term first: the items a search scores for a term are its newest matches, the
    # highest ids, so their rows are one range of the key (one scan, not a lookup each).
    """CREATE TABLE IF NOT EXISTS part_terms (
        source INTEGER NOT NULL,
        agent_id TEXT NOT NULL,
        term TEXT NOT NULL,
        item INTEGER NOT NULL,
        counts BLOB NOT NULL,
        PRIMARY KEY (source, agent_id, term, item)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS part_terms_items ON part_terms (source, item)",
    """CREATE TABLE IF NOT EXISTS part_terms_stale (
        source INTEGER NOT NULL,
        item INTEGER NOT NULL,
        PRIMARY KEY (source, item)
    ) WITHOUT ROWID""",
    # A message's searchable text is written to recall_fts after its row, by the writer;
    # its context by an UPDATE: both end up marked, and caught up before the commit.
    """CREATE TRIGGER IF NOT EXISTS recall_parts_insert AFTER INSERT ON recall BEGIN
        INSERT OR IGNORE INTO part_terms_stale (source, item) VALUES (1, new.id), (2, new.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS recall_parts_text
        AFTER UPDATE OF text, tool_calls, searchable ON recall BEGIN
        INSERT OR IGNORE INTO part_terms_stale (source, item) VALUES (1, new.id), (2, new.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS recall_parts_context AFTER UPDATE OF context ON recall BEGIN
        INSERT OR IGNORE INTO part_terms_stale (source, item) VALUES (2, new.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS recall_parts_delete AFTER DELETE ON recall BEGIN
        DELETE FROM part_terms WHERE source IN (1, 2) AND item = old.id;
        DELETE FROM part_terms_stale WHERE source IN (1, 2) AND item = old.id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS archival_parts_insert AFTER INSERT ON archival BEGIN
        INSERT OR IGNORE INTO part_terms_stale (source, item) VALUES (3, new.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS archival_parts_text AFTER UPDATE OF text ON archival BEGIN
        INSERT OR IGNORE INTO part_terms_stale (source, item) VALUES (3, new.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS archival_parts_delete AFTER DELETE ON archival BEGIN
        DELETE FROM part_terms WHERE source = 3 AND item = old.id;
        DELETE FROM part_terms_stale WHERE source = 3 AND item = old.id;
    END""",
)
"""The tables and triggers (SQLite migration 8)."""


def mark_all_stale(conn: sqlite3.Connection) -> None:
    """Mark every text the database holds (a database written before ``part_terms``)."""
    conn.execute(
        "INSERT OR IGNORE INTO part_terms_stale (source, item) "
        "SELECT 1, id FROM recall UNION ALL SELECT 2, id FROM recall "
        "UNION ALL SELECT 3, id FROM archival"
    )


def _ids(ids: Iterable[int]) -> str:
    return json.dumps(sorted({int(i) for i in ids}))


def texts_with_parts(
    conn: sqlite3.Connection, fts_table: str, ids: Collection[int]
) -> dict[int, str]:
    """``{id: text}`` of the items among ``ids`` whose ``fts_table`` text has parts.

    The database leaves out most short texts itself (``bm25.long_text_sql``); a gated
    source (a context) only for items whose gate text has parts too.
    """
    if not ids:
        return {}
    source = SOURCES[fts_table]
    if source.gate is not None:
        ids = list(texts_with_parts(conn, source.gate, ids))
        if not ids:
            return {}
    rows = conn.execute(
        f"SELECT t.{source.key}, t.{source.column} FROM json_each(?) AS j "
        f"CROSS JOIN {source.table} AS t ON t.{source.key} = j.value "
        f"WHERE {long_text_sql(f't.{source.column}', 'char')}",
        (_ids(ids),),
    ).fetchall()
    return {int(r[0]): str(r[1]) for r in rows if r[1] is not None and parts_of(str(r[1]))}


def term_rows(
    source: int, texts: Mapping[int, tuple[str, str]]
) -> list[tuple[int, str, str, int, bytes]]:
    """The ``part_terms`` rows of these ``{item: (agent id, text)}``: each term's parts.

    ``counts`` is little-endian int32 (part, count, part length) triples, read back with
    numpy in one call a row (:func:`kept_best_parts`).
    """
    split = {item: parts_of(text) for item, (_, text) in texts.items()}
    flat = [part for parts in split.values() for part in parts]
    tokens = iter(fts5_tokens(flat)) if flat else iter(())
    rows: list[tuple[int, str, str, int, bytes]] = []
    for item, parts in split.items():
        counts: dict[str, list[int]] = {}
        for n in range(len(parts)):
            part = next(tokens)
            frequencies: dict[str, int] = {}
            for token in part:
                frequencies[token] = frequencies.get(token, 0) + 1
            for token, count in frequencies.items():
                counts.setdefault(token, []).extend((n, count, len(part)))
        agent = texts[item][0]
        rows.extend((source, agent, term, item, _int32(c)) for term, c in counts.items())
    return rows


def _int32(values: Sequence[int]) -> bytes:
    return np.asarray(values, dtype=INT32).tobytes()


def _owners(conn: sqlite3.Connection, source: Source, ids: Iterable[int]) -> dict[int, str]:
    """The agent of each item's row."""
    rows = conn.execute(
        f"SELECT id, agent_id FROM {source.owner} WHERE id IN (SELECT value FROM json_each(?))",
        (_ids(ids),),
    )
    return {int(r[0]): str(r[1]) for r in rows}


def catch_up(conn: sqlite3.Connection) -> None:
    """Turn every stale mark into rows (the caller's transaction; a no-op when none).

    Called before each write transaction commits; a database without the tables (being
    migrated) is left alone.
    """
    try:
        if conn.execute("SELECT 1 FROM part_terms_stale LIMIT 1").fetchone() is None:
            return
    except sqlite3.OperationalError:  # no such table: before migration 8
        return
    # Gates first: a context is split only once its message's rows are known.
    for fts_table, source in sorted(SOURCES.items(), key=lambda s: s[1].gate is not None):
        while True:
            stale = [
                int(r[0])
                for r in conn.execute(
                    "SELECT item FROM part_terms_stale WHERE source = ? LIMIT ?",
                    (source.number, CATCH_UP_BATCH),
                )
            ]
            if not stale:
                break
            batch = _ids(stale)
            conn.execute(
                "DELETE FROM part_terms WHERE source = ? "
                "AND item IN (SELECT value FROM json_each(?))",
                (source.number, batch),
            )
            texts = texts_with_parts(conn, fts_table, stale)
            owners = _owners(conn, source, texts)
            rows = term_rows(source.number, {i: (owners[i], t) for i, t in texts.items()})
            conn.executemany(
                "INSERT INTO part_terms (source, agent_id, term, item, counts) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            conn.execute(
                "DELETE FROM part_terms_stale WHERE source = ? "
                "AND item IN (SELECT value FROM json_each(?))",
                (source.number, batch),
            )


def kept_best_parts(
    conn: sqlite3.Connection,
    fts_table: str,
    agent_id: str,
    holders: Mapping[str, Collection[int]],
    tokens: Mapping[str, str],
    weights: Mapping[str, float],
    corpus: Corpus,
) -> dict[int, float]:
    """Each kept long text's best part score among ``holders``' items (``bm25`` math).

    ``holders``: each term's items it may count for (the rows the whole texts were scored
    for, the term's newest matches); ``tokens``: each term's FTS5 token; ``weights``: each
    term's ``bm25_idf``. A term's rows for its items are one range of the table's key
    (from its oldest to its newest item). A part's score is the sum over the terms it
    holds of BM25's term score with its own length (``bm25.best_parts``).
    """
    source = SOURCES[fts_table]
    found: list[tuple[int, bytes, float]] = []  # (item, packed triples, weight)
    for term, items in holders.items():
        if not items or term not in tokens:
            continue
        rows = conn.execute(
            "SELECT item, counts FROM part_terms WHERE source = ? AND agent_id = ? "
            "AND term = ? AND item BETWEEN ? AND ?",
            (source.number, agent_id, tokens[term], min(items), max(items)),
        ).fetchall()
        weight = weights[term]
        found.extend((item, packed, weight) for item, packed in rows if item in items)
    return best_kept_parts(found, INT32, corpus)


def with_best_parts(
    db: sqlite_utils.Database,
    fts_table: str,
    agent_id: str,
    whole: dict[int, float],
    matched: Mapping[str, Sequence[int]],
) -> dict[int, float]:
    """``whole`` (``fts.bm25_scores`` of ``fts_table``) with each long text's best part's.

    ``matched``: each term's rows ``whole`` was scored for. Each part scores as one more
    row of ``fts_table`` would (its statistics, the part's own length and counts): from
    the kept rows (:func:`kept_best_parts`); a text still marked stale is split and
    tokenized here (``fts_parts.part_words``), as is every text when a term is more than
    one FTS5 token (a phrase: its count needs the tokens' order, which the rows do not
    keep).
    """
    holders = {term: set(ids) for term, ids in matched.items() if ids}
    if not whole or not holders:
        return whole
    corpus = fts_corpus(db, fts_table)
    documents = {term: term_documents(db, fts_table, term) for term in holders}
    if any(df > corpus.documents for df in documents.values()):
        return whole  # the statistics predate this transaction's writes (see fts_corpus)
    stems = {term: term_tokens(term) for term in holders}
    items = {item for ids in holders.values() for item in ids}
    source = SOURCES[fts_table]
    stale = {
        int(r[0])
        for r in db.conn.execute(
            "SELECT item FROM part_terms_stale WHERE source = ? "
            "AND item IN (SELECT value FROM json_each(?))",
            (source.number, _ids(items)),
        )
    }
    if any(len(tokens) > 1 for tokens in stems.values()):
        stale = items
    single = {term: tokens[0] for term, tokens in stems.items() if len(tokens) == 1}
    weights = {term: bm25_idf(df, corpus) for term, df in documents.items()}
    kept = {term: ids - stale for term, ids in holders.items() if term in single}
    best = kept_best_parts(db.conn, fts_table, agent_id, kept, single, weights, corpus)
    if stale:
        texts = texts_with_parts(db.conn, fts_table, stale)
        parts = part_words(texts, list(holders))
        best.update(best_part_scores({}, holders, parts, corpus, documents))
    return raised_to_parts(whole, best)


def bm25_with_parts(
    db: sqlite_utils.Database,
    fts_table: str,
    base_table: str,
    agent_id: str,
    terms: Sequence[str],
    where: str,
    params: Sequence[object],
) -> dict[int, float]:
    """``fts.bm25_scores``, each long text scoring as its best part where that is higher."""
    matched: dict[str, list[int]] = {}
    whole = bm25_scores(db, fts_table, base_table, terms, where, params, matched=matched)
    return with_best_parts(db, fts_table, agent_id, whole, matched)


_NEWEST = {
    "recall_fts": "SELECT id FROM recall WHERE agent_id = ? AND searchable = 1 "
    "ORDER BY created_at DESC, id DESC LIMIT ?",
    "archival_fts": "SELECT id FROM archival WHERE agent_id = ? "
    "ORDER BY created_at DESC, id DESC LIMIT ?",
}


def long_share(conn: sqlite3.Connection, fts_table: str, agent_id: str) -> float:
    """The share of long texts (with parts) among the agent's ``search.RECENT_TEXTS`` newest.

    Read from the kept counts (a long text has rows), one index probe a text: a text
    written but not yet counted, rare outside a writing transaction, counts as short.
    """
    total, long = conn.execute(
        f"SELECT count(*), coalesce(sum(EXISTS (SELECT 1 FROM part_terms AS p "
        f"WHERE p.source = ? AND p.item = n.id)), 0) FROM ({_NEWEST[fts_table]}) AS n",
        (SOURCES[fts_table].number, agent_id, RECENT_TEXTS),
    ).fetchone()
    return float(long) / total if total else 0.0


__all__ = [
    "SCHEMA",
    "bm25_with_parts",
    "long_share",
    "SOURCES",
    "Source",
    "catch_up",
    "kept_best_parts",
    "mark_all_stale",
    "term_rows",
    "texts_with_parts",
    "with_best_parts",
]
