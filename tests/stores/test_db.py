"""The memory database file: pragmas, integrity check on open, transactions, metadata."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest
import sqlite_utils

from langgraph_memgpt.stores.sqlite import wal
from langgraph_memgpt.stores.sqlite.db import (
    BUSY_TIMEOUT_MS,
    close_db,
    get_meta,
    open_db,
    set_meta,
    transaction,
)
from langgraph_memgpt.stores.types import StoreCorruptError


def test_open_db_uses_wal_busy_timeout_and_normal_sync(db: sqlite_utils.Database) -> None:
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS == 10_000
    assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert db.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_open_db_creates_missing_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "memory.sqlite"
    database = open_db(path)
    assert path.exists()
    database.conn.close()


def test_connection_can_be_used_from_another_thread(db: sqlite_utils.Database) -> None:
    errors: list[BaseException] = []

    def write() -> None:
        try:
            set_meta(db, "from_thread", "yes")
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    thread = threading.Thread(target=write)
    thread.start()
    thread.join()
    assert errors == []
    assert get_meta(db, "from_thread") == "yes"


def test_file_that_is_not_a_database_raises_store_corrupt_error_naming_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.sqlite"
    path.write_bytes(b"this is a text file, not a database\n" * 200)
    with pytest.raises(StoreCorruptError) as info:
        open_db(path)
    message = str(info.value)
    assert str(path) in message
    assert "corrupt or not a SQLite file" in message
    assert "move it aside" in message


def test_database_with_damaged_pages_raises_store_corrupt_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    database = open_db(path)
    with transaction(database):
        database.conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        database.conn.execute("CREATE INDEX t_body ON t (body)")
        database.conn.executemany(
            "INSERT INTO t (body) VALUES (?)", [(f"row {i} " * 20,) for i in range(500)]
        )
    database.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    database.conn.close()
    page_size = 4096
    data = bytearray(path.read_bytes())
    assert len(data) > 6 * page_size
    # Keep the header page, scramble the b-tree pages after it.
    for offset in range(page_size, len(data) - page_size, page_size):
        data[offset : offset + 64] = bytes(range(200, 255)) + b"\xff" * 9
    path.write_bytes(bytes(data))

    with pytest.raises(StoreCorruptError) as info:
        open_db(path)
    assert str(path) in str(info.value)


def test_meta_values_round_trip_and_overwrite(db: sqlite_utils.Database) -> None:
    assert get_meta(db, "recall:agent-a:model") is None
    set_meta(db, "recall:agent-a:model", "all-MiniLM-L6-v2-int8")
    set_meta(db, "recall:agent-a:model", "text-embedding-3-small")
    assert get_meta(db, "recall:agent-a:model") == "text-embedding-3-small"


def test_meta_survives_reopening_the_file(tmp_data_dir: Path) -> None:
    first = open_db(tmp_data_dir / "memory.sqlite")
    set_meta(first, "k", "v")
    first.conn.close()
    second = open_db(tmp_data_dir / "memory.sqlite")
    assert get_meta(second, "k") == "v"
    second.conn.close()


def test_transaction_writes_all_or_nothing(db: sqlite_utils.Database) -> None:
    db.conn.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(RuntimeError):
        with transaction(db):
            db.conn.execute("INSERT INTO t VALUES (1)")
            raise RuntimeError("boom")
    assert db.conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    with transaction(db):
        db.conn.execute("INSERT INTO t VALUES (1)")
        with transaction(db):
            db.conn.execute("INSERT INTO t VALUES (2)")
    assert db.conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 2
    assert not db.conn.in_transaction


def test_inner_transaction_failure_rolls_back_only_the_inner_block(
    db: sqlite_utils.Database,
) -> None:
    db.conn.execute("CREATE TABLE t (x INTEGER)")
    with transaction(db):
        db.conn.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(ValueError):
            with transaction(db):
                db.conn.execute("INSERT INTO t VALUES (2)")
                raise ValueError("inner")
    assert [r[0] for r in db.conn.execute("SELECT x FROM t")] == [1]


def test_reader_sees_committed_data_while_another_connection_writes(tmp_data_dir: Path) -> None:
    path = tmp_data_dir / "memory.sqlite"
    writer, reader = open_db(path), open_db(path)
    set_meta(writer, "k", "committed")
    writer.conn.execute("BEGIN IMMEDIATE")
    writer.conn.execute("UPDATE meta SET value = 'uncommitted' WHERE key = 'k'")
    # WAL: the reader is not blocked by the open write transaction and sees the last commit.
    assert get_meta(reader, "k") == "committed"
    writer.conn.execute("COMMIT")
    assert get_meta(reader, "k") == "uncommitted"
    writer.conn.close()
    reader.conn.close()


def test_second_writer_waits_for_the_lock_instead_of_failing(tmp_data_dir: Path) -> None:
    path = tmp_data_dir / "memory.sqlite"
    holder, waiter = open_db(path), open_db(path)
    locked, release = threading.Event(), threading.Event()

    def hold_write_lock() -> None:
        holder.conn.execute("BEGIN IMMEDIATE")
        holder.conn.execute("INSERT INTO meta VALUES ('holder', '1')")
        locked.set()
        release.wait(5)
        holder.conn.execute("COMMIT")

    thread = threading.Thread(target=hold_write_lock)
    thread.start()
    assert locked.wait(5)
    timer = threading.Timer(0.3, release.set)
    timer.start()
    # Without the busy timeout this raises "database is locked" at once.
    set_meta(waiter, "waiter", "2")
    thread.join()
    assert get_meta(waiter, "holder") == "1"
    assert get_meta(waiter, "waiter") == "2"
    holder.conn.close()
    waiter.conn.close()


def test_plain_sqlite_connection_without_busy_timeout_fails_fast_for_contrast(
    tmp_data_dir: Path,
) -> None:
    path = tmp_data_dir / "memory.sqlite"
    holder = open_db(path)
    holder.conn.execute("BEGIN IMMEDIATE")
    raw = sqlite3.connect(str(path), timeout=0)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        raw.execute("BEGIN IMMEDIATE")
    raw.close()
    holder.conn.execute("ROLLBACK")
    holder.conn.close()


def test_a_locked_database_is_not_reported_as_corrupt(
    tmp_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_data_dir / "memory.sqlite"
    open_db(path).conn.close()
    holder = sqlite3.connect(str(path))
    holder.execute("PRAGMA journal_mode=DELETE")
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr("langgraph_memgpt.stores.sqlite.db.BUSY_TIMEOUT_MS", 50)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked") as info:
            open_db(path)
        assert not isinstance(info.value, StoreCorruptError)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# ---------------------------------------------------------------- checkpoints beside the turn


def file_only(path: Path) -> sqlite3.Connection:
    """The database file as it is on disk, without its write-ahead log."""
    return sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)


def test_commits_reach_the_database_file_beside_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    db = open_db(path)
    assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == wal.FOREGROUND_PAGES
    with transaction(db):
        db.conn.execute("CREATE TABLE notes (text TEXT)")
        db.conn.execute("INSERT INTO notes VALUES ('kept')")
    assert wal.CHECKPOINTER.drain()
    # Copied from the log into the file by the checkpointer's thread, not by the commit.
    assert file_only(path).execute("SELECT text FROM notes").fetchall() == [("kept",)]
    db.conn.close()


def test_a_removed_database_is_not_made_again_by_its_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    db = open_db(path)
    with transaction(db):
        db.conn.execute("CREATE TABLE notes (text TEXT)")
    db.conn.close()
    for made in tmp_path.glob("memory.sqlite*"):
        made.unlink()
    assert wal.CHECKPOINTER.drain()  # the thread's pass, had it not run before the removal
    wal.checkpoint(str(path))  # and a pass after it, whenever the thread ran
    assert not list(tmp_path.glob("memory.sqlite*"))


def test_a_closed_database_is_not_checkpointed_after_its_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing drops the file's checkpoint still due: the file may be moved aside or
    switched out of WAL at once, with no thread of ours opening it meanwhile."""
    passes: list[str] = []
    monkeypatch.setattr(wal, "checkpoint", passes.append)
    path = tmp_path / "memory.sqlite"
    db = open_db(path)
    with transaction(db):  # due in PAUSE seconds
        db.conn.execute("CREATE TABLE notes (text TEXT)")
    close_db(db)
    assert wal.CHECKPOINTER.drain()
    assert passes == []
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")  # needs no other connection open


