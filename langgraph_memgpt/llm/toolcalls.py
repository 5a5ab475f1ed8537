"""The small local model as a tool-calling chat model: constrained JSON in, tool calls out.

Qwen2.5-Coder-1.5B does not fill OpenAI's ``tool_calls`` field: it writes the call as
JSON text (bare, fenced, or in ``<tool_call>`` tags), or invents tools that were never
offered. `LocalToolCallingChatModel` wraps a ``ChatOpenAI`` pointed at the local server
(hosted models keep their native tool calling and never pass through here) and, around
every call, sends the bound tools as one JSON schema the grammar sampler cannot leave
(`llm.call_schema`; ``benchmarks/tool_call_paths.py`` compares it with llama.cpp's own
parsing) and reads the calls back out of the text (`llm.call_parse`); streamed, the raw
JSON goes out as it comes, then the parsed calls. The step comes back as the model wrote it:
repairs are the caller's, given per call as ``repair=`` (a `StepRepair`; the agent's
small-model policy gives one, `langgraph_memgpt.small_model`), never imported from here.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import invalid_tool_call, tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langgraph_memgpt.llm.call_parse import interpret_reply
from langgraph_memgpt.llm.call_schema import (
    build_tool_call_schema,
    describe_tools,
    function_of,
    response_format_for,
    select_tools,
    tool_names_of,
    tools_in_prompt,
)
from langgraph_memgpt.llm.chunks import message_chunks
from langgraph_memgpt.llm.errors import broken_call_arguments, is_context_overflow

R = TypeVar("R")

RAW_TEXT_KEY = "memgpt_raw_text"
"""Key of the model's raw JSON text in streamed chunks: the calls are parsed at the end,
but a reader (``langgraph_memgpt.turn.streaming``) can follow the reply as it is written."""


class RawRepair(Protocol):
    """Rewrites the raw JSON text as it streams (what goes out stays a prefix of the whole)."""

    def add(self, piece: str) -> str:
        """Take the next raw piece; return what may go out now (maybe nothing)."""
        ...

    def end(self) -> str:
        """The stream ended: whatever is left to go out."""
        ...


class StepRepair(Protocol):
    """A caller's repairs of a parsed step, passed per call as ``repair=``.

    `LocalToolCallingChatModel` applies ``step`` to the step it parsed (``invoke`` and the
    last chunk of ``stream``) and pipes the raw text it streams through ``raw``'s
    `RawRepair`, so the streamed text says what the repaired step says.
    """

    def step(self, message: AIMessage, prompt: Sequence[BaseMessage]) -> AIMessage:
        """``message`` (the parsed step) repaired for ``prompt`` (what the model read)."""
        ...

    def raw(self, prompt: Sequence[BaseMessage]) -> RawRepair | None:
        """The raw stream's rewriter for ``prompt``, or None to stream it as written."""
        ...


