"""The consolidator's prompt, and the checks its answer must pass before memory changes.

The model is asked for one JSON object of line edits (lines to drop, lines to move to
another block, facts to add, facts to archive), or whole new block values from a model
that rewrites well. A small model often answers with prose, a truncated object, a line
number that does not exist, or an edit that empties a block; none of that may reach
memory. `parse_proposal` turns the answer into a `Proposal` holding only the edits that
passed, and says in words why anything was refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph_memgpt.stores.duplicates import normalised, with_line
from langgraph_memgpt.stores.types import Block

MAX_FACT_CHARS = 500
"""Longest fact archived; a longer one is a paragraph the model should have condensed."""

INSTRUCTIONS = """\
You tend the long-term memory of a chat agent while it is idle.
Core memory blocks are always in the agent's prompt, so they must hold only lasting facts.
Every line of a block is shown with its number, like [3]. Sort every line into one kind:
- "user": a lasting fact about the user (name, job, family, likes, health, plans);
- "agent": who the agent is or how it behaves;
- "chatter": greetings, thanks, small talk, remarks about the weather or the chat.
Lines about the user are kept in "human", lines about the agent in "persona", chatter is
removed, and repeated lines are merged, so sort carefully: a fact sorted as chatter is lost.
Then list lasting facts about the user found only in the new messages ("new_facts"), and
facts worth keeping for later ("archive"), one short sentence each.

Answer with one JSON object and nothing else, for example:
{"lines": {"1": "agent", "2": "user", "3": "chatter"}, \
"new_facts": ["Has a dog called Rex"], "archive": ["The user got a dog in May"]}
"""

KINDS = ("user", "agent", "chatter")
"""What a line can be: kept in ``human``, kept in ``persona``, or dropped."""
HOME = {"user": "human", "agent": "persona"}

_TEXTS = {"type": "array", "items": {"type": "string"}}


def _kinds_for(label: str) -> list[str]:
    """The kinds a line of ``label`` may be given: ``human`` lines never move to ``persona``.

    A small model sorting "I am Sam" as the user and the user's allergy as the agent
    swapped the two blocks; only the move the consolidator is for (a user fact out of
    ``persona``) is offered.
    """
    return ["user", "chatter"] if label == "human" else list(KINDS)


def answer_schema(blocks: list[Block] | Mapping[str, Block]) -> dict[str, Any]:
    """The classification answer for these blocks as a JSON schema: one kind per line.

    The grammar of models that decode by one (the embedded model): sorting numbered lines
    is within a 1.5B model's reach, rewriting whole blocks faithfully is not, and with
    every line required it cannot skip one. Every answer is checked by `parse_proposal`.
    """
    numbers = numbered_lines(blocks)
    return {
        "type": "object",
        "properties": {
            "lines": {
                "type": "object",
                "properties": {
                    str(n): {"enum": _kinds_for(label)} for n, (label, _) in numbers.items()
                },
                "required": [str(n) for n in numbers],
                "additionalProperties": False,
            },
            "new_facts": {**_TEXTS, "maxItems": 8},
            "archive": {**_TEXTS, "maxItems": 8},
        },
        "required": ["lines", "new_facts", "archive"],
        "additionalProperties": False,
    }


def numbered_lines(blocks: list[Block] | Mapping[str, Block]) -> dict[int, tuple[str, str]]:
    """Every non-empty line of the blocks, numbered from 1 across blocks: n -> (label, line)."""
    ordered = list(blocks.values()) if isinstance(blocks, Mapping) else blocks
    lines = [(b.label, line) for b in ordered for line in b.value.splitlines() if line.strip()]
    return {n: item for n, item in enumerate(lines, start=1)}


def render_request(blocks: list[Block], transcript: list[str]) -> str:
    """The user message of the consolidation call: the numbered blocks, then what was said."""
    numbers = numbered_lines(blocks)
    parts = ["Core memory blocks:"]
    for block in blocks:
        access = ", read-only: do not change" if block.read_only else ""
        lines = [f"[{n}] {line}" for n, (label, line) in numbers.items() if label == block.label]
        parts.append(
            f'<block label="{block.label}" limit="{block.char_limit}"{access}>\n'
            + "\n".join(lines)
            + "\n</block>"
        )
    parts.append("New messages since the last consolidation:")
    parts.extend(transcript or ["(none)"])
    return "\n".join(parts)


@dataclass
class Proposal:
    """The edits of one answer that passed every check, and why others did not."""

    blocks: dict[str, str] = field(default_factory=dict)
    """label -> new value, each checked (known, writable, not emptied by accident, in limit)."""
    clear: list[str] = field(default_factory=list)
    """Labels the model asked to empty on purpose (their value in `blocks` is "")."""
    archive: list[str] = field(default_factory=list)
    """Facts to archive, stripped, de-duplicated, each at most `MAX_FACT_CHARS`."""
    problems: list[str] = field(default_factory=list)
    """One sentence per refused part."""
    dropped: list[str] = field(default_factory=list)
    """Lines of the rewritten blocks found nowhere in the result (blocks or archive):
    chatter, or a fact the model lost. Nobody can tell which in general, so they are
    listed for a person to review, not refused."""

    def as_state(self) -> dict[str, Any]:
        """The proposal as plain JSON for the graph's state."""
        return {
            "blocks": dict(self.blocks),
            "clear": list(self.clear),
            "archive": self.archive,
            "dropped": self.dropped,
        }


