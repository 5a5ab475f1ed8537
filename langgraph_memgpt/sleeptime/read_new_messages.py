"""read_new_messages: what the agent recorded since the consolidator's last run.

Applies the agent's retention rules first (in its threads' checkpoints too: the graph's
``threads``, else the run's own checkpointer), then reads recall after the watermark
(`RecallStore.mark`), keeps what was said (user messages, the agent's words and
``send_message`` replies; not tool results, search calls or system alerts). When nothing
new was said its transcript is empty and the run ends at once (`sleeptime.graph.after_read`):
a rerun with nothing new neither calls the
model nor touches memory.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from langgraph_memgpt.checkpoints import ThreadsAt, threads_for
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.ops.retention import apply_retention
from langgraph_memgpt.sleeptime.state import DEFAULT_MAX_MESSAGES, WATERMARK, SleepState
from langgraph_memgpt.stores.capabilities import (
    BlockEdits,
    FeedMarks,
    PassageSources,
    RetentionRules,
    require,
    require_all,
)
from langgraph_memgpt.stores.messages import searchable_text
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.tools.run import facts_of
from langgraph_memgpt.turn.main_context import context_of

TRANSCRIPT_CHARS = 12_000
"""Most characters of new messages one run shows the model (~3k tokens): with the
blocks and instructions it fits the embedded model's 8k window. Later messages wait."""
LINE_CHARS = 1_000
"""Most characters of one message in the transcript (a pasted document is cut)."""


def _is_search_call(message: RecallMessage) -> bool:
    """The model looking memory up (every call reads): nothing happened to tend."""
    names = [str(call.get("name")) for call in message.tool_calls]
    return bool(names) and all(facts_of(name).reads for name in names)


def transcript_line(message: RecallMessage) -> str | None:
    """``role: text`` for a message that says something, None for one to leave out."""
    if message.role not in ("user", "assistant") or _is_search_call(message):
        return None
    text = " ".join(searchable_text(message).split())
    if not text:
        return None
    if len(text) > LINE_CHARS:
        text = text[: LINE_CHARS - 1] + "…"
    speaker = message.name if message.role == "user" and message.name else message.role
    return f"[{message.created_at[:16]}] {speaker}: {text}"


def make_read_new_messages(deps: Deps, threads: ThreadsAt = None) -> Any:
    """Build the node with the graph's dependencies and where the agent's threads are."""

    def read_new_messages(
        state: SleepState, config: RunnableConfig, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """Read the messages after the watermark (an empty transcript: none says anything)."""
        limit = state.get("max_messages") or DEFAULT_MAX_MESSAGES
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"max_messages must be a whole number of 1 or more, got {limit!r}")
        memory = deps.memory(context_of(runtime))
        # Every capability the run uses, before it changes anything.
        require_all(memory, "sleep-time", FeedMarks, BlockEdits, PassageSources, RetentionRules)
        # Retention first: a run with nothing new to read still forgets what is past its
        # age, in the agent's threads too (the one eraser, `forget.forget_passages`).
        with threads_for(threads, config) as saver:
            retention = apply_retention(memory, checkpointer=saver)
        start = require(memory.recall, FeedMarks, "sleep-time").mark(WATERMARK)
        update: dict[str, Any] = {
            "agent_id": memory.agent_id,
            "start": start,
            "end": start,
            "transcript": [],
            "sources": [],
            "blocks": {},
            "proposal": None,
            "edits": [],
            "archived": [],
            "problems": [],
            "retention": retention.as_dict(),
        }
        transcript: list[str] = []
        sources: list[list[str]] = []
        used = 0
        end = start
        for position, message in require(memory.recall, FeedMarks, "sleep-time").since(
            start, limit
        ):
            line = transcript_line(message)
            if line is not None:
                if transcript and used + len(line) > TRANSCRIPT_CHARS:
                    break  # the rest waits for the next run
                transcript.append(line)
                sources.append([message.thread_id, message.message_id])
                used += len(line)
            end = position
        update["end"] = end
        if not transcript:
            if end != start:  # only tool results and alerts: read, nothing to tend
                require(memory.recall, FeedMarks, "sleep-time").set_mark(WATERMARK, end)
            return update
        update["transcript"] = transcript
        update["sources"] = sources
        return update

    return read_new_messages
