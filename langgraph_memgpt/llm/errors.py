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