class MalformedAnswerError(ValueError):
    """The model's answer is not the JSON object asked for; memory is left as it is."""


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def answer_object(text: str) -> dict[str, Any]:
    """The JSON object in the model's answer (a code fence or text around it tolerated).

    Raises:
        MalformedAnswerError: no JSON object can be read from the answer.
    """
    stripped = _FENCE.sub("", text.strip())
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    start = min(starts, default=-1)
    if start < 0:
        raise MalformedAnswerError(f"the answer holds no JSON object: {_clip(text)!r}")
    try:
        value, _ = json.JSONDecoder().raw_decode(stripped[start:])
    except json.JSONDecodeError as exc:
        raise MalformedAnswerError(
            f"the answer is not valid JSON ({exc.msg}): {_clip(text)!r}"
        ) from None
    if not isinstance(value, dict):
        raise MalformedAnswerError(f"the answer is JSON but not an object: {_clip(text)!r}")
    return value


def parse_proposal(text: str, blocks: Mapping[str, Block]) -> Proposal:
    """Check the model's answer against the blocks it was shown.

    Refused, with a problem each: an unknown or read-only label, a block emptied without
    being named in ``clear``, a block over its character limit, a fact that is not text.

    Raises:
        MalformedAnswerError: the answer is not an object of the asked shape (then nothing
            of it is applied: a half-read answer could be a truncated one).
    """
    raw = answer_object(text)
    keys = {"blocks", "clear", "archive", "drop", "move", "add", "lines", "new_facts"}
    unknown_keys = sorted(set(raw) - keys)
    if unknown_keys:
        raise MalformedAnswerError(
            f"the answer has unknown keys {unknown_keys}; expected some of {sorted(keys)}"
        )
    rewrites = raw.get("blocks") or {}
    clear = raw.get("clear") or []
    archive = raw.get("archive") or []
    if not isinstance(rewrites, dict) or not all(isinstance(v, str) for v in rewrites.values()):
        raise MalformedAnswerError("'blocks' must map block labels to their new text")
    if not isinstance(clear, list) or not all(isinstance(c, str) for c in clear):
        raise MalformedAnswerError("'clear' must be a list of block labels")
    if not isinstance(archive, list):
        raise MalformedAnswerError("'archive' must be a list of facts")
    problems: list[str] = []
    new_blocks = {**line_edits(raw, blocks, problems), **rewrites}

    proposal = Proposal(problems=problems)
    for label in clear:
        new_blocks.setdefault(label, "")
    for label, value in new_blocks.items():
        block = blocks.get(label)
        value = value.strip()
        if block is None:
            proposal.problems.append(f"block '{label}' does not exist; ignored")
        elif block.read_only:
            proposal.problems.append(f"block '{label}' is read-only; left as it is")
        elif not value and block.value.strip() and label not in clear:
            proposal.problems.append(
                f"block '{label}' would be emptied without being named in 'clear'; kept"
            )
        elif len(value) > block.char_limit:
            proposal.problems.append(
                f"block '{label}' would hold {len(value)} characters, over its limit of "
                f"{block.char_limit}; kept"
            )
        else:
            proposal.blocks[label] = value
            if not value and label in clear:
                proposal.clear.append(label)

    seen: set[str] = set()
    for fact in archive:
        if not isinstance(fact, str) or not fact.strip():
            proposal.problems.append(f"archive entry {_clip(repr(fact))} is not a fact; ignored")
            continue
        fact = " ".join(fact.split())
        if len(fact) > MAX_FACT_CHARS:
            proposal.problems.append(
                f"archive entry of {len(fact)} characters is over {MAX_FACT_CHARS}; ignored"
            )
        elif fact.casefold() not in seen:
            seen.add(fact.casefold())
            proposal.archive.append(fact)
    proposal.dropped = dropped_lines(blocks, proposal)
    return proposal


