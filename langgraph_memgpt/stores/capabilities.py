"""Optional capabilities of a memory backend, beside the small core of `stores.base`.

The core protocols (`stores.base`) hold what the loop and the memory tools call. Everything
else a front end needs (the memory page, export and import, ``forget``, ``retention``,
``ingest``, the sleep-time consolidator, ``reembed``, the store view) is a capability here:
a small ``runtime_checkable`` protocol that a front end tests with `require` before it uses
it. An engine without one still runs the loop; the front end that needs it answers with a
`MissingCapability` error naming the capability and the engine. Both built-in engines have
every capability in `FRONT_END_CAPABILITIES`; those in `ENGINE_SPECIFIC` (`Scrubbable`,
`SharedOpenMemories`, `ThreadLocks`) are used when present and never required.

Where each is tested: ``memory.core`` (`BlockHistory`, `BlockSharing`, `BlockEdits`,
`BlockRestore`, `CoreForget`), ``memory.recall`` (`MessageListing`, `FeedMarks`,
`RecallForget`), ``memory.archival`` (`BulkLoad`, `PassageListing`, `PassageSources`,
`RetentionRules`, `ArchivalForget`), the memory (`LoggedDeletions`, `Scrubbable`) and the
backend (`Reembeddable`, `SharedOpenMemories`, `ThreadLocks`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, runtime_checkable

from langgraph_memgpt.stores.types import (
    Block,
    Deletion,
    Passage,
    RecallMessage,
    RetentionRule,
    StoreAccessError,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from langgraph_memgpt.stores.passages import NewPassage

C = TypeVar("C")

Progress = Callable[[int, int], None]
"""A progress callback: ``(done, total)`` of one task."""

ProgressFor = Callable[[str], Progress]
"""``progress_for(task)``: the `Progress` callback of one named task (e.g. "recall messages")."""


class MissingCapability(StoreAccessError):
    """A front end needs a capability the memory backend's engine does not have."""


def require(obj: object, capability: Callable[..., C], needed_by: str) -> C:
    """``obj`` (a backend, a memory or one of its tiers) as ``capability``, or a clear error.

    ``needed_by`` names what asked (``"forget"``, ``"the memory page"``...), so the message
    says what cannot be done, which capability is missing and on which engine.

    Raises:
        MissingCapability: ``obj`` lacks one of the capability's methods.
    """
    protocol = cast(type, capability)  # a protocol class (typed so mypy lets one in)
    if isinstance(obj, protocol):
        return cast(C, obj)
    engine = type(obj)
    methods = ", ".join(sorted(capability_methods(protocol)))
    raise MissingCapability(
        f"{needed_by} needs the {protocol.__name__} capability ({methods}), which the "
        f"engine {engine.__module__}.{engine.__qualname__} does not have: use a backend "
        "that has it (the built-in SQLite and Postgres engines do)"
    )


def require_all(memory: object, needed_by: str, *capabilities: Callable[..., object]) -> None:
    """Check, before anything is done, that ``memory`` has every one of ``capabilities``.

    Each is tested where it lives (``memory.core``, ``.recall``, ``.archival`` or the
    memory itself), so a front end that changes several tiers fails before the first change
    rather than halfway.

    Raises:
        MissingCapability: the first capability missing (named, with the engine).
    """
    for capability in capabilities:
        tier = next((t for t, caps in FRONT_END_CAPABILITIES.items() if capability in caps), "")
        target = getattr(memory, tier) if tier in ("core", "recall", "archival") else memory
        require(target, capability, needed_by)


def capability_methods(protocol: type) -> set[str]:
    """The public members a protocol declares (what an engine implements to have it)."""
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass is object or klass.__name__ in ("Protocol", "Generic"):
            continue
        names.update(n for n in vars(klass) if not n.startswith("_"))
    return names


@runtime_checkable
class BlockHistory(Protocol):
    """Every change of a block, for the memory page, the store view and export.

    Tested on ``memory.core``.
    """

    def history(self, label: str) -> list[dict[str, Any]]:
        """Every change of ``label``, oldest first (id, old/new value, actor, op, time)."""
        ...

    def history_page(
        self, label: str, *, offset: int = 0, limit: int = 20
    ) -> tuple[int, list[dict[str, Any]]]:
        """How many changes ``label`` has, and ``limit`` of them from ``offset``, newest first."""
        ...


@runtime_checkable
class BlockSharing(Protocol):
    """Blocks shown in several agents' core memory (export/import keep the link).

    Tested on ``memory.core``.
    """

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


@runtime_checkable
class BlockEdits(Protocol):
    """A person's edits of a block: overwrite (compare-and-set) and declared sections.

    Tested on ``memory.core``.
    """

    def set(
        self, label: str, value: str, actor: str = "user", *, expected: str | None = None
    ) -> Block:
        """Overwrite ``label`` (a person's edit, from the CLI or a page).

        ``expected`` (compare-and-set): the value the writer read; when the block holds
        something else now, nothing is written and ``BlockConflictError`` says so.
        """
        ...

    def declare_sections(self, label: str, sections: Sequence[str], actor: str = "user") -> Block:
        """Give ``label`` labelled sections (``stores.sections``); missing headers are added."""
        ...


