"""The consolidator's prompt, and the checks its answer must pass before memory changes.

The model is asked for one JSON object: the core blocks it rewrites (whole new values),
the blocks it deliberately empties, and short facts to archive. A small model often
answers with prose, a truncated object, or a block it silently emptied; none of that may
reach memory. `parse_proposal` turns the answer into a `Proposal` holding only the edits
that passed, and says in words why anything was refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph_memgpt.stores.types import Block

MAX_FACT_CHARS = 500
"""Longest fact archived; a longer one is a paragraph the model should have condensed."""

INSTRUCTIONS = """\
You tend the long-term memory of a chat agent while it is idle.
Core memory blocks are always in the agent's prompt, so they must be short and hold only
lasting facts. Rewrite them:
- merge duplicate lines into one;
- drop chatter (greetings, thanks, small talk, remarks about the weather or the chat);
- facts about the user belong in "human", not in "persona" ("persona" is who the agent is);
- keep every lasting fact about the user or the agent;
- stay within each block's character limit.
Also list facts from the new messages worth keeping for later (one short sentence each).

Answer with one JSON object and nothing else:
{"blocks": {"<label>": "<the whole new text of the block>"}, "clear": [], \
"archive": ["<fact>"]}
Put in "blocks" only the blocks you change. To empty a block on purpose, name it in
"clear" (an empty text without it is refused). Example:
{"blocks": {"human": "Name: Ana\\nLikes hiking"}, "clear": [], "archive": ["Ana likes hiking"]}
"""

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "blocks": {"type": "object", "additionalProperties": {"type": "string"}},
        "clear": {"type": "array", "items": {"type": "string"}},
        "archive": {"type": "array", "items": {"type": "string"}, "maxItems": 12},
    },
    "required": ["blocks", "clear", "archive"],
    "additionalProperties": False,
}
"""The answer's JSON schema: a constraint for models that decode by grammar (the embedded
one); every model's answer is checked by `parse_proposal` whatever produced it."""


def render_request(blocks: list[Block], transcript: list[str]) -> str:
    """The user message of the consolidation call: the blocks, then what happened since."""
    parts = ["Core memory blocks:"]
    for block in blocks:
        access = ", read-only: do not change" if block.read_only else ""
        parts.append(
            f'<block label="{block.label}" limit="{block.char_limit}"{access}>\n'
            f"{block.value}\n</block>"
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
    unknown_keys = sorted(set(raw) - {"blocks", "clear", "archive"})
    if unknown_keys:
        raise MalformedAnswerError(
            f"the answer has unknown keys {unknown_keys}; expected blocks, clear, archive"
        )
    new_blocks = raw.get("blocks") or {}
    clear = raw.get("clear") or []
    archive = raw.get("archive") or []
    if not isinstance(new_blocks, dict) or not all(isinstance(v, str) for v in new_blocks.values()):
        raise MalformedAnswerError("'blocks' must map block labels to their new text")
    if not isinstance(clear, list) or not all(isinstance(c, str) for c in clear):
        raise MalformedAnswerError("'clear' must be a list of block labels")
    if not isinstance(archive, list):
        raise MalformedAnswerError("'archive' must be a list of facts")

    proposal = Proposal()
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
