"""Reading a small model's tool calls out of its text: every shape it writes, nothing invented.

Constrained decoding (`llm.call_schema`) makes the model write ``[{"name": ..., "arguments":
...}]``; unconstrained it also writes calls fenced or in ``<tool_call>`` tags. The parser
accepts those shapes, gives each call an id, and leaves what it cannot fully read
(malformed JSON, a tool never offered, prose) as plain text.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, InvalidToolCall, ToolCall

PLAIN_REPLY_KEY = "reply"
"""The key of the optional no-tool answer, ``{"reply": "..."}``, in the constrained schema."""

_ARG_KEYS = ("arguments", "parameters", "args")
_CALL_KEYS = frozenset({"name", "id", "type", *_ARG_KEYS})
_TAG_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCE_RE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class ParsedReply:
    """A model's text split into the words it meant for the reader and its tool calls."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _as_call(item: Any, tool_names: Collection[str] | None) -> ToolCall | None:
    """Read one ``{"name", "arguments"}`` object (or OpenAI's ``{"function": {...}}``)."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict) and set(item) <= {"function", "id", "type"}:
        item = {**item["function"], "id": item.get("id")}
    if not set(item) <= _CALL_KEYS:
        return None  # extra keys: this is data that happens to have a "name", not a call
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    if tool_names is not None and name not in tool_names:
        return None
    present = [key for key in _ARG_KEYS if key in item]
    if len(present) != 1:
        return None  # a call always says what its arguments are, even when empty
    args: Any = item[present[0]]
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    call_id = item.get("id")
    return ToolCall(
        name=name,
        args=args,
        id=call_id if isinstance(call_id, str) and call_id else _new_call_id(),
        type="tool_call",
    )


def calls_from_json(text: str, tool_names: Collection[str] | None = None) -> list[ToolCall] | None:
    """Parse text that is entirely one tool call or a list of them; else return None.

    All or nothing: if any element is not a well-formed call, none are taken, so a
    half-understood reply is shown as text rather than executed.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
    items = data if isinstance(data, list) else [data]
    if not items:
        return None
    calls = [_as_call(item, tool_names) for item in items]
    if any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _extract_blocks(
    text: str, pattern: re.Pattern[str], tool_names: Collection[str] | None
) -> ParsedReply | None:
    """Take the blocks of ``pattern`` that hold tool calls; leave the others in the text."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        found = calls_from_json(match.group(1).strip(), tool_names)
        if found is None:
            continue
        calls.extend(found)
        kept.append(text[last : match.start()])
        last = match.end()
    if not calls:
        return None
    kept.append(text[last:])
    return ParsedReply(content=re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip(), tool_calls=calls)


def parse_tool_calls(text: str, tool_names: Collection[str] | None = None) -> ParsedReply:
    """Turn tool calls written as text into real tool calls; leave everything else as text.

    Understood shapes: the whole reply as a JSON object ``{"name", "arguments"}`` (or a
    list of them, or OpenAI's ``{"type": "function", "function": {...}}``); Qwen's
    ``<tool_call>...</tool_call>`` blocks; fenced ````json`` blocks. Text around tags or
    fences is kept as the message content (the agent's inner monologue). ``arguments`` may
    also be a JSON string, as in OpenAI's wire format.

    Args:
        text: the model's reply.
        tool_names: the tools that were offered; a call to any other name is not taken.

    Returns:
        The remaining text and the calls found (none when nothing parsed cleanly).
    """
    stripped = text.strip()
    whole = calls_from_json(stripped, tool_names)
    if whole is not None:
        return ParsedReply(content="", tool_calls=whole)
    fenced_whole = _FENCE_RE.fullmatch(stripped)
    if fenced_whole is not None:
        inner = calls_from_json(fenced_whole.group(1).strip(), tool_names)
        if inner is not None:
            return ParsedReply(content="", tool_calls=inner)
    for pattern in (_TAG_RE, _FENCE_RE):
        found = _extract_blocks(text, pattern, tool_names)
        if found is not None:
            return found
    return ParsedReply(content=text)


_CALLS_OPENING = re.compile(
    r'\A\s*(?:```[ \t]*(?:json)?\s*)?(\[)?\s*\{\s*"name"\s*:', re.IGNORECASE
)
_NAMED = re.compile(r'"name"\s*:\s*"([^"\\]{1,100})"')
CUT_CALL_ERROR = "the call's JSON is cut off or malformed: write the whole call again"
"""The error of a call the model began writing but did not finish (`cut_calls`)."""
_SHOWN_OF_A_CUT_CALL = 300
"""Characters of a cut call kept in its error: enough to see what went wrong, not a runaway."""


def cut_calls(
    text: str, tool_names: Collection[str] | None = None
) -> tuple[list[ToolCall], list[InvalidToolCall]] | None:
    """The calls of a reply that began as tool calls and broke off; None for any other text.

    Constrained decoding starts every step as ``[{"name": ...``; a model that runs away
    (repeating a sentence until its token budget ends) leaves that JSON unfinished. It is
    no reply for the user: the calls written whole before the break are taken, and the
    rest is one invalid call the loop answers with an error, so the model tries again.
    """
    opening = _CALLS_OPENING.match(text)
    if opening is None:
        return None
    decoder = json.JSONDecoder()
    at = opening.end(1) if opening.group(1) else text.index("{", opening.start())
    calls: list[ToolCall] = []
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            item, end = decoder.raw_decode(text, at)
        except (json.JSONDecodeError, ValueError):
            break
        call = _as_call(item, tool_names)
        if call is None:
            break
        calls.append(call)
        at = end
    rest = text[at:]
    named = _NAMED.search(rest)
    broken = InvalidToolCall(
        name=named.group(1) if named else None,
        args=rest[:_SHOWN_OF_A_CUT_CALL],
        id=_new_call_id(),
        error=CUT_CALL_ERROR,
        type="invalid_tool_call",
    )
    return calls, [broken]


def interpret_reply(
    message: AIMessage, tool_names: Collection[str], *, plain_reply: bool
) -> AIMessage:
    """Return ``message`` with tool calls written as text turned into real tool calls.

    A message that already carries tool calls (the server parsed them) is kept as is;
    ``{"reply": "..."}`` becomes plain content when the plain-reply option was offered; calls
    that broke off are taken as far as they are whole, the rest an invalid call (`cut_calls`).
    """
    if message.tool_calls or not isinstance(message.content, str):
        return message
    text = message.content
    if plain_reply:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, ValueError):
            data = None
        if isinstance(data, dict) and set(data) == {PLAIN_REPLY_KEY}:
            return message.model_copy(update={"content": str(data[PLAIN_REPLY_KEY])})
    parsed = parse_tool_calls(text, tool_names)
    if not parsed.tool_calls:
        cut = cut_calls(text, tool_names)
        if cut is None:
            return message
        calls, broken = cut
        return message.model_copy(
            update={"content": "", "tool_calls": calls, "invalid_tool_calls": broken}
        )
    return message.model_copy(update={"content": parsed.content, "tool_calls": parsed.tool_calls})