def test_closing_a_database_waits_for_its_checkpoint_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_checkpoint(path: str) -> None:
        started.set()
        release.wait(10)

    monkeypatch.setattr(wal, "checkpoint", slow_checkpoint)
    path = tmp_path / "memory.sqlite"
    db = open_db(path)
    with transaction(db):
        db.conn.execute("CREATE TABLE notes (text TEXT)")
    assert started.wait(10)
    closer = threading.Thread(target=close_db, args=(db,))
    closer.start()
    closer.join(0.3)
    assert closer.is_alive(), "close returned while the file's checkpoint still ran"
    release.set()
    closer.join(10)
    assert not closer.is_alive()


def test_the_checkpointer_forgets_the_clocks_of_files_long_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that writes many files over time (a test suite, a server opening agents)
    keeps the last checkpoint time of the recent ones only."""
    clock = iter(range(0, 10_000, 2))  # two seconds between commits
    monkeypatch.setattr(wal.time, "monotonic", lambda: float(next(clock)))
    checkpointer = wal.Checkpointer()
    try:
        for i in range(300):
            checkpointer.committed(str(tmp_path / f"agent-{i}.sqlite"))  # never made
        assert checkpointer.drain()
        assert len(checkpointer._last) <= wal.KEPT_CLOCKS
        assert not list(tmp_path.iterdir())
    finally:
        checkpointer.close()