def line_edits(
    raw: Mapping[str, Any], blocks: Mapping[str, Block], problems: list[str]
) -> dict[str, str]:
    """The blocks that the answer's line edits (and exact duplicates) change: label -> value.

    ``drop`` removes lines, ``move`` takes lines to another block, ``add`` appends facts
    by the rule core appends and archival inserts keep (`stores.duplicates.with_line`: a
    fact the block already says is left out, a fuller wording takes the place of the line
    it covers); a line repeating one already in its block (case, spacing and punctuation
    ignored) is merged away. Nothing is rephrased, so no fact is lost but the lines named
    in ``drop``.
    Edits of read-only or unknown blocks, and unknown line numbers, become problems.

    Raises:
        MalformedAnswerError: ``drop``, ``move`` or ``add`` is not of the asked shape.
    """
    drop, move, add = raw.get("drop") or [], raw.get("move") or {}, raw.get("add") or {}
    if not isinstance(drop, list) or not all(_is_int(n) for n in drop):
        raise MalformedAnswerError("'drop' must be a list of line numbers")
    if not isinstance(move, dict) or not all(
        isinstance(v, list) and all(_is_int(n) for n in v) for v in move.values()
    ):
        raise MalformedAnswerError("'move' must map block labels to lists of line numbers")
    if not isinstance(add, dict) or not all(
        isinstance(v, list) and all(isinstance(t, str) for t in v) for v in add.values()
    ):
        raise MalformedAnswerError("'add' must map block labels to lists of new lines")
    drop, move, add = _sorted_lines(raw, blocks, list(drop), dict(move), dict(add))
    numbers = numbered_lines(blocks)
    placed: dict[int, str | None] = {}  # line number -> its new block (None: dropped)
    for n in drop:
        placed[n] = None
    for target, moved in move.items():
        for n in moved:
            placed[n] = target
    lines: dict[str, list[str]] = {
        b.label: [line for line in b.value.splitlines() if line.strip()] for b in blocks.values()
    }
    for n, dest in placed.items():
        if n not in numbers:
            problems.append(f"line {n} does not exist; ignored")
            continue
        source, line = numbers[n]
        if blocks[source].read_only:
            problems.append(f"line {n} is in read-only block '{source}'; left as it is")
            continue
        if dest is not None and (dest not in blocks or blocks[dest].read_only):
            problems.append(f"line {n} cannot move to block '{dest}'; left as it is")
            continue
        lines[source].remove(line)
        if dest is not None:
            lines[dest].append(line)
    for target, facts in add.items():
        if target not in blocks or blocks[target].read_only:
            problems.append(f"cannot add to block '{target}'; ignored")
            continue
        for fact in (" ".join(f.split()) for f in facts if f.strip()):
            lines[target] = with_line(lines[target], fact)
    changed: dict[str, str] = {}
    for label, block in blocks.items():
        if block.read_only:
            continue
        value = "\n".join(dict.fromkeys(lines[label]))  # exact repeats first
        unique: dict[str, str] = {}
        for line in value.splitlines():
            unique.setdefault(normalised(line), line)
        value = "\n".join(unique.values())
        if value != "\n".join(line for line in block.value.splitlines() if line.strip()):
            changed[label] = value
    return changed


def _sorted_lines(
    raw: Mapping[str, Any],
    blocks: Mapping[str, Block],
    drop: list[Any],
    move: dict[str, Any],
    add: dict[str, Any],
) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """Fold the classification answer (``lines``, ``new_facts``) into drop / move / add.

    A line of kind ``user`` belongs in ``human`` and one of kind ``agent`` in ``persona``
    (when the agent has such a block; a line of another block stays where it is);
    ``chatter`` is dropped. ``new_facts`` are added to ``human``.

    Raises:
        MalformedAnswerError: ``lines`` or ``new_facts`` is not of the asked shape.
    """
    kinds = raw.get("lines") or {}
    new_facts = raw.get("new_facts") or []
    if not isinstance(kinds, dict) or not all(k in KINDS for k in kinds.values()):
        raise MalformedAnswerError(f"'lines' must map line numbers to one of {list(KINDS)}")
    if not isinstance(new_facts, list) or not all(isinstance(f, str) for f in new_facts):
        raise MalformedAnswerError("'new_facts' must be a list of facts")
    numbers = numbered_lines(blocks)
    for key, kind in kinds.items():
        try:
            n = int(key)
        except ValueError:
            raise MalformedAnswerError(f"'lines' key {key!r} is not a line number") from None
        if kind == "chatter":
            drop.append(n)
            continue
        home = HOME[kind]
        if n in numbers and numbers[n][0] in HOME.values() and numbers[n][0] != home:
            if home in blocks:
                move.setdefault(home, []).append(n)
    if new_facts:
        if "human" in blocks:
            add["human"] = [*add.get("human", []), *new_facts]
        else:
            raise MalformedAnswerError("'new_facts' were given but the agent has no 'human' block")
    return drop, move, add


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def dropped_lines(blocks: Mapping[str, Block], proposal: Proposal) -> list[str]:
    """Lines of the rewritten blocks whose text is in no block or fact afterwards."""
    after = [proposal.blocks.get(label, block.value) for label, block in blocks.items()]
    kept = _squash("\n".join(after + proposal.archive))
    lines = (line for label in proposal.blocks for line in blocks[label].value.splitlines())
    return list(dict.fromkeys(line.strip() for line in lines if _squash(line) not in kept))


def _squash(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
