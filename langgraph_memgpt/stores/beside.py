"""Store work done beside the turn: one thread per kind of work, woken by the writes.

A turn's writes leave some work that no answer waits for (FAISS graph inserts, SQLite's
WAL checkpoints). `Beside` is the thread that does it: a write marks an item due and
returns at once; after a short pause (gathering the turn's other writes) the thread takes
every due item and does its pass; `drain` waits until nothing is left (benchmarks wait
for it between turns, untimed; tests to see the result); `close` does what is due and
stops the thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

Item = TypeVar("Item")


class Beside(Generic[Item]):
    """A daemon thread that runs `work` on the items due, one pass after each pause.

    Subclasses give ``name`` (the thread's), ``pause`` (seconds) and `work`; `start` runs
    once in the thread first.
    """

    name = "memgpt-beside"
    pause = 0.05

    def __init__(self) -> None:
        self._due: dict[Hashable, Item] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._working: set[Hashable] = set()
        self._closing = False
        self.seconds = 0.0
        """Time the thread's passes have taken, all told (``per_turn.py`` reports it)."""

    def mark_due(self, key: Hashable, item: Item) -> None:
        """Do ``item`` in the next pass (once, however often it is marked); returns at once."""
        with self._wake:
            if self._closing:
                return
            self._due[key] = item
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            self._wake.notify()

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until nothing is due and no pass runs; False if ``timeout`` passed first."""
        with self._wake:
            return self._wake.wait_for(lambda: not self._due and not self._busy, timeout)

    def settle(self, key: Hashable, timeout: float = 30.0) -> bool:
        """Drop ``key``'s item if it is still due, and wait while a pass does it.

        For the owner of what the item touches, before it lets go of it (a database file
        closed, then copied or moved aside): after `settle` no pass of this thread reads it,
        until it is marked due again. False if ``timeout`` passed first.
        """
        with self._wake:
            self._due.pop(key, None)
            return self._wake.wait_for(lambda: key not in self._working, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Do what is due, then stop the thread (waits up to ``timeout`` seconds)."""
        with self._wake:
            self._closing = True
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def start(self) -> None:
        """Set the thread up (runs in it, before its first pass)."""

    def work(self, item: Item) -> None:
        """Do one due item."""
        raise NotImplementedError

    def _run(self) -> None:
        self.start()
        while True:
            with self._wake:
                while not self._due and not self._closing:
                    self._wake.wait()
                self._wake.wait_for(lambda: self._closing, self.pause)
                due, self._due = list(self._due.items()), {}
                if not due and self._closing:
                    return
                self._busy = True
                self._working = {key for key, _ in due}
            begun = time.perf_counter()
            try:
                for _, item in due:
                    try:
                        self.work(item)
                    except Exception:  # left for a later pass, or for the next open
                        logger.exception("%s: a pass failed", self.name)
            finally:
                with self._wake:
                    self.seconds += time.perf_counter() - begun
                    self._busy = False
                    self._working = set()
                    self._wake.notify_all()


__all__ = ["Beside"]
