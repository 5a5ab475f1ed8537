"""Typed state of the sleep-time consolidation graph.

A run reads what the agent recorded since its last run, asks the chat model for a tidier
version of the core blocks and for facts worth archiving, checks that proposal, and
applies it. Everything a run decided stays in its state, so Studio shows why a block was
or was not rewritten.
"""

from __future__ import annotations

from typing import Any, TypedDict


class SleepInput(TypedDict, total=False):
    """What a caller may pass: nothing is required (the agent comes from the context)."""

    max_messages: int
    """Most new messages one run reads (default `DEFAULT_MAX_MESSAGES`); the rest wait."""


class SleepState(SleepInput, total=False):
    """The run's working state (also its output)."""

    agent_id: str
    """The agent this run tended."""
    start: int
    """The recall position the run read after (its watermark when it started)."""
    end: int
    """The position of the last message read; saved as the watermark when the run is done."""
    transcript: list[str]
    """The new messages, one ``role: text`` line each (tool results left out)."""
    sources: list[list[str]]
    """``[thread id, message id]`` of each message in the transcript: the facts archived
    from it name them (`ArchivalStore.add_sources`), so forgetting one forgets the facts."""
    blocks: dict[str, str]
    """The core blocks as read before the model was asked (label -> value)."""
    proposal: dict[str, Any] | None
    """The model's checked proposal: ``{"blocks": {label: new value}, "clear": [...],
    "archive": [...], "dropped": [...]}``; None when its answer was unusable."""
    edits: list[dict[str, str]]
    """One entry per block the run considered: label, outcome (``rewritten``,
    ``unchanged``, ``kept``, ``skipped``) and the reason."""
    archived: list[str]
    """Facts inserted into archival memory by this run (a rerun inserts none twice)."""
    problems: list[str]
    """Why something proposed was not applied (malformed answer, over a limit, ...)."""
    retention: dict[str, Any]
    """What the agent's archival retention rules forgot this run (``retention``): passage
    ids per rule, never their text."""


DEFAULT_MAX_MESSAGES = 200
"""Enough for several turns' worth of messages in one model call; the rest wait for the
next run (the watermark only moves past what was read)."""

WATERMARK = "sleeptime"
"""The recall mark (`RecallStore.mark`) holding the position of the last message read."""

ACTOR = "consolidator"
"""The actor of every core edit this graph makes, as shown in the block history."""
