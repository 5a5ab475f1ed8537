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

Import reads and checks the whole file before writing anything: a malformed, truncated
or altered file is refused with the line and the reason, and the target is left as it
was. Writing is idempotent (messages are keyed by thread and message id, passages by
their key, history entries by their content and time), so importing a file twice, or
again after an interrupted import, adds nothing twice. An agent that already has memory
is refused unless the caller says how to combine (``mode``: merge or replace; a read-only
block of the agent is never changed). A shared block is attached again only when the file
is the agent's own export, made in this same store (signed with the store's secret), and
the owner's block is here; otherwise it is restored as the agent's private copy, history
included. Both sides speak only the memory protocols.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langgraph_memgpt.retention import RetentionRuleError, rule
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.blocks import check_label
from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.messages import ROLES
from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.sections import check_names, check_value
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import Block, BlockEditError, RecallMessage, RetentionRule

FORMAT = "langgraph-memgpt-export"
VERSION = 1
KINDS = ("block", "block_history", "message", "passage", "retention_rule")
_LATER_KINDS = ("retention_rule",)
"""Kinds added after version 1 files were first written: absent from an older file's
counts, which then means none."""
_PAGE = 1000
_MESSAGE_CHUNK = 256
_PASSAGE_CHUNK = 256

Progress = Callable[[str, int, int], None]
"""Called with (what, done so far, total) while importing."""


class ExportFormatError(ValueError):
    """The file is not a complete, intact export (the message names the line and the fix)."""


