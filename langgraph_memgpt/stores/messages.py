"""What a recalled message says, and whether a search may return it (no engine here).

Shared by every recall backend and by the tools that render search results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langgraph_memgpt.stores.types import RecallMessage

# Tool calls that only look things up: a message made of these is the model searching,
# and finding it again in a later search would be an echo, not a memory.
SEARCH_TOOL_PREFIXES = ("conversation_search", "archival_memory_search")
_REPLY_TOOL = "send_message"


def _call_name_and_args(call: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Read a tool call in LangChain (``name``/``args``) or OpenAI (``function``) shape."""
    name = call.get("name")
    args: Any = call.get("args")
    function = call.get("function")
    if isinstance(function, Mapping):
        name = name or function.get("name")
        if args is None:
            args = function.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = {}
    return str(name or ""), args if isinstance(args, dict) else {}


def searchable_text(message: RecallMessage) -> str:
    """The words a message is found by: its text plus what it said through ``send_message``.

    In MemGPT the model talks to the user through ``send_message``; its plain text is
    inner monologue. Both are what the agent said, and both must be searchable.
    """
    parts = [message.text.strip()] if message.text.strip() else []
    for call in message.tool_calls:
        name, args = _call_name_and_args(call)
        reply = args.get("message")
        if name == _REPLY_TOOL and isinstance(reply, str) and reply.strip():
            parts.append(reply.strip())
    return "\n".join(parts)


def is_search_call(message: RecallMessage) -> bool:
    """True for an assistant message whose tool calls are all memory searches."""
    names = [_call_name_and_args(c)[0] for c in message.tool_calls]
    return bool(names) and all(n.startswith(SEARCH_TOOL_PREFIXES) for n in names)


def is_searchable(message: RecallMessage, text: str | None = None) -> bool:
    """Whether search may return this message.

    Not tool results, not the model's search calls (with or without inner monologue:
    the monologue restates the query, and finding it would echo the search), and not
    messages without words.
    """
    if message.role == "tool" or message.searchable is False:
        return False
    if message.role == "assistant" and is_search_call(message):
        return False
    return bool((searchable_text(message) if text is None else text).strip())
