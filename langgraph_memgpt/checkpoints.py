"""Where threads' checkpoints live: one SQLite file in the data directory, or Postgres.

The server, the CLI's chat and the management commands (forget, export) all open the
same checkpoints; this is the one place that knows the file's name and how to connect, so
none of them talks to SQLite itself. Memory (recall, core, archival) is the stores'
business (`stores.backends`); these are LangGraph's own checkpoint savers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_memgpt.stores.registry import threads_in_database

CHECKPOINT_FILENAME = "checkpoints.sqlite"
"""The threads' checkpoints in a data directory (``langgraph_memgpt.serve.server`` and the CLI)."""

BUSY_TIMEOUT_SECONDS = 30
"""How long a connection waits for another process's write (a server, a CLI command)."""


@contextmanager
def sqlite_checkpointer(path: Path) -> Iterator[SqliteSaver]:
    """A synchronous saver on a checkpoint file, closed on exit.

    ``check_same_thread=False``: LangGraph runs sync nodes in worker threads.
    """
    conn = sqlite3.connect(path, check_same_thread=False, timeout=BUSY_TIMEOUT_SECONDS)
    # A deleted checkpoint's bytes are overwritten, not left in free pages (forget).
    conn.execute("PRAGMA secure_delete=ON")
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@contextmanager
def existing_checkpointer(data_dir: Path) -> Iterator[SqliteSaver | None]:
    """The data directory's checkpointer, or None when it has no checkpoint file yet.

    For commands that read or delete threads: they must not create an empty file.
    """
    path = data_dir / CHECKPOINT_FILENAME
    if not path.is_file():
        yield None
        return
    with sqlite_checkpointer(path) as saver:
        yield saver


@contextmanager
def existing_threads(
    data_dir: str | Path, database_url: str = ""
) -> Iterator[BaseCheckpointSaver[Any] | None]:
    """The threads' checkpoints where a server keeps them, for a command that erases.

    The data directory's ``checkpoints.sqlite`` (None when there is none yet: nothing to
    clean, and no empty file made), or LangGraph's ``PostgresSaver`` on ``database_url``
    (its tables made if missing). What every eraser of a served memory opens (``retention
    apply``, the memory page's Forget, the sleep-time run's retention): one place that
    knows where the server's threads are, so none of them forgets them.
    """
    root = Path(data_dir).expanduser()
    if not threads_in_database(database_url):
        with existing_checkpointer(root) as saver:
            yield saver
        return
    with open_checkpointer(root, database_url) as saver:
        saver.setup()
        yield saver


ThreadsAt = (
    BaseCheckpointSaver[Any]
    | Callable[[], AbstractContextManager[BaseCheckpointSaver[Any] | None]]
    | None
)
"""Where a graph that erases (the sleep-time run's retention) finds the agent's threads: a
checkpointer, a function opening one (`existing_threads` on the server's settings), or
None for the run's own checkpointer (`threads_for`)."""


_SERVED: list[Callable[[], AbstractContextManager[BaseCheckpointSaver[Any] | None]]] = []


def serve_threads(
    opener: Callable[[], AbstractContextManager[BaseCheckpointSaver[Any] | None]],
) -> None:
    """Say where this process's server keeps its threads (``server.checkpointer`` does).

    A server's runs hold an async saver, which a node or a tool cannot use to clean a
    thread: `threads_for` opens this instead (`existing_threads` on the server's settings).
    """
    _SERVED[:] = [opener]


def threads_for(
    where: ThreadsAt, config: RunnableConfig | None
) -> AbstractContextManager[BaseCheckpointSaver[Any] | None]:
    """The checkpointer ``where`` names, open for the body.

    None: the run's own checkpointer (``config``'s: a graph compiled with the checkpointer
    of the chat threads, or mounted in a parent graph that has it), when it is one whose
    threads can be cleaned from a node (a SQLite, Postgres or in-memory saver); a served
    run's async one through what the server named (`serve_threads`); else None, and no
    thread is cleaned.
    """
    if isinstance(where, BaseCheckpointSaver):
        return nullcontext(where)
    if where is not None:
        return where()
    from langgraph._internal._constants import CONFIG_KEY_CHECKPOINTER

    own = ((config or {}).get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)
    if _cleanable_in_a_node(own):
        return nullcontext(own)
    if own is not None and _SERVED:
        return _SERVED[0]()
    return nullcontext(None)


def current_run() -> RunnableConfig | None:
    """The config of the graph run this is called in (a node, a tool), None outside one."""
    from langgraph.config import get_config

    try:
        return get_config()
    except RuntimeError:
        return None


def _cleanable_in_a_node(saver: Any) -> bool:
    if isinstance(saver, SqliteSaver | InMemorySaver):
        return True
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:  # the postgres extra is not installed
        return False
    return isinstance(saver, PostgresSaver)


