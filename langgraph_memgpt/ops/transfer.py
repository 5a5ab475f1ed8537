"""Export an agent's memory to one portable file, and import it under another agent id.

The file is JSON Lines, one record per line: a ``header`` (format, version, source agent,
the embedding model its vectors were made with), then ``block`` and ``block_history``
(core memory with every edit; a block attached from another agent names that agent in
``shared_from``), ``message`` (recall, verbatim, tool results included) and
``passage`` (archival, eviction summaries included, with their idempotency keys),
``retention_rule`` (archival retention rules, ``retention``), and an ``end`` record
with the count of each kind and the SHA-256 of every line before it. No vectors: the
importing side embeds with its own model, so a file moves between machines, backends
(SQLite and Postgres) and embedding models alike.

Import reads and checks the whole file before writing anything (``export_file``): a
malformed, truncated or altered file is refused with the line and the reason, and the target
is left as it was. Writing is idempotent (messages are keyed by thread and message id,
passages by their key, history entries by their content and time), so importing a file
twice, or again after an interrupted import, adds nothing twice. An agent that already has
memory is refused unless the caller says how to combine (``mode``: merge or replace; a
read-only block of the agent is never changed). Merge means merge: a message, passage or
retention rule the agent has is never rewritten by the file's version with the same key;
each such collision is kept as the agent has it and reported (``ImportReport.collisions``).
A shared block is attached again only when the file is the agent's own export, made in
this same store (signed with the store's secret), and the owner's block is here; otherwise
it is restored as the agent's private copy, history included. Both sides speak only the
memory protocols.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from langgraph_memgpt.ops.export_file import (
    FORMAT,
    HISTORY_FIELDS,
    KINDS,
    LATER_KINDS,
    VERSION,
    AgentExport,
    read_export,
)
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.capabilities import (
    BlockHistory,
    BlockRestore,
    BlockSharing,
    BulkLoad,
    MessageListing,
    PassageListing,
    RetentionRules,
    require,
    require_all,
)
from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.types import BlockEditError, RecallMessage

log = logging.getLogger(__name__)

_PAGE = 1000
_MESSAGE_CHUNK = 256
_PASSAGE_CHUNK = 256

Progress = Callable[[str, int, int], None]
"""Called with (what, done so far, total) while importing."""


@dataclass
class ImportReport:
    """What an import wrote (new items only: an item already there is not counted)."""

    source_agent: str
    blocks: int
    history: int
    messages_new: int
    messages_total: int
    passages_new: int
    passages_total: int
    source_embedding: dict[str, Any] | None
    attached: dict[str, str] = field(default_factory=dict)
    """Shared blocks attached again: label -> owner."""
    copied: dict[str, str] = field(default_factory=dict)
    """Shared blocks not attached again (the owner lacks the block, or the file does not
    prove the agent had it), restored as the agent's private copy: label -> owner."""
    kept: list[str] = field(default_factory=list)
    """Blocks the agent already had and kept as they were (read-only, shared with it from
    another agent, or any with ``merge``); the file's version of them was not written."""
    collisions: list[str] = field(default_factory=list)
    """Items the agent already had under the same key with other content (a message's
    thread and id, a passage's key, a retention rule's tag and source): the agent's stays,
    the file's was not written. Never the texts, only what names them."""


NEEDED_BY = "export and import"
TRANSFER_NEEDS = (
    BlockHistory,
    BlockSharing,
    BlockRestore,
    MessageListing,
    PassageListing,
    RetentionRules,
    BulkLoad,
)
"""The capabilities (`stores.capabilities`) export and import use, checked before either starts."""

# -- export ----------------------------------------------------------------------------


