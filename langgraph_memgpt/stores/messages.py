"""What a recalled message says, and whether a search may return it (no engine here).

Shared by every recall backend and by the tools that render search results.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.text import needs_cleaning, valid_json, valid_text
from langgraph_memgpt.stores.types import RecallMessage

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


def is_searchable(message: RecallMessage, text: str | None = None) -> bool:
    """Whether search may return this message.

    Not tool results, not what the recorder marked unsearchable (``searchable=False``: the
    model's search calls, whose inner monologue restates the query, so finding them would
    echo the search; see ``main_context.to_recall``), and not messages without words.
    """
    if message.role == "tool" or message.searchable is False:
        return False
    return bool((searchable_text(message) if text is None else text).strip())


ROLES = ("user", "assistant", "system", "tool", "event")
"""Recall roles; ``event``: a system event from the host (`langgraph_memgpt.events`)."""
_ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "agent": "assistant",
    "bot": "assistant",
    "system_event": "event",
    "events": "event",
}


@dataclass(frozen=True)
class PreparedMessage:
    """A message as every recall backend stores it."""

    message: RecallMessage
    created_at: str  # normalised to ISO-8601 UTC
    text: str  # what search finds it by (searchable_text)
    searchable: bool


def prepare_message(agent_id: str, message: RecallMessage) -> PreparedMessage:
    """Check a message belongs to ``agent_id`` and make it storable by any engine.

    Raises:
        ValueError: the message is another agent's, or its created_at is unreadable.
    """
    if message.agent_id != agent_id:
        raise ValueError(
            f"message {message.message_id!r} belongs to agent {message.agent_id!r}, "
            f"not {agent_id!r}"
        )
    if needs_cleaning([message.thread_id, message.message_id, message.name]) or (
        needs_cleaning([message.text, message.tool_calls])
    ):
        # No store can hold a lone surrogate: keep the message, with U+FFFD for it.
        message = replace(
            message,
            thread_id=valid_text(message.thread_id),
            message_id=valid_text(message.message_id),
            text=valid_text(message.text),
            tool_calls=valid_json(message.tool_calls),
            name=None if message.name is None else valid_text(message.name),
        )
    text = searchable_text(message)
    return PreparedMessage(
        message, to_utc_iso(message.created_at), text, is_searchable(message, text)
    )


_FILTER_ROLES = ("user", "assistant", "system", "event")
"""The roles worth filtering by (tool results are never searched)."""


def normalise_role(role: str) -> str:
    """A role filter as stored ("human" is "user"); raises ValueError for an unknown one."""
    value = role.strip().lower()
    value = _ROLE_ALIASES.get(value, value)
    if value not in ROLES:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(_FILTER_ROLES)}")
    return value


ROW_COLUMNS = (
    "id",
    "agent_id",
    "thread_id",
    "message_id",
    "role",
    "name",
    "text",
    "tool_calls",
    "created_at",
    "turn",
)
"""The columns of a recall row that :func:`message_from_row` reads, in its order."""


def row_columns(alias: str = "") -> str:
    """The select list of :data:`ROW_COLUMNS`, each prefixed with ``alias`` (say ``"b."``).

    Both backends read a message through :func:`message_from_row`, so they select these
    columns in this order and name them once here.
    """
    return ", ".join(alias + column for column in ROW_COLUMNS)


def message_from_row(row: Sequence[Any]) -> RecallMessage:
    """A stored recall row as a message; every backend selects the same columns.

    Columns: :data:`ROW_COLUMNS` (``tool_calls`` as JSON text).
    """
    _id, agent_id, thread_id, message_id, role, name, text, tool_calls, created_at, turn = row
    try:
        calls = json.loads(tool_calls) if tool_calls else []
    except ValueError:
        calls = []
    return RecallMessage(
        agent_id=str(agent_id),
        thread_id=str(thread_id),
        message_id=str(message_id),
        role=str(role),
        text=str(text),
        created_at=str(created_at),
        turn=int(turn),
        tool_calls=calls if isinstance(calls, list) else [],
        name=None if name is None else str(name),
    )
