"""The tools a small model is offered, as one JSON schema its decoding cannot leave.

The bound tools become ``anyOf`` of ``{"name": <const>, "arguments": <that tool's
parameters>}`` (or, for an agent step, the reply beside its memory edits), sent as
``response_format``: llama.cpp's grammar sampler then cannot write anything else. Also the
tools' text in the prompt and a step's narrowing of the callable tools.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from langgraph_memgpt.llm.call_parse import PLAIN_REPLY_KEY


def function_of(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``function`` part of an OpenAI-format tool (or the tool itself, if flat)."""
    function = tool.get("function")
    return function if isinstance(function, Mapping) else tool


def tool_names_of(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of OpenAI-format tools (``{"type": "function", "function": {...}}``)."""
    return [str(function_of(tool)["name"]) for tool in tools]


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
        function = function_of(tool)
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
    names = [str(function_of(tool)["name"]) for tool in tools]
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
        tool_choice = function_of(tool_choice).get("name")
    chosen = [tool for tool in tools if function_of(tool).get("name") == tool_choice]
    if not chosen:
        raise ValueError(f"tool_choice {tool_choice!r} is not one of {tool_names_of(tools)}")
    return chosen, True


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
        function = function_of(tool)
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
