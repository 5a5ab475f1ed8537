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
summary too (the newest summary's text): in the threads' checkpointer, that summary is
cleared when its passage was removed, and the deleted messages leave the thread's queue.
Every eraser here takes the checkpointer as a required argument (None only where no
thread was ever checkpointed), so no surface can forget the threads by leaving it out.

Forget means gone, not hidden. Copies of the text the machinery made go too: a tool call
or tool result in recall that quotes a forgotten message or passage (the model's
``archival_memory_insert`` arguments, a search result) is deleted with it; in a thread's
latest checkpoint such a message is redacted in place (its pair stays valid for the
provider), the deleted messages leave the queue, and a summary holding the text is
cleared; then the thread's earlier checkpoints and their pending writes (its history, which
held the text) are deleted. A thread whose checkpoint names another agent is refused. On the
embedded backend the full-text indexes are merged and the write-ahead logs emptied
afterwards (``Scrubbable``), so no file of the data directory keeps the words.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_memgpt.checkpoints import (
    ThreadsAt,
    current_run,
    empty_wal,
    holding,
    scrub_thread,
    threads_for,
)
from langgraph_memgpt.redaction import quotable, quotes
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.capabilities import (
    ArchivalForget,
    CoreForget,
    LoggedDeletions,
    MessageListing,
    PassageListing,
    PassageSources,
    RecallForget,
    Scrubbable,
    require,
    require_all,
)
from langgraph_memgpt.stores.messages import searchable_text
from langgraph_memgpt.stores.passages import SUMMARY_TAG
from langgraph_memgpt.stores.types import Passage, RecallMessage
from langgraph_memgpt.stores.words import topic_stems
from langgraph_memgpt.turn.threads import ThreadBusyError

NEEDED_BY = "forget"
FORGET_NEEDS = (
    CoreForget,
    RecallForget,
    ArchivalForget,
    MessageListing,
    PassageListing,
    PassageSources,
    LoggedDeletions,
)
"""The capabilities (`stores.capabilities`) forgetting uses, checked before anything goes."""

_PAGE = 1000
MAX_THREAD_QUOTES = 2000
"""Most messages of a forgotten thread looked for in the agent's other threads (each is
compared with every tool message of the agent)."""


class NothingToForgetError(LookupError):
    """The passage, message, thread or agent to forget does not exist (the message says which)."""


class ForgetRefusedError(PermissionError):
    """The thread belongs to another agent: nothing was deleted (the message names it)."""


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
    echoes: list[RecallMessage] = field(default_factory=list)
    """Tool calls and tool results in recall that quoted the forgotten text, deleted too."""
    facts: list[Passage] = field(default_factory=list)
    """Consolidated (sleep-time) facts made from a deleted message, deleted too."""
    texts: list[str] = field(default_factory=list)
    """The forgotten texts looked for elsewhere (never shown: `describe` gives counts)."""
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
            (len(self.echoes), "tool message quoting it", "tool messages quoting it"),
            (
                len(self.facts),
                "consolidated fact made from them",
                "consolidated facts made from them",
            ),
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


def forget_passage(
    memory: Memory,
    passage_id: int,
    *,
    actor: str,
    checkpointer: BaseCheckpointSaver[Any] | None,
) -> ForgetReport:
    """Delete one archival passage, and every copy of its text the loop made.

    Args:
        memory: the agent's memory.
        passage_id: the passage.
        actor: who asked (logged).
        checkpointer: where the agent's threads are (`checkpoints.existing_threads`); the
            threads that held the passage's text (the one it was saved in, those quoting
            it) are cleaned there. None only where no thread was ever checkpointed: a
            required argument, so no caller forgets the threads by leaving it out.

    Raises:
        NothingToForgetError: the agent has no passage with that id.
    """
    require_all(memory, NEEDED_BY, *FORGET_NEEDS)
    report = forget_passages(memory, [passage_id], actor=actor, checkpointer=checkpointer)
    if not report.passages:
        raise NothingToForgetError(
            f"agent '{memory.agent_id}' has no archival passage {passage_id}; "
            "`langgraph-memgpt inspect` lists passage ids"
        )
    return report


