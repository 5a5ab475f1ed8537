"""The export file: its records, and reading and checking one before anything is written.

JSON Lines, one record per line: a ``header`` (format, version, source agent, embedding
model), then ``block``, ``block_history``, ``message``, ``passage`` and ``retention_rule``
records, and an ``end`` record with the count of each kind and the SHA-256 of every line
before it (``transfer`` says what each holds). `read_export` reads a whole file and checks
every field (ranges, labels, sections, nesting depth, duplicate ids, the counts and the
digest): a malformed, truncated or altered file is refused with the line and the reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_memgpt.ops.retention import MAX_AGE, RetentionRuleError, rule
from langgraph_memgpt.stores.blocks import check_label
from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.messages import ROLES
from langgraph_memgpt.stores.sections import check_names, check_value
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import Block, BlockEditError, RetentionRule

FORMAT = "langgraph-memgpt-export"
VERSION = 1
KINDS = ("block", "block_history", "message", "passage", "retention_rule")
LATER_KINDS = ("retention_rule",)
"""Kinds added after version 1 files were first written: absent from an older file's
counts, which then means none."""


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


HISTORY_FIELDS = ("label", "old_value", "new_value", "actor", "op", "created_at")


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
        expected.get(k, 0 if k in LATER_KINDS else None) != counts[k] for k in KINDS
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
        older = (
            _int(record, "replaces", where, 1, MAX_ID, null=True) if "replaces" in record else None
        )
        if older is not None and older not in export.passage_ids:
            raise ExportFormatError(
                f"{where}: passage {number} replaces passage {older}, which the file does not "
                "hold before it; the file was altered"
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
                "replaces": older,
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


__all__ = [
    "FORMAT",
    "HISTORY_FIELDS",
    "KINDS",
    "LATER_KINDS",
    "VERSION",
    "AgentExport",
    "ExportFormatError",
    "read_export",
]
