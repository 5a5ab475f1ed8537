r"""Text every layer can hold: SQLite, JSON, the tokenizer, the embedding model, a provider.

A Python ``str`` may hold a lone UTF-16 surrogate (``"\ud800"``): ``json.loads`` of a
model's ``"\ud800"`` escape or a badly decoded user input produces one. It cannot be
encoded as UTF-8, so SQLite, the BPE token counter, the embedding tokenizer and every HTTP
client raise on it. Memory keeps such text with each lone surrogate replaced by U+FFFD
(the Unicode replacement character): the message is kept, minus the one unencodable
code unit, instead of crashing the step that wrote it. Tool-call arguments get the same
care for integers too large for the checkpointer (see :func:`valid_json`).
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT_MIN = -(2**63)
_UINT_MAX = 2**64 - 1  # msgpack's integer range


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (paired ones are joined)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(name: str) -> str:
    r"""``name`` (a file name) with every character that is not printable escaped.

    A newline, a carriage return, a tab, a backslash and any other control or separator
    character (U+2028 too) become a visible escape (``\n``, ``\u2028``), so a name written
    into a passage's "Source:" line stays on that one line and cannot forge a second one.
    """
    out = []
    for char in valid_text(name):
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable() or char == " ":
            out.append(char)
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}")
    return "".join(out)


def _out_of_range(value: Any) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not _INT_MIN <= value <= _UINT_MAX
    )


def needs_cleaning(value: Any) -> bool:
    """Whether :func:`valid_json` would change ``value`` (a string or a JSON-like value)."""
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(needs_cleaning(k) or needs_cleaning(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(needs_cleaning(v) for v in value)
    return _out_of_range(value)


def valid_json(value: Any) -> Any:
    """A JSON-like value every layer can hold.

    Every string (keys included) goes through :func:`valid_text`. An integer beyond 64
    bits (``json.loads`` of a model's ``"page": 99999999999999999999``) becomes its decimal
    string: the checkpointer's msgpack cannot hold it and would fail the whole step, while
    argument validation still reads the string as the number.
    """
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_json(k): valid_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(valid_json(v) for v in value)
    if _out_of_range(value):
        return str(value)
    return value
