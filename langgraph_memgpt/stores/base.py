"""The memory interface: what the graph, the tools and the console need from a backend.

Nodes and tools speak only these protocols; which engine holds the tiers (the embedded
SQLite + FAISS backend, or another one) is the backend's business, and so are its
connections, caches and locking: every method here may be called from several threads at
once. These protocols are the core: the methods the loop and the memory tools call, no more
(``tests/test_backend_core.py`` keeps them at 25 at most), so a new engine has a small
surface to implement. What only a front end needs (the memory page, export and import,
``forget``, ``retention``, ``ingest``, sleep-time, ``reembed``) is an optional capability
in `stores.capabilities`, tested with ``isinstance`` where it is used; engines are found by
URL scheme in `stores.registry`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Literal, Protocol, runtime_checkable

from langgraph_memgpt.stores.capabilities import Scrubbable, ThreadLocks
from langgraph_memgpt.stores.types import (
    Block,
    Passage,
    RecallMessage,
    SearchPage,
)

TagMatch = Literal["any", "all"]
SearchMode = Literal["hybrid", "fts", "vector"]


class CoreStore(Protocol):
    """Core memory blocks of one agent (always in the prompt)."""

    def blocks(self) -> list[Block]:
        """Every block, in creation order."""
        ...

    def get(self, label: str) -> Block:
        """The block ``label``; raises ``BlockEditError`` (naming the labels) if absent."""
        ...

    def last_modified(self) -> str | None:
        """When any block last changed (ISO-8601 UTC), or None."""
        ...

    def latest_change_id(self, other_than: str) -> int | None:
        """Id of the newest change of any block made by an actor other than ``other_than``.

        None when there is none. History ids only grow, so this changes exactly when
        someone else edits a block; one indexed lookup, because the loop asks every step.
        """
        ...

    def ensure_defaults(
        self, persona: str = "", human: str = "", char_limit: int | None = None
    ) -> None:
        """Create the ``persona`` and ``human`` blocks if missing (idempotent).

        ``char_limit`` is the new blocks' limit (None: the backend's default); the loop
        passes ``Context.core_block_limit``, so a run's setting holds on any backend.
        """
        ...

    def append(
        self, label: str, content: str, actor: str = "agent", *, section: str | None = None
    ) -> Block:
        """Add a line to ``label`` (or to its ``section`` only); safe against concurrent edits."""
        ...

    def replace(
        self, label: str, old: str, new: str, actor: str = "agent", *, section: str | None = None
    ) -> Block:
        """Replace the one ``old`` in ``label`` or its ``section`` (empty ``new`` deletes)."""
        ...


class RecallStore(Protocol):
    """Every message of one agent, verbatim and searchable (write-ahead, idempotent)."""

    def add(self, messages: Sequence[RecallMessage]) -> int:
        """Record messages; re-recording one already stored adds nothing. Returns new rows."""
        ...

    def get(
        self, message_ids: Sequence[str], *, thread_id: str | None = None
    ) -> list[RecallMessage]:
        """The stored messages with these ids (of ``thread_id`` only, when given).

        Message ids are unique per thread: without ``thread_id``, an id used in several
        threads returns one of them.
        """
        ...

    def count(self, exclude_message_ids: Collection[str | tuple[str, str]] = ()) -> int:
        """How many messages there are, minus the excluded ones (``(thread, id)`` or id)."""
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
        exclude_ids: Collection[str | tuple[str, str]] = (),
    ) -> SearchPage[RecallMessage]:
        """Messages by words and meaning, best first; filters apply before ranking.

        ``exclude_ids``: messages to leave out, as ``(thread id, message id)`` (a bare id
        leaves that id out in every thread).
        """
        ...

    def search_date(
        self, start_date: str | None, end_date: str | None, *, page: int = 0, page_size: int = 5
    ) -> SearchPage[RecallMessage]:
        """Searchable messages between two dates (inclusive), oldest first."""
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
        *,
        replaces: int | None = None,
        merge_duplicates: bool = True,
    ) -> Passage:
        """Save one passage with its tags and provenance.

        With a ``key``, idempotent: when the agent already has a passage with that key (a
        replayed tool call or eviction), that passage is returned and nothing is written.
        When the agent already has the fact (``stores.duplicates``: the same text, or the
        same fact in other words) and ``merge_duplicates``, nothing is written and the
        stored passage comes back with ``duplicate`` set. ``replaces``: the id of the
        agent's passage this one replaces; search shows the newer first, the older stays
        findable and says it was replaced (``stores.supersession``). A ``replaces`` naming
        no passage of the agent, or one already replaced, is a ``ValueError`` saying which.
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
        """Passages by meaning and words, best first; filters apply before ranking.

        A replaced passage comes right after the passage that replaced it (the current
        one, pulled onto the page if the search did not rank it there).
        """
        ...

    def count(self) -> int:
        """How many passages there are."""
        ...

    def tags(self) -> list[str]:
        """Every tag in use, most used first."""
        ...

    def get(self, passage_id: int) -> Passage | None:
        """One passage by id (None if absent or another agent's)."""
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

    def agents(self) -> list[str]:
        """Ids of the agents with any memory here, sorted (the CLI lists them)."""
        ...

    def close(self) -> None:
        """Let go of what this backend opened (connections); it may be opened again."""
        ...


__all__ = [
    "ArchivalStore",
    "CoreStore",
    "Memory",
    "MemoryBackend",
    "RecallStore",
    "Scrubbable",
    "SearchMode",
    "TagMatch",
    "ThreadLocks",
]