def open_checkpointer(data_dir: Path, database_url: str = "") -> AbstractContextManager[Any]:
    """Threads' checkpoints: the data directory's SQLite file, or the Postgres database.

    In the database only when its engine keeps them there (`stores.registry`: Postgres);
    an engine of another scheme keeps them in the data directory.
    """
    if threads_in_database(database_url):
        from langgraph.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(database_url)
    data_dir.mkdir(parents=True, exist_ok=True)
    return sqlite_checkpointer(data_dir / CHECKPOINT_FILENAME)


def keep_latest(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """Delete every checkpoint of a thread but its latest (per namespace), with their writes.

    What ``forget`` does to a thread whose history held forgotten text: earlier checkpoints
    (the thread's time-travel history) and their pending writes go; the latest, already
    cleaned, stays. LangGraph's Postgres saver does it itself (``prune``, blobs included);
    for the SQLite saver it is done here, with SQLite's ``secure_delete`` so the bytes are
    overwritten, and the write-ahead log emptied afterwards.

    Raises:
        NotImplementedError: a saver that cannot prune (the thread is left as it was).
    """
    if isinstance(saver, SqliteSaver):
        with saver.lock, saver.conn:
            saver.conn.execute("PRAGMA secure_delete=ON")
            kept = (
                "SELECT checkpoint_ns, max(checkpoint_id) FROM checkpoints "
                "WHERE thread_id = ? GROUP BY checkpoint_ns"
            )
            saver.conn.execute(
                "DELETE FROM writes WHERE thread_id = ? AND (checkpoint_ns, checkpoint_id) "
                f"NOT IN ({kept})",
                (thread_id, thread_id),
            )
            saver.conn.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND (checkpoint_ns, checkpoint_id) "
                f"NOT IN ({kept})",
                (thread_id, thread_id),
            )
        empty_wal(saver)
        return
    if isinstance(saver, InMemorySaver):
        _keep_latest_in_memory(saver, thread_id)
        return
    saver.prune([thread_id], strategy="keep_latest")


def _keep_latest_in_memory(saver: InMemorySaver, thread_id: str) -> None:
    """`keep_latest` for LangGraph's in-memory saver (tests, notebooks)."""
    referenced: set[tuple[str, str, Any]] = set()
    for ns, checkpoints in saver.storage.get(thread_id, {}).items():
        if not checkpoints:
            continue
        latest = max(checkpoints)
        for checkpoint_id in [c for c in checkpoints if c != latest]:
            del checkpoints[checkpoint_id]
            saver.writes.pop((thread_id, ns, checkpoint_id), None)
        checkpoint = saver.serde.loads_typed(checkpoints[latest][0])
        referenced |= {(ns, ch, v) for ch, v in checkpoint["channel_versions"].items()}
    for key in [k for k in saver.blobs if k[0] == thread_id and k[1:] not in referenced]:
        del saver.blobs[key]


def empty_wal(saver: BaseCheckpointSaver[Any]) -> None:
    """Copy a SQLite saver's write-ahead log into its file and truncate it (forget).

    Deleted checkpoints' pages may still sit in the log; a reader holding an old snapshot
    can keep it from emptying, so this is best effort: the next checkpoint empties it.
    """
    if isinstance(saver, SqliteSaver):
        with saver.lock:
            saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@contextmanager
def holding(saver: BaseCheckpointSaver[Any], thread_id: str) -> Iterator[None]:
    """Hold ``thread_id`` as a run of it does while its checkpoints are rewritten or deleted.

    A run writes its checkpoints from the state it holds in memory: a thread cleaned while
    one of its runs is in progress would get the forgotten text back with that run's next
    checkpoint. So ``forget`` takes the thread's claim (`threads.one_run`): the file lock
    beside a SQLite checkpoint file (the one the graph's runs take), or on Postgres the
    advisory lock the runs take (`stores.postgres`), on the saver's own session. It waits
    for a run in progress to end, and a run that starts meanwhile waits for it. Other
    savers (in memory) are held in this process only.

    Raises:
        ThreadBusyError: a run kept the thread longer than ``THREAD_WAIT_SECONDS``.
    """
    from langgraph_memgpt.turn.threads import lock_dir_of, one_run

    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    shared = _SaverThreadLocks.of(saver)
    with one_run(config, lock_dir_of(saver), shared):
        yield


