"""FAISS for one vector index: its two kinds, building one, and searching it by label.

``VectorIndex`` keeps its vectors in SQLite and searches a FAISS copy of them; this module
is the FAISS side of that copy. An index is exact (``"flat"``: inner product with every
vector) or approximate (``"hnsw"``: a graph walk, for big stores); an ``"auto"`` index is
exact until it holds :data:`AUTO_HNSW_MIN_VECTORS`, then HNSW for good.

FAISS labels are ``vectors.id`` row ids; an :class:`IndexState` maps them to items. A
label that is no longer live (a tombstone) is never returned: a search excludes the
tombstones with an ID selector, and a filtered search restricts FAISS to the allowed
labels *before* ranking, so a narrow filter never comes back empty because closer
vectors outside it crowded the top k. When an approximate walk returns fewer than k hits,
or a filter is narrow enough to starve it, the vectors are scored exactly instead (read
from SQLite through a ``Fetch``), so a search never comes back short. Vectors written to a
graph but not added to it yet (``faiss_pending``) are scored exactly beside every walk
(:func:`with_pending`).

FAISS itself is imported on first use: importing the package does not load it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

import numpy as np

from langgraph_memgpt.stores.embeddings import FloatArray


@functools.cache
def load_faiss() -> Any:
    """FAISS, imported on first use.

    Importing the package (a server, the CLI, a library caller on Postgres) does not load it.
    """
    import faiss

    return faiss


IndexKind = Literal["flat", "hnsw", "auto"]

HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128  # chosen with benchmarks/archival_1m.py's efSearch sweep
AUTO_HNSW_MIN_VECTORS = 20_000
"""An ``"auto"`` index turns from exact to HNSW once it holds this many vectors: an exact
scan grows with the vectors, an HNSW walk barely does. Below this an exact scan is as fast
and needs no graph building (``benchmarks/archival_1m.py`` measures both). Read here at
each decision, so a test lowers it on this module."""

Fetch = Callable[[Sequence[int]], tuple[np.ndarray[Any, Any], FloatArray]]
"""Reads vectors by label from SQLite: ``(labels found, their vectors)``."""


class IndexState:
    """The loaded FAISS index of one (tier, agent, key).

    Shared by every VectorIndex of a process that points at the same database and cache
    folder, so two stores opened on one agent never hold diverging copies.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.index: Any = None
        self.item_of: dict[int, int] = {}  # live FAISS label -> item id
        self.label_of: dict[int, int] = {}  # item id -> live FAISS label
        self.tombstones: set[int] = set()  # labels inside FAISS that are no longer live
        self.kind: str = "flat"  # what the loaded index is ("flat" or "hnsw")
        self.generation: str | None = None
        self.unsaved = 0  # changes since the cache file was written
        # Live labels of an HNSW index not in its graph yet, with their vectors
        # (``faiss_pending``); every search scores them exactly.
        self.pending: dict[int, FloatArray] = {}


_SEARCH_THREADS = threading.local()


def _use_one_search_thread() -> None:
    """Give FAISS one OpenMP thread in the calling thread, once per thread.

    One query on busy cores runs faster on one thread than on several fighting over them
    (``benchmarks/archival_1m.py`` compares 1 and 2). OpenMP keeps the count per calling
    thread, and a search usually runs on a worker thread (LangGraph runs each tool call
    on its executor's threads, new ones per tool step): set once per process, from one
    thread, it left the others at the default, each search starting a team of threads that
    spin on the cores the embedding model needs. Setting and restoring the count around
    each search raced instead (one thread's restore undid another's setting mid-search).
    """
    if getattr(_SEARCH_THREADS, "one", False):
        return
    load_faiss().omp_set_num_threads(1)
    _SEARCH_THREADS.one = True


# ---------------------------------------------------------------------- kinds


def wanted_kind(configured: IndexKind, live: int, loaded: str) -> str:
    """The index a store configured ``configured`` should hold for ``live`` vectors.

    An ``"auto"`` index never turns back: one that shrank below the threshold keeps
    its graph (``loaded`` is what it holds now).
    """
    if configured != "auto":
        return configured
    if live >= AUTO_HNSW_MIN_VECTORS or loaded == "hnsw":
        return "hnsw"
    return "flat"


