"""A value the host changed, corrected where core memory quotes it (small models).

A watcher's event reads "config.yaml ... was modified. Changed lines:", then "- output_format:
json" and "+ output_format: parquet". A 1.5B model answers it with a ``core_memory_replace`` that
copies the file's line ("SHELL=/bin/zsh") instead of the block's ("Uses zsh as her login
shell."), is refused, and repeats the call until the loop's breaker stops it: the block
keeps the old value. The embedded model's wrapper (`llm.toolcalls`) therefore makes the
correction itself when it is not in doubt: each changed value of the event (the words
that differ between a removed line and the added line in its place) that is quoted as a
whole word in exactly one line of ``human`` is replaced there, as a ``core_memory_replace``
of that line; the model's own replace calls that could not apply (their old text is not in
the block) give way to it. Anything else the model called stays.
"""

from __future__ import annotations

import difflib
import re
import uuid
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolCall

from langgraph_memgpt.events import EVENT_NAME
from langgraph_memgpt.prompts import HUMAN_BLOCK
from langgraph_memgpt.stores.words import topic_stems
from langgraph_memgpt.turn.tokens import content_text

EVENT_FIX_FLAG = "memgpt_event_fix"
"""On an AI message: how many value corrections the wrapper made for it."""

REPLACE_TOOL = "core_memory_replace"
_TOKEN = re.compile(r"[\w.@+-]+")


def changed_values(event: str) -> list[tuple[str, str, str]]:
    """(old, new, line) of each value an event's ``- line`` / ``+ line`` pairs changed.

    The lines are paired in order; in each pair the differing run of words is the value
    ("- SHELL=/bin/zsh" / "+ SHELL=/usr/bin/fish" -> ("zsh", "fish"); "Europe/Berlin" ->
    "America/Toronto" is one run). Only replacements count: a word added or removed has
    no old value to find.
    """
    removed = [line[2:] for line in event.splitlines() if line.startswith("- ")]
    added = [line[2:] for line in event.splitlines() if line.startswith("+ ")]
    values: list[tuple[str, str, str]] = []
    for before, after in zip(removed, added, strict=False):
        old_words = list(_TOKEN.finditer(before))
        new_words = list(_TOKEN.finditer(after))
        matcher = difflib.SequenceMatcher(
            a=[m.group().lower() for m in old_words],
            b=[m.group().lower() for m in new_words],
            autojunk=False,
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "replace":
                continue
            old = before[old_words[i1].start() : old_words[i2 - 1].end()]
            new = after[new_words[j1].start() : new_words[j2 - 1].end()]
            if old.strip() and new.strip() and all(v[:2] != (old, new) for v in values):
                values.append((old, new, before))
    return values


def human_lines(prompt: Sequence[BaseMessage]) -> list[str]:
    """The value lines of the ``human`` block as the prompt shows it."""
    lines: list[str] = []
    for message in prompt:
        if isinstance(message, SystemMessage):
            for block in HUMAN_BLOCK.findall(content_text(message)):
                lines.extend(
                    line for line in block.splitlines() if line.strip() and not line.startswith("<")
                )
    return lines


def corrected_line(
    lines: Sequence[str], old: str, new: str, source: str = ""
) -> tuple[str, str] | None:
    """(line, corrected line) when ``old`` is quoted as a whole word in exactly one line.

    With ``source`` (the event's line the value came from), the line must also share a word
    of its key ("output_format", "SHELL"): a "true" -> "false" must not correct whichever
    line happens to say "true".
    """
    pattern = re.compile(rf"(?<![\w/]){re.escape(old)}(?![\w/])", re.IGNORECASE)
    key = _words(source.replace(old, " ")) if source else set()
    quoting = [
        line for line in lines if pattern.search(line) and (not source or key & _words(line))
    ]
    if len(quoting) != 1 or re.search(re.escape(new), quoting[0], re.IGNORECASE):
        return None
    line = quoting[0]
    return line, pattern.sub(lambda _: new, line, count=1)


def _words(text: str) -> set[str]:
    """Content stems of ``text``, ``snake_case`` and ``a=b`` split into words."""
    return topic_stems(re.sub(r"[_\W]+", " ", text))


def correct_event_values(message: AIMessage, prompt: Sequence[BaseMessage]) -> AIMessage:
    """``message`` with the event's changed values corrected in ``human`` (see the module)."""
    if not prompt or not isinstance(prompt[-1], HumanMessage) or prompt[-1].name != EVENT_NAME:
        return message
    lines = human_lines(prompt)
    block = "\n".join(lines).lower()
    fixes = [
        fix
        for old, new, source in changed_values(content_text(prompt[-1]))
        if (fix := corrected_line(lines, old, new, source)) is not None
    ]
    if not fixes:
        return message
    kept: list[ToolCall] = []
    for call in message.tool_calls:
        old_text = str(call["args"].get("old_content", ""))
        if call["name"] == REPLACE_TOOL and old_text.lower() not in block:
            continue  # it would be refused: the correction below takes its place
        kept.append(call)
    written = " ".join(str(v) for c in kept for v in c["args"].values()).lower()
    added = [
        ToolCall(
            name=REPLACE_TOOL,
            args={"label": "human", "old_content": line, "new_content": fixed},
            id=f"call_{uuid.uuid4().hex[:24]}",
        )
        for line, fixed in fixes
        if fixed.lower() not in written
    ]
    if not added and len(kept) == len(message.tool_calls):
        return message
    flags = {**message.additional_kwargs, EVENT_FIX_FLAG: len(added)}
    return message.model_copy(update={"tool_calls": [*kept, *added], "additional_kwargs": flags})
