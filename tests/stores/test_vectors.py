"""VectorIndex: vectors kept in SQLite, searched through a FAISS cache that rebuilds itself.

Random unit vectors (not the embedding model) keep the large-count tests fast.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import sqlite_utils

from langgraph_memgpt.stores.sqlite import faiss_index, faiss_pending, faiss_sync
from langgraph_memgpt.stores.sqlite.db import open_db, transaction
from langgraph_memgpt.stores.sqlite.faiss_cache import read_cache
from langgraph_memgpt.stores.sqlite.vectors import IndexKind, VectorIndex, forget_loaded_indexes
from langgraph_memgpt.stores.types import EmbeddingMismatchError

DIM = 64
KINDS: list[IndexKind] = ["flat", "hnsw", "auto"]

MakeIndex = Callable[..., VectorIndex]


def unit(rows: np.ndarray) -> np.ndarray:
    rows = np.atleast_2d(rows).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def random_unit(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    return unit(np.random.default_rng(seed).normal(size=(n, dim)))


def near(vector: np.ndarray, n: int, noise: float, seed: int) -> np.ndarray:
    """``n`` vectors within ``noise`` of ``vector`` (near-identical for small noise)."""
    jitter = np.random.default_rng(seed).normal(scale=noise, size=(n, vector.shape[-1]))
    return unit(vector + jitter)


@pytest.fixture
def cache_dir(tmp_data_dir: Path) -> Path:
    return tmp_data_dir / "faiss"


@pytest.fixture
def make_index(db: sqlite_utils.Database, cache_dir: Path) -> MakeIndex:
    def make(
        agent_id: str = "alice",
        *,
        kind: IndexKind = "flat",
        model: str = "test-model",
        dim: int = DIM,
        tier: str = "archival",
        key: str = "text",
    ) -> VectorIndex:
        return VectorIndex(
            db,
            tier=tier,
            agent_id=agent_id,
            cache_dir=cache_dir,
            model=model,
            dim=dim,
            key=key,
            kind=kind,
        )

    return make


@pytest.fixture(autouse=True)
def fresh_process_state() -> None:
    forget_loaded_indexes()


def reopen(make_index: MakeIndex, **kwargs: object) -> VectorIndex:
    """The index as a new process would see it: nothing loaded in memory."""
    forget_loaded_indexes()
    return make_index(**kwargs)


@pytest.mark.parametrize("kind", KINDS)
def test_search_returns_nearest_items_by_cosine(make_index: MakeIndex, kind: IndexKind) -> None:
    index = make_index(kind=kind)
    vectors = random_unit(200)
    index.upsert(list(range(1000, 1200)), vectors)
    hits = index.search(vectors[17], 5)
    assert hits[0][0] == 1017
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [score for _, score in hits] == sorted((s for _, s in hits), reverse=True)
    exact = sorted(range(200), key=lambda i: -float(vectors[i] @ vectors[17]))[:5]
    assert [item for item, _ in hits] == [1000 + i for i in exact]


@pytest.mark.parametrize("kind", KINDS)
def test_upsert_replaces_an_items_vector(make_index: MakeIndex, kind: IndexKind) -> None:
    index = make_index(kind=kind)
    vectors = random_unit(50)
    index.upsert(list(range(50)), vectors)
    index.upsert([7], -vectors[7])
    hits = index.search(vectors[7], 50)
    assert [item for item, _ in hits].count(7) == 1
    assert dict(hits)[7] == pytest.approx(-1.0, abs=1e-5)
    assert index.count() == 50


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_replacements_never_return_an_item_twice(
    make_index: MakeIndex, kind: IndexKind
) -> None:
    index = make_index(kind=kind)
    index.upsert(list(range(20)), random_unit(20, seed=1))
    for round_ in range(40):  # enough tombstones to trigger compaction
        index.upsert(list(range(20)), random_unit(20, seed=100 + round_))
    final = random_unit(20, seed=139)
    hits = index.search(final[3], 20)
    assert sorted(item for item, _ in hits) == list(range(20))
    assert hits[0][0] == 3


@pytest.mark.parametrize("kind", KINDS)
def test_deleted_items_are_never_returned(make_index: MakeIndex, kind: IndexKind) -> None:
    index = make_index(kind=kind)
    vectors = random_unit(30)
    index.upsert(list(range(30)), vectors)
    assert index.delete([4, 5, 999]) == 2
    hits = index.search(vectors[4], 30)
    assert {4, 5}.isdisjoint(item for item, _ in hits)
    assert len(hits) == 28
    assert index.count() == 28


@pytest.mark.parametrize("kind", KINDS)
def test_filter_inside_one_agent_is_applied_before_ranking(
    make_index: MakeIndex, kind: IndexKind
) -> None:
    # 1,000 non-matching vectors sit right on the query; the 5 matching ones are far away.
    index = make_index(kind=kind)
    query = random_unit(1, seed=7)[0]
    crowd = near(query, 1000, noise=0.01, seed=8)
    matching = random_unit(5, seed=9)
    index.upsert(list(range(1000)), crowd)
    index.upsert(list(range(5000, 5005)), matching)
    hits = index.search(query, 5, allowed_ids=range(5000, 5005))
    assert sorted(item for item, _ in hits) == list(range(5000, 5005))
    # Asking for more than are allowed returns every allowed item, nothing else.
    hits = index.search(query, 50, allowed_ids=[5001, 5003, 12345])
    assert sorted(item for item, _ in hits) == [5001, 5003]


@pytest.mark.parametrize("kind", KINDS)
def test_excluded_items_are_left_out_before_ranking(make_index: MakeIndex, kind: IndexKind) -> None:
    # The few nearest vectors are excluded: the search ranks exactly the others, as a
    # search allowing every other item does, and never returns short.
    index = make_index(kind=kind)
    query = random_unit(1, seed=21)[0]
    index.upsert(list(range(10)), near(query, 10, noise=0.01, seed=22))
    index.upsert(list(range(100, 5100)), random_unit(5000, seed=23))
    index.delete([3])  # a tombstone stays excluded too
    excluded = [0, 1, 2, 4, 999_999]
    others = [*range(5, 10), *range(100, 5100)]
    hits = index.search(query, 8, excluded_ids=excluded)
    assert hits == index.search(query, 8, allowed_ids=others)
    assert {item for item, _ in hits[:5]} == set(range(5, 10))
    assert len(index.search(query, 8, allowed_ids=[5, 6, 0], excluded_ids=[0])) == 2
    assert index.search(query, 3, allowed_ids=[0, 1], excluded_ids=[0, 1]) == []


@pytest.mark.parametrize("kind", KINDS)
def test_other_agents_vectors_never_crowd_out_a_scoped_search(
    make_index: MakeIndex, kind: IndexKind
) -> None:
    query = random_unit(1, seed=11)[0]
    bob = make_index("bob", kind=kind)
    bob.upsert(list(range(1000)), near(query, 1000, noise=0.005, seed=12))
    alice = make_index("alice", kind=kind)
    alice_vectors = random_unit(5, seed=13)
    alice.upsert([3, 4, 5, 6, 7], alice_vectors)  # ids overlap bob's on purpose

    hits = alice.search(query, 10)
    assert sorted(item for item, _ in hits) == [3, 4, 5, 6, 7]
    scores = dict(hits)
    for n, item in enumerate([3, 4, 5, 6, 7]):
        assert scores[item] == pytest.approx(float(alice_vectors[n] @ query), abs=1e-5)
    # Even naming bob's ids cannot reach bob's vectors.
    assert alice.search(query, 10, allowed_ids=[100, 200, 300]) == []
    assert alice.count() == 5 and bob.count() == 1000


def test_search_edge_cases(make_index: MakeIndex) -> None:
    index = make_index()
    assert index.search(random_unit(1)[0], 5) == []
    index.upsert([1, 2], random_unit(2))
    assert len(index.search(random_unit(1, seed=3)[0], 100)) == 2
    assert index.search(random_unit(1, seed=3)[0], 0) == []
    assert index.search(random_unit(1, seed=3)[0], 5, allowed_ids=[]) == []
    with pytest.raises(ValueError, match="dimension 64"):
        index.search(np.ones(10, dtype=np.float32), 5)
    with pytest.raises(ValueError, match="2 vector"):
        index.upsert([1, 2], random_unit(3))


def test_vectors_are_normalised_on_the_way_in(make_index: MakeIndex) -> None:
    index = make_index()
    raw = np.random.default_rng(0).normal(size=(3, DIM)).astype(np.float32) * 7.0
    index.upsert([1, 2, 3], raw)
    hits = index.search(raw[1] * 0.1, 1)
    assert hits == [(2, pytest.approx(1.0, abs=1e-5))]


def test_scores_are_exact_cosines_for_given_items(make_index: MakeIndex) -> None:
    index = make_index()
    vectors = random_unit(10)
    index.upsert(list(range(10)), vectors)
    scores = index.scores(vectors[0], [0, 3, 42])
    assert set(scores) == {0, 3}
    assert scores[3] == pytest.approx(float(vectors[0] @ vectors[3]), abs=1e-5)


# ---------------------------------------------------------------- the cache file


def test_cache_file_and_sidecar_are_written_and_reused(
    make_index: MakeIndex, cache_dir: Path
) -> None:
    index = make_index()
    vectors = random_unit(100)
    index.upsert(list(range(100)), vectors)
    index.persist()
    sidecar = json.loads(index.sidecar_path.read_text())
    assert sidecar["count"] == 100 and sidecar["model"] == "test-model" and sidecar["dim"] == DIM
    assert index.path.parent.parent == cache_dir
    assert not list(index.path.parent.glob("*.tmp"))  # atomic writes leave no temp files
    before = index.path.stat().st_mtime_ns

    again = reopen(make_index)
    assert again.search(vectors[42], 1)[0][0] == 42
    assert index.path.stat().st_mtime_ns == before  # an intact, current file is not rewritten


def damage_delete(path: Path) -> None:
    path.unlink()


def damage_truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def damage_garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(5)
    start = len(data) // 3
    data[start : start + 4096] = rng.integers(0, 256, size=4096, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))


def damage_empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("damage", [damage_delete, damage_truncate, damage_garble, damage_empty])
def test_missing_or_damaged_cache_is_rebuilt_from_sqlite(
    make_index: MakeIndex, kind: IndexKind, damage: Callable[[Path], None]
) -> None:
    index = make_index(kind=kind)
    vectors = random_unit(300, seed=21)
    index.upsert(list(range(300)), vectors)
    index.persist()
    damage(index.path)

    again = reopen(make_index, kind=kind)
    for probe in (0, 123, 299):
        assert again.search(vectors[probe], 1)[0][0] == probe
    assert again.count() == 300
    # ...and the rebuilt cache was written back, intact.
    sidecar = json.loads(again.sidecar_path.read_text())
    assert sidecar["count"] == 300


def test_damaged_or_missing_sidecar_forces_a_rebuild(make_index: MakeIndex) -> None:
    index = make_index()
    vectors = random_unit(40)
    index.upsert(list(range(40)), vectors)
    index.persist()
    index.sidecar_path.write_text("{not json")
    assert reopen(make_index).search(vectors[9], 1)[0][0] == 9
    index.sidecar_path.unlink()
    assert reopen(make_index).search(vectors[10], 1)[0][0] == 10


def test_whole_cache_folder_lost_is_rebuilt(make_index: MakeIndex, cache_dir: Path) -> None:
    index = make_index()
    vectors = random_unit(40)
    index.upsert(list(range(40)), vectors)
    shutil.rmtree(cache_dir)
    assert reopen(make_index).search(vectors[33], 1)[0][0] == 33


@pytest.mark.parametrize("kind", KINDS)
def test_stale_cache_is_brought_up_to_date_from_sqlite(
    make_index: MakeIndex, kind: IndexKind, tmp_path: Path
) -> None:
    index = make_index(kind=kind)
    vectors = random_unit(60, seed=31)
    index.upsert(list(range(50)), vectors[:50])
    index.persist()
    old_file, old_sidecar = tmp_path / "old.faiss", tmp_path / "old.json"
    shutil.copy(index.path, old_file)
    shutil.copy(index.sidecar_path, old_sidecar)

    index.upsert(list(range(50, 60)), vectors[50:])  # added after the snapshot
    index.upsert([0], vectors[59])  # replaced after the snapshot
    index.delete([1])  # deleted after the snapshot
    index.persist()
    shutil.copy(old_file, index.path)  # an out-of-date cache, e.g. a crash before persist
    shutil.copy(old_sidecar, index.sidecar_path)

    again = reopen(make_index, kind=kind)
    assert again.count() == 59
    assert again.search(vectors[55], 1)[0][0] == 55
    assert 1 not in {item for item, _ in again.search(vectors[1], 60)}
    assert dict(again.search(vectors[59], 2)).keys() == {0, 59}


def test_writes_from_another_process_are_seen_by_a_loaded_index(make_index: MakeIndex) -> None:
    first = make_index()
    vectors = random_unit(20)
    first.upsert(list(range(10)), vectors[:10])
    assert first.count() == 10

    forget_loaded_indexes()  # `second` loads its own copy, as another process would
    second = make_index()
    second.upsert(list(range(10, 20)), vectors[10:])
    second.delete([0])

    assert first.search(vectors[15], 1)[0][0] == 15
    assert 0 not in {item for item, _ in first.search(vectors[0], 20)}
    assert first.count() == 19


def test_a_write_on_a_stale_copy_keeps_the_other_process_writes(make_index: MakeIndex) -> None:
    first = make_index()
    vectors = random_unit(3)
    first.upsert([1], vectors[:1])
    forget_loaded_indexes()
    make_index().upsert([2], vectors[1:2])  # another process
    first.upsert([3], vectors[2:3])  # `first` has not searched since
    assert {item for item, _ in first.search(vectors[1], 3)} == {1, 2, 3}
    assert first.search(vectors[1], 1)[0][0] == 2


def test_rolled_back_upsert_leaves_no_trace(
    db: sqlite_utils.Database, make_index: MakeIndex
) -> None:
    index = make_index()
    vectors = random_unit(5)
    index.upsert([1, 2], vectors[:2])
    with pytest.raises(RuntimeError), transaction(db):
        index.upsert([3], vectors[2:3])
        raise RuntimeError("the item row failed to insert")
    assert {item for item, _ in index.search(vectors[2], 5)} == {1, 2}
    assert index.count() == 2


def test_rebuild_recreates_the_cache(make_index: MakeIndex) -> None:
    index = make_index()
    vectors = random_unit(30)
    index.upsert(list(range(30)), vectors)
    index.rebuild()
    assert index.path.exists()
    assert index.search(vectors[3], 1)[0][0] == 3


def test_flat_and_hnsw_caches_are_interchangeable(make_index: MakeIndex) -> None:
    flat = make_index(kind="flat")
    vectors = random_unit(100)
    flat.upsert(list(range(100)), vectors)
    flat.persist()
    hnsw = reopen(make_index, kind="hnsw")  # the sidecar says flat: rebuilt as HNSW
    assert hnsw.search(vectors[77], 1)[0][0] == 77
    assert json.loads(hnsw.sidecar_path.read_text())["kind"] == "hnsw"


def test_hnsw_finds_what_exact_search_finds(make_index: MakeIndex) -> None:
    vectors = random_unit(3000, seed=41)
    flat = make_index("flat-agent", kind="flat")
    hnsw = make_index("hnsw-agent", kind="hnsw")
    flat.upsert(list(range(3000)), vectors)
    hnsw.upsert(list(range(3000)), vectors)
    queries = random_unit(20, seed=42)
    overlap = []
    for query in queries:
        exact = {item for item, _ in flat.search(query, 10)}
        approx = {item for item, _ in hnsw.search(query, 10)}
        overlap.append(len(exact & approx) / 10)
    assert np.mean(overlap) >= 0.9


def sidecar_kind(index: VectorIndex) -> str:
    return str(json.loads(index.sidecar_path.read_text())["kind"])


def test_auto_index_is_exact_until_the_threshold_then_hnsw_for_good(
    make_index: MakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(faiss_index, "AUTO_HNSW_MIN_VECTORS", 300)
    vectors = random_unit(400, seed=5)
    index = make_index(kind="auto")
    index.upsert(list(range(299)), vectors[:299])
    index.persist()
    assert sidecar_kind(index) == "flat"
    index.upsert([299], vectors[299:300])  # the 300th vector switches it
    index.persist()
    assert sidecar_kind(index) == "hnsw"
    index.upsert(list(range(300, 400)), vectors[300:])
    assert [item for item, _ in index.search(vectors[350], 1)] == [350]
    assert len(index.search(vectors[0], 50)) == 50

    # A new process loads the graph as it is, and shrinking never turns it back.
    reopened = reopen(make_index, kind="auto")
    assert [item for item, _ in reopened.search(vectors[123], 1)] == [123]
    reopened.delete(range(200, 400))
    reopened.persist()
    assert sidecar_kind(reopened) == "hnsw"
    assert {item for item, _ in reopened.search(vectors[0], 300)} == set(range(200))


def test_auto_index_never_builds_its_graph_while_holding_the_write_lock(
    make_index: MakeIndex, db: sqlite_utils.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Building a graph takes seconds; other writers wait only 10 s for the lock.
    monkeypatch.setattr(faiss_index, "AUTO_HNSW_MIN_VECTORS", 100)
    vectors = random_unit(150, seed=8)
    index = make_index(kind="auto")
    with transaction(db):
        index.upsert(list(range(150)), vectors)
        assert [item for item, _ in index.search(vectors[42], 1)] == [42]
        assert index._state.kind == "flat"
    assert [item for item, _ in index.search(vectors[42], 1)] == [42]  # after the commit
    assert index._state.kind == "hnsw"
    assert sidecar_kind(index) == "hnsw"


def test_auto_index_opened_on_a_big_flat_cache_rebuilds_it_as_hnsw(
    make_index: MakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = random_unit(120, seed=6)
    flat = make_index(kind="flat")
    flat.upsert(list(range(120)), vectors)
    flat.persist()
    monkeypatch.setattr(faiss_index, "AUTO_HNSW_MIN_VECTORS", 100)
    auto = reopen(make_index, kind="auto")
    assert [item for item, _ in auto.search(vectors[7], 1)] == [7]
    assert sidecar_kind(auto) == "hnsw"


# ---------------------------------------------------------------- model identity


def test_another_embedding_model_is_refused_with_the_reembed_command(
    make_index: MakeIndex, tmp_data_dir: Path
) -> None:
    index = make_index(model="model-a")
    index.upsert([1], random_unit(1))
    with pytest.raises(EmbeddingMismatchError) as err:
        make_index(model="model-b")
    message = str(err.value)
    assert "model-a (dim 64)" in message and "model-b (dim 64)" in message
    assert f"langgraph-memgpt reembed --data-dir {tmp_data_dir} --agent alice" in message
    with pytest.raises(EmbeddingMismatchError, match="dim 32"):
        make_index(model="model-a", dim=32)


def test_the_model_is_recorded_per_agent_and_tier(make_index: MakeIndex) -> None:
    make_index("alice", model="model-a").upsert([1], random_unit(1))
    make_index("bob", model="model-b").upsert([1], random_unit(1))  # another agent: fine
    make_index("alice", model="model-c", tier="recall", key="turn")  # another tier: fine
    with pytest.raises(EmbeddingMismatchError):
        make_index("alice", model="model-c")


def test_an_empty_tier_adopts_a_new_model(make_index: MakeIndex) -> None:
    make_index(model="model-a")
    index = make_index(model="model-b", dim=32)
    index.upsert([1], random_unit(1, dim=32))
    assert index.search(random_unit(1, dim=32)[0], 1)[0][0] == 1


def test_drop_tier_clears_vectors_so_another_model_can_be_used(
    db: sqlite_utils.Database, make_index: MakeIndex, cache_dir: Path
) -> None:
    index = make_index(model="model-a")
    index.upsert([1, 2], random_unit(2))
    index.persist()
    VectorIndex.drop_tier(db, tier="archival", agent_id="alice", cache_dir=cache_dir)
    assert not index.path.exists()
    fresh = make_index(model="model-b")
    assert fresh.count() == 0


def test_drop_tier_unloads_that_tiers_indexes_in_this_process(
    db: sqlite_utils.Database, make_index: MakeIndex, cache_dir: Path
) -> None:
    archival = make_index()
    archival.upsert([1, 2], random_unit(2))
    recall = make_index(tier="recall", key="turn")
    recall.upsert([1], random_unit(1))
    VectorIndex.drop_tier(db, tier="archival", agent_id="alice", cache_dir=cache_dir)
    assert archival._state.index is None  # its vectors are gone: no copy stays in memory
    assert recall._state.index is not None
    assert archival.count() == 0 and recall.count() == 1


def test_two_databases_never_share_a_loaded_index(tmp_path: Path) -> None:
    vectors = random_unit(2)
    indexes = []
    for name, vector in zip(("one", "two"), vectors, strict=True):
        db = open_db(tmp_path / name / "memory.sqlite")
        index = VectorIndex(
            db,
            tier="archival",
            agent_id="alice",
            cache_dir=tmp_path / name / "faiss",
            model="m",
            dim=DIM,
        )
        index.upsert([1], vector[None, :])
        indexes.append(index)
    assert indexes[0].scores(vectors[0], [1])[1] == pytest.approx(1.0, abs=1e-5)
    assert indexes[1].search(vectors[1], 1) == [(1, pytest.approx(1.0, abs=1e-5))]
    assert indexes[0].search(vectors[0], 1) == [(1, pytest.approx(1.0, abs=1e-5))]


def test_a_search_from_any_thread_runs_faiss_on_one_thread(make_index: MakeIndex) -> None:
    """OpenMP's thread count is per calling thread; LangGraph runs tools on worker threads."""
    import threading

    import faiss

    index = make_index()
    index.upsert([1, 2, 3], random_unit(3))
    index.search(random_unit(1, seed=9)[0], k=2)  # this thread
    seen: list[int] = []

    def search_in_a_new_thread() -> None:
        index.search(random_unit(1, seed=9)[0], k=2)
        seen.append(faiss.omp_get_max_threads())

    for _ in range(2):
        worker = threading.Thread(target=search_in_a_new_thread)
        worker.start()
        worker.join()
    assert seen == [1, 1]