def new_index(dim: int, kind: str) -> Any:
    """An empty index of ``kind`` over inner products of ``dim``-vectors, labelled by id."""
    if kind == "hnsw":
        index: Any = load_faiss().index_factory(
            dim, f"IDMap,HNSW{HNSW_M},Flat", load_faiss().METRIC_INNER_PRODUCT
        )
        graph: Any = load_faiss().downcast_index(index.index)
        graph.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        return index
    return load_faiss().index_factory(dim, "IDMap,Flat", load_faiss().METRIC_INNER_PRODUCT)


def serialize(index: Any) -> bytes:
    """The bytes of ``index``, as a cache file holds them."""
    data: bytes = load_faiss().serialize_index(index).tobytes()
    return data


def deserialize(data: bytes, dim: int) -> Any:
    """The index in ``data``, or None when it is not a labelled index of ``dim``-vectors."""
    try:
        index = load_faiss().deserialize_index(np.frombuffer(data, dtype=np.uint8))
    except RuntimeError:
        return None
    if index.d != dim or not hasattr(index, "id_map"):
        return None
    if load_faiss().vector_to_array(index.id_map).size != index.ntotal:
        return None
    return index


def labels_in(index: Any) -> list[int]:
    """Every label inside ``index``, live or tombstone."""
    labels: list[int] = load_faiss().vector_to_array(index.id_map).tolist()
    return labels


def remove_tombstones(state: IndexState) -> None:
    """Drop the tombstones from an exact index (an HNSW graph cannot delete)."""
    dead = np.array(sorted(state.tombstones), dtype=np.int64)
    state.index.remove_ids(load_faiss().IDSelectorBatch(len(dead), load_faiss().swig_ptr(dead)))
    state.tombstones = set()


def scrub(state: IndexState, dim: int, labels: list[int]) -> None:
    """Overwrite the stored vectors of ``labels`` in an HNSW index with zeros."""
    index = state.index
    graph: Any = load_faiss().downcast_index(index.index)
    storage: Any = load_faiss().downcast_index(graph.storage)
    total = int(storage.ntotal)
    stored = load_faiss().rev_swig_ptr(storage.get_xb(), total * dim).reshape(total, dim)
    positions = np.flatnonzero(np.isin(load_faiss().vector_to_array(index.id_map), labels))
    stored[positions] = 0.0


# ---------------------------------------------------------------------- searches


def _run_search(
    state: IndexState, q: FloatArray, k: int, selector: Any, keep: list[Any]
) -> list[tuple[int, float]]:
    if state.kind == "hnsw":
        params: Any = getattr(load_faiss(), "SearchParametersHNSW")()  # noqa: B009 (no stub)
        params.efSearch = max(HNSW_EF_SEARCH, 2 * k)
    else:
        params = load_faiss().SearchParameters()
    if selector is not None:
        params.sel = selector
    keep.append(params)
    _use_one_search_thread()
    distances, labels = state.index.search(q, k, params=params)
    hits: list[tuple[int, float]] = []
    for label, score in zip(labels[0].tolist(), distances[0].tolist(), strict=True):
        item = state.item_of.get(label)
        if label >= 0 and item is not None:
            hits.append((item, float(score)))
    return hits


def with_pending(
    state: IndexState,
    q: FloatArray,
    k: int,
    hits: list[tuple[int, float]],
    *,
    allowed: Collection[int] | None = None,
    excluded: Collection[int] = (),
) -> list[tuple[int, float]]:
    """The ``k`` best of the graph's ``hits`` and of the pending vectors the search may return.

    ``allowed`` / ``excluded``: labels, as the search's FAISS selector holds them.
    """
    if not state.pending:
        return hits
    kept = None if allowed is None else set(allowed)
    labels = [
        label
        for label in state.pending
        if label not in excluded and (kept is None or label in kept)
    ]
    if not labels:
        return hits
    sims = np.stack([state.pending[label] for label in labels]) @ q[0]
    found = [
        (state.item_of[label], float(s))
        for label, s in zip(labels, sims.tolist(), strict=True)
        if label in state.item_of
    ]
    return sorted([*hits, *found], key=lambda hit: -hit[1])[:k]


