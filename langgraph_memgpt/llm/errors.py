"""Telling a "prompt longer than the window" refusal apart from every other model error.

Each provider words it its own way (OpenAI's ``context_length_exceeded`` code, llama.cpp's
``exceed_context_size`` 400, Anthropic's "prompt is too long"), and LangChain has one class
for the ones it recognises. The loop answers this error (summarize, then retry), and only
this one, so it is recognised here, in one place.
"""

from __future__ import annotations

import re

from langchain_core.exceptions import ContextOverflowError

_OVERFLOW_TEXT = re.compile(
    r"context[_ ]length|maximum context|context window|too many tokens|prompt is too long"
    r"|exceeds? the (available )?context|exceed_context_size",
    re.IGNORECASE,
)


def is_context_overflow(exc: BaseException) -> bool:
    """True when a provider refused the prompt for being longer than its window."""
    if isinstance(exc, ContextOverflowError):
        return True
    return getattr(exc, "code", None) == "context_length_exceeded" or bool(
        _OVERFLOW_TEXT.search(str(exc))
    )


_BROKEN_CALL = re.compile(r"Failed to parse tool call arguments as JSON", re.IGNORECASE)
_LAST_READ = re.compile(r"last read: '(.*)'\s*$", re.DOTALL)


def broken_call_arguments(exc: BaseException) -> str | None:
    """What a server read of a tool call it refused because its arguments broke off, or None.

    llama.cpp parses the calls itself when the request carries the tools, and answers a
    call cut short (the reply cap reached inside a string) with a 500 instead of the text:
    "Failed to parse tool call arguments as JSON: ... last read: '"I need to get to th'".
    The loop must take that as it takes any call that does not parse (an error result for
    the model, and the turn goes on), not as a failed run.
    """
    text = str(exc)
    if not _BROKEN_CALL.search(text):
        return None
    last = _LAST_READ.search(text)
    return last.group(1) if last else ""
