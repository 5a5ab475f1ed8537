"""The memory interface: what the graph, the tools and the console need from a backend.

Nodes and tools speak only these protocols; which engine holds the tiers (the embedded
SQLite + FAISS backend, or another one) is the backend's business, and so are its
connections, caches and locking: every method here may be called from several threads at
once. The methods are the ones the loop really calls, no more, so a second backend has a
small surface to implement and one shared test suite to pass.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from langgraph_memgpt.stores.types import Block, Passage, RecallMessage, SearchPage

TagMatch = Literal["any", "all"]
SearchMode = Literal["hybrid", "fts", "vector"]


class CoreStore(Protocol):
    """Core memory blocks of one agent (always in the prompt), with their edit history."""

    def blocks(self) -> list[Block]:
        """Every block, in creation order."""
        ...

    def get(self, label: str) -> Block:
        """The block ``label``; raises ``BlockEditError`` (naming the labels) if absent."""
        ...

    def history(self, label: str) -> list[dict[str, Any]]:
        """Every change of ``label``, oldest first (id, old/new value, actor, op, time)."""
        ...

    def last_modified(self) -> str | None:
        """When any block last changed (ISO-8601 UTC), or None."""
        ...

    def ensure_defaults(self, persona: str = "", human: str = "") -> None:
        """Create the ``persona`` and ``human`` blocks if missing (idempotent)."""
        ...

    def append(self, label: str, content: str, actor: str = "agent") -> Block:
        """Add a line to ``label``; read-modify-write, safe against concurrent edits."""
        ...

    def replace(self, label: str, old: str, new: str, actor: str = "agent") -> Block:
        """Replace the one occurrence of ``old`` in ``label`` (empty ``new`` deletes)."""
        ...

    def set(self, label: str, value: str, actor: str = "user") -> Block:
        """Overwrite ``label`` (a person's edit, from the CLI or a page)."""
        ...


class RecallStore(Protocol):
    """Every message of one agent, verbatim and searchable (write-ahead, idempotent)."""

    def add(self, messages: Sequence[RecallMessage]) -> int:
        """Record messages; re-recording one already stored adds nothing. Returns new rows."""
        ...

    def get(self, message_ids: Sequence[str]) -> list[RecallMessage]:
        """The stored messages with these ids."""
        ...

    def count(self, exclude_message_ids: Collection[str] = ()) -> int:
        """How many searchable messages there are (minus the excluded ones)."""
        ...

    def latest(self, n: int) -> list[RecallMessage]:
        """The newest ``n`` messages, newest first."""
        ...

    def search(
        self,
        query: str,
        *,
        roles: Sequence[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        page: int = 0,
        page_size: int = 5,
        mode: SearchMode = "hybrid",
        exclude_ids: Collection[str] = (),
    ) -> SearchPage[RecallMessage]:
        """Messages by words and meaning, best first; filters apply before ranking."""
        ...

    def search_date(
        self, start_date: str | None, end_date: str | None, *, page: int = 0, page_size: int = 5
    ) -> SearchPage[RecallMessage]:
        """Searchable messages between two dates (inclusive), oldest first."""
        ...

    def since(self, position: int, limit: int = 200) -> list[tuple[int, RecallMessage]]:
        """Up to ``limit`` messages recorded after ``position``, in recording order.

        Each comes with its own position (a number that only grows as messages are
        recorded), so a reader such as the sleep-time consolidator can resume after the
        last message it handled.
        """
        ...

    def mark(self, name: str) -> int:
        """The position saved under ``name`` by `set_mark` (0 when never saved)."""
        ...

    def set_mark(self, name: str, position: int) -> int:
        """Save ``position`` under ``name``; never moves a mark back. Returns the mark now."""
        ...


class ArchivalStore(Protocol):
    """Passages one agent chose to keep (and eviction summaries), searchable."""

    def insert(
        self,
        text: str,
        tags: Iterable[str] | str | None = (),
        thread_id: str | None = None,
        turn: int | None = None,
        created_at: str | None = None,
        key: str | None = None,
    ) -> Passage:
        """Save one passage with its tags and provenance.

        With a ``key``, idempotent: when the agent already has a passage with that key (a
        replayed tool call or eviction), that passage is returned and nothing is written.
        """
        ...

    def search(
        self,
        query: str,
        *,
        tags: Iterable[str] | str | None = None,
        tag_match: TagMatch = "any",
        start_date: str | None = None,
        end_date: str | None = None,
        page: int = 0,
        page_size: int = 5,
        mode: SearchMode = "hybrid",
    ) -> SearchPage[Passage]:
        """Passages by meaning and words, best first; filters apply before ranking."""
        ...

    def count(self) -> int:
        """How many passages there are."""
        ...

    def tags(self) -> list[str]:
        """Every tag in use, most used first."""
        ...

    def recent(self, n: int = 5) -> list[Passage]:
        """The newest ``n`` passages."""
        ...


@runtime_checkable
class Memory(Protocol):
    """The three tiers of one agent."""

    @property
    def agent_id(self) -> str:
        """The agent these tiers belong to."""
        ...

    @property
    def core(self) -> CoreStore:
        """Core memory."""
        ...

    @property
    def recall(self) -> RecallStore:
        """Recall memory."""
        ...

    @property
    def archival(self) -> ArchivalStore:
        """Archival memory."""
        ...


class MemoryBackend(Protocol):
    """Opens agents' memory: what ``build_graph(memory=...)`` takes."""

    def open(self, agent_id: str) -> Memory:
        """The memory of ``agent_id`` (created on first use; cheap to call every step)."""
        ...