def walk(
    state: IndexState, q: FloatArray, k: int, excluded: Collection[int] = ()
) -> list[tuple[int, float]] | None:
    """The ``k`` live vectors nearest ``q`` but the ``excluded`` labels, found by FAISS alone.

    The graph (or exact index) and the pending vectors, read in memory: no SQLite, so it
    may run on any thread (``VectorIndex.begin_search``). None when FAISS found fewer than
    ``k``: the caller then scores exactly (:func:`exact`, which reads SQLite). Hold
    ``state.lock``.
    """
    live = len(state.label_of) - len(excluded)
    k = min(k, live)
    if k <= 0:
        return []
    dead = np.array(sorted(state.tombstones | set(excluded)), dtype=np.int64)
    keep: list[Any] = [dead]
    selector = None
    if len(dead):
        batch = load_faiss().IDSelectorBatch(len(dead), load_faiss().swig_ptr(dead))
        selector = load_faiss().IDSelectorNot(batch)
        keep.append(batch)
    hits = _run_search(state, q, k, selector, keep)
    hits = with_pending(state, q, k, hits, excluded=excluded)
    return hits if len(hits) >= k else None


def walks_all(state: IndexState, excluded: Collection[int] = ()) -> bool:
    """Whether a search of every live vector but ``excluded`` walks FAISS (:func:`walk`).

    Not when the few left of an HNSW graph are cheaper (and surer) to score exactly.
    """
    live = len(state.label_of) - len(excluded)
    return not excluded or state.kind != "hnsw" or live > max(4096, state.index.ntotal // 20)


def search_all(state: IndexState, q: FloatArray, k: int, fetch: Fetch) -> list[tuple[int, float]]:
    """The ``k`` live vectors nearest ``q``, as ``(item, cosine)``, nearest first."""
    hits = walk(state, q, k)
    if hits is None:  # an approximate graph can miss; never return short
        return exact(state, q, min(k, len(state.label_of)), list(state.item_of), fetch)
    return hits


def search_excluding(
    state: IndexState, q: FloatArray, k: int, excluded: set[int], fetch: Fetch
) -> list[tuple[int, float]]:
    """Search every live vector but the ``excluded`` labels.

    The same ranking as :func:`search_labels` over the labels left, with a selector
    of the few left out (and the tombstones) instead of the many kept.
    """
    live = len(state.label_of) - len(excluded)
    if live <= 0:
        return []
    hits = walk(state, q, k, excluded) if walks_all(state, excluded) else None
    if hits is None:
        kept = [i for i in state.item_of if i not in excluded]
        return exact(state, q, min(k, live), kept, fetch)
    return hits


def search_labels(
    state: IndexState, q: FloatArray, k: int, labels: list[int], fetch: Fetch
) -> list[tuple[int, float]]:
    """Search only the live vectors of ``labels``."""
    if state.kind == "hnsw" and len(labels) <= max(4096, state.index.ntotal // 20):
        # A narrow filter starves an HNSW walk; scoring a few thousand vectors exactly
        # is both cheaper and complete.
        return exact(state, q, k, labels, fetch)
    allowed = np.array(labels, dtype=np.int64)
    batch = load_faiss().IDSelectorBatch(len(allowed), load_faiss().swig_ptr(allowed))
    hits = _run_search(state, q, k, batch, [allowed])
    hits = with_pending(state, q, k, hits, allowed=labels)
    if len(hits) < k:
        return exact(state, q, k, labels, fetch)
    return hits


def exact(
    state: IndexState, q: FloatArray, k: int, labels: list[int], fetch: Fetch
) -> list[tuple[int, float]]:
    """Score the vectors of ``labels`` (read through ``fetch``) exactly; the live ``k`` best."""
    found, matrix = fetch(labels)
    if not len(found):
        return []
    sims = matrix @ q[0]
    hits: list[tuple[int, float]] = []
    for i in np.argsort(-sims, kind="stable").tolist():
        item = state.item_of.get(int(found[i]))
        if item is not None:
            hits.append((item, float(sims[i])))
            if len(hits) == k:
                break
    return hits


__all__ = [
    "AUTO_HNSW_MIN_VECTORS",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_EF_SEARCH",
    "HNSW_M",
    "Fetch",
    "IndexKind",
    "IndexState",
    "deserialize",
    "exact",
    "labels_in",
    "load_faiss",
    "new_index",
    "remove_tombstones",
    "scrub",
    "search_all",
    "search_excluding",
    "search_labels",
    "walk",
    "walks_all",
    "serialize",
    "wanted_kind",
    "with_pending",
]
