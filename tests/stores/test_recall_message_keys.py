"""Any message id: recall keys a message by (thread, message id) and keeps edits.

Recall once keyed messages by (agent, message id) with ``INSERT OR IGNORE``: a client
numbering messages per thread ("1", "2", ...) silently lost every later thread's
messages, and an edited and rerun message (same id, new text) left recall and search
with the old text. Real SQLite, real FTS5, real MiniLM vectors.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings, embed_query
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.sqlite.schema import RECALL
from langgraph_memgpt.stores.types import RecallMessage

AGENT = "ada"


def say(thread: str, message_id: str, text: str, minute: int = 0) -> RecallMessage:
    return RecallMessage(
        AGENT, thread, message_id, "user", text, f"2026-11-29T09:{minute:02d}:00+00:00"
    )


@pytest.fixture
def recall(
    db: sqlite_utils.Database, tmp_data_dir: Path, embeddings: MiniLMEmbeddings
) -> SqliteRecallMemory:
    return SqliteRecallMemory(db, AGENT, embeddings, tmp_data_dir / "faiss")


def rows(db: sqlite_utils.Database, table: str) -> int:
    return int(db.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def texts(page: object) -> list[str]:
    return [hit.item.text for hit in page.hits]  # type: ignore[attr-defined]


def test_a_client_numbering_messages_per_thread_loses_no_thread(recall: SqliteRecallMemory) -> None:
    recall.add([say("monday", "1", "I planted tomatoes", 1), say("monday", "2", "Nice", 2)])
    added = recall.add(
        [say("tuesday", "1", "The basil is sprouting", 3), say("tuesday", "2", "Great", 4)]
    )
    assert added == 2
    assert recall.count() == 4
    assert [m.text for m in recall.thread_messages("tuesday")] == [
        "The basil is sprouting",
        "Great",
    ]
    assert texts(recall.search("basil", mode="fts", page_size=1)) == ["The basil is sprouting"]
    assert texts(recall.search("basil", mode="vector", page_size=1)) == ["The basil is sprouting"]
    assert recall.get(["1"], thread_id="tuesday")[0].text == "The basil is sprouting"
    assert recall.get(["1"], thread_id="monday")[0].text == "I planted tomatoes"


def test_an_edited_and_rerun_message_replaces_its_old_text_in_recall_and_search(
    db: sqlite_utils.Database, recall: SqliteRecallMemory
) -> None:
    recall.add(
        [
            say("t", "a", "Let's talk about drinks", 1),
            say("t", "b", "My favourite drink is green tea", 2),
            say("t", "c", "Noted!", 3),
        ]
    )
    assert recall.add([say("t", "b", "My favourite drink is black coffee", 2)]) == 1
    assert recall.count() == 3
    assert recall.get(["b"], thread_id="t")[0].text == "My favourite drink is black coffee"
    # Neither the message nor its neighbours' contexts still hold the old words.
    assert texts(recall.search("green tea", mode="fts")) == []
    assert "My favourite drink is black coffee" in texts(recall.search("coffee", mode="fts"))
    # Its vector is the new text's.
    assert recall.embeddings is not None
    rowid = db.conn.execute("SELECT id FROM recall WHERE message_id = 'b'").fetchone()[0]
    query = embed_query(recall.embeddings, "My favourite drink is black coffee")
    assert recall.vectors is not None
    assert recall.vectors.turn.scores(query, [rowid])[rowid] == pytest.approx(1.0, abs=1e-5)
    top = recall.search("black coffee", mode="vector", page_size=1)
    assert texts(top) == ["My favourite drink is black coffee"]


def test_re_recording_an_unchanged_message_adds_and_changes_nothing(
    db: sqlite_utils.Database, recall: SqliteRecallMemory
) -> None:
    first = [say("t", str(n), f"message number {n} about gardening", n) for n in range(5)]
    assert recall.add(first) == 5
    before = {t: rows(db, t) for t in ("recall", "recall_fts", "vectors")}
    generations = db.conn.execute("SELECT * FROM vector_state ORDER BY 1, 2, 3").fetchall()
    # A replay carries the retry's time: still the same message.
    replay = [say("t", str(n), f"message number {n} about gardening", 30 + n) for n in range(5)]
    assert recall.add(replay) == 0
    assert {t: rows(db, t) for t in before} == before
    assert db.conn.execute("SELECT * FROM vector_state ORDER BY 1, 2, 3").fetchall() == (
        generations
    )


def test_an_edit_that_leaves_no_words_takes_the_message_out_of_search(
    db: sqlite_utils.Database, recall: SqliteRecallMemory
) -> None:
    recall.add([say("t", "1", "Hello there", 1), say("t", "2", "I like sailing", 2)])
    recall.add([say("t", "2", "   ", 2)])
    assert texts(recall.search("sailing", mode="fts")) == []
    assert texts(recall.search("sailing", mode="vector")) == ["Hello there"]
    assert rows(db, "vectors") == 2  # "Hello there": its message and its context vector


def test_a_database_keyed_by_message_id_alone_is_migrated_once(tmp_data_dir: Path) -> None:
    path = tmp_data_dir / "memory.sqlite"
    # A file of before numbered migrations (user_version 0), written without open_db.
    old = sqlite_utils.Database(sqlite3.connect(path))
    old.conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    old_table = RECALL[0].replace(
        "UNIQUE (agent_id, thread_id, message_id)", "UNIQUE (agent_id, message_id)"
    )
    for statement in (old_table, *RECALL[1:]):
        old.conn.execute(statement)
    old.conn.execute(
        "INSERT INTO recall (id, agent_id, thread_id, message_id, role, text, created_at, "
        "searchable, context) VALUES (7, ?, 'monday', '1', 'user', 'I planted tomatoes', "
        "'2026-11-29T09:00:00.000000+00:00', 1, 'I planted tomatoes')",
        (AGENT,),
    )
    old.conn.execute("INSERT INTO recall_fts (rowid, text) VALUES (7, 'I planted tomatoes')")
    old.conn.commit()
    old.conn.close()

    for _ in range(2):  # the second open finds it migrated and changes nothing
        db = open_db(path)
        recall = SqliteRecallMemory(db, AGENT, None, tmp_data_dir / "faiss")
        assert texts(recall.search("tomatoes", mode="fts")) == ["I planted tomatoes"]
        assert db.conn.execute("SELECT id FROM recall").fetchall() == [(7,)]
        db.conn.close()
    db = open_db(path)
    recall = SqliteRecallMemory(db, AGENT, None, tmp_data_dir / "faiss")
    assert recall.add([say("tuesday", "1", "The basil is sprouting", 5)]) == 1
    assert recall.count() == 2
    # The context index still reads the kept row ids.
    hits = db.conn.execute(
        "SELECT rowid FROM recall_context_fts WHERE recall_context_fts MATCH 'tomatoes'"
    ).fetchall()
    assert hits == [(7,)]
    triggers = {
        r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'")
    }
    assert {"recall_context_insert", "recall_context_update", "recall_delete"} <= triggers
    db.conn.close()


class _LockProbe(Embeddings):
    """Real MiniLM embeddings that note whether another writer could write meanwhile."""

    def __init__(self, inner: MiniLMEmbeddings, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.lock_free: list[bool] = []
        self.model_name = inner.model_name
        self.dimension = inner.dimension

    def _probe(self) -> None:
        other = sqlite3.connect(self.path, timeout=0)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            self.lock_free.append(True)
        except sqlite3.OperationalError:
            self.lock_free.append(False)
        finally:
            other.close()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._probe()
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self._probe()
        return self.inner.embed_query(text)


@pytest.fixture
def probe_recall(
    tmp_data_dir: Path, embeddings: MiniLMEmbeddings
) -> Iterator[tuple[SqliteRecallMemory, _LockProbe]]:
    path = tmp_data_dir / "memory.sqlite"
    db = open_db(path)
    probe = _LockProbe(embeddings, path)
    yield SqliteRecallMemory(db, AGENT, probe, tmp_data_dir / "faiss"), probe
    db.conn.close()


def test_recall_embeds_before_taking_the_write_lock(
    probe_recall: tuple[SqliteRecallMemory, _LockProbe],
) -> None:
    recall, probe = probe_recall
    recall.add([say("t", "1", "I planted tomatoes", 1), say("t", "2", "Lovely", 2)])
    recall.add([say("t", "2", "Lovely, which kind?", 2)])  # an edit embeds too
    recall.add_many([say("u", str(n), f"line {n}", n) for n in range(10)], chunk_size=4)
    assert probe.lock_free and all(probe.lock_free), probe.lock_free


def test_two_threads_recording_the_same_numbered_messages_keep_both(
    recall: SqliteRecallMemory,
) -> None:
    errors: list[BaseException] = []

    def write(thread: str) -> None:
        try:
            for n in range(10):
                recall.add([say(thread, str(n), f"{thread} says {n}", n)])
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    workers = [threading.Thread(target=write, args=(t,)) for t in ("left", "right")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    assert recall.count() == 20
    assert np.array_equal(
        sorted(m.message_id for m in recall.thread_messages("right")),
        sorted(str(n) for n in range(10)),
    )


def test_a_cut_copy_of_a_message_never_replaces_the_whole_one(recall: SqliteRecallMemory) -> None:
    """The queue holds long messages cut to fit the window; recall keeps them whole."""
    whole = "My essay: " + "words about the sea " * 50
    recall.add([say("t", "1", whole, 1)])
    cut = replace(say("t", "1", whole[:40] + " [cut]", 1), partial=True)
    assert recall.add([cut]) == 0
    assert recall.get(["1"], thread_id="t")[0].text == whole
    # Nothing stored yet: the cut copy is the best there is.
    assert recall.add([replace(cut, message_id="2")]) == 1
