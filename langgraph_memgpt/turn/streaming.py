"""What a client streaming a run sees: the reply the loop sends, as it is written; nothing else.

LangGraph's ``stream_mode="messages"`` (the SDK's ``messages-tuple``) and
``astream_events(version="v2")`` show every chat model token, and ``messages`` also every
message a node returns. For MemGPT that would be the inner monologue, tool-call JSON, tool
results and replies the loop then refuses to send. So:

- ``think`` calls the model privately (`private`): tagged ``nostream`` and without the
  callback handlers that stream tokens (LangGraph's messages handler, ``astream_events``'s,
  ``astream_log``'s), so no stream sees its tokens. The eviction summarizer is called the
  same way: a summary never streams.
- it follows the reply as the model writes it (``send_message``'s ``message``, or a plain
  answer's text), asks the loop's rules (`langgraph_memgpt.turn.reply_rules.ReplyGate`, the same
  the tool step applies) which part of it is sent, and re-emits that part, and only that,
  as the tokens of a chat model run of its own: named `REPLY_RUN`, tagged `REPLY_TAG`, under
  one message id per turn's reply, with no empty closing chunk. On ``messages`` these are
  the reply's chunks; under ``astream_events`` v2, ``on_chat_model_stream`` events tagged
  `REPLY_TAG`. Text a rule can only decide later (a search may still follow the reply, the
  reply may still turn out a copy of the user's words, a text may still be followed by a
  tool call) is held until it is decided, then goes out in the pieces it was written in;
  text decided as written goes out as it comes (the embedded model writes its reply as its
  step's last call, so there every rule is decided as the reply is written).
- ``respond``'s whole reply reuses the id the reply streamed under (LangGraph sends a message
  id once): a client merging chunks by id (``useStream``) shows one message.
- the ``custom`` stream carries the same reply deltas, and the monologue, labelled:
  ``{"memgpt": "reply", "delta": ...}`` and ``{"memgpt": "monologue", "delta": ...}``.
- messages the nodes return for the model only (its steps, tool results, alerts) are marked
  as already sent (`hide`) for the messages stream of this graph and of every graph it runs
  in: a parent graph streaming ``messages`` (``subgraphs=False``, LangGraph's default) sees
  the reply, whole, and nothing else of the turn.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForLLMRun,
    BaseCallbackHandler,
    BaseCallbackManager,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, LLMResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.config import ensure_config, var_child_runnable_config
from langgraph.config import get_stream_writer
from langgraph.constants import TAG_NOSTREAM

from langgraph_memgpt.llm.chunks import message_chunks
from langgraph_memgpt.llm.toolcalls import RAW_TEXT_KEY
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.turn.reply_rules import REPLY_SEPARATOR, REPLY_TOOL, ReplyGate, Written

E = TypeVar("E")

try:  # the base class LangGraph's and astream_events' token streamers share
    from langchain_core.tracers._streaming import _StreamingCallbackHandler
except ImportError:  # pragma: no cover - older langchain-core
    _StreamingCallbackHandler = None  # type: ignore[assignment,misc]

REPLY_TAG = "memgpt:reply"
"""Tag of the reply's run: its chunks on ``messages``, its ``astream_events`` events."""
REPLY_RUN = "memgpt_reply"
"""Name of the reply's run (``astream_events``' ``name``)."""
REPLY_ID_KEY = "memgpt_reply_id"
"""Key in a model message's ``additional_kwargs``: the id the turn's reply streams under,
and the text streamed under it so far (``respond`` reuses the id for that same text)."""
# -- keeping messages and tokens out of the streams ------------------------------------


def hide(messages: Sequence[BaseMessage], config: RunnableConfig | None) -> None:
    """Keep ``messages``, which the current node returns, out of every ``messages`` stream.

    LangGraph's messages stream skips a message a run of a node was given as input (it was
    already sent); a no-op run under the node's name, given these, counts them so. The run
    says it is in the outermost graph, whose runs every handler reads (a parent graph's
    handler with ``subgraphs=False`` reads no run of a subgraph, then sends the subgraph's
    whole output).
    """
    config = ensure_config(config)
    metadata = config.get("metadata") or {}
    node = metadata.get("langgraph_node")
    if not node or not messages or not _streams_messages(config):
        return
    outermost = {**metadata, "langgraph_checkpoint_ns": "", "langgraph_path": ()}
    RunnableLambda(_nothing, name=str(node)).invoke(
        {"messages": list(messages)}, {**config, "metadata": outermost}
    )


