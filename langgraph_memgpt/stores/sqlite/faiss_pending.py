"""Vectors written to an HNSW index join its graph beside the turn, searched exactly until then.

An insert into a FAISS HNSW graph walks the graph to find the new node's neighbours, a cost
that grows with the graph, and recording one message writes several (its own vector, its
context vector, and the context vectors of the messages before it, whose windows now hold
it). Inside the write, under the index's lock, that was the largest part of a 100k-message
agent's turn that a 1k one does not pay (``benchmarks/README.md``, ``per_turn.py``). So a
write to an HNSW index leaves its vectors *pending* (`IndexState.pending`): the write's
labels are live at once, every search scores the pending vectors exactly beside the graph
walk (``faiss_index.with_pending``: a few dozen dot products), and the `Flusher` thread adds
them to the graph a moment later, one batch per index, while the model writes its next
reply.

Nothing depends on when that happens. SQLite holds every vector, so a process that stops
with vectors pending loses nothing: the next open reconciles its cache with SQLite and
adds them (``faiss_sync.SyncedIndex._load``). A cache file is written only from a graph
holding every live vector (`flush` first), and more than `PENDING_CAP` pending vectors
(an import, a catch-up) are added in the write that queues them. Exact indexes add at once:
their insert is a copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from langgraph_memgpt.stores.beside import Beside
from langgraph_memgpt.stores.embeddings import FloatArray
from langgraph_memgpt.stores.sqlite.faiss_index import IndexState, load_faiss

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


class Flusher(Beside[IndexState]):
    """One thread per process that adds indexes' pending vectors to their graphs.

    `due` after a write; `drain` waits until nothing is pending or being added.
    """

    name = "memgpt-faiss-flusher"
    pause = FLUSH_PAUSE  # a turn writes several vectors: one batch after a pause adds all

    def due(self, state: IndexState) -> None:
        """Add ``state``'s pending vectors soon (returns at once)."""
        self.mark_due(id(state), state)

    def start(self) -> None:
        """One OpenMP thread for the inserts: beside the turn, not across both cores."""
        load_faiss().omp_set_num_threads(1)

    def work(self, state: IndexState) -> None:
        """Add the index's pending vectors (if it fails they stay pending, still searched)."""
        with state.lock:
            flush(state)


FLUSHER = Flusher()
"""The process's flusher."""


__all__ = ["FLUSHER", "FLUSH_PAUSE", "PENDING_CAP", "Flusher", "add", "drop", "flush"]