def forget_passages(
    memory: Memory,
    passage_ids: Sequence[int],
    *,
    actor: str,
    checkpointer: BaseCheckpointSaver[Any] | None,
    detail: str = "",
    running: str | None = None,
) -> ForgetReport:
    """Delete archival passages and every copy of their text: the one eraser of passages.

    ``forget --passage``, the memory page and retention rules all come here. The rows,
    words, vectors and FAISS caches go (the store's own ``delete``, each deletion logged
    with ``detail``, never the text); the tool calls and tool results in recall that quote
    a passage (the ``archival_memory_insert`` call that saved it, a search result that
    showed it) go too; in ``checkpointer`` (required: None only where no thread was ever
    checkpointed) the threads that held the text are cleaned in every channel of their
    latest checkpoint and lose their history (`checkpoints.scrub_thread`); then the
    engine's files are scrubbed, and a serving process's own copy of its threads
    (`dev_state.scrub_live`). Ids the agent does not have are skipped: the report lists
    what went. ``running``: the thread a run of the caller holds now (a store call inside
    a tool), whose checkpoint that run writes next: it is left, and the report says so.
    """
    require_all(memory, NEEDED_BY, *FORGET_NEEDS)
    saver = checkpointer
    deleted = require(memory.archival, ArchivalForget, NEEDED_BY).delete(
        list(passage_ids), actor=actor, detail=detail
    )
    report = ForgetReport(passages=deleted)
    if not deleted:
        return report
    texts = report.texts = quotable(p.text for p in deleted)
    report.echoes = _delete_echoes(memory, texts, actor)
    threads = {p.thread_id for p in deleted if p.thread_id} | {m.thread_id for m in report.echoes}
    _clean_threads(memory, saver, threads, report.echoes, texts, report, running)
    _scrub(memory, saver, report)
    return report


def forget_messages(
    memory: Memory,
    message_ids: Sequence[str],
    *,
    actor: str,
    checkpointer: BaseCheckpointSaver[Any] | None,
    thread_id: str | None = None,
    running: str | None = None,
) -> ForgetReport:
    """Delete recall messages, the summaries written from them, and their queue copies.

    Args:
        memory: the agent's memory.
        message_ids: ids of the messages (unique per thread).
        actor: who asked (logged).
        checkpointer: where the agent's threads are; the messages also leave their
            threads' queues and histories there, and a summary holding them is cleared
            (None: no thread is cleaned, and the report says so).
        thread_id: only this thread's message with each id.
        running: the thread a run of the caller holds now (left to that run, as in
            `forget_passages`).

    Raises:
        NothingToForgetError: no message has any of these ids.
        ForgetRefusedError: ``thread_id``'s checkpoint belongs to another agent.
    """
    require_all(memory, NEEDED_BY, *FORGET_NEEDS)
    if thread_id is not None and checkpointer is not None:
        _check_owner(memory, checkpointer, thread_id)
    deleted = require(memory.recall, RecallForget, NEEDED_BY).delete(
        message_ids, thread_id=thread_id, actor=actor
    )
    if not deleted:
        where = f" in thread '{thread_id}'" if thread_id is not None else ""
        raise NothingToForgetError(
            f"agent '{memory.agent_id}' has no message {', '.join(map(repr, message_ids))}{where}"
        )
    report = ForgetReport(messages=deleted, message_count=len(deleted))
    report.summaries = _remove_summaries(memory, deleted, actor)
    report.facts = _remove_facts(memory, deleted, actor)
    texts = report.texts = quotable(
        [*(m.text for m in deleted), *(p.text for p in [*report.summaries, *report.facts])]
    )
    report.echoes = _delete_echoes(memory, texts, actor)
    if checkpointer is not None:
        threads = {m.thread_id for m in deleted} | {m.thread_id for m in report.echoes}
        removed = [*deleted, *report.echoes]
        _clean_threads(memory, checkpointer, threads, removed, texts, report, running)
    else:
        report.notes.append(
            "A thread's checkpoint may still hold these messages in its context window "
            "until they are evicted; forget their thread to remove them there too."
        )
    _scrub(memory, checkpointer, report)
    return report