def _handlers(config: RunnableConfig) -> list[BaseCallbackHandler]:
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        return list(callbacks.handlers)
    return list(callbacks) if isinstance(callbacks, list) else []


def _streams_messages(config: RunnableConfig) -> bool:
    """Whether the run streams ``messages`` (LangGraph has added its handler)."""
    return any(type(h).__name__.startswith("StreamMessagesHandler") for h in _handlers(config))


def _streams_tokens(handler: BaseCallbackHandler) -> bool:
    """Whether ``handler`` shows a chat model's tokens to someone (a streaming client)."""
    if _StreamingCallbackHandler is not None:
        return isinstance(handler, _StreamingCallbackHandler)
    return type(handler).__name__.startswith(("StreamMessagesHandler", "_AstreamEvents"))


def private(config: RunnableConfig | None) -> RunnableConfig:
    """``config`` for a model call no client may watch (the step's own call, the summarizer).

    Tagged ``nostream`` (LangGraph's messages stream skips it), and without the handlers
    that stream tokens (``astream_events`` does not honour ``nostream``); tracing stays.
    """
    config = ensure_config(config)
    tags = [*(config.get("tags") or []), TAG_NOSTREAM]
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        streamers = [h for h in callbacks.handlers if _streams_tokens(h)]
        if streamers:
            callbacks = callbacks.copy()
            for handler in streamers:
                callbacks.remove_handler(handler)
    elif isinstance(callbacks, list):
        callbacks = [h for h in callbacks if not _streams_tokens(h)]
    return {**config, "tags": tags, "callbacks": callbacks}


@contextmanager
def _current(config: RunnableConfig) -> Iterator[None]:
    """``config`` as the run's current config while a call is made (and, for a stream, read).

    A bound model (``bind_tools``) merges the current config into the one it is given, which
    would bring back the handlers `private` leaves out.
    """
    token = var_child_runnable_config.set(config)
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def invoke_privately(model: Runnable[Any, Any], prompt: Any, **kwargs: Any) -> Any:
    """``model.invoke(prompt)`` from inside a node, where no stream sees it (see `private`)."""
    config = private(None)
    with _current(config):
        return model.invoke(prompt, config=config, **kwargs)


async def ainvoke_privately(model: Runnable[Any, Any], prompt: Any, **kwargs: Any) -> Any:
    """`invoke_privately` with the model's async API."""
    config = private(None)
    with _current(config):
        return await model.ainvoke(prompt, config=config, **kwargs)


def listening(config: RunnableConfig | None) -> bool:
    """Whether anyone streams this run's tokens or its ``custom`` stream."""
    config = ensure_config(config)
    return any(_streams_tokens(h) for h in _handlers(config)) or not _is_no_op(_writer())


def _nothing(_: Any) -> None:
    return None


def _writer() -> Any:
    try:
        return get_stream_writer()
    except (RuntimeError, KeyError, LookupError):
        return lambda _: None


def _is_no_op(writer: Any) -> bool:
    """Whether ``writer`` is LangGraph's do-nothing writer (``custom`` is not streamed).

    There is no public flag for it: a function that uses no names and whose code is
    that of ``pass``.
    """
    code = getattr(writer, "__code__", None)
    return code is not None and not code.co_names and code.co_code == _pass.__code__.co_code


def _pass(_: Any) -> None:
    pass


# -- reading the reply in a message as it is written ------------------------------------


def _json_string(text: str, start: int) -> tuple[str, bool]:
    """The JSON string starting at ``text[start]`` (after its quote), decoded so far.

    Also whether its closing quote is written.
    """
    out: list[str] = []
    i = start
    closed = False
    while i < len(text):
        ch = text[i]
        if ch == '"':
            closed = True
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
    decoded = "".join(out)
    if not closed and decoded and "\ud800" <= decoded[-1] <= "\udbff":
        decoded = decoded[:-1]  # half of a pair: the other half is still to come
    # \u escapes of a pair decode to two halves: join them; a lone half cannot be sent.
    return valid_text(decoded), closed


