"""A graph walk runs on a search thread while the search scores its words (SQLite).

``VectorIndex.begin_search`` starts what ``search`` would find; the hybrid search collects
it after its word signals. These tests pin that it finds exactly what ``search`` finds on
every path (walk, exclusions, filters, exact scoring, a walk that comes back short), that
the walk really runs beside the caller, and what happens when no thread is free, when the
walk fails, and in a forked child.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlite_utils

from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.sqlite import faiss_beside, faiss_index
from langgraph_memgpt.stores.sqlite import vectors as vectors_module
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.archival_signals import ArchivalSignals
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.sqlite.vectors import VectorIndex, forget_loaded_indexes
from langgraph_memgpt.stores.types import RecallMessage

DIM = 32
GRAPH_SIZE = 5000
"""Over the 4,096 below which a graph search leaving a few out scores the rest exactly."""


def unit(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture(autouse=True)
def fresh_process_state() -> None:
    forget_loaded_indexes()


@pytest.fixture(scope="module")
def graph_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A database whose index is an HNSW graph of :data:`GRAPH_SIZE` vectors (built once)."""
    root = tmp_path_factory.mktemp("beside")
    db = open_db(root / "memory.sqlite")
    index = graph_index(db, root)
    index.upsert(list(range(GRAPH_SIZE)), unit(GRAPH_SIZE, seed=1))
    index.close()
    db.conn.close()
    forget_loaded_indexes()
    yield root


def graph_index(db: sqlite_utils.Database, root: Path) -> VectorIndex:
    return VectorIndex(
        db,
        tier="archival",
        agent_id="alice",
        cache_dir=root / "faiss",
        model="test-model",
        dim=DIM,
        kind="hnsw",
    )


@pytest.fixture
def graph(graph_db: Path) -> Iterator[VectorIndex]:
    db = open_db(graph_db / "memory.sqlite")
    index = graph_index(db, graph_db)
    assert index.count() == GRAPH_SIZE and index._state.kind == "hnsw"
    yield index
    db.conn.close()


class WalkLog:
    """Which thread each walk ran on, and whether the caller had gone on by then."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.caller_went_on: list[bool] = []
        self.went_on = threading.Event()


@pytest.fixture
def walk_log(monkeypatch: pytest.MonkeyPatch) -> WalkLog:
    log = WalkLog()
    walk = faiss_index.walk

    def logged(*args: Any, **kwargs: Any) -> Any:
        log.threads.append(threading.current_thread().name)
        if threading.current_thread() is not threading.main_thread():
            log.caller_went_on.append(log.went_on.wait(timeout=10))
        return walk(*args, **kwargs)

    monkeypatch.setattr(faiss_beside, "walk", logged)
    return log


CASES = {
    "every vector": {},
    "all but a few": {"excluded_ids": [3, 7, 11]},
    "all but most (scored exactly)": {"excluded_ids": list(range(GRAPH_SIZE - 50))},
    "a filter (scored exactly)": {"allowed_ids": list(range(0, GRAPH_SIZE, 7))},
    "no candidate": {"allowed_ids": []},
    "more than there are": {"allowed_ids": list(range(30)), "k": 100},
}


@pytest.mark.parametrize("case", CASES)
def test_a_begun_search_finds_what_search_finds(graph: VectorIndex, case: str) -> None:
    args = dict(CASES[case])
    k = int(args.pop("k", 20))
    for seed in range(5):
        query = unit(1, seed=100 + seed)[0]
        assert graph.begin_search(query, k, **args)() == graph.search(query, k, **args)


def test_the_walk_runs_on_a_search_thread_while_the_caller_goes_on(
    graph: VectorIndex, walk_log: WalkLog
) -> None:
    query = unit(1, seed=5)[0]
    found = graph.begin_search(query, 10, excluded_ids=[1, 2])
    walk_log.went_on.set()  # the caller's own work (the word signals) would run here
    assert found() == graph.search(query, 10, excluded_ids=[1, 2])
    assert walk_log.threads[0].startswith("memgpt-faiss-walk")
    assert walk_log.caller_went_on == [True]


def test_only_a_graph_of_every_candidate_walks_beside(
    graph: VectorIndex, walk_log: WalkLog
) -> None:
    graph.begin_search(unit(1, seed=6)[0], 10, allowed_ids=list(range(0, GRAPH_SIZE, 2)))()
    assert walk_log.threads == []  # a filter: scored exactly, reading SQLite, here


def test_with_no_free_search_thread_the_walk_runs_here(
    graph: VectorIndex, walk_log: WalkLog
) -> None:
    threads = faiss_beside.THREADS.get()
    taken = 0
    while threads.free.acquire(blocking=False):
        taken += 1
    try:
        query = unit(1, seed=7)[0]
        assert graph.begin_search(query, 10)() == graph.search(query, 10)
    finally:
        for _ in range(taken):
            threads.free.release()
    assert walk_log.threads == [threading.main_thread().name]


def test_a_walk_that_comes_back_short_is_scored_exactly(
    graph: VectorIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(faiss_beside, "walk", lambda *args, **kwargs: None)
    query = unit(1, seed=8)[0]
    exact = sorted(
        ((item, float(vector @ query)) for item, vector in enumerate(unit(GRAPH_SIZE, seed=1))),
        key=lambda hit: -hit[1],
    )[:10]
    found = graph.begin_search(query, 10)()
    assert [item for item, _ in found] == [item for item, _ in exact]


def test_a_failed_walk_raises_where_it_is_collected_and_frees_its_thread(
    graph: VectorIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("walk failed")

    monkeypatch.setattr(faiss_beside, "walk", broken)
    for _ in range(faiss_beside.SEARCH_THREADS + 1):
        found = graph.begin_search(unit(1, seed=9)[0], 10)
        with pytest.raises(RuntimeError, match="walk failed"):
            found()
    threads = faiss_beside.THREADS.get()
    assert all(threads.free.acquire(blocking=False) for _ in range(faiss_beside.SEARCH_THREADS))
    for _ in range(faiss_beside.SEARCH_THREADS):
        threads.free.release()


def _search_in_child(root: str, out: Any) -> None:
    db = open_db(Path(root) / "memory.sqlite")
    index = graph_index(db, Path(root))
    out.send(index.begin_search(unit(1, seed=10)[0], 5)())


def test_a_forked_child_walks_on_threads_of_its_own(graph: VectorIndex, graph_db: Path) -> None:
    query = unit(1, seed=10)[0]
    expected = graph.begin_search(query, 5)()  # this process's search threads exist now
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(
        target=_search_in_child, args=(str(graph_db), send)
    )
    child.start()
    assert receive.poll(timeout=20), "the child's search never came back"
    assert receive.recv() == expected
    child.join(timeout=30)
    assert child.exitcode == 0


# ------------------------------------------------------------------ in the hybrid searches


class Words:
    """Embeddings made of words: each word a fixed random direction (no model)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        total = np.zeros(DIM, dtype=np.float32)
        for word in text.lower().split():
            seed = sum(ord(c) * 31**i for i, c in enumerate(word)) % 2**32
            total += np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
        return (total / (np.linalg.norm(total) or 1.0)).tolist()


