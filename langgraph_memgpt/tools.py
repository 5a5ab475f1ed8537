"""The tools the model calls to page memory in and out, and how a call is executed.

Each memory tool is a pydantic argument model plus a function over ``AgentMemory``. The
schemas are what the model sees; ``execute_tool_call`` validates arguments, runs the tool
and turns *every* failure into a model-readable ``{"status": "Failed", ...}`` result, so a
malformed call costs one more think step, never a crashed turn.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, ValidationError

from langgraph_memgpt.context import Context
from langgraph_memgpt.stores import AgentMemory
from langgraph_memgpt.stores.recall import searchable_text
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import Hit, Passage, RecallMessage, SearchPage

HEARTBEAT_DESCRIPTION = "true: think again after this returns; false: end your turn."


class _HeartbeatArgs(BaseModel):
    request_heartbeat: bool = Field(default=False, description=HEARTBEAT_DESCRIPTION)


class SendMessageArgs(BaseModel):
    """Send a message to the user. This is the only way the user sees what you say."""

    message: str = Field(description="The full message to show the user.")


class CoreMemoryAppendArgs(_HeartbeatArgs):
    """Append text to a core memory block (always in view). Use for lasting facts."""

    label: str = Field(description="Block to edit, e.g. 'human' or 'persona'.")
    content: str = Field(description="Text to append, on a new line.")


class CoreMemoryReplaceArgs(_HeartbeatArgs):
    """Replace exact text in a core memory block. Use an empty new_content to delete."""

    label: str = Field(description="Block to edit, e.g. 'human' or 'persona'.")
    old_content: str = Field(description="Exact text currently in the block.")
    new_content: str = Field(description="Text to put in its place.")


class ArchivalMemoryInsertArgs(_HeartbeatArgs):
    """Save a passage to archival memory (unlimited, searchable later)."""

    content: str = Field(description="Self-contained text to keep.")
    tags: list[str] = Field(default_factory=list, description="Tags for later filtering.")


class ArchivalMemorySearchArgs(_HeartbeatArgs):
    """Search archival memory by meaning and words, optionally by tags and dates."""

    query: str = Field(description="What to look for.")
    tags: list[str] = Field(default_factory=list, description="Only passages with these tags.")
    tag_match: Literal["any", "all"] = Field(
        default="any", description="'any': a passage needs one of the tags; 'all': every tag."
    )
    start_date: str = Field(default="", description="Inclusive, YYYY-MM-DD.")
    end_date: str = Field(default="", description="Inclusive, YYYY-MM-DD.")
    page: int = Field(default=0, ge=0, description="Result page, from 0.")


class ConversationSearchArgs(_HeartbeatArgs):
    """Search past messages (recall memory, verbatim) by meaning and words."""

    query: str = Field(description="What to look for.")
    roles: list[Literal["user", "assistant"]] = Field(
        default_factory=list, description="Only messages from these roles."
    )
    start_date: str = Field(default="", description="Inclusive, YYYY-MM-DD.")
    end_date: str = Field(default="", description="Inclusive, YYYY-MM-DD.")
    page: int = Field(default=0, ge=0, description="Result page, from 0.")


class ConversationSearchDateArgs(_HeartbeatArgs):
    """List past messages (recall memory) between two dates, oldest first."""

    start_date: str = Field(description="Inclusive, YYYY-MM-DD.")
    end_date: str = Field(description="Inclusive, YYYY-MM-DD.")
    page: int = Field(default=0, ge=0, description="Result page, from 0.")


@dataclass(frozen=True)
class Provenance:
    """Where a tool call happened, recorded with what it writes."""

    thread_id: str
    turn: int


@dataclass(frozen=True)
class ToolOutcome:
    """What one executed tool call produced and what it means for routing."""

    content: str
    ok: bool
    heartbeat: bool
    reply: str | None = None
    core_changed: bool = False


ToolFn = Callable[[Any, AgentMemory, Context, Provenance], tuple[str, bool]]
"""A memory tool: (args, memory, context, provenance) -> (message, core_changed)."""


def _send_message(
    args: SendMessageArgs, memory: AgentMemory, ctx: Context, where: Provenance
) -> tuple[str, bool]:
    return "Sent message successfully.", False


def _core_append(
    args: CoreMemoryAppendArgs, memory: AgentMemory, ctx: Context, where: Provenance
) -> tuple[str, bool]:
    block = memory.core.append(args.label, args.content, actor=f"agent:{where.thread_id}")
    return f"Appended to '{block.label}' ({len(block.value)}/{block.char_limit} chars).", True


def _core_replace(
    args: CoreMemoryReplaceArgs, memory: AgentMemory, ctx: Context, where: Provenance
) -> tuple[str, bool]:
    block = memory.core.replace(
        args.label, args.old_content, args.new_content, actor=f"agent:{where.thread_id}"
    )
    return f"Replaced text in '{block.label}' ({len(block.value)}/{block.char_limit} chars).", True


def _archival_insert(
    args: ArchivalMemoryInsertArgs, memory: AgentMemory, ctx: Context, where: Provenance
) -> tuple[str, bool]:
    passage = memory.archival.insert(
        args.content, tags=args.tags or (), thread_id=where.thread_id, turn=where.turn
    )
    return f"Saved passage {passage.id} to archival memory.", False


def _archival_search(
    args: ArchivalMemorySearchArgs, memory: AgentMemory, ctx: Context, where: Provenance
) -> tuple[str, bool]:
    page = memory.archival.search(
        args.query,
        tags=args.tags or None,
        tag_match=args.tag_match,
        start_date=args.start_date or None,
        end_date=args.end_date or None,
        page=args.page,
        page_size=ctx.search_page_size,
    )
    return format_page(page, _passage_line, ctx), False


def _conversation_search(
    args: ConversationSearchArgs, memory: AgentMemory, ctx: Context, where: Provenance
) -> tuple[str, bool]:
    page = memory.recall.search(
        args.query,
        roles=list(args.roles) if args.roles else None,
        start_date=args.start_date or None,
        end_date=args.end_date or None,
        page=args.page,
        page_size=ctx.search_page_size,
    )
    return format_page(page, _message_line, ctx), False


def _conversation_search_date(
    args: ConversationSearchDateArgs, memory: AgentMemory, ctx: Context, where: Provenance
) -> tuple[str, bool]:
    page = memory.recall.search_date(
        args.start_date, args.end_date, page=args.page, page_size=ctx.search_page_size
    )
    return format_page(page, _message_line, ctx), False


MEMORY_TOOLS: Mapping[str, tuple[type[BaseModel], ToolFn]] = {
    "send_message": (SendMessageArgs, _send_message),
    "core_memory_append": (CoreMemoryAppendArgs, _core_append),
    "core_memory_replace": (CoreMemoryReplaceArgs, _core_replace),
    "archival_memory_insert": (ArchivalMemoryInsertArgs, _archival_insert),
    "archival_memory_search": (ArchivalMemorySearchArgs, _archival_search),
    "conversation_search": (ConversationSearchArgs, _conversation_search),
    "conversation_search_date": (ConversationSearchDateArgs, _conversation_search_date),
}
"""Tool name -> (argument model, implementation). The argument model's docstring is the
tool description the model reads."""

SEARCH_TOOLS = frozenset(
    {"archival_memory_search", "conversation_search", "conversation_search_date"}
)


def tool_schemas(user_tools: Sequence[BaseTool] = ()) -> list[dict[str, Any]]:
    """OpenAI-format schemas of the memory tools followed by the user's tools."""
    schemas = [copy.deepcopy(_memory_tool_schema(name)) for name in MEMORY_TOOLS]
    schemas.extend(convert_to_openai_tool(tool) for tool in user_tools)
    return schemas