def _string_field(text: str, key: str, base: int = 0) -> tuple[str, bool] | None:
    """String field ``key`` of partial JSON ``text`` (from ``base``), and whether it is whole."""
    marker = f'"{key}"'
    at = text.find(marker, base)
    while at >= 0:
        rest = text[at + len(marker) :].lstrip()
        if rest.startswith(":"):
            value = rest[1:].lstrip()
            if value.startswith('"'):
                return _json_string(text, len(text) - len(value) + 1)
            if value:
                return None
            return "", False
        at = text.find(marker, at + 1)
    return None


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
    found = _string_field(text, key, base)
    return None if found is None else found[0]


_RAW_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')


def written_calls(message: AIMessageChunk) -> list[Written]:
    """The calls in a streamed message so far, in order, with the reply's text."""
    calls: list[Written] = []
    if message.tool_call_chunks:
        for chunk in message.tool_call_chunks:
            name = str(chunk.get("name") or "")
            reply, closed = None, False
            if name == REPLY_TOOL:
                reply, closed = _string_field(chunk.get("args") or "", "message") or ("", False)
            calls.append(Written(name, reply, closed))
        return calls
    raw = message.additional_kwargs.get(RAW_TEXT_KEY)
    if not isinstance(raw, str):
        return calls
    # The embedded model's raw JSON: [{"name": ..., "arguments": {...}}, ...]
    found = list(_RAW_NAME.finditer(raw))
    for number, match in enumerate(found):
        name = match.group(1)
        reply, closed = None, False
        if name == REPLY_TOOL:
            end = found[number + 1].start() if number + 1 < len(found) else len(raw)
            field = _string_field(raw[:end], "message", match.end())
            reply, closed = field or ("", False)
        calls.append(Written(name, reply, closed))
    return calls


def reply_so_far(message: AIMessageChunk) -> str | None:
    """The text of the message's (first) ``send_message`` call so far, if any."""
    return next((c.reply for c in written_calls(message) if c.reply), None)


# -- the reply's own run ------------------------------------------------------------------


@dataclass(frozen=True)
class ReplyStream:
    """What a step's stream needs: the rules, and where the turn's reply stands."""

    gate: ReplyGate
    reply_id: str
    """The id the turn's reply streams under."""
    shown: str
    """The reply text a client already has under ``reply_id`` (earlier steps)."""
    before: str
    """The reply text the loop sent earlier in this turn."""

    @classmethod
    def of(cls, gate: ReplyGate, turn: Sequence[BaseMessage], before: str) -> ReplyStream:
        """The stream of a step whose turn holds ``turn`` (the messages since the user's)."""
        for message in reversed(turn):
            info = message.additional_kwargs.get(REPLY_ID_KEY)
            if isinstance(message, AIMessage) and isinstance(info, dict):
                return cls(gate, str(info.get("id")), str(info.get("text") or ""), before)
        return cls(gate, f"reply-{uuid.uuid4()}", "", before)

    def target(self, step: str) -> str:
        """The turn's reply text once this step's ``step`` text is out."""
        if not step:
            return self.before
        return f"{self.before}{REPLY_SEPARATOR}{step}" if self.before else step


def finish_reply(
    turn: Sequence[BaseMessage],
    text: str,
    config: RunnableConfig | None,
    *,
    fallback: str | None = None,
) -> str:
    """The id of the turn's whole reply ``text``; what of it has not streamed goes out now.

    The id the turn's reply streamed under when ``text`` goes on from what streamed (a
    stop after a sent reply), else ``fallback`` or a new one (``text`` then goes out
    whole, as ``respond``'s message). ``turn``: the messages since the user's.
    """
    stamp = next(
        (
            info
            for m in reversed(turn)
            if isinstance(m, AIMessage)
            and isinstance(info := m.additional_kwargs.get(REPLY_ID_KEY), dict)
        ),
        None,
    )
    shown = str(stamp.get("text") or "") if stamp is not None else ""
    if stamp is None or not shown or not text.startswith(shown):
        return fallback or str(uuid.uuid4())
    reply_id = str(stamp.get("id"))
    config = ensure_config(config)
    if text != shown and listening(config):
        rest = _SyncEmitter(config, reply_id, shown)
        rest.send(text)
        rest.close()
    return reply_id


def _reply_config(config: RunnableConfig) -> RunnableConfig:
    tags = [t for t in config.get("tags") or [] if t != TAG_NOSTREAM]
    return {**config, "tags": [*tags, REPLY_TAG]}


