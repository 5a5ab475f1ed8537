"""A value each process makes for itself on first use: a forked child makes its own.

The search threads of both backends (``sqlite.faiss_beside``, ``postgres.spare``) are
process-wide pools. A forked child (a pre-forking server, ``multiprocessing`` with
"fork") inherits its parent's pool object but none of its threads: work handed to it
would wait for ever. So a pool is made on first use and forgotten in a child at the fork.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerProcess(Generic[T]):
    """``make()``'s value, made once per process on first :meth:`get`."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._value: T | None = None
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def get(self) -> T:
        """The value of this process, made now if it has none."""
        with self._lock:
            if self._value is None:
                self._value = self._make()
            return self._value

    def _forget(self) -> None:
        self._value = None
        self._lock = threading.Lock()  # another thread of the parent may have held it


__all__ = ["PerProcess"]