def export_agent(
    memory: Memory, out: str | Path, *, embedding: Mapping[str, Any] | None = None
) -> dict[str, int]:
    """Write the agent's memory to ``out`` (replaced atomically); returns the record counts.

    Args:
        memory: the agent's memory (any backend; read only).
        out: the file to write.
        embedding: ``{"model": ..., "dim": ...}`` the memory's vectors were made with,
            recorded for the importing side (None: words-only memory or unknown).
    """
    require_all(memory, NEEDED_BY, *TRANSFER_NEEDS)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    counts = dict.fromkeys(KINDS, 0)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:

            def write(record: Mapping[str, Any]) -> None:
                line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
                digest.update(line.encode("utf-8"))
                handle.write(line)
                kind = str(record["type"])
                if kind in counts:
                    counts[kind] += 1

            write(
                {
                    "type": "header",
                    "format": FORMAT,
                    "version": VERSION,
                    "agent_id": memory.agent_id,
                    "exported_at": to_utc_iso(None),
                    "embedding": dict(embedding) if embedding else None,
                }
            )
            for block in memory.core.blocks():
                owner = require(memory.core, BlockSharing, NEEDED_BY).owner(block.label)
                write(
                    {
                        "type": "block",
                        "label": block.label,
                        "value": block.value,
                        "description": block.description,
                        "char_limit": block.char_limit,
                        "read_only": block.read_only,
                        **({"sections": list(block.sections)} if block.sections else {}),
                        **(
                            {
                                "shared_from": owner,
                                "shared_proof": require(
                                    memory.core, BlockSharing, NEEDED_BY
                                ).share_proof(block.label, owner),
                            }
                            if owner != memory.agent_id
                            else {}
                        ),
                    }
                )
                for entry in require(memory.core, BlockHistory, NEEDED_BY).history(block.label):
                    write(
                        {
                            "type": "block_history",
                            **{k: entry[k] for k in HISTORY_FIELDS},
                        }
                    )
            after = 0
            while page := require(memory.recall, MessageListing, NEEDED_BY).list_messages(
                after=after, limit=_PAGE
            ):
                for _, m in page:
                    write(
                        {
                            "type": "message",
                            "thread_id": m.thread_id,
                            "message_id": m.message_id,
                            "role": m.role,
                            "name": m.name,
                            "text": m.text,
                            "tool_calls": m.tool_calls,
                            "created_at": m.created_at,
                            "turn": m.turn,
                            "searchable": bool(m.searchable),
                        }
                    )
                after = page[-1][0]
            after = 0
            while passages := require(memory.archival, PassageListing, NEEDED_BY).list_passages(
                after=after, limit=_PAGE
            ):
                for p, key in passages:
                    write(
                        {
                            "type": "passage",
                            "id": p.id,
                            "text": p.text,
                            "tags": p.tags,
                            "thread_id": p.thread_id,
                            "turn": p.turn,
                            "created_at": p.created_at,
                            "key": key,
                            "replaces": p.replaces,
                        }
                    )
                after = passages[-1][0].id
            for item in require(memory.archival, RetentionRules, NEEDED_BY).retention_rules():
                write(
                    {
                        "type": "retention_rule",
                        "tag": item.tag,
                        "source": item.source,
                        "max_age_seconds": item.max_age_seconds,
                    }
                )
            # A later kind is counted only when present: a file without one reads as before.
            counts = {k: n for k, n in counts.items() if n or k not in LATER_KINDS}
            end = {"type": "end", "counts": counts, "sha256": digest.hexdigest()}
            handle.write(json.dumps(end, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return counts


# -- import ----------------------------------------------------------------------------


ImportMode = Literal["new", "merge", "replace"]
"""What an import does to an agent that already has memory: ``new`` refuses it; ``merge``
keeps the agent's blocks as they are and adds what it lacks; ``replace`` lets the file's
blocks take the place of the agent's writable ones. Neither deletes anything, and neither
changes a read-only block the agent has."""


class ImportConflictError(ValueError):
    """The target agent already has memory and the import was not told how to combine."""


def has_memory(memory: Memory) -> bool:
    """Whether the agent has any block, message or passage."""
    return bool(
        memory.core.blocks()
        or require(memory.recall, MessageListing, NEEDED_BY).list_messages(limit=1)
        or require(memory.archival, PassageListing, NEEDED_BY).list_passages(limit=1)
    )


def _attach_shared(memory: Memory, export: AgentExport) -> dict[str, str]:
    """Attach each shared block the file proves the agent had; returns label -> owner.

    Attached only when the file is this agent's own export (its header names the agent),
    the owner's block exists here, and the file carries the signature this store makes for
    that attachment (`CoreStore.share_proof`): a hand-written ``shared_from`` is restored
    as the agent's private copy instead, so nobody reaches another agent's block by
    editing a file, and nothing the agent saw is lost.
    """
    attached: dict[str, str] = {}
    for label, owner in export.shared.items():
        if owner == memory.agent_id or export.agent_id != memory.agent_id:
            continue
        proof = export.proofs.get(label, "")
        expected = require(memory.core, BlockSharing, NEEDED_BY).share_proof(label, owner)
        if not proof or not expected or not hmac.compare_digest(proof, expected):
            continue
        try:
            require(memory.core, BlockSharing, NEEDED_BY).attach(label, owner)
        except BlockEditError:
            continue
        attached[label] = owner
    return attached


def import_agent(
    memory: Memory,
    path: str | Path,
    *,
    mode: ImportMode = "new",
    progress: Progress | None = None,
) -> ImportReport:
    """Restore an export into ``memory`` (any agent id, any backend), idempotently.

    The whole file is read and checked first (:func:`read_export`): a bad file raises
    before anything is written. Messages and passages are embedded by the target's own
    model, so a file made with another embedding model is re-embedded on the way in.

    Args:
        memory: the agent to restore into.
        path: the export file.
        mode: what to do when the agent already has memory (`ImportMode`).
        progress: called while messages and passages are written.

    Raises:
        ExportFormatError: the file is not a complete, intact, valid export.
        ImportConflictError: the agent has memory and ``mode`` is ``new``.
    """
    export = read_export(path)
    require_all(memory, NEEDED_BY, *TRANSFER_NEEDS)
    exists = has_memory(memory)
    if exists and mode == "new":
        raise ImportConflictError(
            f"agent '{memory.agent_id}' already has memory; import under a new agent id, or "
            "say how to combine: --merge (keep the agent's blocks, add what it lacks) or "
            "--replace (the file's blocks win; read-only blocks are kept)"
        )
    report = ImportReport(
        source_agent=export.agent_id,
        blocks=0,
        history=0,
        messages_new=0,
        messages_total=len(export.messages),
        passages_new=0,
        passages_total=len(export.passages),
        source_embedding=export.embedding,
    )
    present = {b.label: b for b in memory.core.blocks()} if exists else {}
    report.attached = _attach_shared(
        memory,
        AgentExport(
            export.agent_id,
            export.embedding,
            export.exported_at,
            shared={k: v for k, v in export.shared.items() if k not in present},
            proofs=export.proofs,
        ),
    )
    report.copied = {
        k: v for k, v in export.shared.items() if k not in report.attached and k not in present
    }
    for label, block in present.items():
        theirs = require(memory.core, BlockSharing, NEEDED_BY).owner(label) != memory.agent_id
        if any(b.label == label for b in export.blocks) and (
            block.read_only or theirs or mode == "merge"
        ):
            report.kept.append(label)
    skip = set(report.attached) | set(report.kept)
    restored = [b for b in export.blocks if b.label not in skip]
    history = [e for e in export.history if e["label"] not in skip]
    require(memory.core, BlockRestore, NEEDED_BY).restore(restored, history)
    report.blocks, report.history = len(restored), len(history)
    # A stored message, passage or rule is never rewritten (merge means merge, and
    # replace replaces writable blocks only): one the file holds with other content is a
    # collision, reported and skipped.
    stored = _stored_messages(memory) if exists else {}
    fresh: list[dict[str, Any]] = []
    for fields in export.messages:
        key = (fields["thread_id"], fields["message_id"])
        if key not in stored:
            fresh.append(fields)
        elif _differs(stored[key], fields):
            report.collisions.append(
                f"message {key[1]!r} of thread {key[0]!r}: the agent's text kept"
            )
    # Thread by thread in time order (ties in stored order), as they were first recorded,
    # so every message gets the same ±2 context window it had.
    ordered = sorted(enumerate(fresh), key=lambda p: (p[1]["thread_id"], p[1]["created_at"], p[0]))
    done = 0
    for start in range(0, len(ordered), _MESSAGE_CHUNK):
        chunk = [
            RecallMessage(agent_id=memory.agent_id, **fields)
            for _, fields in ordered[start : start + _MESSAGE_CHUNK]
        ]
        report.messages_new += memory.recall.add(chunk)
        done += len(chunk)
        if progress is not None:
            progress("recall messages", done, len(ordered))
    before = memory.archival.count()
    # The agent's own export merged back: its unkeyed passages are found by text and time.
    same = _stored_passages(memory) if exists else set()
    placed: dict[int, int] = {}  # the file's passage ids -> this store's
    for start in range(0, len(export.passages), _PASSAGE_CHUNK):
        batch = export.passages[start : start + _PASSAGE_CHUNK]
        # Unkeyed passages get a key from their source, so a second import of the same
        # file finds them instead of adding copies.
        keys = {p["id"]: p["key"] or f"import:{export.agent_id}:{p['id']}" for p in batch}
        held = (
            require(memory.archival, PassageListing, NEEDED_BY).keyed(keys.values())
            if exists
            else {}
        )
        for p in batch:
            kept = held.get(keys[p["id"]])
            if kept is None:
                continue
            placed[p["id"]] = kept.id  # a later passage replacing it links to the kept one
            if kept.text != p["text"]:
                report.collisions.append(
                    f"passage key {keys[p['id']]!r}: the agent's passage {kept.id} kept"
                )
        fresh = [
            p
            for p in batch
            if keys[p["id"]] not in held and (p["text"], p["created_at"]) not in same
        ]
        _import_passages(memory, export.agent_id, fresh, placed)
        if progress is not None:
            progress("archival passages", start + len(batch), len(export.passages))
    report.passages_new = memory.archival.count() - before
    rules = {
        (r.tag, r.source): r
        for r in require(memory.archival, RetentionRules, NEEDED_BY).retention_rules()
    }
    for item in export.retention:  # after the passages: an import never forgets by itself
        mine = rules.get((item.tag, item.source))
        if mine is None:
            require(memory.archival, RetentionRules, NEEDED_BY).set_retention_rule(item)
        elif mine != item:
            report.collisions.append(
                f"retention rule {item.describe()}: the agent's {mine.describe()} kept"
            )
    return report


def _stored_messages(memory: Memory) -> dict[tuple[str, str], RecallMessage]:
    """Every message the agent has, by (thread, message id)."""
    out: dict[tuple[str, str], RecallMessage] = {}
    after = 0
    while page := require(memory.recall, MessageListing, NEEDED_BY).list_messages(
        after=after, limit=_PAGE
    ):
        out.update({(m.thread_id, m.message_id): m for _, m in page})
        after = page[-1][0]
    return out


def _stored_passages(memory: Memory) -> set[tuple[str, str | None]]:
    """(text, time) of every passage the agent has."""
    out: set[tuple[str, str | None]] = set()
    after = 0
    while page := require(memory.archival, PassageListing, NEEDED_BY).list_passages(
        after=after, limit=_PAGE
    ):
        out.update((p.text, p.created_at) for p, _ in page)
        after = page[-1][0].id
    return out


def _differs(stored: RecallMessage, fields: Mapping[str, Any]) -> bool:
    """Whether a file's message says something else than the stored one with its key."""
    return (stored.role, stored.text, stored.name, list(stored.tool_calls)) != (
        fields["role"],
        fields["text"],
        fields["name"],
        list(fields["tool_calls"]),
    )


def _import_passages(
    memory: Memory, source: str, batch: Sequence[Mapping[str, Any]], stored: dict[int, int]
) -> None:
    """Write a batch of exported passages; ``stored`` maps the file's ids to the new ones.

    A passage that replaced another is written after the one it replaced is, linked to it
    (``replaces``); the file holds a replaced passage before the one replacing it.
    """
    pending: list[tuple[int, NewPassage]] = []

    def flush() -> None:
        for (number, _), passage in zip(
            pending,
            require(memory.archival, BulkLoad, NEEDED_BY).insert_many(
                [item for _, item in pending]
            ),
            strict=True,
        ):
            stored[number] = passage.id
        pending.clear()

    for p in batch:
        item = NewPassage(
            text=p["text"],
            tags=p["tags"],
            thread_id=p["thread_id"],
            turn=p["turn"],
            created_at=p["created_at"],
            # Unkeyed passages get a key from their source, so a second import of the
            # same file finds them instead of adding copies.
            key=p["key"] or f"import:{source}:{p['id']}",
        )
        older = p.get("replaces")
        if older is None:
            pending.append((p["id"], item))
            continue
        flush()  # the passage it replaces may be in this batch
        linked = replace(item, replaces=stored.get(older))
        try:
            stored[p["id"]] = (
                require(memory.archival, BulkLoad, NEEDED_BY).insert_many([linked])[0].id
            )
        except ValueError as refused:  # this store already replaced it: keep the passage
            log.warning("passage %s imported without its link: %s", p["id"], refused)
            stored[p["id"]] = (
                require(memory.archival, BulkLoad, NEEDED_BY).insert_many([item])[0].id
            )
    flush()


__all__ = [
    "ImportConflictError",
    "ImportMode",
    "ImportReport",
    "export_agent",
    "has_memory",
    "import_agent",
]