@dataclass
class AgentExport:
    """The content of an export file, checked."""

    agent_id: str
    embedding: dict[str, Any] | None
    exported_at: str
    blocks: list[Block] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    shared: dict[str, str] = field(default_factory=dict)
    """Label -> the agent the block was attached from (absent: the agent's own block)."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    passages: list[dict[str, Any]] = field(default_factory=list)
    retention: list[RetentionRule] = field(default_factory=list)
    """Archival retention rules (``retention``), restored with the passages."""
    proofs: dict[str, str] = field(default_factory=dict)
    """Label -> the exporting store's signature of the shared claim (`CoreStore.share_proof`)."""
    message_keys: set[tuple[str, str]] = field(default_factory=set, repr=False)
    passage_ids: set[int] = field(default_factory=set, repr=False)
    passage_keys: set[str] = field(default_factory=set, repr=False)


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
                owner = memory.core.owner(block.label)
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
                                "shared_proof": memory.core.share_proof(block.label, owner),
                            }
                            if owner != memory.agent_id
                            else {}
                        ),
                    }
                )
                for entry in memory.core.history(block.label):
                    write(
                        {
                            "type": "block_history",
                            **{k: entry[k] for k in _HISTORY_FIELDS},
                        }
                    )
            after = 0
            while page := memory.recall.list_messages(after=after, limit=_PAGE):
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
            while passages := memory.archival.list_passages(after=after, limit=_PAGE):
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
                        }
                    )
                after = passages[-1][0].id
            for item in memory.archival.retention_rules():
                write(
                    {
                        "type": "retention_rule",
                        "tag": item.tag,
                        "source": item.source,
                        "max_age_seconds": item.max_age_seconds,
                    }
                )
            # A later kind is counted only when present: a file without one reads as before.
            counts = {k: n for k, n in counts.items() if n or k not in _LATER_KINDS}
            end = {"type": "end", "counts": counts, "sha256": digest.hexdigest()}
            handle.write(json.dumps(end, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return counts


_HISTORY_FIELDS = ("label", "old_value", "new_value", "actor", "op", "created_at")


# -- reading and checking ----------------------------------------------------------------


def read_export(path: str | Path) -> AgentExport:
    """Read and check a whole export file; nothing is written anywhere.

    Raises:
        ExportFormatError: the file is not an export, is truncated (no ``end`` record, or
            fewer records than it counts), was altered (checksum), or a record is
            malformed; the message names the line.
        OSError: the file cannot be read.
    """
    path = Path(path)
    digest = hashlib.sha256()
    export: AgentExport | None = None
    counts = dict.fromkeys(KINDS, 0)
    ended = False
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}, line {number}"
            if ended:
                raise ExportFormatError(f"{where}: data after the end record; the file was altered")
            if not raw.endswith(b"\n"):
                raise ExportFormatError(f"{where}: the line is cut short; the file is truncated")
            try:
                record = json.loads(raw.decode("utf-8"))
            except RecursionError:
                raise ExportFormatError(f"{where}: the record is nested too deeply") from None
            except (UnicodeDecodeError, ValueError) as err:
                raise ExportFormatError(f"{where}: not a JSON record ({err})") from None
            if _depth(record) > MAX_DEPTH:
                raise ExportFormatError(
                    f"{where}: the record is nested deeper than {MAX_DEPTH} levels"
                )
            if not isinstance(record, dict):
                raise ExportFormatError(f"{where}: a record must be a JSON object")
            kind = record.get("type")
            if number == 1:
                export = _header(record, where)
            elif export is None or kind == "header":
                raise ExportFormatError(f"{where}: a second header; the file was altered")
            elif kind == "end":
                _check_end(record, counts, digest.hexdigest(), where)
                ended = True
                continue
            else:
                _add_record(export, record, where)
                counts[str(kind)] += 1
            digest.update(raw)
    if export is None:
        raise ExportFormatError(f"{path} is empty: not a langgraph-memgpt export")
    if not ended:
        raise ExportFormatError(
            f"{path} ends without its end record: the file is truncated (an interrupted copy "
            "or download); export the agent again"
        )
    _check_whole(export, str(path))
    return export


def _header(record: Mapping[str, Any], where: str) -> AgentExport:
    if record.get("type") != "header" or record.get("format") != FORMAT:
        raise ExportFormatError(
            f"{where}: not a langgraph-memgpt export (no '{FORMAT}' header); make one with "
            "`langgraph-memgpt export`"
        )
    version = record.get("version")
    if version != VERSION:
        raise ExportFormatError(
            f"{where}: export format version {version!r}; this langgraph-memgpt reads version "
            f"{VERSION}: upgrade it to import this file"
        )
    agent = record.get("agent_id")
    if not isinstance(agent, str) or not agent.strip() or valid_text(agent) != agent:
        raise ExportFormatError(f"{where}: the header has no valid agent_id")
    embedding = record.get("embedding")
    if embedding is not None and not isinstance(embedding, dict):
        raise ExportFormatError(f"{where}: the header's embedding must be an object or null")
    return AgentExport(agent, embedding, str(record.get("exported_at", "")))


def _check_end(
    record: Mapping[str, Any], counts: Mapping[str, int], digest: str, where: str
) -> None:
    expected = record.get("counts")
    if not isinstance(expected, dict) or any(
        expected.get(k, 0 if k in _LATER_KINDS else None) != counts[k] for k in KINDS
    ):
        raise ExportFormatError(
            f"{where}: the file counts {expected} records but holds {dict(counts)}; it was "
            "truncated or altered"
        )
    if record.get("sha256") != digest:
        raise ExportFormatError(f"{where}: checksum mismatch; the file was altered or damaged")


MAX_DEPTH = 32
"""Deepest nesting a record may have (a tool call's arguments are the deepest part)."""
MAX_INT = 2**31 - 1
"""Largest turn, char limit or age a file may give: what every backend's columns hold."""
MAX_ID = 2**63 - 1
MAX_AGE = 10**10
"""Longest retention age (about 300 years): an older cut-off is before year 1."""


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            items: Any = item.values()
        elif isinstance(item, list):
            items = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in items)
    return deepest


def _need(record: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], where: str) -> Any:
    """``record[key]`` if present and of one of ``kinds`` (a bool is not an int here)."""
    allowed = kinds if isinstance(kinds, tuple) else (kinds,)
    value = record.get(key)
    if (
        key not in record
        or not isinstance(value, allowed)
        or (isinstance(value, bool) and bool not in allowed)
    ):
        wanted = " or ".join("null" if k is type(None) else k.__name__ for k in allowed)
        raise ExportFormatError(f"{where}: {record.get('type')} field '{key}' must be {wanted}")
    return value


