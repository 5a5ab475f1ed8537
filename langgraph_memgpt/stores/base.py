"""The memory interface: what the graph, the tools and the console need from a backend.

Nodes and tools speak only these protocols; which engine holds the tiers (the embedded
SQLite + FAISS backend, or another one) is the backend's business, and so are its
connections, caches and locking: every method here may be called from several threads at
once. The methods are the ones the loop really calls, no more, so a second backend has a
small surface to implement and one shared test suite to pass.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.types import (
    Block,
    Deletion,
    Passage,
    RecallMessage,
    RetentionRule,
    SearchPage,
)

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

    def history_page(
        self, label: str, *, offset: int = 0, limit: int = 20
    ) -> tuple[int, list[dict[str, Any]]]:
        """How many changes ``label`` has, and ``limit`` of them from ``offset``, newest first."""
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

    def attach(self, label: str, owner_id: str) -> Block:
        """Show agent ``owner_id``'s block ``label`` in this agent's core memory (shared).

        One block for every agent it is attached to: an edit by any of them is what all of
        them read on their next turn; its history holds every edit; its ``read_only`` flag
        holds for all. Nothing else of the owner's memory becomes visible. Refused (a
        ``BlockEditError``) when the owner has no such block or this agent has its own.
        """
        ...

    def share_proof(self, label: str, owner_id: str) -> str:
        """This store's signature of "this agent has ``owner_id``'s block ``label`` attached".

        Export writes it beside a shared block; import attaches the block again only when
        the file's signature is the one this store makes for the importing agent.
        """
        ...

    def detach(self, label: str) -> None:
        """Stop showing a shared block here (the block itself stays with its owner)."""
        ...

    def owner(self, label: str) -> str:
        """The agent whose block ``label`` is: this agent, or the owner it is attached from."""
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

    def declare_sections(self, label: str, sections: Sequence[str], actor: str = "user") -> Block:
        """Give ``label`` labelled sections (``stores.sections``); missing headers are added."""
        ...

    def set(
        self, label: str, value: str, actor: str = "user", *, expected: str | None = None
    ) -> Block:
        """Overwrite ``label`` (a person's edit, from the CLI or a page).

        ``expected`` (compare-and-set): the value the writer read; when the block holds
        something else now, nothing is written and ``BlockConflictError`` says so.
        """
        ...

    def restore(self, blocks: Sequence[Block], history: Sequence[Mapping[str, Any]]) -> None:
        """Put exported blocks back with their history (import), in one transaction.

        Blocks are written as given; a history entry already present (same label, op,
        actor, time and new value) is not added twice, so restoring twice changes nothing.
        """
        ...

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every block and its history (logged); returns how many blocks there were."""
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

    def threads(self) -> list[str]:
        """Ids of the threads the agent has messages in, sorted."""
        ...

    def list_messages(
        self, *, after: int = 0, limit: int = 1000
    ) -> list[tuple[int, RecallMessage]]:
        """Every stored message in storage order, a page at a time (export).

        Each message comes with an increasing position; pass the last one as ``after`` for
        the next page. ``searchable`` is set as stored.
        """
        ...

    def delete(
        self, message_ids: Sequence[str], *, thread_id: str | None = None, actor: str = "user"
    ) -> list[RecallMessage]:
        """Forget messages everywhere they live; returns the ones deleted.

        Rows, full-text entries and vectors go, the context of their neighbours is
        recomputed without them, every deletion is logged (not its content), and a
        deleted message is never recorded again (a replayed queue cannot bring it back).
        Message ids are unique per thread: without ``thread_id`` every thread's message
        with that id is deleted.
        """
        ...

    def delete_thread(self, thread_id: str, *, actor: str = "user") -> int:
        """Forget every message of a thread (as ``delete``, one log entry); returns how many."""
        ...

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every message of the agent (as ``delete``, one log entry); returns how many."""
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

    def insert_many(
        self, items: Sequence[str | NewPassage], *, merge_duplicates: bool = False
    ) -> list[Passage]:
        """Save many passages, embedding them in batches (each ``NewPassage`` keyed or not).

        A bulk load keeps every item unless asked (``merge_duplicates`` for plain strings,
        ``NewPassage.merge_duplicates`` for the others); ``NewPassage.replaces`` links.
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

    def recent(self, n: int = 5) -> list[Passage]:
        """The newest ``n`` passages."""
        ...

    def get(self, passage_id: int) -> Passage | None:
        """One passage by id (None if absent or another agent's)."""
        ...

    def list_passages(
        self, *, after: int = 0, limit: int = 1000, thread_id: str | None = None
    ) -> list[tuple[Passage, str | None]]:
        """Passages (with their idempotency key) in id order after ``after``, a page at a time."""
        ...

    def keyed(self, keys: Iterable[str]) -> dict[str, Passage]:
        """The agent's passages stored under any of ``keys`` (their idempotency key), by key."""
        ...

    def keys_of(self, passage_ids: Iterable[int]) -> dict[int, str]:
        """The idempotency keys of those of these passages that have one, by passage id."""
        ...

    def delete(
        self, passage_ids: Sequence[int], *, actor: str = "user", detail: str = ""
    ) -> list[Passage]:
        """Forget passages: rows, words and vectors (FAISS caches too), each deletion logged."""
        ...

    def add_sources(self, passage_id: int, sources: Sequence[tuple[str, str]]) -> None:
        """Record the messages (thread, message id) a passage was made from.

        The sleep-time consolidator's facts name the messages they were read from, so
        ``forget`` of a message or a thread forgets the facts made from it; the records go
        with the passage. A passage of another agent is ignored.
        """
        ...

    def derived_from(self, thread_id: str, message_ids: Sequence[str] | None = None) -> list[int]:
        """Ids of the passages made from these messages of ``thread_id`` (None: any of its)."""
        ...

    def retention_rules(self) -> list[RetentionRule]:
        """The agent's retention rules (stored with it), by tag then source."""
        ...

    def set_retention_rule(self, rule: RetentionRule) -> None:
        """Add a rule, or change the age of the rule with the same tag and source."""
        ...

    def remove_retention_rule(self, tag: str, source: str | None = None) -> bool:
        """Drop the rule with this tag and source; whether there was one."""
        ...

    def expired(
        self, tag: str, *, source_tag: str | None, before: str, limit: int = 500
    ) -> list[int]:
        """Ids of passages tagged ``tag`` (and ``source_tag``) created before ``before``."""
        ...

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every passage of the agent (one log entry); returns how many."""
        ...


class DeletionLog(Protocol):
    """What was forgotten from one agent's memory, when and by whom (never the content)."""

    def entries(self, limit: int = 50) -> list[Deletion]:
        """The newest ``limit`` deletions, newest first."""
        ...

    def record(
        self, kind: str, item_id: str, *, actor: str, thread_id: str | None = None, detail: str = ""
    ) -> None:
        """Log a deletion made outside the stores (a thread's checkpoint, a whole agent)."""
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

    @property
    def deletions(self) -> DeletionLog:
        """The log of what was forgotten."""
        ...


@runtime_checkable
class Scrubbable(Protocol):
    """A memory whose engine can keep deleted text in its files until told to clean them.

    The embedded backend has it (full-text index segments, the write-ahead log); ``forget``
    calls it after deleting. Postgres has no such copy a query can reach.
    """

    def scrub(self) -> None:
        """Remove every copy of deleted rows' text from the engine's files."""
        ...


@runtime_checkable
class ThreadLocks(Protocol):
    """A backend shared by several machines that can claim a thread for one run.

    The embedded backend lacks it (its file locks in the data directory already cover every
    process that can open its files); a backend several servers share (Postgres) has it, so
    two runs of one thread on two machines wait for each other (`langgraph_memgpt.turn.threads`).
    """

    def try_lock_thread(self, thread_id: str) -> Callable[[], None] | None:
        """Claim ``thread_id`` without waiting: the function that releases it, or None if taken.

        A claim ends when released or when its process dies, never otherwise.
        """
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
