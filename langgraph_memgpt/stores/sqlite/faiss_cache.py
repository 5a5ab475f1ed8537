"""The FAISS cache files of an index: where they live, writing and trusting them.

SQLite holds every vector; a FAISS file beside the database only saves rebuilding the
index on open. Each index is two files in its agent's folder (`agent_cache_dir`): the
serialized index and a JSON sidecar naming what it is (database, tier, agent, key, model,
dimension, kind, generation) with the index's SHA-256. They are written atomically, index
first and sidecar second, and read back only when the sidecar matches the store and the
checksum matches the index: anything else is rebuilt from SQLite, never trusted. A cache
that cannot be written is logged once and skipped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

from langgraph_memgpt.osutil import process_alive, write_atomic

SIDECAR_FORMAT = 2
"""Version 2 added ``database_id``: a cache of another database is never trusted."""

_log = logging.getLogger(__name__)
_WARNED: set[str] = set()
_WARNED_GUARD = threading.Lock()


def agent_cache_dir(cache_dir: Path | str, agent_id: str) -> Path:
    """Folder of one agent's FAISS files (named by a hash: agent ids may hold any character)."""
    return Path(cache_dir) / hashlib.sha1(agent_id.encode("utf-8")).hexdigest()[:16]


def warn_once(folder: Path, err: OSError) -> None:
    """Log once per cache folder that the FAISS cache cannot be written."""
    key = str(folder)
    with _WARNED_GUARD:
        if key in _WARNED:
            return
        _WARNED.add(key)
    _log.warning(
        "cannot write the FAISS cache in %s (%s); memory works on, with vectors read from "
        "SQLite and the cache rebuilt when the folder is writable again",
        folder,
        err,
    )


def write_cache(path: Path, sidecar_path: Path, data: bytes, sidecar: dict[str, Any]) -> None:
    """Write a serialized index and its sidecar (given without ``sha256``, added here).

    Index first, sidecar second: a crash in between leaves a checksum mismatch, which is
    detected and rebuilt, never a silently wrong index.
    """
    sidecar = {"format": SIDECAR_FORMAT, **sidecar, "sha256": hashlib.sha256(data).hexdigest()}
    write_atomic(path, data)
    write_atomic(sidecar_path, json.dumps(sidecar, indent=1).encode("utf-8"))


def read_cache(
    path: Path, sidecar_path: Path, expected: dict[str, Any]
) -> tuple[bytes, str] | None:
    """The serialized index and its kind, or None when missing, damaged or not ``expected``.

    ``expected``: the sidecar fields that must match (the store's database id, tier, agent,
    key, model, dimension); the format and the checksum are checked too.
    """
    try:
        sidecar = json.loads(sidecar_path.read_text(encoding="utf-8"))
        data = path.read_bytes()
    except (OSError, ValueError):
        return None
    wanted = {"format": SIDECAR_FORMAT, **expected}
    if not isinstance(sidecar, dict) or any(sidecar.get(k) != v for k, v in wanted.items()):
        return None
    kind = sidecar.get("kind")
    if kind not in ("flat", "hnsw"):
        return None
    if sidecar.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    return data, str(kind)


def remove_tier_files(cache_dir: Path | str, agent_id: str, tier: str) -> Path:
    """Delete the cache files of one tier of an agent; returns the agent's cache folder.

    A file that cannot be deleted is logged once; one left behind is treated as any
    stale cache on its next open: reconciled with the rows in SQLite, or rebuilt.
    """
    folder = agent_cache_dir(cache_dir, agent_id)
    if folder.is_dir():
        for path in folder.glob(f"{tier}.*"):
            try:
                path.unlink(missing_ok=True)
            except OSError as err:
                warn_once(folder, err)
    return folder


def remove_orphan_temp_files(*targets: Path) -> None:
    """Delete the temporary files of cache writes whose process died mid-write.

    ``osutil.write_atomic`` names them ``.<file>.<pid>.<random>.tmp``; a process killed before
    its rename leaves one behind for good. A live writer's file is left alone.
    """
    for target in targets:
        pattern = re.compile(rf"\.{re.escape(target.name)}\.(\d+)\.[0-9a-f]+\.tmp")
        if not target.parent.is_dir():
            continue
        for tmp in target.parent.glob(f".{target.name}.*.tmp"):
            match = pattern.fullmatch(tmp.name)
            if match and not process_alive(int(match.group(1))):
                try:
                    tmp.unlink(missing_ok=True)
                except OSError:  # a read-only cache folder: the file is harmless
                    pass


__all__ = [
    "SIDECAR_FORMAT",
    "agent_cache_dir",
    "read_cache",
    "remove_orphan_temp_files",
    "remove_tier_files",
    "warn_once",
    "write_cache",
]
