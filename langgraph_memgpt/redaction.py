"""Finding forgotten text where the machinery copied it, and redacting it in place.

A forgotten message or passage may be quoted elsewhere: in a tool call's arguments, a tool
result, a queued message or any other channel of a thread's checkpoint (``repeat_key``,
``event_outcome``, waiting events...), langgraph dev's saved runs. ``forget``,
``checkpoints.scrub_thread`` and ``dev_state`` look for the texts worth looking for
(`quotable`) inside such values and replace them with `REDACTED`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.types import Send

REDACTED = "[forgotten]"
"""What a forgotten text becomes inside a message kept in a thread's queue."""
MIN_QUOTE = 8
"""Shortest forgotten text looked for in other messages: shorter ones ("ok") match anything."""


def quotable(texts: Iterable[str]) -> list[str]:
    """The forgotten texts worth looking for elsewhere (long enough to mean something)."""
    return sorted({t.strip() for t in texts if len(t.strip()) >= MIN_QUOTE}, key=len, reverse=True)


def strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON-like value (keys left out), messages and sends too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from strings(item)
    elif isinstance(value, BaseMessage):
        yield from strings([getattr(value, name, None) for name in _MESSAGE_FIELDS])
    elif isinstance(value, Send):
        yield from strings(value.arg)


def quotes(value: Any, texts: Sequence[str]) -> bool:
    """Whether any string inside ``value`` holds one of ``texts``."""
    return any(t in s for s in strings(value) for t in texts)


def redact(value: Any, texts: Sequence[str]) -> Any:
    """``value`` with every forgotten text inside its strings replaced by `REDACTED`.

    JSON-like values, queued messages (`redacted_message`, same id) and ``Send`` packets;
    a list stays a list and a tuple a tuple.
    """
    if isinstance(value, str):
        for text in texts:
            value = value.replace(text, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {k: redact(v, texts) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(redact(v, texts) for v in value)
    if isinstance(value, list):
        return [redact(v, texts) for v in value]
    if isinstance(value, BaseMessage):
        return redacted_message(value, texts)
    if isinstance(value, Send):
        return Send(value.node, redact(value.arg, texts))
    return value


def redacted_message(message: Any, texts: Sequence[str]) -> Any:
    """A copy of a queued message (same id) with the forgotten texts redacted."""
    changes = {
        name: redact(getattr(message, name), texts)
        for name in _MESSAGE_FIELDS
        if getattr(message, name, None)
    }
    return message.model_copy(update=changes)


_MESSAGE_FIELDS = (
    "content",
    "additional_kwargs",
    "response_metadata",
    "tool_calls",
    "invalid_tool_calls",
    "artifact",
)
"""The fields of a message that can hold a forgotten text (a tool call's ``args`` too)."""


__all__ = ["MIN_QUOTE", "REDACTED", "quotable", "quotes", "redact", "redacted_message", "strings"]
