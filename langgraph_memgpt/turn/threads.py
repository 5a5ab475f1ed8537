"""One run at a time per thread: runs of the same thread wait for each other.

Two runs of one thread at once (two ``ainvoke`` calls, two threads of a program, two
processes sharing the checkpoints) both start from the same checkpoint, and whichever
writes last drops the other's messages from the thread. So a run of the compiled graph
first claims its thread and keeps the claim until the run ends (returned, raised,
interrupted, or its stream closed): a second run of the same thread waits, then starts
from the first one's final checkpoint. A run that waits longer than
``THREAD_WAIT_SECONDS`` fails with `ThreadBusyError` naming the thread.

The claim is taken by a callback handler the compiled graph carries in its own config
(`thread_guard`, attached with LangGraph's ``with_config``): LangGraph calls a graph's
``on_chain_start`` before its loop reads the checkpoint and ``on_chain_end`` /
``on_chain_error`` after the last checkpoint is written. The handler is the graph run's
own (not inherited), so its nodes, tools and models never see it. Sync runs wait in
their thread; async runs wait on the event loop without blocking it.

The thread is the run's ``configurable["thread_id"]``, never its metadata's (a caller's
``metadata.thread_id`` groups traces, and a graph run inside another's tool inherits the
outer run's metadata). The claim is re-entrant within one run: a run of the same thread
inside a task of the run that holds it (an agent as a tool of an agent sharing its config)
is part of that run and takes no second claim. Any other run still waits.

Where the claim lives follows the checkpoints, since that is what two runs fight over:

- an exclusive ``flock`` on a file in ``<folder>/locks/``, the folder being the one given
  (the server's data directory) or the one holding a ``SqliteSaver``'s file: every
  process using those checkpoints shares it, and the kernel drops it when a process dies,
  so a killed run never leaves a thread locked;
- a per-process lock otherwise (an in-memory saver, or a saver this module cannot place);
- and, when the memory backend is shared by several machines (Postgres:
  `stores.base.ThreadLocks`), a claim in that store too (a Postgres advisory lock held by
  a session of its own), so two server workers on two machines serialise their runs of
  one thread as two processes on one machine do.

One LangGraph server already runs one run per thread at a time (its multitask strategy);
there the local locks are always free, and the shared one is what keeps two servers on one
database from running a thread at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, cast
from uuid import UUID

from filelock import FileLock, Timeout
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler, CallbackManager
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_memgpt.osutil import file_lock
from langgraph_memgpt.stores.base import ThreadLocks

THREAD_WAIT_SECONDS = 900.0
"""Longest a run waits for another run of its thread (an embedded-model turn takes minutes)."""
_POLL_SECONDS = 0.02
_SHARED_POLL_MAX_SECONDS = 0.5
"""Longest pause between two tries of a shared claim: each try opens a database session."""
_log = logging.getLogger(__name__)
_local_locks: dict[str, threading.Lock] = {}
_local_guard = threading.Lock()


class ThreadBusyError(RuntimeError):
    """Another run of the same thread kept it longer than ``THREAD_WAIT_SECONDS``."""


def _thread_of(config: RunnableConfig | None) -> str | None:
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    return None if thread_id is None else str(thread_id)


def _lock_path(data_dir: str | os.PathLike[str] | None, thread_id: str) -> Path | None:
    if data_dir is None:
        return None
    digest = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Path(data_dir).expanduser() / "locks" / f"thread-{digest}.lock"


class _Claim:
    """One attempt-at-a-time claim of a thread: the process lock, the file lock, the store's."""

    def __init__(
        self,
        thread_id: str,
        path: Path | None,
        shared: ThreadLocks | None = None,
        scope: str | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.path = path
        self.shared = shared
        self.release_shared: Callable[[], None] | None = None
        self.shared_misses = 0
        self.key = str(path) if path is not None else f"{scope or ''}thread:{thread_id}"
        """What tells this claim's lock apart (the lock file, or the scope and thread)."""
        with _local_guard:
            self.local = _local_locks.setdefault(self.key, threading.Lock())
        self.file: FileLock | None = None

    def try_acquire(self) -> bool:
        if not self.local.acquire(blocking=False):
            return False
        if self.path is not None and not self._try_file_lock():
            self.local.release()
            return False
        if self.shared is None:
            return True
        try:
            self.release_shared = self.shared.try_lock_thread(self.thread_id)
        except BaseException:
            self._unlock_local()
            raise
        if self.release_shared is None:
            self.shared_misses += 1
            self._unlock_local()
            return False
        return True

    def pause(self) -> float:
        """Seconds to wait before the next try: backing off while another machine holds it."""
        if not self.shared_misses:
            return _POLL_SECONDS
        backoff = _POLL_SECONDS * float(2 ** min(self.shared_misses, 10))
        return min(_SHARED_POLL_MAX_SECONDS, backoff)

    def _try_file_lock(self) -> bool:
        assert self.path is not None
        try:
            if self.file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.file = file_lock(self.path)
            self.file.acquire()
        except Timeout:
            return False
        except OSError as exc:
            # An unwritable data directory: other processes cannot be excluded, this one is.
            _log.warning(
                "thread lock file %s unusable (%s); locking in-process only", self.path, exc
            )
            self.path = None
            self._close()
        return True

    def release(self) -> None:
        release_shared, self.release_shared = self.release_shared, None
        try:
            if release_shared is not None:
                release_shared()
        finally:
            self._unlock_local()
            self._close()

    def _unlock_local(self) -> None:
        """Drop the file lock (keeping its lock object for another try), then this process's."""
        if self.file is not None and self.file.is_locked:
            with contextlib.suppress(OSError):
                self.file.release(force=True)
        self.local.release()

    def _close(self) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):
                self.file.release(force=True)
            self.file = None

    def busy(self) -> ThreadBusyError:
        self._close()
        return ThreadBusyError(
            f"thread {self.thread_id!r} is busy: another run of it has been running for more "
            f"than {THREAD_WAIT_SECONDS:.0f} s (one run per thread at a time; "
            "wait for it to end, or use another thread)"
        )


