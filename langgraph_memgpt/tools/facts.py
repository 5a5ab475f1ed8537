"""What the loop knows about a tool and a call: facts, provenance, outcome, the declaration.

`ToolFacts` says how the loop treats a tool (it replies, reads or edits memory, its result
must be read); `Provenance` names one call for good (thread, AI message, call id), so a
replayed call is recognised; `ToolOutcome` is what an executed call produced; `MemoryTool`
declares a memory tool with its facts in one place; `ToolHost` is what a tool asks of the
package above the tools (recall write-ahead, forgetting), handed in by whoever runs them. The
registry of memory tools and the tools themselves are in `langgraph_memgpt.tools.run`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from langgraph_memgpt.context import Context
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.types import RecallMessage


@dataclass(frozen=True)
class Provenance:
    """Where a tool call happened, recorded with what it writes."""

    thread_id: str
    turn: int
    call_id: str | None = None
    """The tool call's id, as the model (or its provider) numbered it."""
    message_id: str | None = None
    """Id of the AI message holding the call. Some servers number calls per response
    (``"0"`` every turn): only thread, message and call id together name one call."""
    in_view: frozenset[str] = frozenset()
    """Ids of the messages in the queue: the model sees them, so a search skips them (the
    question being asked would otherwise take the first result slot)."""

    @property
    def replay_key(self) -> str | None:
        """What names this call for good: a replay (a resumed or re-run step) has the same."""
        if not self.call_id:
            return None
        return f"{self.thread_id}:{self.message_id or ''}:{self.call_id}"

    @property
    def result_id(self) -> str | None:
        """The id of this call's result message: the same on every replay of the call."""
        key = self.replay_key
        return str(uuid.uuid5(RESULT_NAMESPACE, key)) if key else None


RESULT_NAMESPACE = uuid.UUID("6d0f4c1e-8a57-4d6b-9a7e-4f1c2b3a5d60")
"""uuid5 namespace of tool result ids (`Provenance.result_id`)."""


@dataclass(frozen=True)
class ToolFacts:
    """What the loop must know about one tool, declared beside the tool.

    Attributes:
        replies: its ``message`` argument is the user-visible reply (``send_message``).
        reads: it looks memory up: a reply written beside it waits until its result was
            read, and a model message made only of such calls is never found by a later
            search (it would echo the query).
        edits: it changes memory (the console marks it as an edit; a small model may write
            it beside its reply).
        must_read: its result must be read before the turn can end: the loop thinks again
            after it. True for the caller's tools unless declared otherwise (an unknown
            result may matter); for memory tools, the searches.
    """

    replies: bool = False
    reads: bool = False
    edits: bool = False
    must_read: bool = True


FACTS_KEY = "memgpt"
"""Key of a user tool's `ToolFacts` in ``BaseTool.metadata`` (beside other libraries' keys,
such as langgraph-swarm's handoff destination)."""


def declare_tool(
    tool: BaseTool,
    *,
    must_read: bool = True,
    reads: bool = False,
    edits: bool = False,
    replies: bool = False,
) -> BaseTool:
    """Tell the loop how to treat one of your tools; returns the same tool.

    Example: a tool whose result the model need not see before replying (a notifier)
    does not cost another think step: ``declare_tool(notify, must_read=False)``.
    """
    facts = ToolFacts(replies=replies, reads=reads, edits=edits, must_read=must_read)
    tool.metadata = {**(tool.metadata or {}), FACTS_KEY: facts}
    return tool


@dataclass(frozen=True)
class ToolOutcome:
    """What one executed tool call produced and what it means for routing.

    Attributes:
        content: the result the model reads (``{"status": ..., "message": ...}``).
        ok: the call succeeded.
        heartbeat: the model must think again after it.
        reply: the user-visible reply it carried (``send_message``).
        core_changed: core memory changed (the state's mirror must follow).
    """

    content: str
    ok: bool
    heartbeat: bool
    reply: str | None = None
    core_changed: bool = False


class Forgotten(Protocol):
    """What a forget did (`langgraph_memgpt.ops.forget.ForgetReport`)."""

    @property
    def messages(self) -> Sequence[RecallMessage]:
        """The messages deleted."""
        ...

    def describe(self) -> str:
        """What was deleted, as the model reads it."""
        ...


class Forget(Protocol):
    """Deletes what names a topic everywhere it lives (`ops.forget.forget_matching`)."""

    def __call__(self, memory: Memory, about: str, *, actor: str) -> Forgotten:
        """Forget what ``about`` names in ``memory``, the deletion logged for ``actor``."""
        ...


@dataclass(frozen=True)
class ToolHost:
    """What the memory tools ask of the package above them, handed in by whoever runs them.

    The tools sit below the loop and the operations on memory: the loop's recall
    write-ahead and the eraser reach them here (`langgraph_memgpt.deps.TOOL_HOST`), never
    by an import.
    """

    record: Callable[[Memory, Iterable[BaseMessage], str, int], None]
    """Writes a thread's messages into recall, once each by id (`turn.main_context.record`):
    where a call's result is journalled."""
    forget: Forget
    """The ``forget`` tool's work (`ops.forget.forget_matching`)."""


ToolFn = Callable[[Any, Memory, Context, Provenance, ToolHost | None], tuple[str, bool]]
"""A memory tool: (args, memory, context, provenance, host) -> (message, core_changed)."""


@dataclass(frozen=True)
class MemoryTool:
    """One memory tool and what the loop must know about it, declared in one place.

    Attributes:
        name: the name the model calls.
        args: the argument model; its docstring is the description the model reads.
        run: the implementation.
        replies: its ``message`` argument is the user-visible reply (``send_message``).
        reads: its result must be read before the turn can end (searches): the loop
            thinks again after it, whatever ``request_heartbeat`` says.
        edits: it changes memory (shown as an edit in the console).
        compact_args: the arguments offered to a small model; the others (filters, pages,
            tags, ``request_heartbeat``) stay out of its schema, because constrained
            decoding over optional fields invites it to fill every one of them.
        for_small_models: offered to a small model at all. A tool that is only a filter
            (listing messages by date) drew the embedded model to invent dates for
            ordinary questions; ``conversation_search`` ranks by dates a query names.
    """

    name: str
    args: type[BaseModel]
    run: ToolFn
    replies: bool = False
    reads: bool = False
    edits: bool = False
    compact_args: tuple[str, ...] = ()
    for_small_models: bool = True

    @property
    def facts(self) -> ToolFacts:
        """What the loop knows about it (a search's result must be read)."""
        return ToolFacts(
            replies=self.replies, reads=self.reads, edits=self.edits, must_read=self.reads
        )
