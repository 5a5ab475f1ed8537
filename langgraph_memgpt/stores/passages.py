"""What an archival passage is before any engine stores it: tags, checks, provenance.

Shared by every archival backend, so they accept and refuse the same passages with the
same words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import Passage

MAX_TAG_CHARS = 100
"""Longest tag a passage may carry: tags are listed in the system prompt, so one huge tag
would make every prompt of the agent overflow its window."""

MAX_PASSAGE_CHARS = 1_000_000
"""Longest passage archival memory accepts: a model writing megabytes into one call is
looping or pasting, and every search would carry the passage (a readable error instead)."""

SUMMARY_TAG = "summary"
"""The tag eviction writes its summaries with (``nodes.summarize_evict.SUMMARY_TAG``)."""

PreparedPassage = tuple[str, list[str], str | None, int | None, str, str | None]
"""(text, tags, thread_id, turn, created_at as ISO-8601 UTC, key), ready to store."""

Writing = tuple[bool, int | None]
"""How a prepared passage is written: (merge duplicates, id of the passage it replaces)."""


@dataclass(frozen=True)
class NewPassage:
    """A passage to insert with ``insert_many`` when items differ in tags or provenance."""

    text: str
    tags: Sequence[str] = field(default_factory=tuple)
    thread_id: str | None = None
    turn: int | None = None
    created_at: str | datetime | None = None
    key: str | None = None
    """Idempotency key: a second insert with the same key returns the first passage."""
    replaces: int | None = None
    """Id of the agent's passage this one replaces (a newer fact); the older stays findable."""
    merge_duplicates: bool = False
    """When the agent already has this fact (``stores.duplicates``), store nothing and return
    the stored passage (marked ``duplicate``). Off for bulk loads (import, ingest), on for
    ``insert``."""


INSERT_BATCH = 256
"""Passages per transaction and per embedding call in ``insert_many``."""


class InsertsPassages:
    """``ArchivalStore.insert`` for every backend: one passage is a batch of one.

    A backend supplies ``insert_many``; a passage inserted alone is checked, keyed and
    embedded exactly as one in a batch.
    """

    def insert(
        self,
        text: str,
        tags: Iterable[str] | str | None = (),
        thread_id: str | None = None,
        turn: int | None = None,
        created_at: str | datetime | None = None,
        key: str | None = None,
        *,
        replaces: int | None = None,
        merge_duplicates: bool = True,
    ) -> Passage:
        """Save one passage (with its tags and provenance) and return it.

        Args:
            text: the passage.
            tags: its tags (normalised by ``normalize_tags``).
            thread_id: the thread it came from (provenance).
            turn: the turn it came from (provenance).
            created_at: when it was written; default now.
            key: makes the insert idempotent: when this agent already has a passage with
                this key (a replayed tool call, keyed on its call id; a replayed eviction),
                that passage is returned and nothing is written.
            replaces: the id of the agent's passage this one replaces (a fact that changed):
                the two are linked, search shows this one first and says what it replaced
                and when; the older stays findable, marked as replaced.
            merge_duplicates: when the agent already has this fact (the same text, or the
                same fact in other words: ``stores.duplicates``), nothing is written and the
                stored passage is returned with ``duplicate`` set. False stores it anyway.

        Raises:
            ValueError: the text is empty or too long, a tag too long, ``created_at`` is
                not a timestamp, or ``replaces`` names no passage of the agent or one
                already replaced (the message names the passage to replace instead).
        """
        item = NewPassage(
            text,
            normalize_tags(tags),
            thread_id,
            turn,
            created_at,
            key,
            replaces=replaces,
            merge_duplicates=merge_duplicates,
        )
        return self.insert_many([item])[0]

    def insert_many(
        self,
        items: Sequence[str | NewPassage],
        *,
        tags: Iterable[str] | str | None = (),
        thread_id: str | None = None,
        turn: int | None = None,
        created_at: str | datetime | None = None,
        merge_duplicates: bool = False,
    ) -> list[Passage]:
        """Save many passages, embedding them in batches; returns them in input order.

        Plain strings take the shared ``tags``/``thread_id``/``turn``/``created_at`` and
        ``merge_duplicates`` (off: a bulk load keeps every item); ``NewPassage`` items carry
        their own. Each batch of :data:`INSERT_BATCH` commits as one transaction, rows and
        vectors together, and is embedded before it. A merged duplicate comes back as the
        stored passage with ``duplicate`` set, also when it repeats an earlier item.

        Raises:
            ValueError: a text is empty, a ``created_at`` is not a timestamp, or a
                ``replaces`` names no passage that can be replaced.
        """
        prepared = prepare_passages(
            items, tags=tags, thread_id=thread_id, turn=turn, created_at=created_at
        )
        writing: list[Writing] = [
            (item.merge_duplicates, _replaced_id(item.replaces))
            if isinstance(item, NewPassage)
            else (merge_duplicates, None)
            for item in items
        ]
        passages: list[Passage] = []
        for start in range(0, len(prepared), INSERT_BATCH):
            end = start + INSERT_BATCH
            passages.extend(self._insert_batch(prepared[start:end], writing[start:end]))
        return passages

    def _insert_batch(self, batch: list[PreparedPassage], writing: list[Writing]) -> list[Passage]:
        """Write one batch in one transaction (the backend's own way)."""
        raise NotImplementedError