def _take(claim: _Claim) -> None:
    """Wait (sleeping) until ``claim`` is held, or fail after ``THREAD_WAIT_SECONDS``."""
    deadline = time.monotonic() + THREAD_WAIT_SECONDS
    while not claim.try_acquire():
        if time.monotonic() > deadline:
            raise claim.busy()
        time.sleep(claim.pause())


async def _a_take(claim: _Claim) -> None:
    """`_take` for asyncio: file work in a worker thread, the event loop never blocked."""
    deadline = time.monotonic() + THREAD_WAIT_SECONDS
    while not await asyncio.to_thread(claim.try_acquire):
        if time.monotonic() > deadline:
            raise claim.busy()
        await asyncio.sleep(claim.pause())


@contextlib.contextmanager
def one_run(
    config: RunnableConfig | None, data_dir: str | None, shared: ThreadLocks | None = None
) -> Iterator[None]:
    """Hold the thread's claim for the body (none without a thread id), as a run does.

    ``data_dir``: the folder whose ``locks/`` holds the file locks (None: this process
    only); ``shared``: the memory backend's cross-machine thread locks, when it has them.
    """
    thread_id = _thread_of(config)
    if thread_id is None:
        yield
        return
    claim = _Claim(thread_id, _lock_path(data_dir, thread_id), shared)
    _take(claim)
    try:
        yield
    finally:
        claim.release()


_HELD: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "memgpt_threads_held", default=frozenset()
)
"""The claims the graph runs enclosing this code hold (by claim key): a run nested in a
task of a run of its own thread (an agent as a tool of itself) finds its claim here."""


@dataclass(frozen=True)
class RunStart:
    """A graph run as it starts, before LangGraph reads or writes its checkpoint."""

    config: Mapping[str, Any]
    """The run's config (``configurable`` merged as LangGraph merges it)."""
    context: Any = None
    """The run context as the caller gave it (not yet coerced to the context schema)."""
    checkpointer: Any = None
    """The checkpointer the run uses (the compiled graph's, or the server's), or None."""
    context_schema: Any = None
    """The graph's context schema, which LangGraph coerces a dict context to."""

    @property
    def thread_id(self) -> str | None:
        """The run's ``configurable["thread_id"]``."""
        return _thread_of(cast(RunnableConfig, self.config))

    @property
    def nested(self) -> bool:
        """Run as a task of another run (a subgraph, a graph called in a tool)."""
        return bool((self.config.get("configurable") or {}).get("checkpoint_ns"))


def _run_start() -> RunStart | None:
    """The graph run whose start or end the handler is being told of.

    A callback sees the run's metadata, not its config, and the metadata's ``thread_id``
    is not always the run's thread: a caller may set its own (LangSmith groups traces by
    it), and a graph run inside another graph's tool inherits the outer run's metadata.
    The thread is ``configurable["thread_id"]``: LangGraph's ``stream`` / ``astream``
    frame that calls the handler holds the run's config, context and checkpointer (the
    async handler runs inline, so that frame is on its stack too).
    """
    from langgraph.pregel import Pregel

    frame: FrameType | None = sys._getframe(1)
    for _ in range(_FRAMES_TO_RUN):
        if frame is None:
            return None
        if frame.f_code.co_name in ("stream", "astream"):
            found = frame.f_locals
            graph, config = found.get("self"), found.get("config")
            if isinstance(graph, Pregel) and isinstance(config, Mapping):
                checkpointer = found.get("checkpointer", graph.checkpointer)
                return RunStart(config, found.get("context"), checkpointer, graph.context_schema)
        frame = frame.f_back
    return None


