"""FTS5's view of a text for scoring long texts by their best part (``stores.bm25``).

A part's score is what FTS5's ``bm25()`` would give it as one more row of the text's FTS5
table:

- the table's statistics, read as ``bm25()`` reads them: the row count and total length
  from FTS5's averages record (the first record of its ``_data`` table: varints, the rows
  then each column's tokens; one lookup whatever the table's size), and each term's
  document frequency as the number of rows matching it (``bm25()`` counts the same);
- the part's own tokens from FTS5's own tokenizer (:data:`TOKENIZE`, the tables'), in a
  private in-memory database (:func:`fts5_tokens`), so stemming and word boundaries are
  exactly the table's, and the caller's connection, and its transaction, is left alone.

The parts' tokens are counted when a text is written (``part_terms``); :func:`part_words`
counts them from the text, for a text written since and not yet caught up.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Mapping, Sequence

import sqlite_utils

from langgraph_memgpt.stores.bm25 import Corpus, PartWords
from langgraph_memgpt.stores.chunks import parts_of
from langgraph_memgpt.stores.sqlite.fts import match_phrase

TOKENIZE = "porter unicode61"
"""The tokenizer of every FTS5 table of the package (``recall_fts``, ``recall_context_fts``,
``archival_fts``): parts are tokenized with it."""

FRESH_AFTER = 32
"""A call with more texts than this leaves the next one a new table (:func:`fts5_tokens`)."""

_local = threading.local()


def _tokenizer() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table with :data:`TOKENIZE`, and its token list."""
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        _local.conn = conn
    return conn


def fts5_tokens(texts: Sequence[str]) -> list[list[str]]:
    """The tokens FTS5 indexes for each text, in order (stemmed, as :data:`TOKENIZE` makes them)."""
    conn = _tokenizer()
    conn.execute("DELETE FROM t")
    conn.executemany("INSERT INTO t (rowid, text) VALUES (?, ?)", enumerate(texts, start=1))
    tokens: list[list[str]] = [[] for _ in texts]
    for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        tokens[int(doc) - 1].append(str(term))
    if len(texts) > FRESH_AFTER:
        # Deleted rows stay in an FTS5 index until its segments merge, and every later
        # call read through them: after a write's or a stale text's many parts, a search's
        # few terms took ever longer. A new table costs less than that.
        conn.close()
        _local.conn = None
    else:
        conn.execute("DELETE FROM t")
    return tokens


@functools.lru_cache(maxsize=4096)
def term_tokens(term: str) -> tuple[str, ...]:
    """A query term's FTS5 tokens (nearly always one stem), remembered.

    A search asks for each of its terms, and a term's tokens never change (the tokenizer
    is fixed).
    """
    return tuple(fts5_tokens([term])[0])


def occurrences(tokens: Sequence[str], phrase: Sequence[str]) -> int:
    """How often ``phrase`` (a term's tokens: nearly always one) occurs in ``tokens``."""
    if not phrase:
        return 0
    n = len(phrase)
    first = phrase[0]
    return sum(
        1
        for i, token in enumerate(tokens[: len(tokens) - n + 1])
        if token == first and list(tokens[i : i + n]) == list(phrase)
    )


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at ``at`` (big-endian 7-bit groups, a 9th byte of 8 bits) and the end."""
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


def fts_corpus(db: sqlite_utils.Database, fts_table: str) -> Corpus:
    """The row count and total tokens ``bm25()`` uses for ``fts_table`` (a trusted name).

    From FTS5's averages record (id 1 of ``<table>_data``): the rows, then each column's
    total tokens (every table here has one column). FTS5 writes the record when a
    transaction commits: inside one that changed the table, it is the one from before
    (empty for a new table: no rows).
    """
    row = db.conn.execute(f"SELECT block FROM {fts_table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return Corpus(0, 0)
    data = bytes(row[0])
    rows, at = _varint(data, 0)
    tokens, _ = _varint(data, at)
    return Corpus(rows, tokens)


def term_documents(db: sqlite_utils.Database, fts_table: str, term: str) -> int:
    """The rows of ``fts_table`` matching ``term``: its document frequency for ``bm25()``."""
    row = db.conn.execute(
        f"SELECT count(*) FROM {fts_table} WHERE {fts_table} MATCH ?", (match_phrase(term),)
    ).fetchone()
    return int(row[0]) if row else 0


def part_words(texts: Mapping[int, str], terms: Sequence[str]) -> dict[int, list[PartWords]]:
    """The parts of each long text with their FTS5 length and terms' frequencies."""
    split = {item: parts_of(text) for item, text in texts.items()}
    split = {item: parts for item, parts in split.items() if parts}
    flat = [part for parts in split.values() for part in parts]
    if not flat:
        return {}
    unique = list(dict.fromkeys(terms))
    tokens = fts5_tokens([*unique, *flat])
    phrases = dict(zip(unique, tokens[: len(unique)], strict=True))
    out: dict[int, list[PartWords]] = {}
    at = len(unique)
    for item, parts in split.items():
        out[item] = []
        for part_tokens in tokens[at : at + len(parts)]:
            counts = {term: occurrences(part_tokens, phrase) for term, phrase in phrases.items()}
            out[item].append(PartWords(len(part_tokens), {t: c for t, c in counts.items() if c}))
        at += len(parts)
    return out


__all__ = [
    "TOKENIZE",
    "fts5_tokens",
    "fts_corpus",
    "occurrences",
    "part_words",
    "term_documents",
    "term_tokens",
]
