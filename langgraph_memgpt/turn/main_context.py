"""The main context (the model's "RAM"): what the next prompt holds and what it costs.

``think`` sends exactly what ``build_prompt`` returns and ``check_pressure`` /
``summarize_evict`` count exactly that, so the pressure the loop reacts to is the pressure
the model will see.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.events import is_event, render_event
from langgraph_memgpt.osutil import utc_now
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.text import needs_cleaning, valid_json
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.tools.run import facts_of
from langgraph_memgpt.turn.tokens import MESSAGE_OVERHEAD, TokenCounter, content_text

REPLY_FLAG = "memgpt_reply"
"""Marks the AI message ``respond`` adds: the reply is already in the queue as the
``send_message`` call, so the prompt skips this copy."""
TIME_KEY = "memgpt_time"
"""Where a user message keeps the time it entered the queue (ISO-8601 UTC)."""
CUT_FLAG = "memgpt_cut"
"""Marks a queue message cut to fit the window (value: the cut length, so an edited copy is
not taken for the cut one): recall keeps the whole message (``RecallMessage.partial``)."""
CUT_CALLS_FLAG = "memgpt_cut_calls"
"""Marks an AI message whose tool-call arguments (or text) were cut to fit the queue: recall
keeps the whole message, and ``call_memory_tool`` executes the calls as recall holds them."""
ALERT_NAME = "system_alert"
"""Name of the user-role messages the runtime itself inserts (pressure alerts)."""

M = TypeVar("M", bound=BaseMessage)


def context_of(runtime: Runtime[Context] | Runtime[Any]) -> Context:
    """The run's Context; defaults when the caller passed none.

    Its agent by the one convention (`Context.for_run`): the context's ``agent_id`` when
    it sets one, else ``configurable["agent_id"]``.
    """
    try:
        config: RunnableConfig | None = get_config()
    except RuntimeError:  # called outside a run
        config = None
    return Context.for_run(runtime.context, config)


def thread_of(runtime: Runtime[Any]) -> str:
    """The checkpointer thread id, or 'default' when the graph runs without one."""
    info = getattr(runtime, "execution_info", None)
    thread_id = getattr(info, "thread_id", None)
    return str(thread_id) if thread_id else "default"


def now_iso() -> str:
    """Current UTC time, ISO-8601 with seconds (what message times show)."""
    return utc_now("seconds")


def is_runtime_note(message: BaseMessage) -> bool:
    """True for user-role messages the runtime wrote (alerts), not the user."""
    return isinstance(message, HumanMessage) and message.name == ALERT_NAME


def latest_user_index(messages: Sequence[BaseMessage]) -> int | None:
    """Index of the newest message the user (not the runtime) wrote."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage) and not is_runtime_note(messages[index]):
            return index
    return None


def awaits_reply(queue: Sequence[BaseMessage]) -> bool:
    """Whether the current turn has a user waiting: False when only events opened it.

    The turn's input is the run of user-role messages ending at the newest one; runtime
    notes (alerts) do not count either way. A queue without any keeps the old rule: reply.
    """
    index = latest_user_index(queue)
    if index is None:
        return True
    while index >= 0 and isinstance(queue[index], HumanMessage):
        message = queue[index]
        if not is_event(message) and not is_runtime_note(message):
            return True
        index -= 1
    return False


def visible(messages: Iterable[AnyMessage]) -> list[AnyMessage]:
    """The queue as the model sees it (without the copies of sent replies)."""
    return [m for m in messages if not m.additional_kwargs.get(REPLY_FLAG)]


def system_key(memory: Memory, evicted_count: int, thread_id: str, layout: str) -> str:
    """Changes exactly when the system prompt must be re-rendered.

    In the ``cached`` layout, edits this thread made itself do not count: they are in its
    queue as tool calls, in view, and re-rendering for them would make the model re-read
    everything after the core blocks. Edits by
    anyone else (another thread of the agent, a person) and evictions do count. Asked
    every step, so it is one indexed lookup (`CoreStore.latest_change_id`), not a read of
    every block's history.
    """
    if layout == "legacy":
        return f"{memory.core.last_modified() or '-'}|{evicted_count}"
    latest = memory.core.latest_change_id(other_than=f"agent:{thread_id}") or 0
    return f"{latest}|{evicted_count}"


def core_mirror(memory: Memory) -> list[dict[str, Any]]:
    """The agent's core blocks as plain dicts, mirrored into state for Studio."""
    mirror: list[dict[str, Any]] = []
    for b in memory.core.blocks():
        block: dict[str, Any] = {
            "label": b.label,
            "value": b.value,
            "description": b.description,
            "char_limit": b.char_limit,
            "read_only": b.read_only,
        }
        if b.sections:  # absent for a block without sections: its prompt is as before
            block["sections"] = list(b.sections)
        mirror.append(block)
    return mirror


