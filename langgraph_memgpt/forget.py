"""Forgetting: delete a passage, messages, a thread or a whole agent, everywhere it lives.

The stores delete their own rows, words and vectors and log each deletion (never its
content); this module adds what no single store knows: the eviction summaries written
from a deleted message, and the thread's LangGraph checkpoint. It speaks only the memory
protocols, so it works on every backend.

Summaries are **removed**, not flagged. An eviction summary is written after the messages
it folds in, and the recursive summary folds every earlier one, so every summary of a
thread written at or after a deleted message may restate it (in other words: a literal
match cannot tell). A flag would leave the text searchable, and a rewrite needs a model
call that a deletion cannot check; the messages those summaries stood for stay verbatim in
recall, so removing them loses no other memory. A thread's checkpoint holds the running
summary too (the newest summary's text): when a graph with a checkpointer is given, that
summary is cleared when its passage was removed, and the deleted messages leave the
thread's queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.messages import searchable_text
from langgraph_memgpt.stores.types import Passage, RecallMessage
from langgraph_memgpt.stores.words import topic_stems

SUMMARY_TAG = "summary"
"""The archival tag of eviction summaries (``nodes.summarize_evict.SUMMARY_TAG``)."""
_PAGE = 1000


class NothingToForgetError(LookupError):
    """The passage, message, thread or agent to forget does not exist (the message says which)."""


@dataclass
class ForgetReport:
    """What one forget removed (for the CLI, the tool and the tests)."""

    passages: list[Passage] = field(default_factory=list)
    messages: list[RecallMessage] = field(default_factory=list)
    message_count: int = 0
    passage_count: int = 0
    """Passages deleted in bulk (a whole agent), when they are not listed."""
    summaries: list[Passage] = field(default_factory=list)
    """Eviction summaries removed because they were written from a deleted message."""
    blocks: int = 0
    checkpoints: list[str] = field(default_factory=list)
    """Threads whose checkpoint was deleted or cleaned."""
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for a person or the model: counts, never the forgotten text."""
        passages = self.passage_count or len(self.passages)
        counts: list[tuple[int, str, str | None]] = [
            (self.blocks, "core block", None),
            (self.message_count, "message", None),
            (passages, "passage", None),
            (len(self.summaries), "summary written from them", "summaries written from them"),
        ]
        parts = [_plural(n, one, many) for n, one, many in counts if n]
        if self.checkpoints:
            parts.append(f"the checkpoint of {_plural(len(self.checkpoints), 'thread')}")
        text = (
            "Forgot " + ", ".join(parts) + "." if parts else "Nothing matched: nothing was deleted."
        )
        return " ".join([text, *self.notes])


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def forget_passage(memory: Memory, passage_id: int, *, actor: str) -> ForgetReport:
    """Delete one archival passage.

    Raises:
        NothingToForgetError: the agent has no passage with that id.
    """
    deleted = memory.archival.delete([passage_id], actor=actor)
    if not deleted:
        raise NothingToForgetError(
            f"agent '{memory.agent_id}' has no archival passage {passage_id}; "
            "`langgraph-memgpt inspect` lists passage ids"
        )
    return ForgetReport(passages=deleted)


def forget_messages(
    memory: Memory,
    message_ids: Sequence[str],
    *,
    actor: str,
    thread_id: str | None = None,
    graph: Any = None,
) -> ForgetReport:
    """Delete recall messages, the summaries written from them, and their queue copies.

    Args:
        memory: the agent's memory.
        message_ids: ids of the messages (unique per thread).
        actor: who asked (logged).
        thread_id: only this thread's message with each id.
        graph: a compiled graph with a checkpointer; when given, the messages also leave
            their threads' queues and a running summary that was removed is cleared.

    Raises:
        NothingToForgetError: no message has any of these ids.
    """
    deleted = memory.recall.delete(message_ids, thread_id=thread_id, actor=actor)
    if not deleted:
        where = f" in thread '{thread_id}'" if thread_id is not None else ""
        raise NothingToForgetError(
            f"agent '{memory.agent_id}' has no message {', '.join(map(repr, message_ids))}{where}"
        )
    report = ForgetReport(messages=deleted, message_count=len(deleted))
    report.summaries = _remove_summaries(memory, deleted, actor)
    if graph is not None:
        _clean_checkpoints(graph, deleted, report)
    else:
        report.notes.append(
            "A thread's checkpoint may still hold these messages in its context window "
            "until they are evicted; forget their thread to remove them there too."
        )
    return report