def forget_thread(
    memory: Memory,
    thread_id: str,
    *,
    actor: str,
    checkpointer: BaseCheckpointSaver[Any] | None,
) -> ForgetReport:
    """Delete a thread: its messages, its passages and summaries, and its checkpoints.

    The agent's other threads lose the tool messages quoting the thread's messages (a
    search result, say), and in ``checkpointer`` (where the threads are; None: none is
    touched) the thread's checkpoints are deleted and the other threads' cleaned of them
    as `forget_messages` cleans a thread. A thread of more
    than `MAX_THREAD_QUOTES` messages is not looked for elsewhere (the report says so).

    Raises:
        NothingToForgetError: the agent has nothing from that thread (and no checkpoint
            was deleted).
        ForgetRefusedError: the thread's checkpoint belongs to another agent (nothing is
            deleted).
    """
    require_all(memory, NEEDED_BY, *FORGET_NEEDS)
    owner = _check_owner(memory, checkpointer, thread_id) if checkpointer is not None else None
    report = ForgetReport()
    said = [m.text for m in _all_messages(memory) if m.thread_id == thread_id]
    made = require(memory.archival, PassageSources, NEEDED_BY).derived_from(thread_id)
    report.facts = (
        require(memory.archival, ArchivalForget, NEEDED_BY).delete(made, actor=actor)
        if made
        else []
    )
    report.passages = _delete_thread_passages(memory, thread_id, actor)
    report.summaries = [p for p in report.passages if SUMMARY_TAG in p.tags]
    report.passages = [p for p in report.passages if SUMMARY_TAG not in p.tags]
    report.message_count = require(memory.recall, RecallForget, NEEDED_BY).delete_thread(
        thread_id, actor=actor
    )
    had_memory = bool(report.message_count or report.passages or report.summaries or report.facts)
    # A checkpoint no agent stamped yet is this agent's only if it had memory there.
    if (
        checkpointer is not None
        and (owner == memory.agent_id or (owner is None and had_memory))
        and _has_checkpoint(checkpointer, thread_id)
    ):
        with holding(checkpointer, thread_id):  # a run in progress ends first
            checkpointer.delete_thread(thread_id)
        empty_wal(checkpointer)
        require(memory, LoggedDeletions, NEEDED_BY).deletions.record(
            "checkpoint", thread_id, actor=actor, thread_id=thread_id
        )
        report.checkpoints.append(thread_id)
    if not (had_memory or report.checkpoints):
        threads = require(memory.recall, MessageListing, NEEDED_BY).threads()
        raise NothingToForgetError(
            f"agent '{memory.agent_id}' has no messages, passages or checkpoint in thread "
            f"'{thread_id}'; threads with messages: {', '.join(threads) or 'none'}"
        )
    if len(said) <= MAX_THREAD_QUOTES:
        gone = [p.text for p in [*report.passages, *report.summaries, *report.facts]]
        report.texts = quotable([*said, *gone])
        report.echoes = _delete_echoes(memory, report.texts, actor)
        if checkpointer is not None:
            others = {m.thread_id for m in report.echoes} - {thread_id}
            _clean_threads(memory, checkpointer, others, report.echoes, report.texts, report)
    else:
        report.notes.append(
            f"The thread had over {MAX_THREAD_QUOTES} messages: quotes of them in other "
            "threads were not looked for."
        )
    gone = [thread_id] if thread_id in report.checkpoints else []
    _scrub(memory, checkpointer, report, deleted=gone)
    return report