def render_system(
    memory: Memory, queue_length: int, layout: str = "cached", instructions: str = ""
) -> tuple[str, list[dict[str, Any]]]:
    """Render the system prompt from the stores; returns it with the core blocks mirror.

    ``cached`` (the default): the unchanging instructions first, then core memory and
    statistics, so everything up to the first core block is the same in every call of
    every thread. ``legacy``: the layout before that, kept as the benchmark's baseline.
    ``instructions``: the caller's system prompt, after MemGPT's (in the unchanging head).
    """
    legacy = layout == "legacy"
    blocks = core_mirror(memory)
    core, statistics = _memory_parts(memory, blocks, queue_length, legacy=legacy)
    extra = prompts.render_developer_instructions(instructions) if instructions else ""
    if legacy:
        return extra + prompts.render_system_prompt(core, statistics), blocks
    head = prompts.SYSTEM_INSTRUCTIONS + extra
    return f"{head}{CORE_MEMORY_START}{prompts.render_memory(core, statistics)}", blocks


CORE_MEMORY_START = "\n"
"""Between the unchanging head of the system message and core memory (see `system_message`)."""


def render_memory_view(memory: Memory, queue_length: int = 0) -> str:
    """Core memory and the memory statistics, as the model reads them (no instructions)."""
    return prompts.render_memory(*_memory_parts(memory, core_mirror(memory), queue_length))


def _memory_parts(
    memory: Memory, blocks: list[dict[str, Any]], queue_length: int, *, legacy: bool = False
) -> tuple[str, str]:
    statistics = prompts.render_memory_statistics(
        recall_outside_queue=max(0, memory.recall.count() - queue_length),
        archival_count=memory.archival.count(),
        archival_tags=memory.archival.tags(),
        last_modified=memory.core.last_modified(),
        legacy=legacy,
    )
    return prompts.render_core_blocks(blocks, legacy=legacy), statistics


def system_message(system_prompt: str) -> SystemMessage:
    """The system message, split where the unchanging part ends.

    Two text blocks, instructions first: a model wrapper that renders tools into the
    prompt itself (the embedded model's) puts them between the two, so the instructions
    and the tools form one prefix that every call shares; providers that cache by prefix
    (OpenAI, Anthropic: tools first, then the system text) get the same order. A prompt of
    the legacy layout stays one string.
    """
    if not system_prompt.startswith(prompts.SYSTEM_INSTRUCTIONS):
        return SystemMessage(system_prompt)
    head = prompts.SYSTEM_INSTRUCTIONS
    rest = system_prompt[len(head) :]
    if rest.startswith("<instructions>\n"):
        end = rest.find("</instructions>\n")
        if end >= 0:
            cut = end + len("</instructions>\n")
            head, rest = head + rest[:cut], rest[cut:]
    rest = rest.lstrip("\n")
    return SystemMessage(content=[{"type": "text", "text": head}, {"type": "text", "text": rest}])


def with_time(message: AnyMessage) -> AnyMessage:
    """A user message as the model reads it: prefixed with the time it was sent.

    An event instead says it comes from the host, with its source and time (`render_event`).
    """
    if is_event(message):
        return message.model_copy(update={"content": render_event(message, content_text(message))})
    sent = message.additional_kwargs.get(TIME_KEY)
    if not isinstance(message, HumanMessage) or is_runtime_note(message) or not sent:
        return message
    return message.model_copy(
        update={"content": f"{prompts.render_time(str(sent))} {content_text(message)}"}
    )


def is_user_message(message: BaseMessage) -> bool:
    """True for a message the user (not the runtime) wrote."""
    return isinstance(message, HumanMessage) and not is_runtime_note(message)


def stamped(message: M, when: str | None = None) -> M:
    """``message`` with its arrival time (``when``, default now) recorded: user messages, once."""
    if not is_user_message(message) or message.additional_kwargs.get(TIME_KEY):
        return message
    return message.model_copy(
        update={"additional_kwargs": {**message.additional_kwargs, TIME_KEY: when or now_iso()}}
    )


def build_prompt(
    system_prompt: str, summary: str, evicted_count: int, queue: Sequence[AnyMessage]
) -> list[BaseMessage]:
    """System message, summary note (if any), then the visible queue with message times."""
    prompt: list[BaseMessage] = [system_message(system_prompt)]
    if summary:
        prompt.append(HumanMessage(prompts.render_summary(summary, evicted_count), name=ALERT_NAME))
    prompt.extend(with_time(m) for m in visible(queue))
    return prompt


