"""The tools the model calls to page memory in and out, and how a call is executed.

Each memory tool is a pydantic argument model plus a function over ``Memory``. The
schemas are what the model sees; ``execute_tool_call`` validates arguments, runs the tool
and turns *every* failure into a model-readable ``{"status": "Failed", ...}`` result, so a
malformed call costs one more think step, never a crashed turn. In a graph every tool,
these and the caller's, runs through LangGraph's ``ToolNode`` as a LangChain tool
(`langgraph_memgpt.tools.memory_tools`, `langgraph_memgpt.nodes.call_memory_tool`).

What the loop must know about a tool (it replies, it searches memory, it edits memory,
whether its result must be read before the turn ends) is a `ToolFacts`, declared beside the
tool: in `MEMORY_TOOLS` for the memory tools, with `declare_tool` for the caller's tools,
and read everywhere through `facts_of`.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ValidationError

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.duplicates import first_covered, first_same
from langgraph_memgpt.stores.messages import searchable_text
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import BlockEditError, Hit, Passage, RecallMessage, SearchPage
from langgraph_memgpt.stores.words import topic_stems
from langgraph_memgpt.tools.args import (
    ArchivalMemoryInsertArgs,
    ArchivalMemorySearchArgs,
    ConversationSearchArgs,
    ConversationSearchDateArgs,
    CoreMemoryAppendArgs,
    CoreMemoryReplaceArgs,
    ForgetArgs,
    SendMessageArgs,
)
from langgraph_memgpt.tools.facts import FACTS_KEY, MemoryTool, ToolFacts, ToolHost, ToolOutcome
from langgraph_memgpt.tools.facts import Provenance as Provenance
from langgraph_memgpt.tools.facts import declare_tool as declare_tool

Host = ToolHost | None
"""What a tool may ask of the package above it (`ToolHost`); None: no such work here."""


def facts_of(name: str, user_tools: Mapping[str, BaseTool] | None = None) -> ToolFacts:
    """The `ToolFacts` of the tool called ``name``: memory tool, declared user tool, default."""
    if name in MEMORY_TOOLS:
        return MEMORY_TOOLS[name].facts
    tool = (user_tools or {}).get(name)
    declared = (tool.metadata or {}).get(FACTS_KEY) if tool is not None else None
    return declared if isinstance(declared, ToolFacts) else ToolFacts()


def _send_message(
    args: SendMessageArgs, memory: Memory, ctx: Context, where: Provenance, host: Host
) -> tuple[str, bool]:
    return "Sent message successfully.", False


def _core_append(
    args: CoreMemoryAppendArgs, memory: Memory, ctx: Context, where: Provenance, host: Host
) -> tuple[str, bool]:
    content = args.content.strip()
    if content.endswith("?"):
        # A small model copies the user's question into memory; it is never a fact.
        return "Not saved: a question is not a fact. Answer it with send_message.", False
    labels = {block.label: block for block in memory.core.blocks()}
    label = args.label
    if label == "persona" and "human" in labels and _about_the_user(content):
        # Where the fact belongs is unambiguous, so moving it costs no extra model call.
        label = "human"
    current = labels.get(label)
    lines = current.value.splitlines() if current is not None else []
    same = first_same(content, lines)
    if same is not None:
        return (
            f"Already saved: '{label}' already says this: {same.strip()!r} (nothing was "
            "added; to change it, use core_memory_replace).",
            False,
        )
    moved = (
        " (a fact about the user: saved to 'human', not 'persona')" if label != args.label else ""
    )
    actor, section = f"agent:{where.thread_id}", args.section or None
    covered = first_covered(content, lines)
    if covered is not None:
        # The new line says all the old one did and more: one fuller line, not two.
        try:
            block = memory.core.replace(label, covered.strip(), content, actor, section=section)
        except BlockEditError:
            pass  # the old line is in another section, or twice: append as asked
        else:
            return (
                f"Updated '{block.label}'{moved}: {covered.strip()!r} became {content!r}, "
                f"which says all it did ({len(block.value)}/{block.char_limit} chars).",
                True,
            )
    block = memory.core.append(label, content, actor=actor, section=section)
    return (
        f"Appended to '{block.label}'{moved} ({len(block.value)}/{block.char_limit} chars).",
        True,
    )


_USER_WORDS = re.compile(r"\b(the user|user's|user|human)\b", re.IGNORECASE)


def _about_the_user(text: str) -> bool:
    return bool(_USER_WORDS.search(text))


def _core_replace(
    args: CoreMemoryReplaceArgs, memory: Memory, ctx: Context, where: Provenance, host: Host
) -> tuple[str, bool]:
    if args.new_content.strip().endswith("?"):
        return "Not saved: a question is not a fact. Answer it with send_message.", False
    block = memory.core.replace(
        args.label,
        args.old_content,
        args.new_content,
        actor=f"agent:{where.thread_id}",
        section=args.section or None,
    )
    return f"Replaced text in '{block.label}' ({len(block.value)}/{block.char_limit} chars).", True


def _archival_insert(
    args: ArchivalMemoryInsertArgs, memory: Memory, ctx: Context, where: Provenance, host: Host
) -> tuple[str, bool]:
    # Keyed on the call: a turn interrupted after the insert and run again saves nothing twice.
    key = f"call:{where.replay_key}" if where.replay_key else None
    passage = memory.archival.insert(
        args.content,
        tags=args.tags or (),
        thread_id=where.thread_id,
        turn=where.turn,
        key=key,
        replaces=args.replaces,
    )
    if passage.duplicate:
        return (
            f"Already saved: passage #{passage.id} ({passage.created_at[:10]}) holds this: "
            f"{_clip(passage.text, 200)!r}. Nothing was saved twice. If the fact has changed, "
            f"save the new one with replaces={passage.id}.",
            False,
        )
    replaced = memory.archival.get(args.replaces) if args.replaces is not None else None
    if replaced is not None:
        return (
            f"Saved passage #{passage.id} to archival memory, replacing #{replaced.id} "
            f"({replaced.created_at[:10]}): {_clip(replaced.text, 200)!r}. Searches show "
            "the new one first; the old one stays findable as the earlier version.",
            False,
        )
    return f"Saved passage #{passage.id} to archival memory.", False


def _archival_search(
    args: ArchivalMemorySearchArgs, memory: Memory, ctx: Context, where: Provenance, host: Host
) -> tuple[str, bool]:
    filters = {"tags": args.tags, "start_date": args.start_date, "end_date": args.end_date}

    def search(chosen: Mapping[str, Any]) -> SearchPage[Passage]:
        return memory.archival.search(
            args.query,
            tag_match=args.tag_match,
            page=args.page,
            page_size=ctx.search_page_size,
            **chosen,
        )

    def line(hit: Hit[Passage], limit: int) -> str:
        return passage_line(hit, limit, memory.archival.get)

    return _search_with_filters(search, filters, line, ctx, args.query, memory), False


def _conversation_search(
    args: ConversationSearchArgs, memory: Memory, ctx: Context, where: Provenance, host: Host
) -> tuple[str, bool]:
    filters = {"roles": list(args.roles), "start_date": args.start_date, "end_date": args.end_date}

    def search(chosen: Mapping[str, Any]) -> SearchPage[RecallMessage]:
        return memory.recall.search(
            args.query,
            page=args.page,
            page_size=ctx.search_page_size,
            exclude_ids={(where.thread_id, i) for i in where.in_view},
            **chosen,
        )

    return _search_with_filters(search, filters, message_line, ctx, args.query, memory), False


def _search_with_filters(
    search: Callable[[Mapping[str, Any]], SearchPage[Any]],
    filters: Mapping[str, Any],
    line: Callable[[Any, int], str],
    ctx: Context,
    query: str,
    memory: Memory,
) -> str:
    """Run a search; when its filters hide every match, say so and show the unfiltered best.

    ``search(chosen)``: the search with the filters ``chosen`` (by name; None: not applied).
    A small model invents filters (dates of the wrong year, a role); "no results" would then
    tell it that it knows nothing about what it has. An empty page points at core memory
    (`_or_core_memory`).
    """
    page = search({name: value or None for name, value in filters.items()})
    described = ", ".join(f"{k}={v!r}" for k, v in filters.items() if v)
    if page.hits or not described or page.page > 0:
        return _or_core_memory(page, line, ctx, query, memory)
    unfiltered = search(dict.fromkeys(filters))
    if not unfiltered.hits:
        return _or_core_memory(page, line, ctx, query, memory)
    note = (
        f"No match with the filters {described}; without them there are {unfiltered.total} "
        "matches. The best of them:"
    )
    return note + "\n" + format_page(unfiltered, line, ctx)


def core_lines_about(
    query: str, memory: Memory, skip: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """The core memory lines (block label, line) that share a topic word with ``query``."""
    asked = topic_stems(query, skip=skip)
    if not asked:
        return []
    return [
        (block.label, line.strip())
        for block in memory.core.blocks()
        for line in block.value.splitlines()
        if line.strip() and asked & topic_stems(line, skip=skip)
    ]


def _or_core_memory(
    page: SearchPage[Any],
    line: Callable[[Any, int], str],
    ctx: Context,
    query: str,
    memory: Memory,
) -> str:
    """The page; when it is empty, followed by the core memory lines about the query, if any.

    The embedded model searches for facts that sit in its own core memory ("allergy" with
    "Allergic to peanuts." in `human`), reads "No results" and answers that it does not
    know: a search must not say "nothing" about what the agent has in view.
    """
    shown = format_page(page, line, ctx)
    if page.hits:
        return shown
    lines = core_lines_about(query, memory)
    if not lines:
        return shown
    listed = "\n".join(f"- {label}: {text}" for label, text in lines[:CORE_LINES_SHOWN])
    return f"{shown} {prompts.CORE_MEMORY_HAS}\n{listed}"


def _conversation_search_date(
    args: ConversationSearchDateArgs, memory: Memory, ctx: Context, where: Provenance, host: Host
) -> tuple[str, bool]:
    page = memory.recall.search_date(
        args.start_date, args.end_date, page=args.page, page_size=ctx.search_page_size
    )
    return format_page(page, message_line, ctx), False


def _forget(
    args: ForgetArgs, memory: Memory, ctx: Context, where: Provenance, host: Host
) -> tuple[str, bool]:
    if host is None:
        raise RuntimeError(
            "forget runs the package's eraser: pass host=langgraph_memgpt.deps.TOOL_HOST"
        )
    report = host.forget(memory, args.about, actor=f"agent:{where.thread_id}")
    shown = report.messages and {m.message_id for m in report.messages} & where.in_view
    note = (
        " Some of them are in this conversation and stay in view until they leave the context."
        if shown
        else ""
    )
    return report.describe() + note, False


_TOOLS = (
    MemoryTool(
        "send_message", SendMessageArgs, _send_message, replies=True, compact_args=("message",)
    ),
    MemoryTool(
        "core_memory_append",
        CoreMemoryAppendArgs,
        _core_append,
        edits=True,
        compact_args=("label", "content"),
    ),
    MemoryTool(
        "core_memory_replace",
        CoreMemoryReplaceArgs,
        _core_replace,
        edits=True,
        compact_args=("label", "old_content", "new_content"),
    ),
    MemoryTool(
        "archival_memory_insert",
        ArchivalMemoryInsertArgs,
        _archival_insert,
        edits=True,
        compact_args=("content",),
    ),
    MemoryTool(
        "archival_memory_search",
        ArchivalMemorySearchArgs,
        _archival_search,
        reads=True,
        compact_args=("query",),
    ),
    MemoryTool(
        "conversation_search",
        ConversationSearchArgs,
        _conversation_search,
        reads=True,
        compact_args=("query",),
    ),
    MemoryTool(
        "conversation_search_date",
        ConversationSearchDateArgs,
        _conversation_search_date,
        reads=True,
        compact_args=("start_date", "end_date"),
        for_small_models=False,
    ),
    # Not offered to the small model: not measured there, and a wrong call deletes memory.
    MemoryTool(
        "forget", ForgetArgs, _forget, edits=True, compact_args=("about",), for_small_models=False
    ),
)

MEMORY_TOOLS: Mapping[str, MemoryTool] = {tool.name: tool for tool in _TOOLS}
"""Every memory tool by name."""


def tool_schemas(
    user_tools: Sequence[BaseTool] = (), *, compact: bool = False
) -> list[dict[str, Any]]:
    """OpenAI-format schemas of the memory tools followed by the user's tools.

    Args:
        user_tools: the caller's own tools, appended unchanged.
        compact: offer each memory tool's ``compact_args`` only (for a small model).
    """
    schemas = [
        copy.deepcopy(_memory_tool_schema(name, compact))
        for name, tool in MEMORY_TOOLS.items()
        if tool.for_small_models or not compact
    ]
    schemas.extend(convert_to_openai_tool(tool) for tool in user_tools)
    return schemas


@functools.cache
def _memory_tool_schema(name: str, compact: bool = False) -> dict[str, Any]:
    """One memory tool's schema, without defaults.

    Defaults cost prompt tokens on every step, and ``required`` already says what may be
    left out.
    """
    tool = MEMORY_TOOLS[name]
    schema = convert_to_openai_tool(tool.args)
    schema["function"]["name"] = name
    params = schema["function"]["parameters"]
    properties = params.get("properties", {})
    if compact:
        params["properties"] = properties = {
            k: v for k, v in properties.items() if k in tool.compact_args
        }
        params["required"] = [k for k in params.get("required", []) if k in properties]
        params.pop("$defs", None)
    for prop in properties.values():
        prop.pop("default", None)
    return schema


def passage_line(hit: Hit[Passage], limit: int, get: Callable[[int], Passage | None]) -> str:
    """One archival hit as a result line: id, when, tags, what it replaced or was replaced by.

    A current fact says what it replaced and when (the older text, short); a replaced one
    says by which passage and when, so the model answers with the current fact and can
    still tell what was said before.
    """
    passage = hit.item
    tags = f" [{', '.join(passage.tags)}]" if passage.tags else ""
    notes = ""
    if passage.replaced_by is not None:
        when = (passage.replaced_at or "")[:10]
        notes += f" [REPLACED by #{passage.replaced_by} on {when}: earlier version]"
    older = get(passage.replaces) if passage.replaces is not None else None
    if older is not None:
        current = "current: " if passage.replaced_by is None else ""
        notes += (
            f" [{current}replaced #{older.id} on {passage.created_at[:10]}, which said "
            f"{_clip(older.text, 80)!r}]"
        )
    return f"- #{passage.id} ({passage.created_at[:19]}){tags}{notes} {_clip(passage.text, limit)}"


def message_line(hit: Hit[RecallMessage], limit: int) -> str:
    """One recall hit as a result line: when, who, what (clipped to ``limit``)."""
    message = hit.item
    text = searchable_text(message)
    return f"- ({message.created_at[:19]}) {message.role}: {_clip(text, limit)}"


CORE_LINES_SHOWN = 3
"""Core memory lines an empty search result points at (the whole block is in view anyway)."""


def format_page(page: SearchPage[Any], line: Callable[[Any, int], str], ctx: Context) -> str:
    """Render a result page sized so it cannot overflow ``ctx.result_char_limit``."""
    if not page.hits:
        return f"No results (page {page.page}, {page.total} matches in all)."
    header = f"Page {page.page + 1} of {page.pages} ({page.total} matches):"
    per_hit = max(80, (ctx.result_char_limit - len(header) - 100) // len(page.hits) - 40)
    return "\n".join([header, *(line(hit, per_hit) for hit in page.hits)])


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_result(ok: bool, message: str, limit: int) -> str:
    """The JSON a tool call answers with; long messages are cut to ``limit`` characters."""
    if len(message) > limit:
        message = message[: max(0, limit - 60)] + f"… [cut: {len(message)} chars in all]"
    # An error may quote the model's own bad input, lone surrogates included.
    message = valid_text(message)
    return json.dumps({"status": "OK" if ok else "Failed", "message": message}, ensure_ascii=False)


def error_text(name: str, exc: BaseException | str) -> str:
    """``Error executing function NAME: ExcType: message`` (Letta's wording)."""
    detail = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    return f"Error executing function {name}: {detail}"


def _validation_message(err: ValidationError) -> str:
    problems = []
    for item in err.errors()[:5]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "arguments"
        problems.append(f"{where}: {item.get('msg', 'invalid')}")
    return "invalid arguments: " + "; ".join(problems)


def execute_tool_call(
    name: str,
    args: Any,
    *,
    memory: Memory,
    ctx: Context,
    where: Provenance,
    user_tools: Collection[str] = (),
    host: ToolHost | None = None,
) -> ToolOutcome:
    """Run one memory tool call (blocking store I/O); never raises.

    A failure comes back as a Failed result with a heartbeat, so the model can fix it.

    Args:
        name: the tool the model called.
        args: its arguments, as the model wrote them.
        memory: the agent's memory tiers.
        ctx: the run's context (result size limit, search page size).
        where: the thread, turn, message and call id the call belongs to.
        user_tools: names of the caller's tools, listed when ``name`` is unknown (they
            run in the graph's tool step, through ``ToolNode``, never here).
        host: what a tool asks of the package above it (`ToolHost`: ``forget`` runs the
            eraser of `langgraph_memgpt.ops.forget`); the tools' runs hand in
            `langgraph_memgpt.deps.TOOL_HOST`.
    """
    limit = ctx.result_char_limit
    if name not in MEMORY_TOOLS and isinstance(args, dict):
        known = ", ".join([*MEMORY_TOOLS, *user_tools])
        return failed_result(name, f"no tool named {name!r}; available tools: {known}", limit)
    parsed = parse_args(name, args)
    if isinstance(parsed, str):
        return failed_result(name, parsed, limit)
    try:
        message, core_changed = MEMORY_TOOLS[name].run(parsed, memory, ctx, where, host)
    except Exception as exc:  # noqa: BLE001 - every failure goes back to the model
        return failed_result(name, exc, limit)
    return ToolOutcome(
        tool_result(True, message, limit),
        ok=True,
        heartbeat=wants_heartbeat(name, parsed),
        reply=parsed.message if isinstance(parsed, SendMessageArgs) else None,
        core_changed=core_changed,
    )


def parse_args(name: str, args: Any) -> BaseModel | str:
    """A memory tool's arguments validated, or why they are not (the model reads it)."""
    if not isinstance(args, dict):
        return "arguments must be a JSON object"
    try:
        return MEMORY_TOOLS[name].args.model_validate(args)
    except ValidationError as err:
        return _validation_message(err)


def wants_heartbeat(name: str, parsed: BaseModel) -> bool:
    """Whether the loop must think again after this memory tool call succeeds."""
    return MEMORY_TOOLS[name].facts.must_read or bool(getattr(parsed, "request_heartbeat", False))


def failed_result(name: str, exc: BaseException | str, limit: int) -> ToolOutcome:
    """A failed call's outcome: the model reads why and gets another step."""
    return ToolOutcome(tool_result(False, error_text(name, exc), limit), ok=False, heartbeat=True)
