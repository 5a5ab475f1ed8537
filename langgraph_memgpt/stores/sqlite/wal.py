"""WAL checkpoints beside the turn: the memory file catches up with its log in a thread.

In WAL mode a commit appends to the ``-wal`` file, and SQLite copies the log back into the
database file (a checkpoint, ending in an fsync) from inside the commit that takes the log
past ``wal_autocheckpoint`` pages: every few turns one turn's commit waited for it, the
slowest chat turns of a large agent (``benchmarks/per_turn.py``, a chat turn's p95). So a writable
memory connection checkpoints by itself only as a safety net (`FOREGROUND_PAGES`), and
after an outermost commit (``db.transaction``) the process's `Checkpointer` thread runs a
``PASSIVE`` checkpoint on a connection of its own, at most once every `EVERY` seconds per
file. A passive checkpoint never waits for writers or readers and never blocks them: it
copies what no reader still needs, and the next pass copies the rest.

Nothing depends on when it runs: the log holds every committed transaction until it is
copied, and a crash leaves it to be replayed at the next open, as before.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

from langgraph_memgpt.stores.beside import Beside

logger = logging.getLogger(__name__)

FOREGROUND_PAGES = 10_000
"""``wal_autocheckpoint`` of the memory connections: a commit checkpoints by itself only
when the thread has fallen this far behind (~40 MB of log; SQLite's default is 1,000)."""

EVERY = 1.0
"""Seconds between two background checkpoints of one file."""

PAUSE = 0.2
"""Seconds the thread waits after a commit, gathering a turn's other commits."""

KEPT_CLOCKS = 64
"""Files whose last checkpoint time is kept before the ones older than `EVERY` are
dropped (a server writes a few files; a test suite thousands)."""


class Checkpointer(Beside[str]):
    """One thread per process that checkpoints the memory files written to.

    `committed` after a commit; `drain` waits until nothing is due or running.
    """

    name = "memgpt-wal-checkpointer"
    pause = PAUSE

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, float] = {}

    def committed(self, path: str) -> None:
        """The database file at ``path`` committed a transaction (returns at once)."""
        now = time.monotonic()
        if now - self._last.get(path, float("-inf")) < EVERY:
            return  # checkpointed or due within the last second: the next commit's
        if len(self._last) >= KEPT_CLOCKS:  # only the last second's matter
            self._last = {p: t for p, t in self._last.items() if now - t < EVERY}
        self._last[path] = now
        self.mark_due(path, path)

    def work(self, path: str) -> None:
        """Checkpoint the file (`checkpoint`)."""
        checkpoint(path)


def checkpoint(path: str) -> None:
    """A ``PASSIVE`` checkpoint of the database file at ``path``, if it still exists.

    Opened ``mode=rw``: a file removed since its commit is not created again.
    """
    try:
        conn = sqlite3.connect(f"{Path(path).as_uri()}?mode=rw", uri=True, timeout=1.0)
    except sqlite3.Error:
        return  # removed, or not ours to write any more
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error as err:  # busy, or a file replaced meanwhile: the next one copies it
        logger.debug("background checkpoint of %s skipped: %s", path, err)
    finally:
        conn.close()


CHECKPOINTER = Checkpointer()
"""The process's checkpointer."""


__all__ = ["CHECKPOINTER", "EVERY", "FOREGROUND_PAGES", "Checkpointer", "checkpoint"]