def prompt_tokens(
    counter: TokenCounter, prompt: Sequence[BaseMessage], tool_schemas: Sequence[dict[str, Any]]
) -> int:
    """Tokens of a prompt plus the tool schemas sent with it."""
    return counter.messages(prompt) + counter.tools(tool_schemas)


def summary_token_budget(ctx: Context) -> int:
    """Most tokens the recursive summary may take: ``summary_fraction`` of the window."""
    return int(ctx.context_window * ctx.summary_fraction)


def message_budget(
    ctx: Context,
    counter: TokenCounter,
    tool_schemas: Sequence[dict[str, Any]],
    system_prompt: str,
    evicted_count: int,
) -> int:
    """Most tokens one new message may keep in the queue.

    ``max_message_fraction`` of the window, and never more than the room the parts of the
    prompt that always stay leave it (instructions, tools, core memory, a summary at its
    full budget): once everything older is evicted the message must fit on its own, or the
    turn could only end with "please send a shorter message". With a small window and many
    tools that room is the tighter bound.
    """
    placeholder = "x" if ctx.summary_fraction > 0 else ""
    fixed = prompt_tokens(
        counter, build_prompt(system_prompt, placeholder, evicted_count, []), tool_schemas
    )
    room = (
        int(ctx.flush_fraction * ctx.context_window)
        - fixed
        - summary_token_budget(ctx)
        - MESSAGE_OVERHEAD
    )
    return max(0, min(int(ctx.context_window * ctx.max_message_fraction), room))


def _role(message: BaseMessage) -> str:
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, HumanMessage):
        if is_event(message):
            return "event"
        return "system" if is_runtime_note(message) else "user"
    return "system"


def valid_message(message: M) -> M:
    r"""``message`` itself, or a copy with each lone surrogate replaced by U+FFFD.

    A lone surrogate (a user's badly decoded text, a model's ``"\ud800"`` escape) cannot
    be encoded as UTF-8: the token counter, SQLite and every provider's HTTP client would
    raise on it at every later step, so the message is cleaned once, as it enters the queue.
    """
    fields = ("content", "name", "tool_calls", "invalid_tool_calls")
    values = {f: getattr(message, f) for f in fields if hasattr(message, f)}
    if not needs_cleaning(list(values.values())):
        return message
    return message.model_copy(update={f: valid_json(v) for f, v in values.items()})


def to_recall(message: BaseMessage, agent_id: str, thread_id: str, turn: int) -> RecallMessage:
    """The verbatim recall record of a queue message."""
    tool_calls: list[dict[str, object]] = []
    if isinstance(message, AIMessage):
        tool_calls = [
            {"name": c["name"], "args": c["args"], "id": c.get("id")} for c in message.tool_calls
        ]
        tool_calls += [
            {"name": c.get("name"), "args": c.get("args"), "id": c.get("id"), "invalid": True}
            for c in message.invalid_tool_calls
        ]
    full_text = message.additional_kwargs.get("memgpt_full_text")
    return RecallMessage(
        agent_id=agent_id,
        thread_id=thread_id,
        message_id=str(message.id),
        role=_role(message),
        text=str(full_text) if full_text is not None else content_text(message),
        # A user message keeps the time it entered the queue (see ``stamped``).
        created_at=str(message.additional_kwargs.get(TIME_KEY) or now_iso()),
        turn=turn,
        tool_calls=tool_calls,
        name=message.name if isinstance(message, ToolMessage) else None,
        # The reply copy repeats the send_message call's text, which is already searchable;
        # a search call found again by a later search would only echo that search.
        searchable=False
        if message.additional_kwargs.get(REPLY_FLAG) or is_search_call(message)
        else None,
        partial=message.additional_kwargs.get(CUT_FLAG) == len(content_text(message))
        or bool(message.additional_kwargs.get(CUT_CALLS_FLAG)),
    )


def is_search_call(message: BaseMessage) -> bool:
    """True for an AI message whose tool calls all look memory up (``ToolFacts.reads``)."""
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return False
    return all(facts_of(call["name"]).reads for call in message.tool_calls)


def cut_text(text: str, budget: int, counter: TokenCounter, note: str) -> str:
    """``text`` cut so that it and ``note`` fit ``budget`` tokens (unchanged if it fits)."""
    tokens = counter.text(text)
    if tokens <= budget:
        return text
    room = max(0, budget - counter.text(note))
    keep = int(len(text) * room / tokens)
    # Token density varies along a text: shrink until the kept part really fits.
    while keep > 0 and (used := counter.text(text[:keep])) > room:
        keep = int(keep * room / used * 0.95)
    return text[:keep] + note