def _int(
    record: Mapping[str, Any], key: str, where: str, low: int, high: int, *, null: bool = False
) -> Any:
    """``record[key]``, an integer from ``low`` to ``high`` (or null when ``null``)."""
    value = _need(record, key, (int, type(None)) if null else int, where)
    if value is not None and not low <= value <= high:
        raise ExportFormatError(
            f"{where}: {record.get('type')} field '{key}' is {str(value)[:30]}, outside "
            f"{low}..{high}"
        )
    return value


def _text(record: Mapping[str, Any], key: str, where: str, *, empty: bool = True) -> str:
    """``record[key]``, a string (not blank unless ``empty``)."""
    value = _need(record, key, str, where)
    if not empty and not value.strip():
        raise ExportFormatError(f"{where}: {record.get('type')} field '{key}' is empty")
    return str(value)


def _label(record: Mapping[str, Any], where: str) -> str:
    """A block label, as ``create()`` allows it."""
    label = _text(record, "label", where)
    try:
        check_label(label)
    except BlockEditError as err:
        raise ExportFormatError(f"{where}: {err}") from None
    return label


def _time(record: Mapping[str, Any], where: str) -> str:
    value = _need(record, "created_at", str, where)
    try:
        return to_utc_iso(value)
    except (ValueError, OverflowError):
        raise ExportFormatError(f"{where}: created_at {value!r} is not a timestamp") from None