def forget_agent(
    memory: Memory,
    *,
    actor: str,
    checkpointer: BaseCheckpointSaver[Any] | None,
) -> ForgetReport:
    """Delete everything of an agent: core blocks and history, recall, archival, checkpoints.

    The deletion log stays (it holds no content): it is the record that the agent was
    forgotten. Checkpoints deleted are those of every thread the agent has messages in.

    Raises:
        NothingToForgetError: the agent has no memory at all.
    """
    require_all(memory, NEEDED_BY, *FORGET_NEEDS)
    threads = require(memory.recall, MessageListing, NEEDED_BY).threads()
    report = ForgetReport()
    report.blocks = require(memory.core, CoreForget, NEEDED_BY).delete_all(actor=actor)
    report.message_count = require(memory.recall, RecallForget, NEEDED_BY).delete_all(actor=actor)
    report.passage_count = passages = require(
        memory.archival, ArchivalForget, NEEDED_BY
    ).delete_all(actor=actor)
    if checkpointer is not None:
        for thread_id in threads:
            owner = _thread_agent(checkpointer, thread_id)
            if owner in (None, memory.agent_id) and _has_checkpoint(checkpointer, thread_id):
                with holding(checkpointer, thread_id):  # a run in progress ends first
                    checkpointer.delete_thread(thread_id)
                report.checkpoints.append(thread_id)
        empty_wal(checkpointer)
    if not (report.blocks or report.message_count or passages):
        raise NothingToForgetError(f"agent '{memory.agent_id}' has no memory to forget")
    require(memory, LoggedDeletions, NEEDED_BY).deletions.record(
        "agent",
        memory.agent_id,
        actor=actor,
        detail=f"{report.blocks} blocks, {report.message_count} messages, {passages} passages, "
        f"{len(report.checkpoints)} checkpoints",
    )
    _scrub(memory, None, report, deleted=report.checkpoints)
    return report


def forget_matching(
    memory: Memory, about: str, *, actor: str, threads: ThreadsAt = None
) -> ForgetReport:
    """Delete the passages and messages that contain every content word of ``about``.

    What the ``forget`` tool runs when a user asks ("forget my address"): literal on
    purpose, so it deletes what names the thing and nothing merely similar. Every message
    is read (tool results too: a search result quoting the fact lives in recall as well),
    so the cost grows with the agent's history (a second or so at 100k messages). What
    matches goes through the one eraser (`forget_passages`, `forget_messages`): quotes,
    summaries and facts, the engine's files, and every channel of the agent's threads in
    ``threads`` (default: the checkpointer of the run the tool is called in), but for the
    thread of that run, whose checkpoint the run writes next. Core memory is not edited;
    lines that match are named, for the model to remove with ``core_memory_replace``.

    Raises:
        ValueError: ``about`` has no content word to match on.
    """
    require_all(memory, NEEDED_BY, *FORGET_NEEDS)
    stems = topic_stems(about)
    if not stems:
        raise ValueError(
            "say what to forget in a few content words (e.g. 'home address', 'Elm Street'); "
            f"{about!r} has none"
        )
    passages = [p.id for p in _all_passages(memory) if stems <= topic_stems(p.text)]
    messages = [m for m in _all_messages(memory) if stems <= topic_stems(searchable_text(m))]
    run = current_run()
    running = ((run or {}).get("configurable") or {}).get("thread_id")
    report = ForgetReport()
    with threads_for(threads, run) as saver:
        if passages:
            erased = forget_passages(
                memory, passages, actor=actor, checkpointer=saver, running=running
            )
            _add(report, erased)
        for thread_id in sorted({m.thread_id for m in messages}):
            ids = [m.message_id for m in messages if m.thread_id == thread_id]
            try:
                erased = forget_messages(
                    memory,
                    ids,
                    actor=actor,
                    checkpointer=saver,
                    thread_id=thread_id,
                    running=running,
                )
            except NothingToForgetError:
                continue  # already gone: they quoted a passage forgotten above
            except ForgetRefusedError as exc:
                report.notes.append(str(exc))
                continue
            _add(report, erased)
    report.summaries += [p for p in report.passages if SUMMARY_TAG in p.tags]
    report.passages = [p for p in report.passages if SUMMARY_TAG not in p.tags]
    for block in memory.core.blocks():
        lines = [line for line in block.value.splitlines() if stems <= topic_stems(line)]
        if lines:
            report.notes.append(
                f"Core memory block '{block.label}' still holds it ({len(lines)} lines): "
                "remove them with core_memory_replace (empty new_content)."
            )
    return report