# ---------------------------------------------------------------- graph inserts beside the turn


class HeldFlusher(faiss_pending.Flusher):
    """The process's flusher, held: vectors stay pending until the test lets them in."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[faiss_index.IndexState] = []

    def due(self, state: faiss_index.IndexState) -> None:
        self.held.append(state)

    def release(self) -> None:
        for state in self.held:
            with state.lock:
                faiss_pending.flush(state)
        self.held = []


BIG = 300
"""Vectors a graph holds before a test's writes: a large index, whose cache file is written
once a tenth of it changed (a small one is written, and so added to, at every write)."""


@pytest.fixture
def big_graph(make_index: MakeIndex, monkeypatch: pytest.MonkeyPatch) -> VectorIndex:
    monkeypatch.setattr(faiss_sync, "_AUTO_PERSIST_MAX_VECTORS", 0)
    index = make_index(kind="hnsw")
    index.upsert(list(range(BIG)), random_unit(BIG, seed=40))
    # The process's flusher may still hold this index as due from that write: once it is
    # done, a test's own (held) flusher is the only one that adds its pending vectors.
    assert faiss_pending.FLUSHER.drain()
    assert in_graph(index) == BIG and not index._state.pending
    return index


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldFlusher:
    flusher = HeldFlusher()
    monkeypatch.setattr(faiss_pending, "FLUSHER", flusher)
    return flusher


def in_graph(index: VectorIndex) -> int:
    return int(index._state.index.ntotal)


def test_a_graphs_new_vectors_are_found_before_they_join_it(
    big_graph: VectorIndex, held: HeldFlusher
) -> None:
    index = big_graph
    vectors = random_unit(21, seed=41)
    new = list(range(BIG, BIG + 20))
    index.upsert(new, vectors[:20])
    assert in_graph(index) == BIG and len(index._state.pending) == 20  # not walked yet
    assert index.search(vectors[4], 1)[0][0] == BIG + 4
    assert index.search(vectors[9], 3, allowed_ids=new[5:15])[0][0] == BIG + 9
    assert BIG + 4 not in dict(index.search(vectors[4], 5, excluded_ids=[BIG + 4]))
    index.upsert([7], vectors[20])  # in the graph: its old vector is a tombstone there
    index.upsert([BIG + 5], vectors[20])  # replaced while pending: the old never joins
    index.delete([BIG + 6])
    held.release()
    assert in_graph(index) == BIG + 20 and not index._state.pending
    assert index.search(vectors[4], 1)[0][0] == BIG + 4
    assert dict(index.search(vectors[20], 2)).keys() == {7, BIG + 5}
    assert BIG + 6 not in dict(index.search(vectors[6], BIG + 20))
    assert index.count() == BIG + 19


def test_vectors_in_and_out_of_the_graph_rank_together(
    big_graph: VectorIndex, held: HeldFlusher
) -> None:
    index = big_graph
    target = random_unit(1, seed=42)[0]
    close = near(target, 6, 0.05, seed=43)
    index.upsert([BIG + 1, BIG + 2, BIG + 3], close[:3])
    held.release()
    index.upsert([BIG + 4, BIG + 5, BIG + 6], close[3:])  # pending
    assert len(index._state.pending) == 3
    expected = sorted(range(6), key=lambda i: -float(close[i] @ target))
    assert [item for item, _ in index.search(target, 6)] == [BIG + 1 + i for i in expected]


def test_a_cache_file_holds_every_live_vector_pending_or_not(
    big_graph: VectorIndex, make_index: MakeIndex, held: HeldFlusher
) -> None:
    index = big_graph
    vectors = random_unit(20, seed=44)
    index.upsert(list(range(BIG, BIG + 20)), vectors)
    index.persist()
    assert not index._state.pending and in_graph(index) == BIG + 20
    assert json.loads(index.sidecar_path.read_text())["count"] == BIG + 20
    found = read_cache(index.path, index.sidecar_path, index._cache_identity())
    assert found is not None and faiss_index.deserialize(found[0], DIM).ntotal == BIG + 20
    again = reopen(make_index, kind="hnsw")
    assert again.search(vectors[17], 1)[0][0] == BIG + 17


def test_a_process_that_stops_with_vectors_pending_loses_none(
    big_graph: VectorIndex, make_index: MakeIndex, held: HeldFlusher
) -> None:
    vectors = random_unit(20, seed=45)
    big_graph.upsert(list(range(BIG, BIG + 20)), vectors)  # pending when the process stops
    again = reopen(make_index, kind="hnsw")  # its cache file holds BIG: SQLite, all
    assert again.count() == BIG + 20
    assert all(again.search(vectors[i], 1)[0][0] == BIG + i for i in range(20))


def test_a_write_past_the_cap_adds_its_vectors_to_the_graph_itself(
    big_graph: VectorIndex, held: HeldFlusher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(faiss_pending, "PENDING_CAP", 10)
    big_graph.upsert(list(range(BIG, BIG + 11)), random_unit(11, seed=46))
    assert in_graph(big_graph) == BIG + 11 and not big_graph._state.pending


def test_the_flusher_adds_pending_vectors_beside_the_writer(big_graph: VectorIndex) -> None:
    vectors = random_unit(20, seed=47)
    big_graph.upsert(list(range(BIG, BIG + 20)), vectors)
    assert faiss_pending.FLUSHER.drain()
    assert in_graph(big_graph) == BIG + 20 and not big_graph._state.pending
    assert big_graph.search(vectors[3], 1)[0][0] == BIG + 3


KILLED_WITH_VECTORS_PENDING = """
import os, signal, sys
from pathlib import Path
import numpy as np
from langgraph_memgpt.stores.sqlite import faiss_pending, faiss_sync
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.vectors import VectorIndex