def _sections(record: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """A block record's section names (absent: none, as in files made before sections)."""
    names = record.get("sections", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ExportFormatError(f"{where}: block sections must be a list of names")
    try:
        return check_names(names)
    except BlockEditError as err:
        raise ExportFormatError(f"{where}: {err}") from None


def _add_record(export: AgentExport, record: Mapping[str, Any], where: str) -> None:
    kind = record.get("type")
    if kind == "block":
        limit = _int(record, "char_limit", where, 1, MAX_INT)
        label = _label(record, where)
        if any(b.label == label for b in export.blocks):
            raise ExportFormatError(f"{where}: a second block '{label}'; the file was altered")
        if "shared_from" in record:
            owner = _text(record, "shared_from", where, empty=False)
            export.shared[label] = owner
            proof = record.get("shared_proof", "")
            export.proofs[label] = proof if isinstance(proof, str) else ""
        sections = _sections(record, where)
        value = _need(record, "value", str, where)
        try:
            check_value(value, sections, label)
        except BlockEditError as err:
            raise ExportFormatError(f"{where}: {err}") from None
        export.blocks.append(
            Block(
                label=label,
                value=value,
                description=_need(record, "description", str, where),
                char_limit=limit,
                read_only=_need(record, "read_only", bool, where),
                sections=sections,
            )
        )
    elif kind == "block_history":
        entry = {
            "label": _label(record, where),
            "old_value": _need(record, "old_value", (str, type(None)), where),
            "new_value": _need(record, "new_value", str, where),
            "actor": _need(record, "actor", str, where),
            "op": _text(record, "op", where, empty=False),
            "created_at": _need(record, "created_at", str, where),
        }
        _time(record, where)  # checked; kept as written, so a second import finds it
        export.history.append(entry)
    elif kind == "message":
        role = _need(record, "role", str, where)
        if role not in ROLES:
            raise ExportFormatError(f"{where}: message role {role!r} is not one of {ROLES}")
        calls = _need(record, "tool_calls", list, where)
        if not all(isinstance(c, dict) for c in calls):
            raise ExportFormatError(f"{where}: message tool_calls must be objects")
        thread, message = (
            _text(record, "thread_id", where, empty=False),
            _text(record, "message_id", where, empty=False),
        )
        if (thread, message) in export.message_keys:
            raise ExportFormatError(
                f"{where}: message {message!r} of thread {thread!r} appears twice; the file "
                "was altered"
            )
        export.message_keys.add((thread, message))
        export.messages.append(
            {
                "thread_id": thread,
                "message_id": message,
                "role": role,
                "name": _need(record, "name", (str, type(None)), where),
                "text": _need(record, "text", str, where),
                "tool_calls": calls,
                "created_at": _time(record, where),
                "turn": _int(record, "turn", where, 0, MAX_INT),
                "searchable": _need(record, "searchable", bool, where),
            }
        )
    elif kind == "passage":
        text = _need(record, "text", str, where)
        if not text.strip():
            raise ExportFormatError(f"{where}: a passage needs text")
        tags = _need(record, "tags", list, where)
        if not all(isinstance(t, str) for t in tags):
            raise ExportFormatError(f"{where}: passage tags must be strings")
        number = _int(record, "id", where, 1, MAX_ID)
        key = _need(record, "key", (str, type(None)), where)
        if number in export.passage_ids or (key is not None and key in export.passage_keys):
            raise ExportFormatError(
                f"{where}: passage {number} (key {key!r}) appears twice; the file was altered"
            )
        export.passage_ids.add(number)
        if key is not None:
            export.passage_keys.add(key)
        export.passages.append(
            {
                "id": number,
                "text": text,
                "tags": tags,
                "thread_id": _need(record, "thread_id", (str, type(None)), where),
                "turn": _int(record, "turn", where, 0, MAX_INT, null=True),
                "created_at": _time(record, where),
                "key": key,
            }
        )
    elif kind == "retention_rule":
        age = _int(record, "max_age_seconds", where, 1, MAX_AGE)
        tag = _need(record, "tag", str, where)
        try:
            export.retention.append(
                rule(tag, age, _need(record, "source", (str, type(None)), where))
            )
        except RetentionRuleError as err:
            raise ExportFormatError(f"{where}: retention rule: {err}") from None
    else:
        raise ExportFormatError(f"{where}: unknown record type {kind!r}")


def _check_whole(export: AgentExport, path: str) -> None:
    """What no single record shows: history of a block the file lacks, repeated rules."""
    labels = {b.label for b in export.blocks}
    for entry in export.history:
        if entry["label"] not in labels:
            raise ExportFormatError(
                f"{path}: an edit of block '{entry['label']}', which the file does not hold; "
                "the file was altered"
            )
    rules = [(r.tag, r.source) for r in export.retention]
    if len(set(rules)) != len(rules):
        raise ExportFormatError(f"{path}: a retention rule appears twice; the file was altered")


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
        or memory.recall.list_messages(limit=1)
        or memory.archival.list_passages(limit=1)
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
        expected = memory.core.share_proof(label, owner)
        if not proof or not expected or not hmac.compare_digest(proof, expected):
            continue
        try:
            memory.core.attach(label, owner)
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
        theirs = memory.core.owner(label) != memory.agent_id
        if any(b.label == label for b in export.blocks) and (
            block.read_only or theirs or mode == "merge"
        ):
            report.kept.append(label)
    skip = set(report.attached) | set(report.kept)
    restored = [b for b in export.blocks if b.label not in skip]
    history = [e for e in export.history if e["label"] not in skip]
    memory.core.restore(restored, history)
    report.blocks, report.history = len(restored), len(history)
    # Thread by thread in time order (ties in stored order), as they were first recorded,
    # so every message gets the same ±2 context window it had.
    ordered = sorted(
        enumerate(export.messages), key=lambda p: (p[1]["thread_id"], p[1]["created_at"], p[0])
    )
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
    for start in range(0, len(export.passages), _PASSAGE_CHUNK):
        batch = export.passages[start : start + _PASSAGE_CHUNK]
        memory.archival.insert_many(
            [
                NewPassage(
                    text=p["text"],
                    tags=p["tags"],
                    thread_id=p["thread_id"],
                    turn=p["turn"],
                    created_at=p["created_at"],
                    # Unkeyed passages get a key from their source, so a second import
                    # of the same file finds them instead of adding copies.
                    key=p["key"] or f"import:{export.agent_id}:{p['id']}",
                )
                for p in batch
            ]
        )
        if progress is not None:
            progress("archival passages", start + len(batch), len(export.passages))
    report.passages_new = memory.archival.count() - before
    for item in export.retention:  # after the passages: an import never forgets by itself
        memory.archival.set_retention_rule(item)
    return report


__all__ = [
    "FORMAT",
    "VERSION",
    "AgentExport",
    "ExportFormatError",
    "ImportConflictError",
    "ImportMode",
    "ImportReport",
    "export_agent",
    "has_memory",
    "import_agent",
    "read_export",
]