class _Emitter:
    """A chat model run whose tokens are the deltas of one message (one id, no empty end)."""

    def __init__(self, config: RunnableConfig, message_id: str, shown: str = "") -> None:
        self.config = _reply_config(config)
        self.id = message_id
        self.text = shown
        """Everything under this id, earlier steps' text included."""
        self.new = ""
        self.writer = _writer()

    def _manager(self, cls: Any) -> Any:
        return cls.configure(
            self.config.get("callbacks"),
            None,
            False,
            self.config.get("tags"),
            None,
            self.config.get("metadata"),
        )

    def _chunk(self, delta: str) -> ChatGenerationChunk:
        return ChatGenerationChunk(message=AIMessageChunk(content=delta, id=self.id))

    def _result(self) -> LLMResult:
        return LLMResult(generations=[[ChatGeneration(message=AIMessage(self.new, id=self.id))]])

    def _took(self, text: str) -> str:
        """The delta that brings the message to ``text`` ('' if none can)."""
        if len(text) <= len(self.text) or not text.startswith(self.text):
            return ""
        delta = text[len(self.text) :]
        self.text, self.new = text, self.new + delta
        self.writer({"memgpt": "reply", "delta": delta})
        return delta


class _SyncEmitter(_Emitter):
    run: CallbackManagerForLLMRun | None = None

    def send(self, text: str) -> None:
        delta = self._took(text)
        if not delta:
            return
        if self.run is None:
            (self.run,) = self._manager(CallbackManager).on_chat_model_start(
                {"name": REPLY_RUN}, [[]], name=REPLY_RUN
            )
        self.run.on_llm_new_token(delta, chunk=self._chunk(delta))

    def close(self) -> None:
        if self.run is not None:
            self.run.on_llm_end(self._result())


class _AsyncEmitter(_Emitter):
    run: AsyncCallbackManagerForLLMRun | None = None

    async def send(self, text: str) -> None:
        delta = self._took(text)
        if not delta:
            return
        if self.run is None:
            (self.run,) = await self._manager(AsyncCallbackManager).on_chat_model_start(
                {"name": REPLY_RUN}, [[]], name=REPLY_RUN
            )
        await self.run.on_llm_new_token(delta, chunk=self._chunk(delta))

    async def close(self) -> None:
        if self.run is not None:
            await self.run.on_llm_end(self._result())


# -- following one model call ---------------------------------------------------------


class _Watch:
    """Follows one streamed model call: the message so far, what may be shown of it."""

    def __init__(self, stream: ReplyStream) -> None:
        self.stream = stream
        self.message: AIMessageChunk | None = None
        self.monologue = ""
        self.hoped: list[str] = []
        """The step's reply text as it may turn out, after each chunk (to release later)."""
        self.texts: list[str] = []
        """The message's text after each chunk while no call is written (a plain answer?)."""
        self.writer = _writer()

    def take(self, chunk: BaseMessage) -> str:
        """Add ``chunk``; the turn's reply text that may be shown now."""
        piece = chunk if isinstance(chunk, AIMessageChunk) else _as_chunk(chunk)
        self.message = piece if self.message is None else self.message + piece
        text = self.message.text
        calls = written_calls(self.message)
        if calls:  # text beside a call is the monologue (without one, maybe the answer)
            self.think(text)
        elif text and (not self.texts or self.texts[-1] != text):
            self.texts.append(text)
        safe, hoped = self.stream.gate.shown(calls, finished=False)
        if hoped and (not self.hoped or self.hoped[-1] != hoped):
            self.hoped.append(hoped)
        return self.stream.target(safe) if safe else ""

    def think(self, text: str) -> None:
        """Send the monologue's new text on the ``custom`` stream."""
        if len(text) > len(self.monologue) and text.startswith(self.monologue):
            self.writer({"memgpt": "monologue", "delta": text[len(self.monologue) :]})
            self.monologue = text

    def replies(self, result: AIMessage) -> list[str]:
        """The turn's reply text at each point it may now be shown, up to what is sent."""
        sent = self.stream.gate.sent(result.tool_calls)
        if not sent:
            return []
        return [self.stream.target(t) for t in [*self.hoped, sent] if sent.startswith(t)]

    def answer(self, result: AIMessage) -> list[str]:
        """A plain answer the loop sends, at each point it was written ([] if none)."""
        if result.tool_calls or result.invalid_tool_calls:
            self.think(result.text)
            return []
        if not self.stream.gate.turn.answer_sent():
            return []
        whole = result.text
        return [t for t in [*self.texts, whole] if whole.startswith(t)]

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


