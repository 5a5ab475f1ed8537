"""Vectors written to an HNSW index join its graph beside the turn, searched exactly until then.

An insert into a FAISS HNSW graph walks the graph to find the new node's neighbours: ~1 ms
a vector at 100k, and recording one message writes several (its own vector, its context
vector, and the context vectors of the messages before it, whose windows now hold it).
Inside the write, under the index's lock, that was the largest part of a 100k-message
agent's turn that a 1k one does not pay (``benchmarks/README.md``, ``per_turn.py``). So a
write to an HNSW index leaves its vectors *pending* (`IndexState.pending`): the write's
labels are live at once, every search scores the pending vectors exactly beside the graph
walk (``faiss_index.with_pending``: a few dozen dot products), and the `Flusher` thread adds them to
the graph a moment later, one batch per index, while the model writes its next reply.

Nothing depends on when that happens. SQLite holds every vector, so a process that stops
with vectors pending loses nothing: the next open reconciles its cache with SQLite and
adds them (``faiss_sync.SyncedIndex._load``). A cache file is written only from a graph
holding every live vector (`flush` first), and more than `PENDING_CAP` pending vectors
(an import, a catch-up) are added in the write that queues them. Exact indexes add at once:
their insert is a copy.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import numpy as np

from langgraph_memgpt.stores.embeddings import FloatArray
from langgraph_memgpt.stores.sqlite.faiss_index import IndexState, load_faiss

logger = logging.getLogger(__name__)

PENDING_CAP = 1024
"""At most this many vectors of one index wait outside its graph; a write past it adds them."""

FLUSH_PAUSE = 0.05
"""Seconds the flusher waits after a write before adding, gathering the turn's other writes."""


def add(state: IndexState, labels: np.ndarray[Any, Any], matrix: FloatArray) -> None:
    """Make ``labels`` (their vectors ``matrix``) searchable in ``state``'s index.

    An HNSW graph gets them later (`FLUSHER`), an exact index at once. Under ``state.lock``.
    """
    if state.kind != "hnsw":
        state.index.add_with_ids(matrix, labels)
        return
    for label, vector in zip(labels.tolist(), matrix, strict=True):
        state.pending[int(label)] = vector
    if len(state.pending) > PENDING_CAP:
        flush(state)
    else:
        FLUSHER.due(state)


def drop(state: IndexState, label: int) -> None:
    """``label`` is no longer live: forgotten if still pending, else a tombstone in FAISS."""
    if state.pending.pop(label, None) is None:
        state.tombstones.add(label)


def flush(state: IndexState) -> None:
    """Add the pending vectors to the graph, in one batch. Under ``state.lock``."""
    if not state.pending or state.index is None:
        return
    labels = np.fromiter(state.pending, dtype=np.int64, count=len(state.pending))
    matrix = np.ascontiguousarray(np.stack(list(state.pending.values())), dtype=np.float32)
    state.pending = {}
    state.index.add_with_ids(matrix, labels)


class Flusher:
    """One thread per process that adds indexes' pending vectors to their graphs.

    `due` after a write; the thread starts at the first one. `drain` waits until nothing
    is pending or being added (benchmarks and tests).
    """

    def __init__(self) -> None:
        self._due: dict[int, IndexState] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = False
        self.seconds = 0.0
        """Time the thread's additions have taken, all told (``per_turn.py`` reports it)."""

    def due(self, state: IndexState) -> None:
        """Add ``state``'s pending vectors soon (returns at once)."""
        with self._wake:
            self._due[id(state)] = state
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="memgpt-faiss-flusher", daemon=True
                )
                self._thread.start()
            self._wake.notify()

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until no index is due and none is being added to; False on ``timeout``."""
        with self._wake:
            return self._wake.wait_for(lambda: not self._due and not self._busy, timeout)

    def _run(self) -> None:
        load_faiss().omp_set_num_threads(1)  # beside the turn, not across both cores
        while True:
            with self._wake:
                while not self._due:
                    self._wake.wait()
                # A turn writes several vectors, in several writes: one batch after a
                # short pause adds them all.
                self._wake.wait_for(lambda: False, FLUSH_PAUSE)
                due, self._due = list(self._due.values()), {}
                self._busy = True
            start = time.perf_counter()
            try:
                for state in due:
                    try:
                        with state.lock:
                            flush(state)
                    except Exception:  # the vectors stay pending: searched, added later
                        logger.exception("adding pending vectors to a FAISS graph failed")
            finally:
                with self._wake:
                    self.seconds += time.perf_counter() - start
                    self._busy = False
                    self._wake.notify_all()


FLUSHER = Flusher()
"""The process's flusher."""


__all__ = ["FLUSHER", "FLUSH_PAUSE", "PENDING_CAP", "Flusher", "add", "drop", "flush"]