class LocalToolCallingChatModel(BaseChatModel):
    """The local llama.cpp model with dependable tool calls (see the module docstring).

    Attributes:
        inner: the ``ChatOpenAI`` (or any OpenAI-compatible chat model) doing the request.
        allow_plain_reply: with ``tool_choice`` auto, also let the model answer without a
            tool. Off by default: the MemGPT agent answers through ``send_message``, and a
            small model given an easy way out skips its memory tools.
        reconnect: called with no arguments after a connection error to get a fresh
            ``inner`` (the shared server went away); the call is then retried once.
    """

    inner: BaseChatModel
    allow_plain_reply: bool = False
    reconnect: Callable[[], BaseChatModel] | None = None
    max_calls: int = 3
    reply_tool: str | None = None
    """The agent's reply tool: steps are shaped around it (see `build_tool_call_schema`)."""
    companions: tuple[str, ...] = ()
    """Tools that may only come before the reply in one step."""
    compact_tools: bool = True
    """Tells the agent to bind its tools' compact schemas (``tools.tool_schemas``)."""
    accepts_step_tools: bool = True
    """A call may pass ``step_tools=(names...)`` to narrow, for that step only, the tools the
    model may call. Only the grammar changes, never the prompt (the tools described in it
    stay all the bound ones), so the prefix cache holds."""
    accepts_step_repair: bool = True
    """A call may pass ``repair=`` (a `StepRepair`) to have the parsed step repaired."""
    llama_cpp: bool = True
    """Served by llama.cpp: a call may pass a JSON schema as ``extra_body.response_format``
    (its grammar sampler keeps the answer to it) and llama.cpp's repetition penalties."""

    @property
    def _llm_type(self) -> str:
        return "local-tool-calling"

    @property
    def reply_last(self) -> bool:
        """Whether its reply is its step's last call (`build_tool_call_schema`'s shapes).

        Once the reply is being written, every other call of the step is known (the
        stream need not hold the reply until the step ends, `langgraph_memgpt.turn.streaming`).
        """
        return self.reply_tool is not None

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Record the tools on the binding; every call then constrains and parses with them."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _prepare(
        self, messages: list[BaseMessage], kwargs: dict[str, Any]
    ) -> tuple[list[BaseMessage], dict[str, Any], list[str], bool, StepRepair | None]:
        """Turn bound tools into the request: their descriptions, and the schema as grammar.

        A system message in blocks (see ``main_context.system_message``) gets the tools
        written in after its first block, so instructions and tools form one prefix that
        llama.cpp's prompt cache keeps across calls and threads. Otherwise the tools go in
        the request and the chat template appends them after the whole system text (Qwen's
        does), where any change to that text makes llama.cpp re-read them too.
        """
        messages = [_sendable(m) for m in messages]
        request = dict(kwargs)
        repair: StepRepair | None = request.pop("repair", None)
        tools: list[Mapping[str, Any]] = list(request.pop("tools", None) or [])
        allowed, required = select_tools(tools, request.pop("tool_choice", None))
        if not allowed:
            return messages, request, [], False, repair
        plain = self.allow_plain_reply and not required
        only = request.pop("step_tools", None)
        callable_now = (
            allowed if only is None else [t for t in allowed if function_of(t)["name"] in only]
        )
        schema = build_tool_call_schema(
            callable_now or allowed,
            allow_plain_reply=plain,
            max_calls=self.max_calls,
            reply_tool=self.reply_tool,
            companions=self.companions,
        )
        text = describe_tools(allowed, self.max_calls, self.reply_tool, self.companions)
        prompt = tools_in_prompt(messages, text)
        if prompt is None:
            request["tools"] = allowed
            prompt = messages
        extra = dict(getattr(self.inner, "extra_body", None) or {})
        extra.update(request.pop("extra_body", None) or {})
        extra["response_format"] = response_format_for(schema)
        request["extra_body"] = extra
        return prompt, request, tool_names_of(allowed), plain, repair

    def _finish(
        self,
        result: ChatResult,
        names: list[str],
        plain: bool,
        prompt: list[BaseMessage],
        repair: StepRepair | None,
    ) -> ChatResult:
        if not names:
            return result
        generations = []
        for generation in result.generations:
            message = generation.message
            if isinstance(message, AIMessage):
                message = interpret_reply(message, names, plain_reply=plain)
                if repair is not None:
                    message = repair.step(message, prompt)
            generations.append(
                ChatGeneration(message=message, generation_info=generation.generation_info)
            )
        return ChatResult(generations=generations, llm_output=result.llm_output)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        messages, request, names, plain, repair = self._prepare(messages, kwargs)
        try:
            result = self._reconnected(
                lambda inner: inner._generate(messages, stop=stop, **request)
            )
        except Exception as exc:
            _raise_if_context_overflow(exc)
            return _broken_call_result(exc)
        return self._finish(result, names, plain, messages, repair)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        messages, request, names, plain, repair = self._prepare(messages, kwargs)
        try:
            try:
                result = await self.inner._agenerate(messages, stop=stop, **request)
            except Exception as exc:
                if self.reconnect is None or not _is_connection_error(exc):
                    raise
                self.inner = self.reconnect()
                result = await self.inner._agenerate(messages, stop=stop, **request)
        except Exception as exc:
            _raise_if_context_overflow(exc)
            return _broken_call_result(exc)
        return self._finish(result, names, plain, messages, repair)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The raw JSON text as it comes (under `RAW_TEXT_KEY`), then the parsed calls."""
        messages, request, names, plain, repair = self._prepare(messages, kwargs)
        raw = _RawText(repair.raw(messages) if repair is not None else None)

        def started(inner: BaseChatModel) -> tuple[Iterator[ChatGenerationChunk], Any]:
            chunks = iter(inner._stream(messages, stop=stop, **request))
            return chunks, next(chunks, None)  # a server gone shows at the first chunk

        try:
            chunks, first = self._reconnected(started)
            for chunk in itertools.chain([first] if first is not None else [], chunks):
                if out := raw.add(chunk):
                    yield out
        except Exception as exc:
            _raise_if_context_overflow(exc)
            yield _broken_call_chunk(exc)
            return
        yield from raw.ending(self._parsed_chunk(raw.text, names, plain, messages, repair))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """`_stream` on the event loop."""
        messages, request, names, plain, repair = self._prepare(messages, kwargs)
        raw = _RawText(repair.raw(messages) if repair is not None else None)
        try:
            async for chunk in self.inner._astream(messages, stop=stop, **request):
                if out := raw.add(chunk):
                    yield out
        except Exception as exc:
            _raise_if_context_overflow(exc)
            yield _broken_call_chunk(exc)
            return
        for last in raw.ending(self._parsed_chunk(raw.text, names, plain, messages, repair)):
            yield last

    def _reconnected(self, call: Callable[[BaseChatModel], R]) -> R:
        """``call(inner)``; once more on a new server when the embedded one went away."""
        try:
            return call(self.inner)
        except Exception as exc:
            if self.reconnect is None or not _is_connection_error(exc):
                raise
            self.inner = self.reconnect()
            return call(self.inner)

    def _parsed_chunk(
        self,
        raw: str,
        names: list[str],
        plain: bool,
        prompt: list[BaseMessage],
        repair: StepRepair | None,
    ) -> ChatGenerationChunk:
        """The last chunk: the whole text parsed into calls, as ``_generate`` returns them."""
        result = ChatResult(generations=[ChatGeneration(message=AIMessage(raw))])
        message = self._finish(result, names, plain, prompt, repair).generations[0].message
        parsed = message if isinstance(message, AIMessage) else AIMessage(message.content)
        merged = message_chunks(parsed)
        last = merged[0]
        for part in merged[1:]:
            last = last + part
        return last


class _RawText:
    """A streamed step's raw text as it comes, voiced on the way out when a repair asks."""

    def __init__(self, voiced: RawRepair | None) -> None:
        self.pieces: list[str] = []
        self.voiced = voiced

    @property
    def text(self) -> str:
        """The raw text so far, as the model wrote it."""
        return "".join(self.pieces)

    def add(self, chunk: ChatGenerationChunk) -> ChatGenerationChunk | None:
        """Take the model's next chunk; the raw chunk that goes out now, if any."""
        self.pieces.append(str(chunk.message.text))
        out = self.voiced.add(self.pieces[-1]) if self.voiced else self.pieces[-1]
        return _raw_chunk(out) if out else None

    def ending(self, parsed: ChatGenerationChunk) -> list[ChatGenerationChunk]:
        """The stream ended: what the voicing still holds, if anything, then ``parsed``."""
        tail = self.voiced.end() if self.voiced else ""
        return [_raw_chunk(tail), parsed] if tail else [parsed]