class _SaverThreadLocks:
    """Postgres runs' thread claims (advisory locks), taken on a ``PostgresSaver``'s session."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver

    @classmethod
    def of(cls, saver: BaseCheckpointSaver[Any]) -> _SaverThreadLocks | None:
        """The claims of ``saver``'s database, when it is a ``PostgresSaver`` on one session."""
        try:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError:  # the postgres extra is not installed
            return None
        if isinstance(saver, PostgresSaver) and isinstance(saver.conn, psycopg.Connection):
            return cls(saver)
        return None  # a pool: a lock and its unlock could land on two sessions

    def _lock(self, function: str, thread_id: str) -> bool:
        # The runs' own lock class and key (`PostgresBackend.try_lock_thread`).
        from langgraph_memgpt.stores.postgres import _THREAD_LOCKS, thread_lock_key

        key = (_THREAD_LOCKS, thread_lock_key(thread_id))
        with self.saver._cursor() as cur:  # noqa: SLF001 - the saver's own session and lock
            cur.execute(f"SELECT {function}(%s, %s) AS done", key)
            row = cur.fetchone()
        return bool(row and row["done"])

    def try_lock_thread(self, thread_id: str) -> Callable[[], None] | None:
        """As `stores.base.ThreadLocks`: claim without waiting, or None when a run holds it."""
        if not self._lock("pg_try_advisory_lock", thread_id):
            return None
        return lambda: None if self._lock("pg_advisory_unlock", thread_id) else None


def scrub_thread(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    *,
    remove: Collection[str] = (),
    texts: Sequence[str] = (),
    clear: Sequence[str] = (),
) -> bool:
    """Rewrite a thread's latest checkpoint (each namespace's) without forgotten text.

    Every channel is looked at, not only ``messages`` and ``summary``: queued messages
    whose id is in ``remove`` leave any list of messages; every other value (``repeat_key``,
    ``event_outcome``, waiting ``events``, ``system_prompt``, a ``Send``'s argument...) has
    each of ``texts`` replaced by `redaction.REDACTED`; a string channel holding one of
    ``clear`` (a removed summary) becomes empty. The cleaned checkpoint is written as the
    thread's newest through the saver's own ``put`` (so SQLite, Postgres blobs and the
    in-memory saver alike), without the old one's pending writes, which may quote the text
    too. Then `keep_latest` deletes the older checkpoints and their writes (the thread's
    history, which held the text), whether or not the latest needed cleaning.

    Returns:
        Whether a checkpoint was rewritten.
    """
    from langgraph.checkpoint.base import copy_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    from langgraph_memgpt.redaction import quotes, redact

    ids = {str(i) for i in remove}
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    namespaces = {
        str(t.config["configurable"].get("checkpoint_ns", "")) for t in saver.list(config)
    }
    rewritten = False
    for ns in sorted(namespaces):
        latest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
        if latest is None:
            continue
        values = latest.checkpoint["channel_values"]
        cleaned = {ch: _scrubbed(v, ids, texts, clear) for ch, v in values.items()}
        changed = [ch for ch in values if cleaned[ch] is not values[ch]]
        writes_quote = any(
            quotes(value, [*texts, *clear]) or _holds_ids(value, ids)
            for _, _, value in latest.pending_writes or []
        )
        metadata = redact(dict(latest.metadata or {}), [*texts, *clear])
        if not (changed or writes_quote or metadata != dict(latest.metadata or {})):
            continue
        checkpoint = copy_checkpoint(latest.checkpoint)
        step = int(metadata.get("step", -1))
        checkpoint["id"] = str(uuid6(clock_seq=step + 1))
        checkpoint["ts"] = datetime.now(UTC).isoformat()
        checkpoint["channel_values"] = cleaned
        versions = checkpoint["channel_versions"]
        bumped = {ch: saver.get_next_version(versions.get(ch), None) for ch in changed}
        versions.update(bumped)
        parent = latest.config
        saver.put(
            parent,
            checkpoint,
            {**metadata, "source": "update", "step": step + 1},  # type: ignore[typeddict-item]
            bumped,
        )
        rewritten = True
    keep_latest(saver, thread_id)
    return rewritten


def _holds_ids(value: Any, ids: Collection[str]) -> bool:
    """Whether ``value`` is or holds a message whose id is one of ``ids``."""
    from langchain_core.messages import BaseMessage

    if not ids:
        return False
    if isinstance(value, BaseMessage):
        return str(value.id) in ids
    if isinstance(value, list | tuple):
        return any(_holds_ids(v, ids) for v in value)
    if isinstance(value, dict):
        return any(_holds_ids(v, ids) for v in value.values())
    return False


def _scrubbed(value: Any, ids: Collection[str], texts: Sequence[str], clear: Sequence[str]) -> Any:
    """``value`` without the removed messages and forgotten texts (itself when clean)."""
    from langchain_core.messages import BaseMessage

    from langgraph_memgpt.redaction import quotes, redact

    if isinstance(value, str) and clear and any(c in value for c in clear):
        return ""
    if (
        isinstance(value, list)
        and ids
        and any(isinstance(m, BaseMessage) and str(m.id) in ids for m in value)
    ):
        kept = [m for m in value if not (isinstance(m, BaseMessage) and str(m.id) in ids)]
        return redact(kept, [*texts, *clear])
    if quotes(value, [*texts, *clear]):
        return redact(value, [*texts, *clear])
    return value