def passage_columns(table: str) -> str:
    """A passage's columns over the alias ``b`` of ``table``, as :func:`passage_of` reads them.

    Its own, then the passage that replaced it and when (``stores.supersession``; one
    index probe each).
    """
    successor = (
        f"(SELECT n.{{0}} FROM {table} AS n WHERE n.agent_id = b.agent_id AND n.replaces = b.id "
        "ORDER BY n.id LIMIT 1)"
    )
    return (
        "b.id, b.agent_id, b.text, b.tags, b.created_at, b.thread_id, b.turn, b.replaces, "
        f"{successor.format('id')}, {successor.format('created_at')}"
    )


def not_replaced(table: str) -> str:
    """The condition over the alias ``b`` of ``table`` that a passage has not been replaced."""
    return (
        f"NOT EXISTS (SELECT 1 FROM {table} AS n WHERE n.agent_id = b.agent_id "
        "AND n.replaces = b.id)"
    )


def passage_of(row: Sequence[Any], tags: Iterable[str]) -> Passage:
    """The passage in a row of :func:`passage_columns`; ``tags`` as the engine stores them."""
    return Passage(
        id=int(row[0]),
        agent_id=str(row[1]),
        text=str(row[2]),
        tags=list(tags),
        created_at=str(row[4]),
        thread_id=row[5],
        turn=None if row[6] is None else int(row[6]),
        replaces=None if row[7] is None else int(row[7]),
        replaced_by=None if row[8] is None else int(row[8]),
        replaced_at=None if row[9] is None else str(row[9]),
    )


def _replaced_id(value: object) -> int | None:
    """``replaces`` as a passage id, or a readable refusal."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"replaces must be the id of an earlier passage (a whole number), got {value!r}; "
            "nothing was saved."
        )
    return value


def written(passage: Passage | None) -> Passage:
    """A passage a batch wrote or found (every unkeyed item has one by the batch's end)."""
    assert passage is not None, "an unkeyed item was neither written nor found"
    return passage


def replace_refusal(passage_id: int, replaced_by: int | None) -> ValueError:
    """Why ``replaces=passage_id`` cannot be written (no such passage, or already replaced)."""
    if replaced_by is None:
        return ValueError(
            f"There is no archival passage {passage_id} to replace; nothing was saved. "
            "Search archival memory for the passage's id, or save without replaces."
        )
    return ValueError(
        f"Passage {passage_id} was already replaced by passage {replaced_by}; nothing was "
        f"saved. To update the fact again, replace passage {replaced_by}."
    )


def normalize_tags(tags: Iterable[str] | str | None) -> list[str]:
    """Lower-case, strip and de-duplicate tags, keeping their order.

    Tags are matched case-insensitively: a model that saved ``"Work"`` and searches
    ``"work"`` means the same tag.
    """
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    seen: dict[str, None] = {}
    for tag in tags:
        cleaned = " ".join(valid_text(str(tag)).split()).lower()
        if cleaned:
            seen.setdefault(cleaned, None)
    return list(seen)


def prepare_passages(
    items: Sequence[str | NewPassage],
    *,
    tags: Iterable[str] | str | None = (),
    thread_id: str | None = None,
    turn: int | None = None,
    created_at: str | datetime | None = None,
    key: str | None = None,
) -> list[PreparedPassage]:
    """Check and normalise passages; plain strings take the shared provenance.

    Raises:
        ValueError: a text is empty, a tag too long, or a ``created_at`` not a timestamp
            (nothing is saved: the message says so).
    """
    shared_tags = normalize_tags(tags)
    prepared: list[PreparedPassage] = []
    for item in items:
        if isinstance(item, str):
            item = NewPassage(item, shared_tags, thread_id, turn, created_at, key)
        if not item.text or not item.text.strip():
            raise ValueError("An archival passage needs some text; nothing was saved.")
        if len(item.text) > MAX_PASSAGE_CHARS:
            raise ValueError(
                f"The passage is {len(item.text):,} characters long; archival memory keeps "
                f"passages of at most {MAX_PASSAGE_CHARS:,}. Nothing was saved: save the "
                "parts that matter, each as its own shorter passage."
            )
        item_tags = normalize_tags(item.tags)
        for tag in item_tags:
            if len(tag) > MAX_TAG_CHARS:
                raise ValueError(
                    f"The tag {tag[:40]!r}... is {len(tag)} characters long; tags may hold "
                    f"at most {MAX_TAG_CHARS}. Nothing was saved: use a short tag and put "
                    "the detail in the content."
                )
        prepared.append(
            (
                valid_text(item.text),
                item_tags,
                None if item.thread_id is None else valid_text(item.thread_id),
                item.turn,
                to_utc_iso(item.created_at),
                None if item.key is None else valid_text(item.key),
            )
        )
    return prepared


def deletion_kind(passage: Passage) -> str:
    """What the deletion log calls ``passage``: an eviction's ``"summary"``, else ``"passage"``."""
    return "summary" if SUMMARY_TAG in passage.tags else "passage"