data, big, dim = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
faiss_sync._AUTO_PERSIST_MAX_VECTORS = 0
faiss_pending.FLUSH_PAUSE = 3600.0  # the flusher never gets to them
index = VectorIndex(open_db(data / "memory.sqlite"), tier="archival", agent_id="alice",
                    cache_dir=data / "faiss", model="test-model", dim=dim, kind="hnsw")
vectors = np.load(data / "vectors.npy")
index.upsert(list(range(big)), vectors[:big])  # written to the cache file
index.upsert(list(range(big, len(vectors))), vectors[big:])  # pending
assert len(index._state.pending) == len(vectors) - big
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_killed_with_vectors_pending_loses_none(
    tmp_data_dir: Path, make_index: MakeIndex
) -> None:
    import subprocess
    import sys

    vectors = random_unit(BIG + 20, seed=48)
    np.save(tmp_data_dir / "vectors.npy", vectors)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WITH_VECTORS_PENDING, str(tmp_data_dir), str(BIG), str(DIM)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    index = make_index(kind="hnsw")
    found = read_cache(index.path, index.sidecar_path, index._cache_identity())
    assert found is not None and faiss_index.deserialize(found[0], DIM).ntotal == BIG
    assert index.count() == BIG + 20
    assert all(index.search(vectors[i], 1)[0][0] == i for i in range(BIG, BIG + 20))
    assert in_graph(index) == BIG + 20  # its file held BIG: the rest came from SQLite
