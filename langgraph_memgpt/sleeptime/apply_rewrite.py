"""apply_rewrite: write the checked proposal, never over an edit made meanwhile.

The model took a while; a conversation of the same agent may have edited a block since
it was read. Each block is compare-and-set: re-read, and skipped if it no longer holds
the value the model saw; then written with ``core_memory_replace`` of that whole value,
which the store does read-modify-write in one transaction, so an edit landing between
the re-read and the write makes the write fail (or, for an appended line, keeps that
line) instead of being overwritten. A skipped block keeps the watermark where it was:
the next run reads those messages again, against the block as it is then.

Facts go to archival memory under a key made from their text, so a rerun over the same
messages (or two runs at once) stores each fact once; each names the messages the run read
(``ArchivalStore.add_sources``), so forgetting one of them forgets the facts made from it.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from langgraph.runtime import Runtime

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.sleeptime.state import ACTOR, WATERMARK, SleepState
from langgraph_memgpt.stores.capabilities import BlockEdits, FeedMarks, PassageSources, require
from langgraph_memgpt.stores.types import BlockEditError
from langgraph_memgpt.turn.main_context import context_of

log = logging.getLogger(__name__)

ARCHIVE_TAG = "consolidated"
"""Tag of the passages this graph archives (``archival_memory_search(tags=...)``)."""


def fact_key(fact: str) -> str:
    """The idempotency key of an archived fact: its words, case and spacing ignored."""
    words = " ".join(fact.casefold().split())
    return "sleeptime:" + hashlib.sha256(words.encode("utf-8")).hexdigest()[:32]


def make_apply_rewrite(deps: Deps) -> Any:
    """Build the node with the graph's dependencies."""

    def apply_rewrite(state: SleepState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Compare-and-set each rewritten block, archive the facts, move the watermark."""
        memory = deps.memory(context_of(runtime))
        proposal = state.get("proposal") or {}
        seen = state.get("blocks", {})
        edits: list[dict[str, str]] = []
        problems = list(state.get("problems", []))
        retry = False
        for label, new in dict(proposal.get("blocks", {})).items():
            old = seen.get(label)
            try:
                current: str | None = memory.core.get(label).value
            except BlockEditError:  # the block was removed meanwhile
                current = None
            if old is None or current != old:
                retry = True
                edits.append(_edit(label, "skipped", "changed by a conversation since it was read"))
                continue
            if new == old:
                edits.append(_edit(label, "unchanged", "the proposal equals the block"))
                continue
            try:
                if old:
                    memory.core.replace(label, old, new, actor=ACTOR)
                else:
                    require(memory.core, BlockEdits, "sleep-time").set(label, new, actor=ACTOR)
            except BlockEditError as exc:
                # Not found: edited between the re-read and the write. Else a limit.
                retry = retry or "not found" in str(exc)
                problems.append(f"block '{label}' kept: {exc}")
                edits.append(_edit(label, "kept", str(exc)))
                continue
            edits.append(_edit(label, "rewritten", "cleaned by the consolidator"))

        archived: list[str] = []
        sources = [(str(t), str(m)) for t, m in state.get("sources", [])]
        for fact in proposal.get("archive", []):
            before = memory.archival.count()
            passage = memory.archival.insert(fact, tags=[ARCHIVE_TAG], key=fact_key(fact))
            # Every message the run read may be where it came from: forgetting any of
            # them forgets the fact (``forget``).
            require(memory.archival, PassageSources, "sleep-time").add_sources(passage.id, sources)
            if memory.archival.count() > before:
                archived.append(fact)

        if retry:
            problems.append("a block changed during the run: its messages will be read again")
        else:
            require(memory.recall, FeedMarks, "sleep-time").set_mark(WATERMARK, state.get("end", 0))
        for problem in problems[len(state.get("problems", [])) :]:
            log.warning("sleep-time consolidation of agent %s: %s", memory.agent_id, problem)
        return {"edits": edits, "archived": archived, "problems": problems}

    return apply_rewrite


def _edit(label: str, outcome: str, reason: str) -> dict[str, str]:
    return {"label": label, "outcome": outcome, "reason": reason}