def _add(report: ForgetReport, more: ForgetReport) -> None:
    """Fold what one erasure removed into ``report``."""
    report.passages += more.passages
    report.messages += more.messages
    report.message_count += more.message_count
    report.summaries += [p for p in more.summaries if p not in report.summaries]
    report.echoes += more.echoes
    report.facts += more.facts
    report.texts += more.texts
    report.checkpoints += [t for t in more.checkpoints if t not in report.checkpoints]
    report.notes += [n for n in more.notes if n not in report.notes]


def clean_server_state(data_dir: Path, report: ForgetReport, deleted: Sequence[str] = ()) -> str:
    """Clean ``langgraph dev``'s saved copy of runs and threads in a data directory.

    What a forget or a retention purge removed leaves that copy too (``dev_state``):
    removed messages, their threads' runs when ``deleted``, every forgotten text.

    Returns:
        A note for the user when the copy could not be cleaned (a server holds it), else "".
    """
    from langgraph_memgpt.ops.dev_state import scrub

    texts, messages = _server_copy(report)
    return scrub(data_dir, texts=texts, messages=messages, threads=deleted)


def _server_copy(report: ForgetReport) -> tuple[list[str], dict[str, set[str]]]:
    """What a server's own copy of threads and runs must lose: texts, and message ids."""
    removed = [*report.messages, *report.echoes]
    passages = [*report.passages, *report.summaries, *report.facts]
    messages: dict[str, set[str]] = {}
    for message in removed:
        messages.setdefault(message.thread_id, set()).add(message.message_id)
    texts = quotable([*report.texts, *(m.text for m in removed), *(p.text for p in passages)])
    return texts, messages


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
    return (
        require(memory.archival, ArchivalForget, NEEDED_BY).delete(doomed, actor=actor)
        if doomed
        else []
    )


def _remove_facts(memory: Memory, deleted: Sequence[RecallMessage], actor: str) -> list[Passage]:
    """Delete the consolidated facts made from any of the deleted messages."""
    made: set[int] = set()
    for thread_id in sorted({m.thread_id for m in deleted}):
        ids = [m.message_id for m in deleted if m.thread_id == thread_id]
        made.update(
            require(memory.archival, PassageSources, NEEDED_BY).derived_from(thread_id, ids)
        )
    return (
        require(memory.archival, ArchivalForget, NEEDED_BY).delete(sorted(made), actor=actor)
        if made
        else []
    )


def _delete_thread_passages(memory: Memory, thread_id: str, actor: str) -> list[Passage]:
    ids = [p.id for p in _all_passages(memory, thread_id=thread_id)]
    return (
        require(memory.archival, ArchivalForget, NEEDED_BY).delete(ids, actor=actor) if ids else []
    )


def _all_passages(memory: Memory, thread_id: str | None = None) -> list[Passage]:
    out: list[Passage] = []
    after = 0
    while True:
        page = require(memory.archival, PassageListing, NEEDED_BY).list_passages(
            after=after, limit=_PAGE, thread_id=thread_id
        )
        if not page:
            return out
        out.extend(p for p, _ in page)
        after = page[-1][0].id


def _all_messages(memory: Memory) -> list[RecallMessage]:
    out: list[RecallMessage] = []
    after = 0
    while True:
        page = require(memory.recall, MessageListing, NEEDED_BY).list_messages(
            after=after, limit=_PAGE
        )
        if not page:
            return out
        out.extend(m for _, m in page)
        after = page[-1][0]


def _has_checkpoint(checkpointer: BaseCheckpointSaver[Any], thread_id: str) -> bool:
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    return checkpointer.get_tuple(config) is not None