@runtime_checkable
class BlockRestore(Protocol):
    """Exported blocks put back with their history (``import``).

    Tested on ``memory.core``.
    """

    def restore(self, blocks: Sequence[Block], history: Sequence[Mapping[str, Any]]) -> None:
        """Put exported blocks back with their history (import), in one transaction.

        Blocks are written as given; a history entry already present (same label, op,
        actor, time and new value) is not added twice, so restoring twice changes nothing.
        """
        ...


@runtime_checkable
class CoreForget(Protocol):
    """Core memory forgotten as a whole (``forget --all``).

    Tested on ``memory.core``.
    """

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every block and its history (logged); returns how many blocks there were."""
        ...


@runtime_checkable
class MessageListing(Protocol):
    """Recall read as a list rather than searched (export, forget, the page, ``inspect``).

    Tested on ``memory.recall``.
    """

    def latest(self, n: int) -> list[RecallMessage]:
        """The newest ``n`` messages, newest first."""
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


@runtime_checkable
class FeedMarks(Protocol):
    """Messages read in recording order from a saved position (the sleep-time consolidator).

    Tested on ``memory.recall``.
    """

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


@runtime_checkable
class RecallForget(Protocol):
    """Messages forgotten everywhere they live (``forget``).

    Tested on ``memory.recall``.
    """

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


@runtime_checkable
class BulkLoad(Protocol):
    """Many passages saved at once, embedded in batches (``ingest``, ``import``).

    Tested on ``memory.archival``.
    """

    def insert_many(
        self, items: Sequence[str | NewPassage], *, merge_duplicates: bool = False
    ) -> list[Passage]:
        """Save many passages, embedding them in batches (each ``NewPassage`` keyed or not).

        A bulk load keeps every item unless asked (``merge_duplicates`` for plain strings,
        ``NewPassage.merge_duplicates`` for the others); ``NewPassage.replaces`` links.
        """
        ...


@runtime_checkable
class PassageListing(Protocol):
    """Archival read as a list and by idempotency key (export, ``inspect``, the store view).

    Tested on ``memory.archival``.
    """

    def recent(self, n: int = 5) -> list[Passage]:
        """The newest ``n`` passages."""
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


@runtime_checkable
class PassageSources(Protocol):
    """The messages a passage was made from, so forgetting them forgets it (sleep-time, ``forget``).

    Tested on ``memory.archival``.
    """

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


@runtime_checkable
class RetentionRules(Protocol):
    """Per-tag ages after which passages expire (``retention``).

    Tested on ``memory.archival``.
    """

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


@runtime_checkable
class ArchivalForget(Protocol):
    """Passages forgotten (``forget``, ``ingest --replace``, the store view's delete).

    Tested on ``memory.archival``.
    """

    def delete(
        self, passage_ids: Sequence[int], *, actor: str = "user", detail: str = ""
    ) -> list[Passage]:
        """Forget passages: rows, words and vectors (FAISS caches too), each deletion logged."""
        ...

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every passage of the agent (one log entry); returns how many."""
        ...


@runtime_checkable
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
class LoggedDeletions(Protocol):
    """A memory that logs what was forgotten (``forget``, ``inspect``). Tested on the memory."""

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
class Reembeddable(Protocol):
    """A backend that records which embedding model made an agent's vectors and can redo them.

    Tested on the backend (``export`` records the model; ``reembed`` is the way out of an
    embedding change). Each engine re-embeds its own way: the embedded one drops and
    rebuilds the vectors in its file, Postgres writes them aside and switches them in one
    transaction.
    """

    def recorded_embedding(self, agent_id: str) -> dict[str, object] | None:
        """The model an agent's vectors were made with (``{"model", "dim"}``), or None.

        Read without an embedding model, from the memory's own record. None when the
        agent has no vectors yet.
        """
        ...

    def reembed(
        self, agent_id: str, embeddings: Embeddings, progress_for: ProgressFor
    ) -> tuple[int, int]:
        """Embed every message and passage of ``agent_id`` again with ``embeddings``.

        ``progress_for`` reports each task (`ProgressFor`). Returns (messages embedded,
        passages in the archive). Stop any server or chat using the memory first, or
        restart it with the new model afterwards (each engine says which).
        """
        ...


@runtime_checkable
class SharedOpenMemories(Protocol):
    """A backend whose opened memories are shared by the whole process (the embedded one).

    A command calls `close_shared` before its process ends (``stores.backends.close_backend``)
    so caches are written; a backend without it has nothing to write.
    """

    def close_shared(self) -> None:
        """Write and close every memory this engine opened in this process."""
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


FRONT_END_CAPABILITIES: dict[str, tuple[Callable[..., object], ...]] = {
    "core": (BlockHistory, BlockSharing, BlockEdits, BlockRestore, CoreForget),
    "recall": (MessageListing, FeedMarks, RecallForget),
    "archival": (BulkLoad, PassageListing, PassageSources, RetentionRules, ArchivalForget),
    "memory": (LoggedDeletions,),
    "backend": (Reembeddable,),
}
"""Every capability a front end requires, by where it is tested; both built-in engines have
all of them (``tests/test_backend_core.py``)."""

ENGINE_SPECIFIC: tuple[type, ...] = (Scrubbable, SharedOpenMemories, ThreadLocks)
"""Used when an engine has them, never required: each says what the engine must do itself."""
