"""The copy of threads and runs ``langgraph dev`` keeps in the data directory, for forget.

``serve`` runs ``langgraph dev`` in the data directory, and its in-memory runtime saves its
thread list and runs to ``.langgraph_api/.langgraph_ops.pckl``: every run's input (the
user's messages) and each thread's latest values (its queue). The checkpoints are ours
(``checkpoints.sqlite``), but this file is a second copy, so ``forget`` cleans it too: runs
and threads of a forgotten thread are dropped, forgotten messages leave the saved values,
and forgotten text is redacted wherever else it appears. The server loads the file when it
starts and rewrites it while it runs, so it is cleaned only when no ``serve`` holds the
data directory (`serving`); otherwise ``forget`` says so.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import Timeout
from langchain_core.messages import BaseMessage

from langgraph_memgpt.osutil import file_lock, write_atomic
from langgraph_memgpt.redaction import redact

STATE_FILE = Path(".langgraph_api") / ".langgraph_ops.pckl"
"""Where ``langgraph dev`` (its in-memory runtime) saves threads and runs, in its cwd."""
SERVE_LOCK = Path("locks") / "serve.lock"
"""Held (`osutil.file_lock`) by ``serve`` while it serves the data directory."""
_IMPORT_ENV = {"LANGGRAPH_RUNTIME_EDITION": "inmem", "REDIS_URI": "", "DATABASE_URI": ""}
"""What ``langgraph_api``'s config module needs to import outside its server: the file
names a function of it (``langgraph_api.metadata.incr_nodes``)."""


@contextmanager
def serving(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's serve lock while the block runs (``serve``)."""
    path = data_dir / SERVE_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = file_lock(path, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        yield  # a second serve: the first one holds it (its own port, same files)
        return
    try:
        yield
    finally:
        lock.release()


def is_served(data_dir: Path) -> bool:
    """Whether a ``serve`` holds the data directory now."""
    path = data_dir / SERVE_LOCK
    if not path.exists():
        return False
    lock = file_lock(path, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        return True
    lock.release()
    return False


def scrub(
    data_dir: Path,
    *,
    texts: Sequence[str] = (),
    messages: Mapping[str, Collection[str]] | None = None,
    threads: Collection[str] = (),
) -> str:
    """Clean the saved server state of a data directory.

    Returns:
        A note for the user when the state could not be cleaned (a server holds it), else "".

    Args:
        data_dir: the data directory ``serve`` runs ``langgraph dev`` in.
        texts: forgotten texts, redacted wherever they appear.
        messages: thread id -> forgotten message ids, taken out of saved values and inputs.
        threads: forgotten threads: their runs and their entry go.
    """
    path = data_dir / STATE_FILE
    if not path.is_file() or not (texts or messages or threads):
        return ""
    if is_served(data_dir):
        return (
            f"A server is serving {data_dir}: its own copy of runs and threads "
            f"({STATE_FILE}) may still hold what was forgotten until it next saves the "
            "thread; stop it before forgetting to have that copy cleaned too."
        )
    saved = _load(path)
    if not isinstance(saved, dict):
        return f"{path} is not the server state this version knows; it was left as it was."
    _clean_state(saved, texts, messages, threads)
    write_atomic(path, pickle.dumps(saved))
    return ""


def scrub_live(
    *,
    texts: Sequence[str] = (),
    messages: Mapping[str, Collection[str]] | None = None,
    threads: Collection[str] = (),
) -> bool:
    """Clean the running server's copy when this process is a ``langgraph dev`` server.

    A forget made inside the server (the memory page, a sleep-time run's retention) cannot
    wait for the server to stop: its in-memory runtime holds each thread's latest values
    and every run's input (`STATE_FILE` is that store, saved every few seconds). They are
    cleaned in place, as `scrub` cleans the file, and the file is saved again at once.

    Returns:
        Whether this process serves (and its copy was cleaned).
    """
    module = sys.modules.get("langgraph_runtime_inmem.database")
    store = getattr(module, "GLOBAL_STORE", None)
    if not isinstance(store, dict):
        return False
    if texts or messages or threads:
        _clean_state(store, texts, messages, threads)
        # Saved only by a server that persists it (its flush loop holds the store): another
        # process that merely imported the runtime (unpickling a saved state) must never
        # write its empty store over a server's file.
        persistence = sys.modules.get("langgraph_runtime_inmem._persistence")
        flushed = getattr(persistence, "_stores", {}).get(getattr(store, "filename", None))
        if flushed is not None and flushed() is store:
            store.sync()  # a langgraph PersistentDict
    return True


def _clean_state(
    saved: dict[str, Any],
    texts: Sequence[str],
    messages: Mapping[str, Collection[str]] | None,
    threads: Collection[str],
) -> None:
    """Clean a server's state (``runs`` and ``threads``) in place, entry by entry.

    In place, so a running server's own references to an entry see the cleaned values.
    """
    gone = {str(t) for t in threads}
    ids = {str(t): {str(i) for i in v} for t, v in (messages or {}).items()}
    for key, field in (("runs", "kwargs"), ("threads", "values")):
        entries = saved.get(key)
        if not isinstance(entries, list):
            continue
        if gone:
            entries[:] = [e for e in entries if not _of_threads(e, gone)]
        for entry in list(entries):
            if not isinstance(entry, dict) or field not in entry:
                continue
            cleaned = _clean(entry[field], texts, ids.get(str(entry.get("thread_id")), set()))
            if cleaned != entry[field]:
                entry[field] = cleaned


def _of_threads(entry: Any, threads: Collection[str]) -> bool:
    return isinstance(entry, dict) and str(entry.get("thread_id")) in threads


def _load(path: Path) -> Any:
    missing = {k: v for k, v in _IMPORT_ENV.items() if k not in os.environ}
    os.environ.update(missing)
    try:
        with path.open("rb") as handle:
            return pickle.load(handle)  # noqa: S301 - the server's own file, in our data dir
    finally:
        for key in missing:
            os.environ.pop(key, None)


def _clean(value: Any, texts: Sequence[str], ids: Collection[str]) -> Any:
    """``value`` without the forgotten messages, the forgotten texts redacted.

    The redaction is the checkpoints' (`redaction.redact`): one rule for every copy.
    """
    return redact(_without(value, ids), texts)


def _without(value: Any, ids: Collection[str]) -> Any:
    """``value`` with the messages whose id was forgotten taken out of every list."""
    if not ids:
        return value
    if isinstance(value, dict):
        return {k: _without(v, ids) for k, v in value.items()}
    if isinstance(value, list | tuple):
        kept = [_without(v, ids) for v in value if not _forgotten(v, ids)]
        return kept if isinstance(value, list) else tuple(kept)
    return value


def _forgotten(value: Any, ids: Collection[str]) -> bool:
    """A message (object or dict, as an input holds it) whose id was forgotten."""
    if not ids:
        return False
    if isinstance(value, BaseMessage):
        return str(value.id) in ids
    return isinstance(value, dict) and "content" in value and str(value.get("id")) in ids


__all__ = ["SERVE_LOCK", "STATE_FILE", "is_served", "scrub", "scrub_live", "serving"]
