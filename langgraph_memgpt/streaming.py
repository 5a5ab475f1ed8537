"""What a client streaming a run sees: the reply as the model writes it, never the monologue.

LangGraph's ``stream_mode="messages"`` shows every chat model token and every message a
node returns. For MemGPT that would be the inner monologue and the tool results' JSON: the
user-visible reply is only an argument of ``send_message``. So:

- ``think`` calls the model tagged ``nostream`` (LangGraph's own tag: its tokens stay out
  of the messages stream) and re-emits the reply's text, as it grows inside the
  ``send_message`` arguments, through a small chat model run of its own (`ReplyChannel`,
  tagged `REPLY_TAG`, message id ``reply-...``): a client on ``messages`` (the JS SDK's
  ``messages-tuple``) sees only reply chunks, then ``respond``'s whole reply under the same
  id (LangGraph sends a message id once).
- the ``custom`` stream carries both, labelled: ``{"memgpt": "reply", "delta": ...}`` and
  ``{"memgpt": "monologue", "delta": ...}`` for a client that wants the reasoning.
- messages the loop's nodes return for the model only (its own steps, tool results,
  memory alerts) are marked as already sent (`hide`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.config import ensure_config
from langgraph.config import get_stream_writer
from langgraph.constants import TAG_NOSTREAM
from pydantic import ConfigDict

from langgraph_memgpt.llm.toolcalls import RAW_TEXT_KEY
from langgraph_memgpt.stores.text import valid_text

REPLY_TAG = "memgpt:reply"
"""Tag of the reply's chunks on the ``messages`` stream."""
REPLY_ID_KEY = "memgpt_reply_id"
"""Key in the AI message's ``additional_kwargs``: the id its streamed reply went out under,
and the text streamed (``respond`` reuses the id only for that same text)."""
REPLY_TOOL = "send_message"


def hide(messages: Sequence[BaseMessage], config: RunnableConfig | None) -> None:
    """Keep ``messages``, which the current node returns, out of the ``messages`` stream.

    LangGraph's messages stream skips a message a run of the node was given as input
    (it was already sent); a no-op run under the node's name, given these, counts them so.
    """
    config = ensure_config(config)
    node = (config.get("metadata") or {}).get("langgraph_node")
    if not node or not messages or not _streams_messages(config):
        return
    RunnableLambda(_nothing, name=str(node)).invoke({"messages": list(messages)}, config)


def _streams_messages(config: RunnableConfig) -> bool:
    """Whether the run streams ``messages`` (LangGraph has added its handler).

    Otherwise no message is sent, and hiding would cost a run for nothing.
    """
    callbacks = config.get("callbacks")
    handlers = getattr(callbacks, "handlers", None)
    if handlers is None:
        handlers = callbacks if isinstance(callbacks, list) else []
    return any(type(h).__name__.startswith("StreamMessagesHandler") for h in handlers)


def _nothing(_: Any) -> None:
    return None


def _json_string_prefix(text: str, start: int) -> str:
    """The decoded JSON string that starts at ``text[start]`` (after its quote), so far."""
    out: list[str] = []
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            break
        if ch == "\\":
            if i + 1 >= len(text):
                break
            esc = text[i + 1]
            if esc == "u":
                if i + 6 > len(text):
                    break
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                except ValueError:
                    break
                i += 6
                continue
            out.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(esc, esc))
            i += 2
            continue
        out.append(ch)
        i += 1
    text = "".join(out)
    if text and "\ud800" <= text[-1] <= "\udbff":
        text = text[:-1]  # half of a pair: the other half is still to come
    # \u escapes of a pair decode to two halves: join them; a lone half cannot be sent.
    return valid_text(text)


def partial_json_string(text: str, key: str = "message", after: str | None = None) -> str | None:
    """The value of string field ``key`` in partial JSON ``text``, as far as it is written.

    With ``after``, only a field that follows the last occurrence of ``after`` (e.g. the
    reply tool's name) counts.
    """
    base = 0
    if after is not None:
        base = text.rfind(after)
        if base < 0:
            return None
    marker = f'"{key}"'
    at = text.find(marker, base)
    while at >= 0:
        rest = text[at + len(marker) :].lstrip()
        if rest.startswith(":"):
            value = rest[1:].lstrip()
            if value.startswith('"'):
                start = len(text) - len(value) + 1
                return _json_string_prefix(text, start)
            if value:
                return None
            return ""
        at = text.find(marker, at + 1)
    return None