_FRAMES_TO_RUN = 16
"""Frames between a handler and LangGraph's ``stream`` (callback manager, event dispatch)."""

Admit = Callable[[Any, RunStart], Callable[[], None] | None]
"""Checks a run's input as it starts (``inputs``, the run); raises to refuse it.

What it returns (if anything) is called when the run has ended well, the thread still held.
"""
AAdmit = Callable[[Any, RunStart], Awaitable[Callable[[], Awaitable[None]] | None]]


class _RunClaims:
    """The claims a compiled graph's runs hold, by LangGraph run id.

    ``scope`` keeps apart the per-process locks of graphs whose checkpoints cannot meet
    (two in-memory savers may both hold a thread ``"1"``).
    """

    def __init__(self, lock_dir: str | None, shared: ThreadLocks | None, scope: str) -> None:
        self.lock_dir = lock_dir
        self.shared = shared
        self.scope = scope
        self.held: dict[UUID, tuple[_Claim, contextvars.Token[frozenset[str]] | None]] = {}
        self.settles: dict[UUID, Any] = {}
        self.guard = threading.Lock()

    def new(self, run: RunStart | None, metadata: dict[str, Any] | None) -> _Claim | None:
        """The claim a run starting now needs: None without a thread, or when re-entered.

        The thread is the run's ``configurable["thread_id"]`` (`_run_start`; the metadata's
        only where the run cannot be found). A run inside a task of a run that holds its
        thread (the same ``thread_id``, a checkpoint namespace below that run's) is part of
        that run: it takes no second claim, which would wait for the run it is part of.
        """
        if run is not None:
            thread_id, nested = run.thread_id, run.nested
        else:
            thread_id, nested = (metadata or {}).get("thread_id"), False
        if thread_id is None:
            return None
        thread = str(thread_id)
        path = _lock_path(self.lock_dir, thread)
        claim = _Claim(thread, path, self.shared, scope=None if path else self.scope)
        if nested and claim.key in _HELD.get():
            return None
        return claim

    def hold(self, run_id: UUID, claim: _Claim, settle: Any = None) -> None:
        token = _HELD.set(_HELD.get() | {claim.key})
        with self.guard:
            self.held[run_id] = (claim, token)
            if settle is not None:
                self.settles[run_id] = settle

    def settle(self, run_id: UUID) -> Any:
        """What the admission asked to call when run ``run_id`` ended well (or None)."""
        with self.guard:
            return self.settles.pop(run_id, None)

    def drop(self, run_id: UUID) -> _Claim | None:
        with self.guard:
            self.settles.pop(run_id, None)
            held = self.held.pop(run_id, None)
        if held is None:
            return None
        claim, token = held
        if token is not None:
            with contextlib.suppress(ValueError):  # ended in another context than it began
                _HELD.reset(token)
        return claim


def _event_loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _HoldThread(BaseCallbackHandler):
    """Sync runs: claim the thread at the graph run's start, release it at its end.

    Between the two, with the thread held and before LangGraph reads the checkpoint,
    ``admit`` checks the run's input: a refusal there keeps nothing of it.
    """

    raise_error = True

    def __init__(self, claims: _RunClaims, admit: Admit | None = None) -> None:
        self.claims = claims
        self.admit = admit

    @property
    def ignore_chain(self) -> bool:
        """Async runs (called from the event loop) are `_AHoldThread`'s."""
        return _event_loop_running()

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        run = _run_start()
        claim = self.claims.new(run, metadata)
        if claim is not None:
            _take(claim)
        settle = None
        try:
            if self.admit is not None and run is not None:
                settle = self.admit(inputs, run)
        except BaseException:
            if claim is not None:
                claim.release()
            raise
        if claim is not None:
            self.claims.hold(run_id, claim, settle)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if (settle := self.claims.settle(run_id)) is not None:
            with contextlib.suppress(Exception):  # nothing kept: the next run reads again
                settle()
        if (claim := self.claims.drop(run_id)) is not None:
            claim.release()

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if (claim := self.claims.drop(run_id)) is not None:
            claim.release()


