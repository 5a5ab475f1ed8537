"""A process-wide thread pool keeps working in a forked child (``stores.per_process``)."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langgraph_memgpt.stores.per_process import PerProcess
from langgraph_memgpt.stores.postgres import spare
from langgraph_memgpt.stores.sqlite import faiss_beside

POOL = PerProcess(lambda: ThreadPoolExecutor(2))


def test_the_value_is_made_once_per_process() -> None:
    made: list[object] = []

    def make() -> object:
        made.append(object())
        return made[-1]

    value = PerProcess(make)
    assert value.get() is value.get() is made[0]
    assert len(made) == 1


def _in_child(out: Any) -> None:
    out.send(
        (
            POOL.get().submit(os.getpid).result(timeout=10),
            spare._THREADS.get().submit(os.getpid).result(timeout=10),
            faiss_beside.THREADS.get().pool.submit(os.getpid).result(timeout=10),
        )
    )


def test_a_forked_child_runs_work_on_threads_of_its_own() -> None:
    # The parent's pools have threads (and idle ones) before the fork.
    for pool in (POOL.get(), spare._THREADS.get(), faiss_beside.THREADS.get().pool):
        assert pool.submit(os.getpid).result() == os.getpid()
    fork = multiprocessing.get_context("fork")
    receive, send = fork.Pipe(duplex=False)
    child = fork.Process(target=_in_child, args=(send,))
    child.start()
    assert receive.poll(timeout=30), "work handed to an inherited pool never ran"
    assert receive.recv() == (child.pid,) * 3
    child.join(timeout=30)
    assert child.exitcode == 0