def _as_chunk(message: BaseMessage) -> AIMessageChunk:
    """A whole message as one chunk, its tool calls kept.

    A model that cannot stream answers ``stream`` with its ``invoke`` result.
    """
    whole = message if isinstance(message, AIMessage) else AIMessage(content=message.content)
    merged: AIMessageChunk | None = None
    for part in message_chunks(whole):
        piece = part.message
        assert isinstance(piece, AIMessageChunk)
        merged = piece if merged is None else merged + piece
    assert merged is not None
    return merged


def _stamped(message: AIMessage, emitter: _Emitter) -> AIMessage:
    if not emitter.new:
        return message
    info = {"id": emitter.id, "text": emitter.text}
    kwargs = {**message.additional_kwargs, REPLY_ID_KEY: info}
    return message.model_copy(update={"additional_kwargs": kwargs})


def _whole(raw: Any) -> AIMessage:
    return raw if isinstance(raw, AIMessage) else AIMessage(content=raw.content)


def _after_stream(
    watch: _Watch, result: AIMessage, out: E, plain: Callable[[str], E]
) -> Iterator[tuple[E, str | None]]:
    """What goes out once the model's stream ended, in order.

    ``(emitter, text)``: send it; ``(emitter, None)``: close it. The reply's rest the rules
    held (``out``), then a plain answer's text under the step's own message id (``plain(id)``:
    a new emitter).
    """
    for text in watch.replies(result):
        yield out, text
    yield out, None
    answer = watch.answer(result)
    if answer and result.id:
        emitter = plain(result.id)
        for text in answer:
            yield emitter, text
        yield emitter, None


def stream_step(
    model: Runnable[Any, Any],
    prompt: Any,
    config: RunnableConfig | None,
    reply: ReplyStream,
    **kwargs: Any,
) -> AIMessage:
    """``model.invoke(prompt)``, privately; what the loop sends of it streams as it is written."""
    config = ensure_config(config)
    hidden = private(config)
    if not listening(config):
        with _current(hidden):
            return _whole(model.invoke(prompt, config=hidden, **kwargs))
    watch = _Watch(reply)
    out = _SyncEmitter(config, reply.reply_id, reply.shown)
    with _current(hidden):
        chunks = iter(model.stream(prompt, config=hidden, **kwargs))
        while (chunk := next(chunks, None)) is not None:
            with _current(config):
                out.send(watch.take(chunk))
    result = watch.result()
    for emitter, text in _after_stream(watch, result, out, lambda id_: _SyncEmitter(config, id_)):
        if text is None:
            emitter.close()
        else:
            emitter.send(text)
    return _stamped(result, out)


async def astream_step(
    model: Runnable[Any, Any],
    prompt: Any,
    config: RunnableConfig | None,
    reply: ReplyStream,
    **kwargs: Any,
) -> AIMessage:
    """`stream_step` on the event loop (the model's async API)."""
    config = ensure_config(config)
    hidden = private(config)
    if not listening(config):
        with _current(hidden):
            return _whole(await model.ainvoke(prompt, config=hidden, **kwargs))
    watch = _Watch(reply)
    out = _AsyncEmitter(config, reply.reply_id, reply.shown)
    with _current(hidden):
        chunks: AsyncIterator[Any] = model.astream(prompt, config=hidden, **kwargs).__aiter__()
        while True:
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                break
            with _current(config):
                await out.send(watch.take(chunk))
    result = watch.result()
    for emitter, text in _after_stream(watch, result, out, lambda id_: _AsyncEmitter(config, id_)):
        if text is None:
            await emitter.close()
        else:
            await emitter.send(text)
    return _stamped(result, out)


__all__ = [
    "RAW_TEXT_KEY",
    "REPLY_ID_KEY",
    "REPLY_RUN",
    "REPLY_TAG",
    "ReplyStream",
    "Written",
    "ainvoke_privately",
    "astream_step",
    "hide",
    "invoke_privately",
    "listening",
    "partial_json_string",
    "private",
    "finish_reply",
    "reply_so_far",
    "stream_step",
    "written_calls",
]