TOPICS = "garden bike piano recipe hiking camera guitar chess pottery sailing".split()


def texts(n: int) -> list[str]:
    rng = np.random.default_rng(3)
    return [" ".join(rng.choice(TOPICS, size=4)) + f" note {i}" for i in range(n)]


QUERIES = ["piano recipe", "hiking camera chess", "bike sailing", "pottery garden piano"]


@pytest.fixture
def graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every index of a few hundred items is a graph (``"auto"`` turns HNSW at 100)."""
    monkeypatch.setattr(faiss_index, "AUTO_HNSW_MIN_VECTORS", 100)


@pytest.fixture
def memory_db(tmp_path: Path, graphs: None, walk_log: WalkLog) -> sqlite_utils.Database:
    """A memory database whose indexes are graphs; walks are logged, never held back."""
    walk_log.went_on.set()
    return open_db(tmp_path / "memory.sqlite")


def test_recall_finds_the_same_page_with_walks_beside_and_here(
    memory_db: sqlite_utils.Database,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    walk_log: WalkLog,
) -> None:
    recall = SqliteRecallMemory(memory_db, "alice", Words(), tmp_path / "faiss")  # type: ignore[arg-type]
    recall.add_many(
        [
            RecallMessage(
                "alice",
                "t",
                f"m{i}",
                "user",
                text,
                f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00",
                turn=i,
            )
            for i, text in enumerate(texts(400))
        ]
    )
    beside = {q: recall.search(q, page_size=10) for q in QUERIES}
    assert any(t.startswith("memgpt-faiss-walk") for t in walk_log.threads)
    monkeypatch.setattr(vectors_module, "begin_walk", faiss_beside.begin_walk_here)
    for query, page in beside.items():
        assert recall.search(query, page_size=10) == page


def test_archival_starts_its_walk_before_its_words_unless_the_query_names_a_tag(
    memory_db: sqlite_utils.Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archival = SqliteArchivalMemory(memory_db, "alice", Words(), tmp_path / "faiss")  # type: ignore[arg-type]
    archival.insert_many(
        [NewPassage(text, [TOPICS[n % 3], "notes"]) for n, text in enumerate(texts(300))]
    )
    order: list[str] = []
    for name in ("word_signals", "begin_nearest"):
        method = getattr(ArchivalSignals, name)

        def logged(
            self: Any, *args: Any, _name: str = name, _method: Any = method, **kwargs: Any
        ) -> Any:
            order.append(_name)
            return _method(self, *args, **kwargs)

        monkeypatch.setattr(ArchivalSignals, name, logged)
    queries = {"recipe camera": "vectors first", "garden hiking": "words first"}
    pages = {}
    for query, expected in queries.items():
        order.clear()
        pages[query] = archival.search(query, page_size=10)
        first = "vectors first" if order[0] == "begin_nearest" else "words first"
        assert first == expected, query  # "garden" is a tag: its matches' tags shape the text
    # The same pages as a search that always reads the words first.
    monkeypatch.setattr(ArchivalSignals, "vectors_wait_for_words", lambda self, q, m: True)
    for query, page in pages.items():
        assert archival.search(query, page_size=10) == page


def test_archival_reads_the_agents_distinct_tags_up_to_a_limit(tmp_path: Path) -> None:
    db = open_db(tmp_path / "memory.sqlite")
    archival = SqliteArchivalMemory(db, "alice", None, tmp_path / "faiss")
    other = SqliteArchivalMemory(db, "bob", None, tmp_path / "faiss")
    for n in range(40):
        archival.insert(f"passage {n}", tags=[f"tag{n % 7}", "common"])
    other.insert("bob's", tags=["bobs-only"])
    source = ArchivalSignals(archival, "b.agent_id = ?", ["alice"])  # type: ignore[arg-type]
    assert source._agent_tags(100) == sorted({f"tag{n}" for n in range(7)} | {"common"})
    assert len(source._agent_tags(3)) == 3
