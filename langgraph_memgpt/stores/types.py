"""Value types shared by the memory stores (what a search returns, what a record holds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


class MemoryStoreError(Exception):
    """Base of store errors; ``str(err)`` is written to be read by the model or a user."""


class StoreCorruptError(MemoryStoreError):
    """A database file could not be opened or failed its integrity check."""


class StoreAccessError(MemoryStoreError):
    """A database cannot be opened or written (a file for a folder, read-only, full, foreign)."""


class EmbeddingMismatchError(MemoryStoreError):
    """A store was built with another embedding model or dimension than the one configured."""


class BlockEditError(MemoryStoreError):
    """A core-memory edit was refused (over the limit, read-only, text not found, no block)."""


class BlockConflictError(BlockEditError):
    """A compare-and-set write found the block changed since the writer read it.

    ``current`` is the block as it is now, so the writer can show it and ask again.
    """

    def __init__(self, message: str, current: Block) -> None:
        super().__init__(message)
        self.current = current


@dataclass(frozen=True)
class Block:
    """One core memory block as the model sees it."""

    label: str
    value: str
    description: str
    char_limit: int
    read_only: bool = False
    sections: tuple[str, ...] = ()
    """Labelled sections the block declares (``stores.sections``); empty: none."""


@dataclass(frozen=True)
class RecallMessage:
    """One message of an agent's history, verbatim."""

    agent_id: str
    thread_id: str
    message_id: str
    role: str  # "user" | "assistant" | "tool" | "system"
    text: str
    created_at: str  # ISO-8601 UTC, e.g. "2026-11-29T09:47:15+00:00"
    turn: int = 0
    tool_calls: list[dict[str, object]] = field(default_factory=list)
    name: str | None = None  # tool name for role "tool"; speaker name for conversation turns
    searchable: bool | None = None
    """False keeps the message out of search (it is stored all the same); None: by rule."""
    partial: bool = False
    """A cut copy of the message (the prompt's, shortened to fit the window): stored when
    the message is not stored yet, but never replacing the text already stored, which is
    the whole message. Without this, re-recording the queue would overwrite it."""


@dataclass(frozen=True)
class Passage:
    """One archival passage."""

    id: int
    agent_id: str
    text: str
    tags: list[str]
    created_at: str
    thread_id: str | None = None
    turn: int | None = None
    replaces: int | None = None
    """The id of the older passage this one replaced (``insert(..., replaces=id)``)."""
    replaced_by: int | None = None
    """The id of the passage that replaced this one, when one did (it stays findable)."""
    replaced_at: str | None = None
    """When that passage was saved (ISO-8601 UTC)."""
    duplicate: bool = False
    """Set on what an insert returns when it stored nothing because the agent already had
    this fact (``stores.duplicates``): the passage is the one stored before."""


@dataclass(frozen=True)
class Deletion:
    """One entry of an agent's deletion log: what was forgotten, when and by whom.

    Never the content: the log must not keep what the deletion removed.
    """

    kind: str  # "passage" | "summary" | "message" | "thread" | "core" | "recall" | "archival"
    item_id: str  # passage id, message id, thread id, or the agent id for a whole tier
    actor: str
    deleted_at: str  # ISO-8601 UTC
    thread_id: str | None = None
    detail: str = ""  # why, or how many items (never their text)


@dataclass(frozen=True)
class Hit(Generic[T]):
    """A search result with its fused score (higher is better)."""

    item: T
    score: float


@dataclass(frozen=True)
class SearchPage(Generic[T]):
    """One page of results plus the total number of matches, for pagination."""

    hits: list[Hit[T]]
    total: int
    page: int
    page_size: int

    @property
    def pages(self) -> int:
        """Number of pages the whole result spans."""
        return max(1, -(-self.total // self.page_size)) if self.page_size else 1


def check_page(page: int, page_size: int) -> None:
    """Refuse a negative page or a page size below 1, in the same words in every tier."""
    if page < 0:
        raise ValueError(f"page must be 0 or more, got {page}")
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")


@dataclass(frozen=True)
class RetentionRule:
    """A retention rule: how long archival passages with a tag are kept.

    Passages tagged ``tag`` (and ``source:<source>``, when set) older than
    ``max_age_seconds`` are forgotten when the agent's retention runs (``retention``).
    """

    tag: str
    max_age_seconds: int
    source: str | None = None

    def describe(self) -> str:
        """The rule in one line, as the deletion log names it (never a passage's text)."""
        where = f" source:{self.source}" if self.source else ""
        return f"retention tag={self.tag}{where} max_age={format_age(self.max_age_seconds)}"


def format_age(seconds: int) -> str:
    """``172800`` -> ``"48h"``: the largest unit (w, d, h, m, s) that divides it."""
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


Excluded = str | tuple[str, str]
"""A message to leave out of a recall search or count: ``(thread id, message id)``, or a
bare message id (that id in every thread: only for callers whose ids are unique)."""
