"""Operating-system chores several layers need, each done one way.

The clock, atomic file writes, file locks, and whether a process still lives. Imports nothing of the
package, so the stores and the model server can both use it.
"""

from __future__ import annotations

import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from filelock import FileLock


def utc_now(timespec: Literal["seconds", "microseconds"] = "microseconds") -> str:
    """The current time, ISO-8601 UTC (sortable as text).

    Microseconds for rows that are ordered by time; seconds for what the model reads.
    """
    return datetime.now(UTC).isoformat(timespec=timespec)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one.

    The temporary file is named ``.<file>.<pid>.<random>.tmp`` beside ``path`` (so the final
    rename stays on one file system, and a cleaner can tell whose leftover it is).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (where directories can be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (another user's process counts)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists, it is just not ours
        return True
    return True


def file_lock(path: Path, mode: int = 0o644) -> FileLock:
    """An exclusive lock on ``path`` (``flock``), taken without waiting, held until released.

    Every lock file of the package (a thread's runs, ``serve``'s data directory) is one of
    these: ``acquire()`` raises ``filelock.Timeout`` at once when another process (or
    another lock object in this one) holds it; a lock taken in one thread may be released
    in another (no thread-local state); the file stays (never unlinked while another
    process may wait on it); a process that dies lets go.
    """
    return FileLock(path, timeout=0, mode=mode, thread_local=False, preserve_lock_file=True)
