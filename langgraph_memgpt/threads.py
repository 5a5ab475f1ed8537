"""One run at a time per thread: runs of the same thread wait for each other.

Two runs of one thread at once (two ``ainvoke`` calls, two threads of a program, two
processes sharing the checkpoints) both start from the same checkpoint, and whichever
writes last drops the other's messages from the thread. So a run of the compiled graph
first takes the thread's lock and keeps it until the run ends (returned, raised, or its
stream closed): a second run of the same thread waits, then starts from the first one's
final checkpoint. The lock is an exclusive ``flock`` on a file in
``<data_dir>/locks/`` (shared by every process using that data directory; the kernel drops
it when a process dies, so a killed run never leaves a thread locked), and a per-process
lock when that folder cannot be written. A run that waits longer than
``THREAD_WAIT_SECONDS`` fails with `ThreadBusyError` naming the thread.

A file lock reaches the processes of one machine only. When the memory backend is shared
by several machines (Postgres: `stores.base.ThreadLocks`), the run also claims the thread
in that store (a Postgres advisory lock held by a session of its own), after the file
lock, so two server workers on two machines serialise their runs of one thread as two
processes on one machine do.

One LangGraph server already runs one run per thread at a time (its multitask strategy);
there the local locks are always free, and the shared one is what keeps two servers on one
database from running a thread at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

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
        self, thread_id: str, path: Path | None, shared: ThreadLocks | None = None
    ) -> None:
        self.thread_id = thread_id
        self.path = path
        self.shared = shared
        self.release_shared: Callable[[], None] | None = None
        self.shared_misses = 0
        key = str(path) if path is not None else f"thread:{thread_id}"
        with _local_guard:
            self.local = _local_locks.setdefault(key, threading.Lock())
        self.fd: int | None = None

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
            if self.fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
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
        """Drop the file lock (keeping its descriptor for another try), then this process's."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.local.release()

    def _close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def busy(self) -> ThreadBusyError:
        self._close()
        return ThreadBusyError(
            f"thread {self.thread_id!r} is busy: another run of it has been running for more "
            f"than {THREAD_WAIT_SECONDS:.0f} s (one run per thread at a time; "
            "wait for it to end, or use another thread)"
        )


@contextlib.contextmanager
def one_run(
    config: RunnableConfig | None, data_dir: str | None, shared: ThreadLocks | None = None
) -> Iterator[None]:
    """Hold the thread's lock for the body (no lock without a thread id).

    ``shared``: the memory backend's cross-machine thread locks, when it has them.
    """
    thread_id = _thread_of(config)
    if thread_id is None:
        yield
        return
    claim = _Claim(thread_id, _lock_path(data_dir, thread_id), shared)
    deadline = time.monotonic() + THREAD_WAIT_SECONDS
    while not claim.try_acquire():
        if time.monotonic() > deadline:
            raise claim.busy()
        time.sleep(claim.pause())
    try:
        yield
    finally:
        claim.release()


@contextlib.asynccontextmanager
async def a_one_run(
    config: RunnableConfig | None, data_dir: str | None, shared: ThreadLocks | None = None
) -> AsyncIterator[None]:
    """`one_run` for asyncio: waits without blocking the event loop."""
    thread_id = _thread_of(config)
    if thread_id is None:
        yield
        return
    claim = _Claim(thread_id, _lock_path(data_dir, thread_id), shared)
    deadline = time.monotonic() + THREAD_WAIT_SECONDS
    # File work runs in a worker thread: the server's event loop must never block on it.
    while not await asyncio.to_thread(claim.try_acquire):
        if time.monotonic() > deadline:
            raise claim.busy()
        await asyncio.sleep(claim.pause())
    try:
        yield
    finally:
        await asyncio.to_thread(claim.release)


def data_dir_of(context: Any) -> str | None:
    """The data directory a run's context names, or None when it names none readably."""
    from langgraph_memgpt.context import Context

    try:
        return str(Context.from_any(context).data_dir)
    except Exception:  # noqa: BLE001 - a bad context fails in the run itself, clearly
        return None
