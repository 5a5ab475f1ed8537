"""Storage engines by URL scheme: the one place that names an engine's module.

A database URL picks its engine by its scheme (``postgresql://...``); no URL is the
embedded engine (``sqlite``) in the data directory. Each entry is a dotted path
(``"package.module:Class"``) imported on first use, so importing this module loads no
engine and a missing extra only matters when its scheme is used. Everything neutral
(`stores.backends.open_backend`, the commands, the server) opens memory through
`engine_for`; adding an engine is one `ENGINES` line (or one `register_engine` call) and a
class with `Engine.from_url`, nothing else.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict, Unpack, cast

from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.types import StoreAccessError

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

EMBEDDED = "sqlite"
"""The scheme of the engine used when no database URL is set (the data directory's)."""

ENGINES: dict[str, str | type] = {
    "sqlite": "langgraph_memgpt.stores.sqlite:SqliteBackend",
    "postgresql": "langgraph_memgpt.stores.postgres:PostgresBackend",
    "postgres": "langgraph_memgpt.stores.postgres:PostgresBackend",
}
"""Engine class of each URL scheme, as ``"module:Class"`` (imported on first use), or the
class itself for an engine registered from code that already imported it."""

EXTRAS: dict[str, str] = {"postgresql": "postgres", "postgres": "postgres"}
"""The package extra that installs a scheme's engine (named when its import fails)."""


THREADS_IN_DATABASE: frozenset[str] = frozenset({"postgresql", "postgres"})
"""Schemes whose database also holds the threads' checkpoints (LangGraph has a saver for
it); with any other engine they stay in the data directory's ``checkpoints.sqlite``."""


class BackendSetupError(StoreAccessError):
    """The chosen backend cannot be used as configured (the message says what to change)."""


class EngineSettings(TypedDict):
    """The settings `stores.backends.open_backend` gives every engine's ``from_url``."""

    data_dir: Path
    """The data directory: the embedded engine's memory (an engine may not use it)."""
    embedding_model: str
    """The embedding model's name (``minilm``, ``none``...)."""
    core_block_limit: int
    """The character limit of new core blocks."""
    read_only: bool
    """For reading memory only (``inspect``), without an embedding model."""
    embeddings: Embeddings | None
    """An embeddings object to use instead of ``embedding_model``."""


class Engine(Protocol):
    """What an engine class offers the registry: a backend from a URL and the settings."""

    @classmethod
    def from_url(cls, url: str, **settings: Unpack[EngineSettings]) -> MemoryBackend:
        """The backend of ``url`` (empty: the embedded engine's in ``data_dir``)."""
        ...


def register_engine(scheme: str, target: str | type, *, extra: str = "") -> None:
    """Serve URLs of ``scheme`` with the engine class ``target`` (or at ``"module:Class"``).

    A class needs a ``from_url`` (`Engine`); a dotted path is imported when first used.

    ``extra``: the package extra that installs what the engine imports, for the error
    message when it is missing.

    Raises:
        ValueError: ``scheme`` is not a URL scheme, or ``target`` is not ``module:Class``
            nor a class with ``from_url``.
    """
    if not scheme or not scheme.replace("+", "").replace("-", "").replace(".", "").isalnum():
        raise ValueError(f"engine scheme {scheme!r} is not a URL scheme (letters and digits)")
    if isinstance(target, str):
        module, _, name = target.partition(":")
        if not module or not name:
            raise ValueError(f"engine {target!r} is not a 'package.module:Class' path")
    elif not callable(getattr(target, "from_url", None)):
        raise ValueError(f"engine {target.__qualname__} has no from_url (see Engine)")
    ENGINES[scheme.lower()] = target
    if extra:
        EXTRAS[scheme.lower()] = extra


def scheme_of(url: str) -> str:
    """The scheme of a database URL (`EMBEDDED` for none), lower-case."""
    url = url.strip()
    if not url:
        return EMBEDDED
    scheme, sep, _ = url.partition("://")
    return scheme.lower() if sep else ""


def threads_in_database(url: str) -> bool:
    """Whether threads' checkpoints live in the database ``url`` names (`THREADS_IN_DATABASE`)."""
    return scheme_of(url) in THREADS_IN_DATABASE


def engine_for(url: str) -> Engine:
    """The engine class that serves ``url`` (empty: the embedded one), imported now.

    Raises:
        BackendSetupError: no engine serves the URL's scheme, or its extra is not
            installed (the message says which to install).
    """
    scheme = scheme_of(url)
    target = ENGINES.get(scheme)
    if target is None:
        shown = url.strip().split("@")[-1]  # never echo a password
        known = ", ".join(f"{s}://" for s in sorted(ENGINES) if s != EMBEDDED)
        raise BackendSetupError(
            f"database URL '...{shown}' names no memory engine this package has "
            f"(known: {known}; e.g. a postgresql://user:password@host/db URL); leave it "
            "unset for the embedded memory in the data directory"
        )
    if not isinstance(target, str):
        return cast(Engine, target)
    module, _, name = target.partition(":")
    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS.get(scheme)
        hint = f": pip install 'langgraph-memgpt[{extra}]'" if extra else ""
        raise BackendSetupError(
            f"a {scheme}:// database URL is set but {exc.name} is not installed{hint}"
        ) from exc
    return cast(Engine, getattr(loaded, name))


__all__ = [
    "EMBEDDED",
    "ENGINES",
    "BackendSetupError",
    "Engine",
    "EngineSettings",
    "engine_for",
    "register_engine",
    "scheme_of",
    "threads_in_database",
]