def _delete_echoes(memory: Memory, texts: Sequence[str], actor: str) -> list[RecallMessage]:
    """Delete the tool calls and tool results in recall that quote a forgotten text.

    Only the machinery's messages (a call's arguments, a tool's result): a person's or the
    agent's own words that happen to contain the text are not touched here.
    """
    if not texts:
        return []
    echoes = [
        m
        for m in _all_messages(memory)
        if (m.role == "tool" or m.tool_calls) and quotes([m.text, m.tool_calls], texts)
    ]
    gone: list[RecallMessage] = []
    for thread_id in sorted({m.thread_id for m in echoes}):
        ids = [m.message_id for m in echoes if m.thread_id == thread_id]
        gone += require(memory.recall, RecallForget, NEEDED_BY).delete(
            ids, thread_id=thread_id, actor=actor
        )
    return gone


def _thread_agent(checkpointer: BaseCheckpointSaver[Any], thread_id: str) -> str | None:
    """The agent a thread's latest checkpoint names (None: no checkpoint, or none stamped)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    found = checkpointer.get_tuple(config)
    if found is None:
        return None
    agent = found.checkpoint.get("channel_values", {}).get("agent_id")
    return str(agent) if agent else None


def _check_owner(
    memory: Memory, checkpointer: BaseCheckpointSaver[Any] | None, thread_id: str
) -> str | None:
    """The thread's agent; refused when it is another agent than ``memory``'s."""
    owner = None if checkpointer is None else _thread_agent(checkpointer, thread_id)
    if owner is not None and owner != memory.agent_id:
        raise ForgetRefusedError(
            f"thread '{thread_id}' belongs to agent '{owner}', not '{memory.agent_id}': "
            "nothing was deleted; name that agent to forget it"
        )
    return owner


def _clean_threads(
    memory: Memory,
    checkpointer: BaseCheckpointSaver[Any] | None,
    threads: Collection[str],
    removed: Sequence[RecallMessage],
    texts: Sequence[str],
    report: ForgetReport,
    running: str | None = None,
) -> None:
    """Clean each thread's latest checkpoint in every channel, then delete its history.

    The removed messages leave the queue, the forgotten texts are redacted wherever a
    channel holds them (``messages``, ``repeat_key``, ``event_outcome``, waiting events...),
    a summary holding a removed summary is cleared, and the thread's earlier checkpoints
    and their pending writes go (`checkpoints.scrub_thread`). Another agent's thread is
    left alone, and so is ``running``, the thread of the run the caller is part of: that
    run writes its next checkpoint from what it holds, after any cleaning here.
    """
    if checkpointer is None:
        return
    removed_summaries = quotable(p.text for p in report.summaries)
    for thread_id in sorted(threads):
        if _thread_agent(checkpointer, thread_id) not in (None, memory.agent_id):
            continue  # another agent's thread: its checkpoint is not ours to change
        if not _has_checkpoint(checkpointer, thread_id):
            continue
        if thread_id == running:
            report.notes.append(
                "The thread running now keeps it in its context window until it is "
                "evicted; forget from outside the run to clean that thread too."
            )
            continue
        ids = {m.message_id for m in removed if m.thread_id == thread_id}
        try:
            with holding(checkpointer, thread_id):  # a run in progress ends first
                scrub_thread(
                    checkpointer, thread_id, remove=ids, texts=texts, clear=removed_summaries
                )
        except ThreadBusyError as exc:
            report.notes.append(f"{exc}: its checkpoint was not cleaned; forget again later.")
            continue
        report.checkpoints.append(thread_id)


def _scrub(
    memory: Memory,
    checkpointer: BaseCheckpointSaver[Any] | None,
    report: ForgetReport,
    deleted: Sequence[str] = (),
) -> None:
    """Clean the engine's files after deleting (`Scrubbable`), and the threads' log.

    In a process that serves the threads (``langgraph dev``), its own copy of them too.
    """
    from langgraph_memgpt.ops.dev_state import scrub_live

    if isinstance(memory, Scrubbable):
        memory.scrub()
    if checkpointer is not None:
        empty_wal(checkpointer)
    texts, messages = _server_copy(report)
    scrub_live(texts=texts, messages=messages, threads=deleted)


__all__ = [
    "ForgetRefusedError",
    "ForgetReport",
    "NothingToForgetError",
    "clean_server_state",
    "forget_agent",
    "forget_matching",
    "forget_messages",
    "forget_passage",
    "forget_passages",
    "forget_thread",
]
