"""Graph state: the FIFO queue and what the loop keeps beside it.

The queue (``messages``) is bounded by eviction; everything older lives verbatim in recall
memory, so a checkpoint stays small however long a thread runs. Input and output are
``messages`` (plus the optional ``events`` in and ``event_outcome`` out, which a parent graph
without those keys never sees), so the compiled graph drops into any parent graph with that key;
a ``state_schema`` of the caller's adds its own keys to both (`io_schemas`).
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, get_type_hints

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from langgraph_memgpt.events import Event, add_events


class InputState(TypedDict):
    """What a caller sends: new messages for the queue, and system events from the host."""

    messages: Annotated[list[AnyMessage], add_messages]
    events: NotRequired[Annotated[list[Event], add_events]]
    """System events (``source``, ``time``, ``text``): checked as the input is applied
    (`langgraph_memgpt.events`), put into the queue by ``open_turn``."""


class OutputState(TypedDict):
    """What a caller gets back: the queue, whose last AI message is the reply."""

    messages: Annotated[list[AnyMessage], add_messages]
    event_outcome: NotRequired[dict[str, Any] | None]
    """After a turn opened by events alone (no reply is sent): its events, the memory
    edits they led to, and whether the model replied anyway; None after any other turn."""


class State(InputState):
    """Everything the loop persists per thread through the checkpointer."""

    agent_id: NotRequired[str]
    """The agent this thread belongs to: its queue is that agent's conversation."""
    summary: NotRequired[str]
    """Recursive, first-person summary of every message evicted from the queue."""
    evicted_count: NotRequired[int]
    """How many messages the summary stands for."""
    core_blocks: NotRequired[list[dict[str, Any]]]
    """Mirror of the agent's core memory blocks (SQLite is the source of truth)."""
    system_prompt: NotRequired[str]
    """The rendered system message, kept stable so the provider's prefix cache holds."""
    system_key: NotRequired[str]
    """Core-memory version and summary the system prompt was rendered from."""
    turn: NotRequired[int]
    """Number of user turns this thread has seen."""
    turn_user_id: NotRequired[str]
    """Id of the user message that opened the current turn."""
    steps: NotRequired[int]
    """Model calls in the current turn (capped by ``Context.max_steps``)."""
    repeat_key: NotRequired[str]
    """Signature of the last tool call batch, for the repeated-call breaker."""
    repeat_count: NotRequired[int]
    """How many times in a row ``repeat_key`` was called."""
    alerted: NotRequired[bool]
    """Whether this eviction cycle's memory-pressure warning was already sent."""
    context_retries: NotRequired[int]
    """Summarize-and-retry attempts after a provider context-length error this turn."""
    force_evict: NotRequired[bool]
    """Set by ``think`` after a context-length error: evict even below the flush limit."""
    stop_reason: NotRequired[str]
    """Why the turn ended early (step cap, breaker), shown in the reply."""
    step_closed: NotRequired[str]
    """Id of the model message whose tool step ``close_step`` closed last."""
    turn_over: NotRequired[bool]
    """The turn is over (the reply is out, or a tool ended it): ``respond`` is next.

    Written once per step by ``close_step``; the routes only read it."""
    event_outcome: NotRequired[dict[str, Any] | None]
    """See `OutputState.event_outcome`."""
    handoff: NotRequired[dict[str, Any] | None]
    """A tool's handoff to the parent graph (``goto`` and ``update`` of its ``Command``),
    carried from ``call_memory_tool`` (whose results must reach this thread's state first)
    to ``respond``, which hands control over. Cleared when the next run starts."""


def io_schemas(schema: type[Any]) -> tuple[type[Any], type[Any]]:
    """The input and output schemas of a graph whose state is ``schema`` (a `State` subclass).

    `InputState` and `OutputState`, plus the keys ``schema`` adds to `State`: a caller
    gives them as run input and gets them back, as LangGraph does for a graph's own keys.
    """
    hints = get_type_hints(schema, include_extras=True)
    ours = get_type_hints(State, include_extras=True)
    own = {key: hint for key, hint in hints.items() if key not in ours}
    if not own:
        return InputState, OutputState
    make: Any = TypedDict  # a schema built at run time (mypy checks only literal ones)
    name = schema.__name__
    inputs = make(f"{name}Input", {**get_type_hints(InputState, include_extras=True), **own})
    outputs = make(f"{name}Output", {**get_type_hints(OutputState, include_extras=True), **own})
    return inputs, outputs