def forget_thread(
    memory: Memory,
    thread_id: str,
    *,
    actor: str,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> ForgetReport:
    """Delete a thread: its messages, its passages and summaries, and its checkpoint.

    Raises:
        NothingToForgetError: the agent has nothing from that thread (and no checkpoint
            was deleted).
    """
    report = ForgetReport()
    report.passages = _delete_thread_passages(memory, thread_id, actor)
    report.summaries = [p for p in report.passages if SUMMARY_TAG in p.tags]
    report.passages = [p for p in report.passages if SUMMARY_TAG not in p.tags]
    report.message_count = memory.recall.delete_thread(thread_id, actor=actor)
    if checkpointer is not None and _has_checkpoint(checkpointer, thread_id):
        checkpointer.delete_thread(thread_id)
        memory.deletions.record("checkpoint", thread_id, actor=actor, thread_id=thread_id)
        report.checkpoints.append(thread_id)
    if not (report.message_count or report.passages or report.summaries or report.checkpoints):
        raise NothingToForgetError(
            f"agent '{memory.agent_id}' has no messages, passages or checkpoint in thread "
            f"'{thread_id}'; threads with messages: {', '.join(memory.recall.threads()) or 'none'}"
        )
    return report


def forget_agent(
    memory: Memory,
    *,
    actor: str,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> ForgetReport:
    """Delete everything of an agent: core blocks and history, recall, archival, checkpoints.

    The deletion log stays (it holds no content): it is the record that the agent was
    forgotten. Checkpoints deleted are those of every thread the agent has messages in.

    Raises:
        NothingToForgetError: the agent has no memory at all.
    """
    threads = memory.recall.threads()
    report = ForgetReport()
    report.blocks = memory.core.delete_all(actor=actor)
    report.message_count = memory.recall.delete_all(actor=actor)
    report.passage_count = passages = memory.archival.delete_all(actor=actor)
    if checkpointer is not None:
        for thread_id in threads:
            if _has_checkpoint(checkpointer, thread_id):
                checkpointer.delete_thread(thread_id)
                report.checkpoints.append(thread_id)
    if not (report.blocks or report.message_count or passages):
        raise NothingToForgetError(f"agent '{memory.agent_id}' has no memory to forget")
    memory.deletions.record(
        "agent",
        memory.agent_id,
        actor=actor,
        detail=f"{report.blocks} blocks, {report.message_count} messages, {passages} passages, "
        f"{len(report.checkpoints)} checkpoints",
    )
    return report


def forget_matching(memory: Memory, about: str, *, actor: str) -> ForgetReport:
    """Delete the passages and messages that contain every content word of ``about``.

    What the ``forget`` tool runs when a user asks ("forget my address"): literal on
    purpose, so it deletes what names the thing and nothing merely similar. Every message
    is read (tool results too: a search result quoting the fact lives in recall as well),
    so the cost grows with the agent's history (a second or so at 100k messages). Core
    memory is not edited; lines that match are named, for the model to remove with
    ``core_memory_replace``.

    Raises:
        ValueError: ``about`` has no content word to match on.
    """
    stems = topic_stems(about)
    if not stems:
        raise ValueError(
            "say what to forget in a few content words (e.g. 'home address', 'Elm Street'); "
            f"{about!r} has none"
        )
    passages = [p for p in _all_passages(memory) if stems <= topic_stems(p.text)]
    messages = [m for m in _all_messages(memory) if stems <= topic_stems(searchable_text(m))]
    report = ForgetReport()
    if passages:
        deleted = memory.archival.delete([p.id for p in passages], actor=actor)
        report.passages = [p for p in deleted if SUMMARY_TAG not in p.tags]
        report.summaries = [p for p in deleted if SUMMARY_TAG in p.tags]
    for thread_id in sorted({m.thread_id for m in messages}):
        ids = [m.message_id for m in messages if m.thread_id == thread_id]
        gone = memory.recall.delete(ids, thread_id=thread_id, actor=actor)
        report.messages.extend(gone)
    report.message_count = len(report.messages)
    if report.messages:
        already = {p.id for p in report.summaries}
        report.summaries += [
            p for p in _remove_summaries(memory, report.messages, actor) if p.id not in already
        ]
    for block in memory.core.blocks():
        lines = [line for line in block.value.splitlines() if stems <= topic_stems(line)]
        if lines:
            report.notes.append(
                f"Core memory block '{block.label}' still holds it ({len(lines)} lines): "
                "remove them with core_memory_replace (empty new_content)."
            )
    return report


def _remove_summaries(
    memory: Memory, deleted: Sequence[RecallMessage], actor: str
) -> list[Passage]:
    """Delete each thread's eviction summaries written at or after its first deleted message."""
    first: dict[str, str] = {}
    for message in deleted:
        at = first.get(message.thread_id)
        first[message.thread_id] = message.created_at if at is None else min(at, message.created_at)
    doomed: list[int] = []
    for thread_id, since in first.items():
        doomed += [
            p.id
            for p in _all_passages(memory, thread_id=thread_id)
            if SUMMARY_TAG in p.tags and p.created_at >= since
        ]
    return memory.archival.delete(doomed, actor=actor) if doomed else []


def _delete_thread_passages(memory: Memory, thread_id: str, actor: str) -> list[Passage]:
    ids = [p.id for p in _all_passages(memory, thread_id=thread_id)]
    return memory.archival.delete(ids, actor=actor) if ids else []


def _all_passages(memory: Memory, thread_id: str | None = None) -> list[Passage]:
    out: list[Passage] = []
    after = 0
    while True:
        page = memory.archival.list_passages(after=after, limit=_PAGE, thread_id=thread_id)
        if not page:
            return out
        out.extend(p for p, _ in page)
        after = page[-1][0].id


def _all_messages(memory: Memory) -> list[RecallMessage]:
    out: list[RecallMessage] = []
    after = 0
    while True:
        page = memory.recall.list_messages(after=after, limit=_PAGE)
        if not page:
            return out
        out.extend(m for _, m in page)
        after = page[-1][0]


def _has_checkpoint(checkpointer: BaseCheckpointSaver[Any], thread_id: str) -> bool:
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    return checkpointer.get_tuple(config) is not None


def _clean_checkpoints(graph: Any, deleted: Sequence[RecallMessage], report: ForgetReport) -> None:
    """Take deleted messages out of their threads' queues; clear a removed running summary."""
    removed_summaries = {p.text for p in report.summaries}
    for thread_id in sorted({m.thread_id for m in deleted}):
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        snapshot = graph.get_state(config)
        values = snapshot.values if snapshot is not None else {}
        if not values:
            continue
        ids = {m.message_id for m in deleted if m.thread_id == thread_id}
        update: dict[str, Any] = {}
        queued = [str(m.id) for m in values.get("messages", []) if str(m.id) in ids]
        if queued:
            update["messages"] = [RemoveMessage(id=i) for i in queued]
        if values.get("summary") and values["summary"] in removed_summaries:
            update["summary"] = ""
        if update:
            graph.update_state(config, update)
            report.checkpoints.append(thread_id)


__all__ = [
    "ForgetReport",
    "NothingToForgetError",
    "forget_agent",
    "forget_matching",
    "forget_messages",
    "forget_passage",
    "forget_thread",
]