def bounded_calls(message: AIMessage, budget: int, counter: TokenCounter) -> AIMessage:
    """``message`` as the queue keeps it: text and tool-call arguments within ``budget`` tokens.

    A model can write megabytes into one call (a 10 MB ``archival_memory_insert``); the
    queue lives in every checkpoint and every later prompt. Each string (the inner
    monologue, every argument value at any depth, an unparsable call's raw arguments) gets
    an equal share of the budget, with a note; the message is flagged (``CUT_CALLS_FLAG``)
    so recall keeps the whole message recorded before the cut, and ``call_memory_tool``
    runs the calls as recall holds them.
    """
    payload = [
        content_text(message),
        [c["args"] for c in message.tool_calls],
        [c.get("args") for c in message.invalid_tool_calls],
    ]
    if counter.text(json.dumps(payload, ensure_ascii=False, default=str)) <= budget:
        return message
    strings = _strings(payload)
    share = max(20, budget // max(1, len(strings)))

    def cut(value: Any) -> Any:
        if isinstance(value, str):
            note = prompts.CUT_ARGUMENT_NOTE.format(chars=len(value), message_id=message.id)
            return cut_text(value, share, counter, note)
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v) for v in value]
        return value

    calls = [{**c, "args": cut(c["args"])} for c in message.tool_calls]
    invalid = [{**c, "args": cut(c.get("args"))} for c in message.invalid_tool_calls]
    return message.model_copy(
        update={
            "content": cut(content_text(message)),
            "tool_calls": calls,
            "invalid_tool_calls": invalid,
            "additional_kwargs": {**message.additional_kwargs, CUT_CALLS_FLAG: True},
        }
    )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


_RECORDED: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], str]] = weakref.WeakKeyDictionary()
"""Per open recall store: what this process wrote there, by (thread, message id), as the
fingerprint of the record's content. A turn re-records its whole queue (a message a killed
run left out is caught up there); what is already there as it is skips the store."""
_RECORDED_MAX = 50_000


def record(memory: Memory, messages: Iterable[BaseMessage], thread_id: str, turn: int) -> None:
    """Write-ahead: put messages into recall memory before they reach the checkpoint.

    Idempotent on message id, so re-recording after a crash or a retry adds nothing; a
    message this process already wrote with the same content is not sent to the store
    again (the store would find it unchanged, after cleaning and reading it back).
    """
    records = [to_recall(m, memory.agent_id, thread_id, turn) for m in messages if m.id]
    try:
        written = _RECORDED.setdefault(memory.recall, {})
    except TypeError:  # a store object that cannot be weakly referenced: no memo
        written = {}
    fresh = [r for r in records if written.get((r.thread_id, r.message_id)) != _fingerprint(r)]
    if not fresh:
        return
    memory.recall.add(fresh)
    if len(written) > _RECORDED_MAX:
        written.clear()
    for r in fresh:  # only once the store has them
        written[(r.thread_id, r.message_id)] = _fingerprint(r)


def _fingerprint(record: RecallMessage) -> str:
    """What makes a stored record differ (time and turn do not, as in the stores)."""
    return json.dumps(
        [
            record.role,
            record.name,
            record.text,
            record.tool_calls,
            record.searchable,
            record.partial,
        ],
        default=str,
    )


def current_system(
    state: State,
    memory: Memory,
    queue_length: int,
    ctx: Context,
    *,
    mid_turn: bool,
    thread_id: str,
    instructions: str = "",
) -> tuple[str, dict[str, Any]]:
    """The system prompt to use now, and the state update caching it (empty when cached).

    Re-rendered only when core memory or the summary changed, and in the ``cached`` layout
    only between turns (or after an eviction): within a turn the model sees its own edits
    in the queue, and a stable prompt lets the provider's (or llama.cpp's) prefix cache
    hold.
    """
    key = system_key(memory, state.get("evicted_count", 0), thread_id, ctx.prompt_layout)
    if instructions:  # a new system prompt parameter means a new render
        key += "|" + hashlib.sha256(instructions.encode()).hexdigest()[:12]
    cached = state.get("system_prompt")
    old_key = state.get("system_key", "")
    if cached and old_key == key:
        return cached, {}
    same_eviction = old_key.split("|")[1:] == key.split("|")[1:]
    if cached and mid_turn and same_eviction and ctx.prompt_layout == "cached":
        return cached, {}
    system_prompt, blocks = render_system(memory, queue_length, ctx.prompt_layout, instructions)
    return system_prompt, {"system_prompt": system_prompt, "system_key": key, "core_blocks": blocks}
