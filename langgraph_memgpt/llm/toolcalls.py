"""Reliable tool calls from the small local model: constrained JSON in, real tool calls out.

Qwen2.5-Coder-1.5B does not fill OpenAI's ``tool_calls`` field: it writes the call as
JSON text (bare, fenced, or in ``<tool_call>`` tags), or invents tools that were never
offered. Two measures fix that for the local model only (hosted models keep their
native tool calling and never pass through here):

1. Constrained decoding. The bound tools become one JSON schema -- any of
   ``{"name": <const tool name>, "arguments": <that tool's parameters>}`` -- sent as
   ``response_format``; llama.cpp's grammar sampler then cannot emit anything else
   (``benchmarks/tool_call_paths.py`` compares it with llama.cpp's own parsing).
2. A strict parser that turns such text into real ``AIMessage.tool_calls``, accepting
   the shapes the model writes when unconstrained, and leaving anything it cannot fully
   read (malformed JSON, unknown tool names, prose) as plain text.

`LocalToolCallingChatModel` wraps a ``ChatOpenAI`` pointed at the local server and does
both around every call.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, SystemMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langgraph_memgpt.auto_save import add_missing_notes
from langgraph_memgpt.core_gate import drop_ungrounded_notes
from langgraph_memgpt.event_notes import correct_event_values
from langgraph_memgpt.llm.chunks import message_chunks
from langgraph_memgpt.llm.errors import is_context_overflow
from langgraph_memgpt.llm.voiced_stream import VoicedRaw
from langgraph_memgpt.voice import repair_reply, reply_voice

RAW_TEXT_KEY = "memgpt_raw_text"
"""Key of the model's raw JSON text in streamed chunks: the calls are parsed at the end,
but a reader (``langgraph_memgpt.streaming``) can follow the reply as it is written."""
PLAIN_REPLY_KEY = "reply"
"""The key of the optional no-tool answer, ``{"reply": "..."}``, in the constrained schema."""

_ARG_KEYS = ("arguments", "parameters", "args")
_CALL_KEYS = frozenset({"name", "id", "type", *_ARG_KEYS})
_TAG_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCE_RE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class ParsedReply:
    """A model's text split into the words it meant for the reader and its tool calls."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _as_call(item: Any, tool_names: Collection[str] | None) -> ToolCall | None:
    """Read one ``{"name", "arguments"}`` object (or OpenAI's ``{"function": {...}}``)."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict) and set(item) <= {"function", "id", "type"}:
        item = {**item["function"], "id": item.get("id")}
    if not set(item) <= _CALL_KEYS:
        return None  # extra keys: this is data that happens to have a "name", not a call
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    if tool_names is not None and name not in tool_names:
        return None
    present = [key for key in _ARG_KEYS if key in item]
    if len(present) != 1:
        return None  # a call always says what its arguments are, even when empty
    args: Any = item[present[0]]
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    call_id = item.get("id")
    return ToolCall(
        name=name,
        args=args,
        id=call_id if isinstance(call_id, str) and call_id else _new_call_id(),
        type="tool_call",
    )


def calls_from_json(text: str, tool_names: Collection[str] | None = None) -> list[ToolCall] | None:
    """Parse text that is entirely one tool call or a list of them; else return None.

    All or nothing: if any element is not a well-formed call, none are taken, so a
    half-understood reply is shown as text rather than executed.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
    items = data if isinstance(data, list) else [data]
    if not items:
        return None
    calls = [_as_call(item, tool_names) for item in items]
    if any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _extract_blocks(
    text: str, pattern: re.Pattern[str], tool_names: Collection[str] | None
) -> ParsedReply | None:
    """Take the blocks of ``pattern`` that hold tool calls; leave the others in the text."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        found = calls_from_json(match.group(1).strip(), tool_names)
        if found is None:
            continue
        calls.extend(found)
        kept.append(text[last : match.start()])
        last = match.end()
    if not calls:
        return None
    kept.append(text[last:])
    return ParsedReply(content=re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip(), tool_calls=calls)


def parse_tool_calls(text: str, tool_names: Collection[str] | None = None) -> ParsedReply:
    """Turn tool calls written as text into real tool calls; leave everything else as text.

    Understood shapes: the whole reply as a JSON object ``{"name", "arguments"}`` (or a
    list of them, or OpenAI's ``{"type": "function", "function": {...}}``); Qwen's
    ``<tool_call>...</tool_call>`` blocks; fenced ````json`` blocks. Text around tags or
    fences is kept as the message content (the agent's inner monologue). ``arguments`` may
    also be a JSON string, as in OpenAI's wire format.

    Args:
        text: the model's reply.
        tool_names: the tools that were offered; a call to any other name is not taken.

    Returns:
        The remaining text and the calls found (none when nothing parsed cleanly).
    """
    stripped = text.strip()
    whole = calls_from_json(stripped, tool_names)
    if whole is not None:
        return ParsedReply(content="", tool_calls=whole)
    fenced_whole = _FENCE_RE.fullmatch(stripped)
    if fenced_whole is not None:
        inner = calls_from_json(fenced_whole.group(1).strip(), tool_names)
        if inner is not None:
            return ParsedReply(content="", tool_calls=inner)
    for pattern in (_TAG_RE, _FENCE_RE):
        found = _extract_blocks(text, pattern, tool_names)
        if found is not None:
            return found
    return ParsedReply(content=text)


def _function_of(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    function = tool.get("function")
    return function if isinstance(function, Mapping) else tool


def tool_names_of(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of OpenAI-format tools (``{"type": "function", "function": {...}}``)."""
    return [str(_function_of(tool)["name"]) for tool in tools]


def build_tool_call_schema(
    tools: Sequence[Mapping[str, Any]],
    *,
    allow_plain_reply: bool = False,
    max_calls: int = 1,
    reply_tool: str | None = None,
    companions: Collection[str] = (),
) -> dict[str, Any]:
    """Build the JSON schema that admits one call of one of ``tools``, or a list of calls.

    Each option pins ``name`` with ``const`` and types ``arguments`` with that tool's own
    parameter schema, so a valid document is always a valid call. ``$defs`` of the tools
    are hoisted to the root, where their ``#/$defs/...`` references point.

    Args:
        tools: OpenAI-format tool dicts (as produced by ``convert_to_openai_tool``).
        allow_plain_reply: also admit ``{"reply": "<text>"}``, an answer without a tool.
        max_calls: above 1, the document is a JSON list of 1 to ``max_calls`` calls
            (a memory edit and the reply in one generation).
        reply_tool: with ``max_calls`` above 1, shape the list as a step of an agent
            that replies through this tool: either one call of a tool that is neither the
            reply nor a companion (a search, whose result must be read first), or up to
            ``max_calls - 1`` companion calls followed by the reply. A small model then
            cannot end a step on a silent edit, which would cost another call.
        companions: tools that may only come before the reply (memory edits).

    Raises:
        ValueError: no tools and no plain reply, or two tools define one ``$defs`` name
            differently.
    """
    options: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}
    for tool in tools:
        function = _function_of(tool)
        params = dict(function.get("parameters") or {"type": "object", "properties": {}})
        for key, value in (params.pop("$defs", None) or {}).items():
            if key in defs and defs[key] != value:
                raise ValueError(f"tools define the schema {key!r} differently")
            defs[key] = value
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": function["name"]}, "arguments": params},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    names = [str(_function_of(tool)["name"]) for tool in tools]
    if max_calls > 1 and reply_tool in names:
        by_name = dict(zip(names, options, strict=True))
        options = _step_shapes(by_name, str(reply_tool), companions, max_calls)
    elif max_calls > 1 and options:
        call = options[0] if len(options) == 1 else {"anyOf": options}
        options = [{"type": "array", "items": call, "minItems": 1, "maxItems": max_calls}]
    if allow_plain_reply:
        options.append(
            {
                "type": "object",
                "properties": {PLAIN_REPLY_KEY: {"type": "string"}},
                "required": [PLAIN_REPLY_KEY],
                "additionalProperties": False,
            }
        )
    if not options:
        raise ValueError("a tool-call schema needs at least one tool or allow_plain_reply")
    schema: dict[str, Any] = options[0] if len(options) == 1 else {"anyOf": options}
    if defs:
        schema = {**schema, "$defs": defs}
    return schema


def _step_shapes(
    by_name: Mapping[str, dict[str, Any]],
    reply_tool: str,
    companions: Collection[str],
    max_calls: int,
) -> list[dict[str, Any]]:
    """The lists one agent step may be: a lone call that must be read, or edits + reply."""

    def one_of(names: Sequence[str]) -> dict[str, Any]:
        calls = [by_name[n] for n in names]
        return calls[0] if len(calls) == 1 else {"anyOf": calls}

    def exactly(items: list[dict[str, Any]]) -> dict[str, Any]:
        n = len(items)
        return {"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}

    alone = [n for n in by_name if n != reply_tool and n not in companions]
    before = [n for n in by_name if n in companions and n != reply_tool]
    shapes = [exactly([one_of(alone)])] if alone else []
    for count in range(0, max_calls if before else 1):
        shapes.append(exactly([*([one_of(before)] * count), by_name[reply_tool]]))
    return shapes


def response_format_for(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Wrap a schema as an OpenAI ``response_format`` (llama.cpp compiles it to a grammar)."""
    return {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": dict(schema)}}


def select_tools(
    tools: Sequence[Mapping[str, Any]], tool_choice: Any
) -> tuple[list[Mapping[str, Any]], bool]:
    """Apply an OpenAI/LangChain ``tool_choice`` to the bound tools.

    Returns:
        The tools the reply may call, and whether it must call one (no plain reply).

    Raises:
        ValueError: ``tool_choice`` names a tool that is not bound.
    """
    if tool_choice in (None, "auto"):
        return list(tools), False
    if tool_choice == "none" or tool_choice is False:
        return [], False
    if tool_choice in ("any", "required") or tool_choice is True:
        return list(tools), True
    if isinstance(tool_choice, Mapping):
        tool_choice = _function_of(tool_choice).get("name")
    chosen = [tool for tool in tools if _function_of(tool).get("name") == tool_choice]
    if not chosen:
        raise ValueError(f"tool_choice {tool_choice!r} is not one of {tool_names_of(tools)}")
    return chosen, True


def interpret_reply(
    message: AIMessage, tool_names: Collection[str], *, plain_reply: bool
) -> AIMessage:
    """Return ``message`` with tool calls written as text turned into real tool calls.

    A message that already carries tool calls (the server parsed them) is kept as is;
    ``{"reply": "..."}`` becomes plain content when the plain-reply option was offered.
    """
    if message.tool_calls or not isinstance(message.content, str):
        return message
    text = message.content
    if plain_reply:
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, ValueError):
            data = None
        if isinstance(data, dict) and set(data) == {PLAIN_REPLY_KEY}:
            return message.model_copy(update={"content": str(data[PLAIN_REPLY_KEY])})
    parsed = parse_tool_calls(text, tool_names)
    if not parsed.tool_calls:
        return message
    return message.model_copy(update={"content": parsed.content, "tool_calls": parsed.tool_calls})


def describe_tools(
    tools: Sequence[Mapping[str, Any]],
    max_calls: int,
    reply_tool: str | None = None,
    companions: Collection[str] = (),
) -> str:
    """The tools as the small model reads them: one line each, and the answer format.

    A line per tool (``- name(arg: type, opt?: type): description``) instead of the chat
    template's JSON schemas: about half the tokens, read once per thread start at most.
    """
    names = tool_names_of(tools)
    if reply_tool in names and max_calls > 1:
        edits = [n for n in names if n in companions]
        alone = [n for n in names if n != reply_tool and n not in companions]
        shape = (
            f"Each step you answer with a JSON list: either [one call of {', '.join(alone)}] "
            f"to read its result first, or up to {max_calls - 1} calls of {', '.join(edits)} "
            f"followed by {reply_tool}, for example: "
            f'[{{"name": "{reply_tool}", "arguments": {{"message": "Hello!"}}}}]'
        )
    else:
        shape = (
            f"Answer with a JSON list of 1 to {max_calls} tool calls, in the order they should "
            'run, for example: [{"name": "send_message", "arguments": {"message": "Hello!"}}]'
        )
    lines = ["# Tools", shape]
    for tool in tools:
        function = _function_of(tool)
        params = function.get("parameters") or {}
        required = set(params.get("required") or [])
        args = ", ".join(
            f"{name}{'' if name in required else '?'}: {_type_of(spec)}"
            for name, spec in (params.get("properties") or {}).items()
        )
        description = " ".join(str(function.get("description") or "").split())
        lines.append(f"- {function['name']}({args}): {description}")
    return "\n".join(lines)


def _type_of(spec: Mapping[str, Any]) -> str:
    if "enum" in spec:
        return "|".join(json.dumps(v) for v in spec["enum"])
    kind = spec.get("type")
    if kind == "array":
        return f"list[{_type_of(spec.get('items') or {})}]"
    return str(kind or "any")


def tools_in_prompt(messages: Sequence[BaseMessage], tools_text: str) -> list[BaseMessage] | None:
    """``messages`` with the tools written after the first block of a block system message.

    None when the first message is not a system message in text blocks.
    """
    if not messages or not isinstance(messages[0], SystemMessage):
        return None
    content = messages[0].content
    if not isinstance(content, list) or len(content) < 2:
        return None
    texts = [b.get("text", "") if isinstance(b, dict) else str(b) for b in content]
    system = "\n\n".join([texts[0].rstrip(), tools_text, *texts[1:]])
    return [SystemMessage(system), *messages[1:]]


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

    @property
    def _llm_type(self) -> str:
        return "local-tool-calling"

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
    ) -> tuple[list[BaseMessage], dict[str, Any], list[str], bool]:
        """Turn bound tools into the request: their descriptions, and the schema as grammar.

        A system message in blocks (see ``main_context.system_message``) gets the tools
        written in after its first block, so instructions and tools form one prefix that
        llama.cpp's prompt cache keeps across calls and threads. Otherwise the tools go in
        the request and the chat template appends them after the whole system text (Qwen's
        does), where any change to that text makes llama.cpp re-read them too.
        """
        request = dict(kwargs)
        tools: list[Mapping[str, Any]] = list(request.pop("tools", None) or [])
        allowed, required = select_tools(tools, request.pop("tool_choice", None))
        if not allowed:
            return messages, request, [], False
        plain = self.allow_plain_reply and not required
        only = request.pop("step_tools", None)
        callable_now = (
            allowed if only is None else [t for t in allowed if _function_of(t)["name"] in only]
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
        return prompt, request, tool_names_of(allowed), plain

    def _finish(
        self, result: ChatResult, names: list[str], plain: bool, prompt: list[BaseMessage]
    ) -> ChatResult:
        if not names:
            return result
        generations = []
        for generation in result.generations:
            message = generation.message
            if isinstance(message, AIMessage):
                message = interpret_reply(message, names, plain_reply=plain)
                if self.reply_tool is not None:
                    # The small model says the user's facts back as its own ("I'm allergic
                    # to hazelnuts"): said to the user instead (see `voice`).
                    message = repair_reply(message, prompt, self.reply_tool)
                    # ...saves small talk as facts about the user (see `core_gate`)...
                    message = drop_ungrounded_notes(message, prompt, self.companions)
                    # ...and leaves facts the user stated unsaved (see `auto_save`).
                    message = add_missing_notes(message, prompt, self.reply_tool, self.companions)
                    # ...and copies a changed setting's file line as the text to replace.
                    message = correct_event_values(message, prompt)
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
        messages, request, names, plain = self._prepare(messages, kwargs)
        try:
            try:
                result = self.inner._generate(messages, stop=stop, **request)
            except Exception as exc:
                if self.reconnect is None or not _is_connection_error(exc):
                    raise
                self.inner = self.reconnect()
                result = self.inner._generate(messages, stop=stop, **request)
        except Exception as exc:
            _raise_if_context_overflow(exc)
            raise
        return self._finish(result, names, plain, messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        messages, request, names, plain = self._prepare(messages, kwargs)
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
            raise
        return self._finish(result, names, plain, messages)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The raw JSON text as it comes (under `RAW_TEXT_KEY`), then the parsed calls."""
        messages, request, names, plain = self._prepare(messages, kwargs)
        pieces: list[str] = []
        voiced = self._voiced(messages)
        try:
            try:
                chunks = iter(self.inner._stream(messages, stop=stop, **request))
                first = next(chunks, None)
            except Exception as exc:
                if self.reconnect is None or not _is_connection_error(exc):
                    raise
                self.inner = self.reconnect()
                chunks = iter(self.inner._stream(messages, stop=stop, **request))
                first = next(chunks, None)
            for chunk in itertools.chain([first] if first is not None else [], chunks):
                pieces.append(str(chunk.message.text))
                out = voiced.add(pieces[-1]) if voiced else pieces[-1]
                if out:
                    yield _raw_chunk(out)
        except Exception as exc:
            _raise_if_context_overflow(exc)
            raise
        if voiced and (tail := voiced.end()):
            yield _raw_chunk(tail)
        yield self._parsed_chunk("".join(pieces), names, plain, messages)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """`_stream` on the event loop."""
        messages, request, names, plain = self._prepare(messages, kwargs)
        pieces: list[str] = []
        voiced = self._voiced(messages)
        try:
            async for chunk in self.inner._astream(messages, stop=stop, **request):
                pieces.append(str(chunk.message.text))
                out = voiced.add(pieces[-1]) if voiced else pieces[-1]
                if out:
                    yield _raw_chunk(out)
        except Exception as exc:
            _raise_if_context_overflow(exc)
            raise
        if voiced and (tail := voiced.end()):
            yield _raw_chunk(tail)
        yield self._parsed_chunk("".join(pieces), names, plain, messages)

    def _voiced(self, prompt: list[BaseMessage]) -> VoicedRaw | None:
        """The streamed reply's voice repair for this prompt (see `llm.voiced_stream`)."""
        if self.reply_tool is None:
            return None
        voice = reply_voice(prompt)
        return VoicedRaw(voice, self.reply_tool) if voice is not None else None

    def _parsed_chunk(
        self, raw: str, names: list[str], plain: bool, prompt: list[BaseMessage]
    ) -> ChatGenerationChunk:
        """The last chunk: the whole text parsed into calls, as ``_generate`` returns them."""
        result = ChatResult(generations=[ChatGeneration(message=AIMessage(raw))])
        message = self._finish(result, names, plain, prompt).generations[0].message
        parsed = message if isinstance(message, AIMessage) else AIMessage(message.content)
        merged = message_chunks(parsed)
        last = merged[0]
        for part in merged[1:]:
            last = last + part
        return last


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


def _raise_if_context_overflow(exc: BaseException) -> None:
    """Re-raise llama.cpp's "prompt too long" 400 as LangChain's ContextOverflowError.

    langchain-openai only recognises OpenAI's wording; the agent's summarize-and-retry
    path catches the one LangChain class for every provider.
    """
    if not isinstance(exc, ContextOverflowError) and is_context_overflow(exc):
        raise ContextOverflowError(str(exc)) from exc
