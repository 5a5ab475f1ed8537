"""FAISS graph walks on a search thread, beside the caller's SQLite work.

A hybrid search at 100k messages walks three HNSW graphs (recall's message and context
vectors, archival's passages) and scores its words in SQLite, which takes about as long
(``benchmarks/README.md``, ``search_walks.py``). The two need nothing of each other until
they are fused, and FAISS releases the GIL while it walks: on a thread of its own a walk
runs on the other core while the caller's thread reads SQLite, and the search waits for the
slower of the two instead of their sum (``VectorIndex.begin_search``). What is found is the
same.

Only the walk goes to the thread: it reads the loaded index and nothing else
(``faiss_index.walk``). Catching up with the database before it, and the exact scoring
after a walk that came back short, read SQLite, whose connections belong to the thread
that opened them, so they stay on the caller's.

A search thread is taken only when one is free: a busy process (many agents searching at
once) walks on the caller's thread, as before, and never queues behind another search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor

from langgraph_memgpt.stores.embeddings import FloatArray
from langgraph_memgpt.stores.per_process import PerProcess
from langgraph_memgpt.stores.sqlite.faiss_index import IndexState, walk

Hits = list[tuple[int, float]]

SEARCH_THREADS = 2
"""Walks that may run beside their callers at once, in a process (a core each, here)."""


class _Threads:
    """The process's search threads, and how many are free."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(SEARCH_THREADS, thread_name_prefix="memgpt-faiss-walk")
        self.free = threading.BoundedSemaphore(SEARCH_THREADS)


THREADS = PerProcess(_Threads)
"""This process's search threads (a forked child makes its own)."""


def begin_walk(
    state: IndexState, q: FloatArray, k: int, excluded: Collection[int] = ()
) -> Callable[[], Hits | None]:
    """:func:`faiss_index.walk` begun on a free search thread, or done here if none is.

    Calling the result returns the walk's hits (None: short, score exactly), raising what
    the walk raised. The walk takes ``state.lock`` itself; the caller must not hold it
    while it waits.
    """
    threads = THREADS.get()
    if not threads.free.acquire(blocking=False):
        return begin_walk_here(state, q, k, excluded)

    def run() -> Hits | None:
        try:
            with state.lock:
                return walk(state, q, k, excluded)
        finally:
            threads.free.release()

    try:
        future: Future[Hits | None] = threads.pool.submit(run)
    except RuntimeError:  # the interpreter is shutting down
        threads.free.release()
        return begin_walk_here(state, q, k, excluded)
    return future.result


def begin_walk_here(
    state: IndexState, q: FloatArray, k: int, excluded: Collection[int] = ()
) -> Callable[[], Hits | None]:
    """:func:`begin_walk` on the caller's thread."""
    with state.lock:
        hits = walk(state, q, k, excluded)
    return lambda: hits


__all__ = ["SEARCH_THREADS", "THREADS", "begin_walk", "begin_walk_here"]
