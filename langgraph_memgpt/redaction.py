"""Finding forgotten text where the machinery copied it, and redacting it in place.

A forgotten message or passage may be quoted elsewhere: in a tool call's arguments, a tool
result, a queued message of a thread's checkpoint, langgraph dev's saved runs. ``forget``
and ``dev_state`` look for the texts worth looking for (`quotable`) inside JSON-like values
and replace them with `REDACTED`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

REDACTED = "[forgotten]"
"""What a forgotten text becomes inside a message kept in a thread's queue."""
MIN_QUOTE = 8
"""Shortest forgotten text looked for in other messages: shorter ones ("ok") match anything."""


def quotable(texts: Iterable[str]) -> list[str]:
    """The forgotten texts worth looking for elsewhere (long enough to mean something)."""
    return sorted({t.strip() for t in texts if len(t.strip()) >= MIN_QUOTE}, key=len, reverse=True)


def strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON-like value (keys left out)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def quotes(value: Any, texts: Sequence[str]) -> bool:
    """Whether any string inside ``value`` holds one of ``texts``."""
    return any(t in s for s in strings(value) for t in texts)


def redact(value: Any, texts: Sequence[str]) -> Any:
    """``value`` with every forgotten text inside its strings replaced by `REDACTED`."""
    if isinstance(value, str):
        for text in texts:
            value = value.replace(text, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {k: redact(v, texts) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, texts) for v in value]
    return value


def redacted_message(message: Any, texts: Sequence[str]) -> Any:
    """A copy of a queued message (same id) with the forgotten texts redacted."""
    changes: dict[str, Any] = {
        "content": redact(message.content, texts),
        "additional_kwargs": redact(message.additional_kwargs, texts),
    }
    if getattr(message, "tool_calls", None):
        changes["tool_calls"] = [
            {**call, "args": redact(call.get("args", {}), texts)} for call in message.tool_calls
        ]
    return message.model_copy(update=changes)


__all__ = ["MIN_QUOTE", "REDACTED", "quotable", "quotes", "redact", "redacted_message", "strings"]
