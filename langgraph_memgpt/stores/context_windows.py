"""A message's context window, and which windows change when messages enter a thread.

A searchable message's context is its text with the searchable messages around it in its
thread (`CONTEXT_RADIUS` on each side): words that answer a question are found by the
question before them. Both engines store the context with the message and index it; this
decides, from a stretch of a thread in order, whose context the new messages change.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from langgraph_memgpt.stores.search import CONTEXT_RADIUS


@dataclass(frozen=True)
class Neighbour:
    """A searchable message of a thread as read for the context computation."""

    id: int
    text: str
    context: str | None
    """Its context as stored (None: none yet)."""


@dataclass(frozen=True)
class NewContext:
    """A message's new context text and the ids of its window (itself and its neighbours)."""

    id: int
    text: str
    window: tuple[int, ...]


def changed_contexts(sequence: Sequence[Neighbour], new_ids: Collection[int]) -> list[NewContext]:
    """The contexts that differ from what is stored, around the new messages of ``sequence``.

    ``sequence``: a thread's searchable messages in order, holding every new message and
    ``2 * CONTEXT_RADIUS`` messages on each side of them (the neighbours' own neighbours).
    """
    positions = [i for i, row in enumerate(sequence) if row.id in new_ids]
    affected = sorted(
        {
            j
            for i in positions
            for j in range(i - CONTEXT_RADIUS, i + CONTEXT_RADIUS + 1)
            if 0 <= j < len(sequence)
        }
    )
    changed: list[NewContext] = []
    for i in affected:
        window = sequence[max(0, i - CONTEXT_RADIUS) : i + CONTEXT_RADIUS + 1]
        context = "\n".join(row.text for row in window)
        if context != sequence[i].context:
            changed.append(NewContext(sequence[i].id, context, tuple(row.id for row in window)))
    return changed


__all__ = ["Neighbour", "NewContext", "changed_contexts"]