def reply_so_far(message: AIMessageChunk) -> str | None:
    """The reply text in a streamed message so far (``send_message``'s ``message``)."""
    for chunk in message.tool_call_chunks:
        if chunk.get("name") == REPLY_TOOL:
            return partial_json_string(chunk.get("args") or "") or None
    raw = message.additional_kwargs.get(RAW_TEXT_KEY)
    if isinstance(raw, str):
        return partial_json_string(raw, after=f'"{REPLY_TOOL}"') or None
    return None


class ReplyChannel(BaseChatModel):
    """A chat model run whose tokens are the reply's deltas (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    source: Any
    """An iterator (or async iterator) of reply text deltas."""
    reply_id: str

    @property
    def _llm_type(self) -> str:
        return "memgpt-reply"

    def _chunk(self, delta: str) -> ChatGenerationChunk:
        return ChatGenerationChunk(message=AIMessageChunk(content=delta, id=self.reply_id))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = "".join(self.source)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text, id=self.reply_id))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for delta in self.source:
            yield self._chunk(delta)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        async for delta in self.source:
            yield self._chunk(delta)


class _Watch:
    """Follows one streamed model call: the message so far, the reply and monologue sent."""

    def __init__(self) -> None:
        self.message: AIMessageChunk | None = None
        self.reply = ""
        self.monologue = ""
        self.writer = _writer()

    def take(self, chunk: BaseMessage) -> str:
        """Add ``chunk``; the reply text it adds (maybe empty)."""
        piece = (
            chunk if isinstance(chunk, AIMessageChunk) else AIMessageChunk(content=chunk.content)
        )
        self.message = piece if self.message is None else self.message + piece
        text = self.message.text if isinstance(self.message.content, str) else ""
        if len(text) > len(self.monologue) and text.startswith(self.monologue):
            self.writer({"memgpt": "monologue", "delta": text[len(self.monologue) :]})
            self.monologue = text
        reply = reply_so_far(self.message) or ""
        if len(reply) > len(self.reply) and reply.startswith(self.reply):
            delta = reply[len(self.reply) :]
            self.reply = reply
            self.writer({"memgpt": "reply", "delta": delta})
            return delta
        return ""

    def result(self) -> AIMessage:
        """The whole message, as ``invoke`` would have returned it."""
        if self.message is None:
            return AIMessage("")
        merged = self.message
        calls, invalid = list(merged.tool_calls), list(merged.invalid_tool_calls)
        if merged.tool_call_chunks:
            # Streamed arguments are parsed leniently (a cut '{"a": 1' reads as complete);
            # a call is only as good as the JSON the model finished writing.
            calls, invalid = [], []
            for chunk in merged.tool_call_chunks:
                text = chunk.get("args") or "{}"
                error: str | None = None
                try:
                    args = json.loads(text)
                except ValueError as err:
                    args, error = None, str(err)
                if error is None and not isinstance(args, dict):
                    error = "arguments are not an object"
                if error is None and chunk.get("name"):
                    calls.append(
                        {
                            "name": str(chunk["name"]),
                            "args": args,
                            "id": chunk.get("id"),
                            "type": "tool_call",
                        }
                    )
                else:
                    invalid.append(
                        {
                            "name": chunk.get("name"),
                            "args": text,
                            "id": chunk.get("id"),
                            "error": error or "no tool name",
                            "type": "invalid_tool_call",
                        }
                    )
        return AIMessage(
            content=merged.content,
            additional_kwargs={
                k: v for k, v in merged.additional_kwargs.items() if k != RAW_TEXT_KEY
            },
            response_metadata=merged.response_metadata,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            usage_metadata=merged.usage_metadata,
            id=merged.id,
        )


def _writer() -> Any:
    try:
        return get_stream_writer()
    except (RuntimeError, KeyError, LookupError):
        return lambda _: None


def _hidden(config: RunnableConfig | None) -> RunnableConfig:
    config = ensure_config(config)
    return {**config, "tags": [*(config.get("tags") or []), TAG_NOSTREAM]}


def _reply_config(config: RunnableConfig | None) -> RunnableConfig:
    config = ensure_config(config)
    tags = [t for t in config.get("tags") or [] if t != TAG_NOSTREAM]
    return {**config, "tags": [*tags, REPLY_TAG], "run_name": "memgpt_reply"}


def _stamped(message: AIMessage, watch: _Watch, reply_id: str | None) -> AIMessage:
    if reply_id is None or not watch.reply:
        return message
    kwargs = {**message.additional_kwargs, REPLY_ID_KEY: {"id": reply_id, "text": watch.reply}}
    return message.model_copy(update={"additional_kwargs": kwargs})


def listening(config: RunnableConfig | None) -> bool:
    """Whether the run streams ``messages`` or ``custom``: else a step need not stream."""
    return _streams_messages(ensure_config(config)) or not _is_no_op(_writer())


def _is_no_op(writer: Any) -> bool:
    """Whether ``writer`` is LangGraph's do-nothing writer (``custom`` is not streamed).

    There is no public flag for it: a function that uses no names and whose code is
    that of ``pass``.
    """
    code = getattr(writer, "__code__", None)
    return code is not None and not code.co_names and code.co_code == _pass.__code__.co_code


def _pass(_: Any) -> None:
    pass


def stream_step(
    model: Runnable[Any, Any], prompt: Any, config: RunnableConfig | None, **kwargs: Any
) -> AIMessage:
    """``model.invoke(prompt)``, streamed: the reply goes out as it is written."""
    if not listening(config):
        raw = model.invoke(prompt, config=_hidden(config), **kwargs)
        return raw if isinstance(raw, AIMessage) else AIMessage(content=raw.content)
    watch = _Watch()
    chunks = iter(model.stream(prompt, config=_hidden(config), **kwargs))
    reply_id: str | None = None
    for chunk in chunks:
        first = watch.take(chunk)
        if first:
            reply_id = f"reply-{uuid.uuid4()}"
            rest = _deltas(first, chunks, watch)
            channel = ReplyChannel(source=rest, reply_id=reply_id)
            for _ in channel.stream([], config=_reply_config(config)):
                pass
            break
    return _stamped(watch.result(), watch, reply_id)


def _deltas(first: str, chunks: Iterable[Any], watch: _Watch) -> Iterator[str]:
    yield first
    for chunk in chunks:
        delta = watch.take(chunk)
        if delta:
            yield delta


async def astream_step(
    model: Runnable[Any, Any], prompt: Any, config: RunnableConfig | None, **kwargs: Any
) -> AIMessage:
    """`stream_step` on the event loop (the model's async API)."""
    if not listening(config):
        raw = await model.ainvoke(prompt, config=_hidden(config), **kwargs)
        return raw if isinstance(raw, AIMessage) else AIMessage(content=raw.content)
    watch = _Watch()
    chunks = model.astream(prompt, config=_hidden(config), **kwargs).__aiter__()
    reply_id: str | None = None
    async for chunk in chunks:
        first = watch.take(chunk)
        if first:
            reply_id = f"reply-{uuid.uuid4()}"
            channel = ReplyChannel(source=_adeltas(first, chunks, watch), reply_id=reply_id)
            async for _ in channel.astream([], config=_reply_config(config)):
                pass
            break
    return _stamped(watch.result(), watch, reply_id)


async def _adeltas(first: str, chunks: AsyncIterator[Any], watch: _Watch) -> AsyncIterator[str]:
    yield first
    async for chunk in chunks:
        delta = watch.take(chunk)
        if delta:
            yield delta


def streamed_reply_id(message: BaseMessage | None, reply: str) -> str | None:
    """The id the reply already went out under, if it went out with exactly this text."""
    if message is None:
        return None
    info = message.additional_kwargs.get(REPLY_ID_KEY)
    if isinstance(info, dict) and info.get("text") == reply:
        return str(info.get("id"))
    return None


__all__ = [
    "RAW_TEXT_KEY",
    "REPLY_ID_KEY",
    "REPLY_TAG",
    "ReplyChannel",
    "astream_step",
    "hide",
    "partial_json_string",
    "reply_so_far",
    "stream_step",
    "streamed_reply_id",
]
