"""Facts that replace older ones: search shows the current one first, the older stays.

``ArchivalStore.insert(..., replaces=id)`` links a newer passage to the one it replaces.
Nothing is deleted: "what did I say before?" still finds the older passage, which comes
back marked (``Passage.replaced_by``, ``replaced_at``). What changes is the order: wherever
a search ranks a replaced passage, the passage that replaced it (the newest of the chain)
is shown just before it, pulled onto the page if the search did not rank it there, so a
reader meets the current fact first. Every backend searches through `SearchesCurrentFirst`.
"""

from __future__ import annotations

from collections.abc import Callable

from langgraph_memgpt.stores.search import SearchesArchival
from langgraph_memgpt.stores.types import Hit, Passage, SearchPage

MAX_CHAIN = 50
"""Longest chain of replacements followed to the current passage (a cycle cannot form:
a passage only replaces an older one, but a bound costs nothing)."""


def current_of(passage: Passage, get: Callable[[int], Passage | None]) -> Passage | None:
    """The passage that finally replaced ``passage`` (None when it was not replaced)."""
    current = None
    seen = passage
    for _ in range(MAX_CHAIN):
        if seen.replaced_by is None:
            break
        following = get(seen.replaced_by)
        if following is None:
            break
        current = seen = following
    return current


def current_first(
    page: SearchPage[Passage], get: Callable[[int], Passage | None]
) -> SearchPage[Passage]:
    """``page`` with each replaced passage preceded by its current version, each shown once."""
    if not any(hit.item.replaced_by is not None for hit in page.hits):
        return page
    hits: list[Hit[Passage]] = []
    placed: set[int] = set()
    for hit in page.hits:
        if hit.item.id in placed:
            continue
        current = current_of(hit.item, get)
        if current is not None and current.id not in placed:
            hits.append(Hit(item=current, score=hit.score))
            placed.add(current.id)
        hits.append(hit)
        placed.add(hit.item.id)
    return SearchPage(hits=hits, total=page.total, page=page.page, page_size=page.page_size)


class SearchesCurrentFirst(SearchesArchival):
    """``ArchivalStore.search`` ranked by ``stores.search``, then `current_first`."""

    def _arranged(self, found: SearchPage[Passage]) -> SearchPage[Passage]:
        """A replaced passage comes after its current one.

        The current passage is shown even when the filters would leave it out: a reader
        told "this was replaced" must see by what.
        """
        return current_first(found, self.get)

    def get(self, passage_id: int) -> Passage | None:
        """One of the agent's passages by id (the backend's)."""
        raise NotImplementedError


__all__ = ["MAX_CHAIN", "SearchesCurrentFirst", "current_first", "current_of"]
