"""Memory stores: the interface every backend meets, and the engine-neutral search under it.

The modules here import no storage engine: ``base`` (the core protocols: what the loop
and the tools call), ``capabilities`` (the optional ones a command or page checks before
use), ``search`` and ``ranking`` (hybrid search and fusion), ``bm25``, ``words``,
``mentions``, ``chunks``, ``embeddings``, ``migration`` and the value types. Each engine is
a package of its own: ``stores.sqlite`` (the embedded default: one SQLite file, FAISS
caches beside it) and ``stores.postgres``; ``stores.registry`` names them by URL scheme
(the one place that does), and ``stores.backends`` opens the one a data directory or a
database URL names.

The SQLite backend's names are importable from here too (``from langgraph_memgpt.stores
import SqliteBackend``), loaded on first use, so importing the package loads no engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from langgraph_memgpt.stores.base import Memory, MemoryBackend

if TYPE_CHECKING:
    from langgraph_memgpt.stores.sqlite import DB_FILENAME as DB_FILENAME
    from langgraph_memgpt.stores.sqlite import AgentMemory as AgentMemory
    from langgraph_memgpt.stores.sqlite import SqliteBackend as SqliteBackend
    from langgraph_memgpt.stores.sqlite import close_all as close_all
    from langgraph_memgpt.stores.sqlite import list_agents as list_agents
    from langgraph_memgpt.stores.sqlite import open_memory as open_memory

_SQLITE = frozenset(
    {"DB_FILENAME", "AgentMemory", "SqliteBackend", "close_all", "list_agents", "open_memory"}
)


def __getattr__(name: str) -> Any:
    if name in _SQLITE:
        return getattr(importlib.import_module("langgraph_memgpt.stores.sqlite"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Memory", "MemoryBackend", *sorted(_SQLITE)]
