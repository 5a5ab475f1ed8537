"""The one SQLite file behind all memory tiers: opening it safely, transactions, metadata.

Every tier of every agent lives in ``<data_dir>/memory.sqlite``. WAL mode lets readers
(Studio, the CLI) work while the agent writes, and a busy timeout makes a second process
wait for the write lock instead of failing at once. A file that is not a database is
reported with its path and what to do, instead of a bare ``sqlite3.DatabaseError`` deep
inside a graph step.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from langgraph_memgpt.stores.sqlite import part_terms, wal
from langgraph_memgpt.stores.sqlite.foreign import foreign_schema
from langgraph_memgpt.stores.sqlite.migrations import NewerSchemaError, migrate
from langgraph_memgpt.stores.types import StoreAccessError, StoreCorruptError

DB_FILENAME = "memory.sqlite"
BUSY_TIMEOUT_MS = 10_000

_META_SCHEMA = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
DATABASE_ID_KEY = "database_id"
SHARED_BLOCKS_SECRET = "shared-blocks"
"""The secret that signs an export's shared-block claims (``stores.blocks.share_proof``)."""
"""Meta key of a random id given to a database when it is created (or first opened by a
version that knows it). Caches built from the database carry it, so a cache is never
trusted for another file that reuses the same row ids (a replaced ``memory.sqlite``)."""

# One re-entrant lock per open Database: the connection is shared across threads
# (LangGraph runs sync nodes in a thread pool), and two threads interleaving statements
# on one connection would share, commit or roll back each other's transaction.
_LOCKS: weakref.WeakKeyDictionary[sqlite_utils.Database, threading.RLock] = (
    weakref.WeakKeyDictionary()
)
_LOCKS_GUARD = threading.Lock()

# The file of each writable database, for the checkpoints after its commits (``wal``).
_WAL_FILES: weakref.WeakKeyDictionary[sqlite_utils.Database, str] = weakref.WeakKeyDictionary()


def open_db(path: Path | str, *, read_only: bool = False) -> sqlite_utils.Database:
    """Open (creating if needed) the memory database at ``path``.

    Sets WAL mode, a 10 s busy timeout, ``synchronous=NORMAL`` (durable enough with WAL,
    much faster per commit) and foreign keys, then runs ``PRAGMA quick_check`` so a
    damaged file fails here, loudly, rather than halfway through a write.

    Args:
        path: The SQLite file; its parent directories are created (unless read-only).
        read_only: Open an existing file for reading only (``inspect``), which works in
            a read-only data directory too; nothing is created or written.

    Returns:
        A ``sqlite_utils.Database`` whose connection may be used from several threads.

    Raises:
        StoreCorruptError: The file is not a SQLite database or failed its integrity check.
        StoreAccessError: The data directory is a file, cannot be created, or the
            database cannot be opened or written (read-only, full disk), or is another
            application's file; the message names the path and what to do.
    """
    path = Path(path)
    if read_only:
        conn = _connect_read_only(path)
    else:
        _make_data_dir(path.parent)
        conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        problems = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise StoreCorruptError(_corrupt_message(path, "; ".join(problems[:3])))
        foreign = foreign_schema(conn, path)
        if foreign is not None:  # checked before anything is written to the file
            raise StoreAccessError(foreign)
        if not read_only:
            _set_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints run beside the turns (``wal``); a commit runs one only as a safety net.
            conn.execute(f"PRAGMA wal_autocheckpoint={wal.FOREGROUND_PAGES}")
            # Forgotten text is overwritten where it lay, not left in free pages (forget).
            conn.execute("PRAGMA secure_delete=ON")
        conn.execute("PRAGMA foreign_keys=ON")
        if read_only:
            conn.execute("PRAGMA query_only=ON")
        else:
            conn.execute(_META_SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                (DATABASE_ID_KEY, secrets.token_hex(16)),
            )
            # Made here too, so a read-only open (export) finds it (see store_secret).
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                (f"secret:{SHARED_BLOCKS_SECRET}", secrets.token_hex(32)),
            )
            conn.commit()
            try:
                migrate(conn)
            except NewerSchemaError as err:
                raise StoreAccessError(
                    f"{path} was written by a later version of langgraph-memgpt ({err}); "
                    "upgrade the package to use it"
                ) from None
    except sqlite3.OperationalError as err:
        conn.close()
        if _is_busy(err):
            raise  # another process holds the lock longer than the busy timeout
        raise StoreAccessError(_access_message(path, err)) from err
    except sqlite3.DatabaseError as err:  # SQLITE_NOTADB, SQLITE_CORRUPT
        conn.close()
        raise StoreCorruptError(_corrupt_message(path, str(err))) from err
    except (StoreCorruptError, StoreAccessError):
        conn.close()
        raise
    database = sqlite_utils.Database(conn)
    if not read_only:
        _WAL_FILES[database] = str(path.resolve())
    return database