class _AHoldThread(AsyncCallbackHandler):
    """Async runs: `_HoldThread`, waiting on the event loop instead of in a thread.

    Inline (awaited by the run itself, not gathered in a task of its own): the run's
    frame is on its stack (`_run_start`) and what it records in ``_HELD`` is the run's.
    """

    raise_error = True
    run_inline = True

    def __init__(self, claims: _RunClaims, admit: AAdmit | None = None) -> None:
        self.claims = claims
        self.admit = admit

    @property
    def ignore_chain(self) -> bool:
        """Sync runs (no event loop in the calling thread) are `_HoldThread`'s."""
        return not _event_loop_running()

    async def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        run = _run_start()
        claim = self.claims.new(run, metadata)
        if claim is not None:
            await _a_take(claim)
        settle = None
        try:
            if self.admit is not None and run is not None:
                settle = await self.admit(inputs, run)
        except BaseException:
            if claim is not None:
                await asyncio.to_thread(claim.release)
            raise
        if claim is not None:
            self.claims.hold(run_id, claim, settle)

    async def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if (settle := self.claims.settle(run_id)) is not None:
            with contextlib.suppress(Exception):  # as the sync handler's
                await settle()
        if (claim := self.claims.drop(run_id)) is not None:
            await asyncio.to_thread(claim.release)

    async def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        if (claim := self.claims.drop(run_id)) is not None:
            await asyncio.to_thread(claim.release)


def thread_guard(
    lock_dir: str | None,
    shared: ThreadLocks | None = None,
    *,
    scope: str = "",
    admit: tuple[Admit, AAdmit] | None = None,
) -> CallbackManager:
    """Callbacks for a compiled graph's ``with_config``: one run per thread at a time.

    Args:
        lock_dir: the folder whose ``locks/`` holds the file locks every process using
            these checkpoints shares; None: the locks of this process only.
        shared: the memory backend's cross-machine thread locks, when it has them.
        scope: what tells apart this graph's per-process locks from another's, when
            ``lock_dir`` is None.
        admit: the check of a run's input (sync, async), run with the thread held before
            LangGraph keeps anything of the input; raising refuses the run.

    Local handlers of the graph's own run (not inherited by its nodes).
    """
    claims = _RunClaims(lock_dir, shared, scope)
    check, acheck = admit if admit is not None else (None, None)
    return CallbackManager(handlers=[_HoldThread(claims, check), _AHoldThread(claims, acheck)])


def lock_dir_of(checkpointer: Any) -> str | None:
    """The folder of a ``SqliteSaver``'s checkpoint file (None for any other saver)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    if not isinstance(checkpointer, SqliteSaver):
        return None
    with checkpointer.lock:
        rows = checkpointer.conn.execute("PRAGMA database_list").fetchall()
    files = [str(row[2]) for row in rows if row[1] == "main" and row[2]]
    return str(Path(files[0]).parent) if files else None


_LATEST_SQL = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = {p} AND checkpoint_ns = {p} "
    "ORDER BY checkpoint_id DESC LIMIT 1"
)


def latest_checkpoint_id(
    saver: BaseCheckpointSaver[Any], thread_id: str, ns: str = ""
) -> str | None:
    """The id of a thread's newest checkpoint, without reading the checkpoint.

    Every write to a thread (a run's step, ``update_state``, another process's run, a
    deleted and re-created thread) gives it a new newest id, so the id says whether what
    was read of the thread before still holds (`turn.admission`). For
    LangGraph's in-memory, SQLite and Postgres savers; None for any other saver, or when
    the saver cannot say (the caller then reads the checkpoint).
    """
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    try:
        if isinstance(saver, InMemorySaver):
            checkpoints = saver.storage.get(thread_id, {}).get(ns)
            return max(checkpoints) if checkpoints else ""
        if isinstance(saver, SqliteSaver):
            with saver.lock:
                row = saver.conn.execute(_LATEST_SQL.format(p="?"), (thread_id, ns)).fetchone()
            return str(row[0]) if row else ""
        from langgraph.checkpoint.postgres import PostgresSaver

        if isinstance(saver, PostgresSaver):
            with saver._cursor() as cur:  # noqa: SLF001 - the saver's own connection handling
                cur.execute(_LATEST_SQL.format(p="%s"), (thread_id, ns))
                found = cur.fetchone()
            return str(found["checkpoint_id"]) if found else ""
    except Exception:  # noqa: BLE001 - no answer: the caller reads the checkpoint instead
        return None
    return None


async def alatest_checkpoint_id(
    saver: BaseCheckpointSaver[Any], thread_id: str, ns: str = ""
) -> str | None:
    """`latest_checkpoint_id` for the async savers (SQLite's and Postgres')."""
    try:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        if isinstance(saver, AsyncSqliteSaver):
            async with (
                saver.lock,
                saver.conn.execute(_LATEST_SQL.format(p="?"), (thread_id, ns)) as cur,
            ):
                row = await cur.fetchone()
            return str(row[0]) if row else ""
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        if isinstance(saver, AsyncPostgresSaver):
            async with saver._cursor() as acur:  # noqa: SLF001 - as latest_checkpoint_id
                await acur.execute(_LATEST_SQL.format(p="%s"), (thread_id, ns))
                found = await acur.fetchone()
            return str(found["checkpoint_id"]) if found else ""
    except Exception:  # noqa: BLE001 - as latest_checkpoint_id
        return None
    return latest_checkpoint_id(saver, thread_id, ns)
