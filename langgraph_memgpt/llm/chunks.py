"""A whole AI message as the chunks a provider would stream for it.

Merging the chunks (``AIMessageChunk`` addition) gives the message back: text, kwargs,
tool calls and invalid calls alike. The scripted model streams its replies this way, and
the embedded model's wrapper its parsed calls after the raw text.
"""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk


def pieces(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` characters (0: whole); none for empty text."""
    if not text:
        return []
    if size <= 0:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def message_chunks(message: AIMessage, piece: int = 0) -> list[ChatGenerationChunk]:
    """The chunks of ``message``: its kwargs, its text, each call's arguments as JSON.

    ``piece``: characters per chunk (0: the text and each call's arguments whole).
    """
    text = message.content if isinstance(message.content, str) else message.text

    def chunk(**fields: object) -> ChatGenerationChunk:
        return ChatGenerationChunk(message=AIMessageChunk(id=message.id, **fields))  # type: ignore[arg-type]

    out = [chunk(content="", additional_kwargs=dict(message.additional_kwargs))]
    out += [chunk(content=part) for part in pieces(str(text), piece)]
    calls: list[tuple[str | None, str, str | None]] = [
        (c["name"], json.dumps(c["args"]), c.get("id")) for c in message.tool_calls
    ]
    calls += [
        (c.get("name"), str(c.get("args") or ""), c.get("id")) for c in message.invalid_tool_calls
    ]
    for index, (name, args, call_id) in enumerate(calls):
        for number, part in enumerate(pieces(args, piece) or [""]):
            first = number == 0
            call = tool_call_chunk(
                name=name if first else None,
                args=part,
                id=call_id if first else None,
                index=index,
            )
            out.append(chunk(content="", tool_call_chunks=[call]))
    return out
