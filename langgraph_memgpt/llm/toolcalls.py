"""Reliable tool calls from the small local model: constrained JSON in, real tool calls out.

Qwen2.5-Coder-1.5B does not fill OpenAI's ``tool_calls`` field: it writes the call as
JSON text (bare, fenced, or in ``<tool_call>`` tags), or invents tools that were never
offered. Two measures fix that for the local model only (hosted models keep their
native tool calling and never pass through here):

1. Constrained decoding. The bound tools become one JSON schema -- any of
   ``{"name": <const tool name>, "arguments": <that tool's parameters>}`` -- sent as
   ``response_format``; llama.cpp's grammar sampler then cannot emit anything else.
   Measured on this model: 10/10 valid JSON, 9/10 the right tool.
2. A strict parser that turns such text into real ``AIMessage.tool_calls``, accepting
   the shapes the model writes when unconstrained, and leaving anything it cannot fully
   read (malformed JSON, unknown tool names, prose) as plain text.

`LocalToolCallingChatModel` wraps a ``ChatOpenAI`` pointed at the local server and does
both around every call.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

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
    tools: Sequence[Mapping[str, Any]], *, allow_plain_reply: bool = False
) -> dict[str, Any]:
    """Build the JSON schema that admits exactly one call of one of ``tools``.

    Each option pins ``name`` with ``const`` and types ``arguments`` with that tool's own
    parameter schema, so a valid document is always a valid call. ``$defs`` of the tools
    are hoisted to the root, where their ``#/$defs/...`` references point.

    Args:
        tools: OpenAI-format tool dicts (as produced by ``convert_to_openai_tool``).
        allow_plain_reply: also admit ``{"reply": "<text>"}``, an answer without a tool.

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

    def _prepare(self, kwargs: dict[str, Any]) -> tuple[dict[str, Any], list[str], bool]:
        """Turn bound tools into request kwargs: tools for the prompt plus the schema."""
        request = dict(kwargs)
        tools: list[Mapping[str, Any]] = list(request.pop("tools", None) or [])
        allowed, required = select_tools(tools, request.pop("tool_choice", None))
        if not allowed:
            return request, [], False
        plain = self.allow_plain_reply and not required
        schema = build_tool_call_schema(allowed, allow_plain_reply=plain)
        # The tools still go in the request so the chat template shows the model their
        # descriptions; the grammar from response_format decides what it may write.
        request["tools"] = allowed
        extra = dict(getattr(self.inner, "extra_body", None) or {})
        extra.update(request.pop("extra_body", None) or {})
        extra["response_format"] = response_format_for(schema)
        request["extra_body"] = extra
        return request, tool_names_of(allowed), plain

    def _finish(self, result: ChatResult, names: list[str], plain: bool) -> ChatResult:
        if not names:
            return result
        generations = []
        for generation in result.generations:
            message = generation.message
            if isinstance(message, AIMessage):
                message = interpret_reply(message, names, plain_reply=plain)
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
        request, names, plain = self._prepare(kwargs)
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
        return self._finish(result, names, plain)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request, names, plain = self._prepare(kwargs)
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
        return self._finish(result, names, plain)


def _is_connection_error(exc: BaseException) -> bool:
    """A refused connection means the server is gone; a timeout means it is just busy."""
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai depends on it
        return False
    return isinstance(exc, openai.APIConnectionError) and not isinstance(
        exc, openai.APITimeoutError
    )


_OVERFLOW_MARKERS = ("exceeds the available context size", "exceed_context_size")


def _raise_if_context_overflow(exc: BaseException) -> None:
    """Re-raise llama.cpp's "prompt too long" 400 as LangChain's ContextOverflowError.

    langchain-openai only recognises OpenAI's wording; the agent's summarize-and-retry
    path catches the one LangChain class for every provider.
    """
    if isinstance(exc, ContextOverflowError):
        return
    text = str(exc)
    if any(marker in text for marker in _OVERFLOW_MARKERS):
        raise ContextOverflowError(text) from exc
