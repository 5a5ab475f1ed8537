"""What the memory page shows, as plain JSON-ready dicts (no web framework here).

Every function takes an agent's `Memory` (any backend) or a thread's checkpointed values
and returns what one endpoint of `langgraph_memgpt.serve.web` answers, so the page's content
can be tested without a server or a browser, and the endpoints stay thin.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_memgpt.context import Context
from langgraph_memgpt.nodes.summarize_evict import SUMMARY_TAG
from langgraph_memgpt.ops.retention import rule_view
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.blocks import is_owner
from langgraph_memgpt.stores.capabilities import BlockEdits, BlockHistory, RetentionRules, require
from langgraph_memgpt.stores.sections import split as split_sections
from langgraph_memgpt.stores.types import Block, Passage, RecallMessage, SearchPage
from langgraph_memgpt.tools.run import tool_schemas
from langgraph_memgpt.turn.main_context import build_prompt, prompt_tokens
from langgraph_memgpt.turn.tokens import TokenCounter

T = TypeVar("T")

PAGE_SIZE = 20
"""Results per page of the recall timeline, the archive and their searches."""
MAX_PAGE_SIZE = 100
MAX_PAGE = 1_000_000
"""Highest page number asked for (a bigger one would overflow the stores' integers)."""
EVICTIONS_SHOWN = 200
"""Newest eviction summaries looked through for one thread's eviction history."""
PAGE_ACTOR = "user"
"""Who the page edits as (``user:<name>`` with auth): a person, recorded in the history."""
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
_MESSAGE_TYPES: dict[str, type[AnyMessage]] = {
    "human": HumanMessage,
    "ai": AIMessage,
    "tool": ToolMessage,
    "system": SystemMessage,
}


class PageError(ValueError):
    """A request the page cannot answer; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# --- core ---------------------------------------------------------------------------------


def block_view(block: Block) -> dict[str, Any]:
    """A block with its fill level (characters used of its limit)."""
    return {
        "label": block.label,
        "value": block.value,
        "description": block.description,
        "chars": len(block.value),
        "char_limit": block.char_limit,
        "fill": round(len(block.value) / block.char_limit, 4) if block.char_limit else 0.0,
        "read_only": block.read_only,
        # Labelled sections ([] for a block without): name and text of each.
        "sections": split_sections(block) if block.sections else [],
    }


def core_view(memory: Memory) -> dict[str, Any]:
    """Every core block of the agent, in creation order."""
    return {"agent_id": memory.agent_id, "blocks": [block_view(b) for b in memory.core.blocks()]}


def word_diff(old: str, new: str) -> list[list[str]]:
    """``old`` → ``new`` as runs of ``["=", text]``, ``["-", text]`` and ``["+", text]``.

    Word-level, so a one-word change in a long block shows as one word, not a new block.
    """
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    runs: list[list[str]] = []

    def add(op: str, parts: Sequence[str]) -> None:
        text = "".join(parts)
        if not text:
            return
        if runs and runs[-1][0] == op:
            runs[-1][1] += text
        else:
            runs.append([op, text])

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            add("=", a[i1:i2])
        else:
            add("-", a[i1:i2])
            add("+", b[j1:j2])
    return runs


def actor_parts(actor: str) -> tuple[str, str | None]:
    """An edit's actor and thread: ``agent:<thread>`` is the agent, in that thread."""
    kind, sep, rest = actor.partition(":")
    if kind == "agent" and sep:
        return "agent", rest or None
    return actor, None


def history_view(
    memory: Memory, label: str, *, page: int = 0, page_size: int = PAGE_SIZE
) -> dict[str, Any]:
    """One page of the edits of block ``label``, newest first, each with its word diff.

    Paged: a block edited thousands of times is read and diffed one page at a time.

    Raises:
        PageError: the agent has no such block (404), a bad page (400).
    """
    page, page_size = _page_args(page, page_size)
    if label not in {b.label for b in memory.core.blocks()}:
        raise PageError(f"agent {memory.agent_id!r} has no core block {label!r}", 404)
    total, rows = require(memory.core, BlockHistory, "the memory page").history_page(
        label, offset=page * page_size, limit=page_size
    )
    edits = []
    for row in rows:
        actor, thread = actor_parts(str(row["actor"]))
        old = row.get("old_value") or ""
        new = str(row["new_value"])
        edits.append(
            {
                "id": row["id"],
                "op": row["op"],
                "actor": actor,
                "thread_id": thread,
                "time": str(row["created_at"]),
                "old": old,
                "new": new,
                "diff": word_diff(old, new),
            }
        )
    return {
        "agent_id": memory.agent_id,
        "label": label,
        "total": total,
        "page": page,
        "page_size": page_size,
        "pages": -(-total // page_size),
        "edits": edits,
    }


def page_actor(user: str | None) -> str:
    """The history's actor for an edit made on the page by ``user`` (None: no auth)."""
    return f"{PAGE_ACTOR}:{user}" if user else PAGE_ACTOR


def set_block(
    memory: Memory, label: str, value: object, user: str | None, expected: object = None
) -> dict[str, Any]:
    """Overwrite block ``label`` with ``value`` from the page; the stores' rules apply.

    ``expected`` is the value the page loaded, and is required: the write is
    compare-and-set, so a save never overwrites what the agent (or another page) wrote
    after the page loaded; the store refuses it with ``BlockConflictError`` (the endpoint
    answers 409). A save without it (any client but the page may omit it) is refused (400),
    never a blind overwrite.

    A read-only block is refused here before the store is asked: the store lets its
    owners (people, :data:`~langgraph_memgpt.stores.blocks.OWNER_ACTORS`) change it, and
    every visitor of the page is a person, so the store's rule alone would let any user
    of the agent rewrite the operator's fixed rules from a browser.

    Raises:
        PageError: ``value`` is not text or ``expected`` is missing (400), no such block
            (404), a read-only block (403); the store's own refusals (over the limit) are
            ``BlockEditError``.
    """
    if not isinstance(value, str):
        raise PageError('send {"value": "<the block\'s new text>"} as JSON', 400)
    block = next((b for b in memory.core.blocks() if b.label == label), None)
    if block is None:
        raise PageError(f"agent {memory.agent_id!r} has no core block {label!r}", 404)
    if block.read_only:
        raise PageError(
            f"block {label!r} is read-only: the agent reads it but nobody changes it here. "
            "Its owner changes it outside the page (the store's set() with an owner actor).",
            403,
        )
    if not isinstance(expected, str):
        # Every save is compare-and-set, whoever sends it: a write without the text it
        # replaces would erase whatever the agent wrote since the client read the block.
        raise PageError(
            'send "expected": the block\'s text as you read it (GET core), beside "value"; '
            "the save is made only if the block still holds it (else 409 with its text now)",
            400,
        )
    actor = page_actor(user)
    assert is_owner(actor)  # a person's edit, recorded as such
    return block_view(
        require(memory.core, BlockEdits, "the memory page").set(
            label, value, actor=actor, expected=expected
        )
    )


# --- recall and archival ------------------------------------------------------------------


def _page_args(page: int, page_size: int) -> tuple[int, int]:
    if not 0 <= page <= MAX_PAGE:
        raise PageError(f"page must be 0 to {MAX_PAGE}, got {page}")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise PageError(f"page_size must be 1 to {MAX_PAGE_SIZE}, got {page_size}")
    return page, page_size


def _searched(
    search: Callable[..., SearchPage[T]], query: str, page: int, page_size: int, **filters: Any
) -> SearchPage[T]:
    """A tier's hybrid search (or timeline) as the tools run it; an empty filter: none.

    Raises:
        PageError: bad page, filter or date (the store's words).
    """
    page, page_size = _page_args(page, page_size)
    chosen = {name: value or None for name, value in filters.items()}
    try:
        return search(query, page=page, page_size=page_size, **chosen)
    except ValueError as exc:
        raise PageError(str(exc)) from None


def _paging(found: SearchPage[Any]) -> dict[str, int]:
    return {
        "total": found.total,
        "page": found.page,
        "page_size": found.page_size,
        "pages": found.pages,
    }


def message_view(message: RecallMessage, score: float | None = None) -> dict[str, Any]:
    """One recall message as the timeline shows it."""
    return {
        "message_id": message.message_id,
        "thread_id": message.thread_id,
        "turn": message.turn,
        "role": message.role,
        "name": message.name,
        "text": message.text,
        "tool_calls": [
            {"name": str(c.get("name")), "args": c.get("args") or {}} for c in message.tool_calls
        ],
        "time": message.created_at,
        "score": score,
    }


def recall_view(
    memory: Memory,
    query: str = "",
    *,
    roles: Sequence[str] = (),
    start_date: str | None = None,
    end_date: str | None = None,
    page: int = 0,
    page_size: int = PAGE_SIZE,
) -> dict[str, Any]:
    """Recall as a timeline (no query: newest first) or the tools' hybrid search, filtered.

    The same ``RecallStore.search`` the ``conversation_search`` tool calls, so the page
    finds what the agent would find (tool results and search calls are never listed).

    Raises:
        PageError: bad page, role or date (the store's words).
    """
    found = _searched(
        memory.recall.search,
        query,
        page,
        page_size,
        roles=list(roles),
        start_date=start_date,
        end_date=end_date,
    )
    return {
        "agent_id": memory.agent_id,
        "query": query,
        "mode": "search" if query.strip() else "timeline",
        **_paging(found),
        "messages": [message_view(h.item, h.score if query.strip() else None) for h in found.hits],
    }


def passage_view(passage: Passage, score: float | None = None) -> dict[str, Any]:
    """One archival passage with its tags and provenance (thread, turn, time)."""
    return {
        "id": passage.id,
        "text": passage.text,
        "tags": list(passage.tags),
        "thread_id": passage.thread_id,
        "turn": passage.turn,
        "time": passage.created_at,
        "score": score,
    }


def forget_passage(
    memory: Memory,
    passage_id: int,
    user: str | None,
    checkpointer: BaseCheckpointSaver[Any] | None,
) -> dict[str, Any]:
    """Forget one passage everywhere it lives, logged as the page's user.

    As ``forget --passage`` does (``forget.forget_passage``, the one eraser): rows, words,
    vectors, the tool calls and results in recall quoting it, every channel of the
    server's threads' checkpoints that held it (``checkpointer``: the server's threads,
    `checkpoints.existing_threads`) and their history, the server's own copy of its
    threads, and the engine's files.

    Raises:
        PageError: no such passage (404).
    """
    from langgraph_memgpt.ops.forget import NothingToForgetError
    from langgraph_memgpt.ops.forget import forget_passage as forget

    try:
        report = forget(memory, passage_id, actor=page_actor(user), checkpointer=checkpointer)
    except NothingToForgetError:
        raise PageError(f"agent {memory.agent_id!r} has no passage {passage_id}", 404) from None
    return {"forgotten": [passage_view(p) for p in report.passages]}


def archival_view(
    memory: Memory,
    query: str = "",
    *,
    tags: Sequence[str] = (),
    start_date: str | None = None,
    end_date: str | None = None,
    page: int = 0,
    page_size: int = PAGE_SIZE,
) -> dict[str, Any]:
    """Archival passages (no query: newest first) or the tools' hybrid search, filtered.

    Raises:
        PageError: bad page or date (the store's words).
    """
    found = _searched(
        memory.archival.search,
        query,
        page,
        page_size,
        tags=list(tags),
        start_date=start_date,
        end_date=end_date,
    )
    return {
        "agent_id": memory.agent_id,
        "query": query,
        "tags_in_use": memory.archival.tags(),
        # The agent's retention rules (``retention``): what is forgotten after how long.
        "retention": [
            rule_view(r)
            for r in require(memory.archival, RetentionRules, "the memory page").retention_rules()
        ],
        **_paging(found),
        "passages": [passage_view(h.item, h.score if query.strip() else None) for h in found.hits],
    }


# --- threads ------------------------------------------------------------------------------


def queue_messages(values: Mapping[str, Any]) -> list[AnyMessage]:
    """The thread's queue as messages, from checkpointed values as the threads API sends."""
    queue: list[AnyMessage] = []
    for raw in values.get("messages") or []:
        if isinstance(raw, AIMessage | HumanMessage | ToolMessage | SystemMessage):
            queue.append(raw)
            continue
        kind = _MESSAGE_TYPES.get(str(raw.get("type")))
        if kind is not None:
            queue.append(kind.model_validate(raw))
    return queue


def window_of(run_context: Mapping[str, Any] | None) -> Context:
    """The pressure settings a thread ran with: its last run's context over the defaults.

    A context the server refused (a bad window) gives the defaults, not an error.
    """
    kinds: dict[str, type[int] | type[float]] = {
        "context_window": int,
        "warning_fraction": float,
        "flush_fraction": float,
        "evict_fraction": float,
    }
    given: dict[str, Any] = {}
    for name, kind in kinds.items():
        raw = (run_context or {}).get(name)
        try:
            # The server checked the value when the run started; Studio sends it as text.
            given[name] = kind(float(raw)) if raw is not None else None
        except (TypeError, ValueError):
            continue
    try:
        return Context(**{k: v for k, v in given.items() if v is not None})
    except (TypeError, ValueError):  # a run the server refused: its window never applied
        return Context()


def gauge(
    values: Mapping[str, Any],
    ctx: Context,
    *,
    compact_tools: bool = False,
    counter: TokenCounter | None = None,
) -> dict[str, Any]:
    """The thread's next prompt in tokens against its window, counted as check_pressure does.

    System prompt (as the thread last rendered it), summary note, visible queue and the
    bound tool schemas: the number ``check_pressure`` compares with the warning and flush
    limits.
    """
    counter = counter or TokenCounter()
    queue = queue_messages(values)
    prompt = build_prompt(
        str(values.get("system_prompt") or ""),
        str(values.get("summary") or ""),
        int(values.get("evicted_count") or 0),
        queue,
    )
    used = prompt_tokens(counter, prompt, tool_schemas([], compact=compact_tools))
    window = ctx.context_window
    return {
        "tokens": used,
        "window": window,
        "fill": round(used / window, 4),
        "warning_at": int(ctx.warning_fraction * window),
        "flush_at": int(ctx.flush_fraction * window),
        "queue_messages": len(queue),
    }


def evictions(memory: Memory, thread_id: str) -> list[dict[str, Any]]:
    """The thread's eviction summaries (archival passages tagged ``summary``), newest first."""
    found = memory.archival.search("", tags=[SUMMARY_TAG], page_size=EVICTIONS_SHOWN)
    return [passage_view(h.item) for h in found.hits if h.item.thread_id == thread_id]


def thread_view(
    memory: Memory,
    thread: Mapping[str, Any],
    values: Mapping[str, Any],
    ctx: Context,
    *,
    compact_tools: bool = False,
) -> dict[str, Any]:
    """One thread of the agent: its gauge, current summary and eviction history."""
    return {
        "thread_id": str(thread.get("thread_id")),
        "updated_at": str(thread.get("updated_at") or ""),
        "status": thread.get("status"),
        "turn": values.get("turn", 0),
        "gauge": gauge(values, ctx, compact_tools=compact_tools),
        "summary": str(values.get("summary") or ""),
        "evicted_count": int(values.get("evicted_count") or 0),
        "evictions": evictions(memory, str(thread.get("thread_id"))),
    }