def _raw_chunk(text: str) -> ChatGenerationChunk:
    # An exact str: merging chunks refuses a str subclass (``.text``'s) beside a str.
    return ChatGenerationChunk(
        message=AIMessageChunk(content="", additional_kwargs={RAW_TEXT_KEY: str(text)})
    )


def _is_connection_error(exc: BaseException) -> bool:
    """A refused connection means the server is gone; a timeout means it is just busy."""
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai depends on it
        return False
    return isinstance(exc, openai.APIConnectionError) and not isinstance(
        exc, openai.APITimeoutError
    )


UNKNOWN_TOOL = "unknown_tool"
"""The name an invalid call goes under when the model never wrote one."""


def _sendable(message: BaseMessage) -> BaseMessage:
    """``message`` as llama.cpp can read it back: an invalid call as a call of JSON arguments.

    A call that did not parse stays in the queue as the model wrote it (with the error
    result the loop gave it); sent back as it is, its raw arguments and missing name make
    the server refuse the whole prompt ("Failed to parse tool call arguments as JSON",
    "type must be string, but is null"). It goes as a call named as written (or
    `UNKNOWN_TOOL`) whose arguments hold the raw text.
    """
    if not isinstance(message, AIMessage) or not message.invalid_tool_calls:
        return message
    calls = list(message.tool_calls) + [
        {
            "name": str(bad.get("name") or UNKNOWN_TOOL),
            "args": {"unparsed": str(bad.get("args") or "")},
            "id": bad.get("id"),
            "type": "tool_call",
        }
        for bad in message.invalid_tool_calls
    ]
    return message.model_copy(update={"tool_calls": calls, "invalid_tool_calls": []})


BROKEN_CALL_ERROR = "the call broke off before its end (too long): write it shorter"
"""What the model is told of a call the server refused as cut short."""


def _broken_call_result(exc: Exception) -> ChatResult:
    """The server's refusal of a cut-short call as a step holding that call, invalid.

    The loop answers an invalid call with an error result and goes on
    (`errors.broken_call_arguments`); any other error is raised again.
    """
    args = broken_call_arguments(exc)
    if args is None:
        raise exc
    bad = invalid_tool_call(name=UNKNOWN_TOOL, args=args, id=None, error=BROKEN_CALL_ERROR)
    return ChatResult(generations=[ChatGeneration(message=AIMessage("", invalid_tool_calls=[bad]))])


def _broken_call_chunk(exc: Exception) -> ChatGenerationChunk:
    """`_broken_call_result` as the last chunk of a stream: its call does not parse.

    A chunk's call keeps no error of its own once chunks are added up (LangChain parses
    them again), so the model is told only that its arguments did not parse.
    """
    args = broken_call_arguments(exc)
    if args is None:
        raise exc
    piece = tool_call_chunk(
        name=UNKNOWN_TOOL, args=args, id=f"call_{uuid.uuid4().hex[:24]}", index=0
    )
    return ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[piece]))


def _raise_if_context_overflow(exc: BaseException) -> None:
    """Re-raise llama.cpp's "prompt too long" 400 as LangChain's ContextOverflowError.

    langchain-openai only recognises OpenAI's wording; the agent's summarize-and-retry
    path catches the one LangChain class for every provider.
    """
    if not isinstance(exc, ContextOverflowError) and is_context_overflow(exc):
        raise ContextOverflowError(str(exc)) from exc