def _make_data_dir(folder: Path) -> None:
    """Create the data directory, or say clearly why it cannot be one."""
    if folder.exists() and not folder.is_dir():
        raise StoreAccessError(
            f"data directory {folder} is a file, not a folder; choose a folder "
            "(--data-dir or MEMGPT_DATA_DIR)"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreAccessError(
            f"cannot create the data directory {folder}: {err.strerror or err}; choose a "
            "folder you can write (--data-dir or MEMGPT_DATA_DIR)"
        ) from err


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to an existing database, even in a read-only folder.

    A WAL database whose ``-shm`` file is gone (closed cleanly) cannot be opened
    read-only where that file cannot be created; then it is opened as immutable, which
    reads the database file as it is (what the last clean close left).
    """
    if not path.is_file():
        raise StoreAccessError(f"there is no memory database at {path}")
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    except sqlite3.DatabaseError as err:
        conn.close()
        raise StoreCorruptError(_corrupt_message(path, str(err))) from err
    return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False)


def is_read_only(db: sqlite_utils.Database) -> bool:
    """Whether ``db`` was opened with ``open_db(..., read_only=True)``: stores create nothing."""
    return bool(db.conn.execute("PRAGMA query_only").fetchone()[0])


def _set_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, retrying while another process holds the lock, up to the busy timeout.

    Switching a new database to WAL takes an exclusive lock, and SQLite answers "database
    is locked" at once, without its busy handler, when waiting could deadlock: two
    processes opening a brand-new data directory together (both writers of
    ``tests/stores/test_reliability_concurrency.py``) failed so about once in a full test run on
    a loaded machine. Once the file is in WAL mode the pragma takes no lock.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if not _is_busy(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _is_busy(err: sqlite3.OperationalError) -> bool:
    return "locked" in str(err) or "busy" in str(err)


def _access_message(path: Path, err: sqlite3.OperationalError) -> str:
    detail = str(err)
    if "readonly" in detail or "read-only" in detail:
        hint = "the file or its folder is read-only; make both writable"
    elif "full" in detail:
        hint = "the disk is full; free some space"
    elif "unable to open" in detail:
        hint = "its folder must exist and be writable (a read-only one can only be inspected)"
    else:
        hint = "check the file and its folder"
    return f"cannot use the memory database {path}: {detail}; {hint}"


def _corrupt_message(path: Path, detail: str) -> str:
    return (
        f"memory database {path} is corrupt or not a SQLite file: {detail}; "
        "move it aside to start fresh or restore a backup"
    )


def _lock_for(db: sqlite_utils.Database) -> threading.RLock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(db)
        if lock is None:
            lock = _LOCKS[db] = threading.RLock()
        return lock


@contextmanager
def transaction(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """Run a block of writes as one transaction: all of them land, or none.

    The outermost block takes the write lock up front (``BEGIN IMMEDIATE``), so a
    read-then-write (an append to a core block, an idempotent insert) cannot be raced by
    another process, and waiting for the lock honours the busy timeout. Nested blocks,
    and ``db.atomic()`` blocks inside, become savepoints. One thread at a time per
    connection.

    Args:
        db: A database from :func:`open_db`.

    Yields:
        The same database.
    """
    with _lock_for(db):
        if db.conn.in_transaction:
            with db.atomic():
                yield db
            return
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
            # Whatever the block wrote, its long texts' parts are counted with it.
            part_terms.catch_up(db.conn)
        except BaseException:
            db.rollback()
            raise
        try:
            db.conn.execute("COMMIT")
        except BaseException:
            db.rollback()
            raise
        path = _WAL_FILES.get(db)
        if path is not None:
            wal.CHECKPOINTER.committed(path)


def close_db(db: sqlite_utils.Database) -> None:
    """Close a database from :func:`open_db`; no background checkpoint of it runs after.

    A checkpoint still due is dropped (closing the last connection checkpoints the log
    anyway) and one running is waited for, so the file may be copied or moved aside next.
    """
    db.conn.close()
    path = _WAL_FILES.pop(db, None)
    if path is not None:
        wal.CHECKPOINTER.settle(path)


def texts(db: sqlite_utils.Database, sql: str, params: Sequence[object]) -> list[str]:
    """The first column of every row ``sql`` selects, as text (ids, names, tags)."""
    return [str(row[0]) for row in db.conn.execute(sql, params).fetchall()]


def get_meta(db: sqlite_utils.Database, key: str) -> str | None:
    """Return the metadata value stored under ``key``, or None if there is none.

    Only a missing ``meta`` table (a database not opened by :func:`open_db`) means "no
    value": any other error, a lock above all, is raised. Read as "no value", a transient
    lock made the embedding check take a tier for new and overwrite its recorded model.

    Raises:
        sqlite3.OperationalError: The database could not be read (locked, I/O error).
    """
    try:
        row = db.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return None
        raise
    return None if row is None else str(row[0])


def store_secret(db: sqlite_utils.Database, name: str) -> bytes | None:
    """The database's random secret ``name``, made on first use (never leaves the file).

    None only when the database has none yet and is opened read-only.
    """
    key = f"secret:{name}"
    stored = get_meta(db, key)
    if stored is None:
        try:
            with transaction(db):
                db.conn.execute(_META_SCHEMA)
                db.conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                    (key, secrets.token_hex(32)),
                )
        except sqlite3.OperationalError:  # read-only: nothing was ever signed with it
            return None
        stored = get_meta(db, key)
    return None if stored is None else bytes.fromhex(stored)


def database_id(db: sqlite_utils.Database) -> str:
    """The random id of this database (see :data:`DATABASE_ID_KEY`); "" if it has none."""
    return get_meta(db, DATABASE_ID_KEY) or ""


def set_meta(db: sqlite_utils.Database, key: str, value: str) -> None:
    """Store ``value`` under ``key`` (e.g. the embedding model a store was built with)."""
    with transaction(db):
        db.conn.execute(_META_SCHEMA)
        db.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