@functools.cache
def _memory_tool_schema(name: str) -> dict[str, Any]:
    """One memory tool's schema, without defaults.

    Defaults cost prompt tokens on every step, and ``required`` already says what may be
    left out.
    """
    schema = convert_to_openai_tool(MEMORY_TOOLS[name][0])
    schema["function"]["name"] = name
    for prop in schema["function"]["parameters"].get("properties", {}).values():
        prop.pop("default", None)
    return schema


def _passage_line(hit: Hit[Passage], limit: int) -> str:
    passage = hit.item
    tags = f" [{', '.join(passage.tags)}]" if passage.tags else ""
    return f"- ({passage.created_at[:19]}){tags} {_clip(passage.text, limit)}"


def _message_line(hit: Hit[RecallMessage], limit: int) -> str:
    message = hit.item
    text = searchable_text(message)
    return f"- ({message.created_at[:19]}) {message.role}: {_clip(text, limit)}"


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
    memory: AgentMemory,
    ctx: Context,
    where: Provenance,
    user_tools: Mapping[str, BaseTool],
) -> ToolOutcome:
    """Run one tool call; never raises: failures come back as a Failed result with heartbeat."""
    limit = ctx.result_char_limit
    if not isinstance(args, dict):
        return _failed(name, "arguments must be a JSON object", limit)
    if name in user_tools:
        try:
            output = user_tools[name].invoke(args)
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the model
            return _failed(name, exc, limit)
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        # A user tool's result is information for the model: it always gets to read it.
        return ToolOutcome(tool_result(True, text, limit), ok=True, heartbeat=True)
    if name not in MEMORY_TOOLS:
        known = ", ".join([*MEMORY_TOOLS, *user_tools])
        return _failed(name, f"no tool named {name!r}; available tools: {known}", limit)
    model, fn = MEMORY_TOOLS[name]
    try:
        parsed = model.model_validate(args)
    except ValidationError as err:
        return _failed(name, _validation_message(err), limit)
    try:
        with memory.lock:
            message, core_changed = fn(parsed, memory, ctx, where)
    except Exception as exc:  # noqa: BLE001 - every failure goes back to the model
        return _failed(name, exc, limit)
    reply = parsed.message if isinstance(parsed, SendMessageArgs) else None
    return ToolOutcome(
        tool_result(True, message, limit),
        ok=True,
        heartbeat=bool(getattr(parsed, "request_heartbeat", False)),
        reply=reply,
        core_changed=core_changed,
    )


def _failed(name: str, exc: BaseException | str, limit: int) -> ToolOutcome:
    return ToolOutcome(tool_result(False, error_text(name, exc), limit), ok=False, heartbeat=True)
