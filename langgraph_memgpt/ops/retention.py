"""Retention rules for archival memory: how long passages with a tag are kept.

A rule is data stored with the agent (``ArchivalStore.set_retention_rule``), exported
and imported with it: passages tagged ``tag`` (and ``source:<source>`` when the rule names
a source, as ``ingest`` tags documents) older than the rule's age are forgotten by the same
code as ``forget --passage`` (`forget.forget_passages`): every place they live (row, tags,
words, vectors and FAISS caches, the tool calls and search results quoting them, the
threads' checkpoints), each deletion logged with the rule and never the text. The
sleep-time run applies the rules (``sleeptime.read_new_messages``, in the threads of the
server or of the checkpointer it is given), and so does ``langgraph-memgpt retention
apply`` (``retention_cli``). Example, MemGPT's production guidance: raw HTML
kept 48 hours, extracted JSON forever::

    memory.archival.set_retention_rule(rule("raw_html", "48h"))
    apply_retention(memory, checkpointer=threads)  # the agent's threads' checkpointer
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.capabilities import RetentionRules, require
from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.passages import MAX_TAG_CHARS, normalize_tags
from langgraph_memgpt.stores.text import one_line
from langgraph_memgpt.stores.types import RetentionRule, format_age

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from langgraph_memgpt.ops.forget import ForgetReport

ACTOR = "retention"
"""The actor of every deletion a rule makes, as the deletion log records it."""
_AGE = re.compile(r"^\s*(\d+)\s*([smhdw]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_BATCH = 500
MAX_AGE = 10**10
"""Longest age a rule may have, in seconds (about 317 years): what an export holds, and an
older cut-off would lie before year 1. To keep a tag's passages forever, give it no rule."""


class RetentionRuleError(ValueError):
    """A rule that cannot be stored (the message names the field and what it takes)."""


def parse_age(text: str | int) -> int:
    """``"48h"`` -> 172800 seconds; units s, m, h, d, w (none: seconds); at least 1 second."""
    if isinstance(text, int) and not isinstance(text, bool):
        seconds = text
    else:
        match = _AGE.match(str(text))
        if match is None:
            raise RetentionRuleError(
                f"max_age {text!r} is not an age: a whole number with a unit s, m, h, d or w "
                "(e.g. 48h, 30d)"
            )
        digits = match.group(1).lstrip("0") or "0"
        # More digits than any allowed age has: refused below, without a huge int.
        seconds = MAX_AGE + 1 if len(digits) > 12 else int(digits) * _UNITS[match.group(2)]
    if seconds < 1:
        raise RetentionRuleError(f"max_age must be at least 1 second, got {text!r}")
    if seconds > MAX_AGE:
        raise RetentionRuleError(
            f"max_age {text!r} is {seconds} seconds, more than the longest age a rule may have "
            f"({MAX_AGE} seconds, about 317 years, e.g. 115740d); to keep the tag's passages "
            "forever, give it no rule"
        )
    return seconds


def rule(tag: str, max_age: str | int, source: str | None = None) -> RetentionRule:
    """A checked rule: a non-empty tag (and source, if any) and an age like ``"48h"``."""
    if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_CHARS:
        raise RetentionRuleError(f"tag must be 1-{MAX_TAG_CHARS} characters of text, got {tag!r}")
    if source is not None and (not isinstance(source, str) or not source.strip()):
        raise RetentionRuleError(f"source must be a file name or left out, got {source!r}")
    # Tags are stored normalised (lower case): a rule must name them the same way.
    (normal,) = normalize_tags([tag])
    return RetentionRule(normal, parse_age(max_age), source.strip() if source else None)


def rule_view(item: RetentionRule) -> dict[str, object]:
    """A rule as JSON (the memory page, export)."""
    return {
        "tag": item.tag,
        "source": item.source,
        "max_age_seconds": item.max_age_seconds,
        "max_age": format_age(item.max_age_seconds),
        "describe": item.describe(),
    }


@dataclass
class RetentionReport:
    """What one application of an agent's rules forgot: passage ids per rule."""

    agent_id: str
    forgotten: dict[str, list[int]] = field(default_factory=dict)
    copies: int = 0
    """Tool calls and tool results in recall that quoted a forgotten passage, deleted too."""
    threads: list[str] = field(default_factory=list)
    """Threads whose checkpoint held a forgotten passage and was cleaned."""
    reports: list[ForgetReport] = field(default_factory=list, repr=False)
    """What the eraser did, batch by batch (``forget.forget_passages``)."""

    @property
    def count(self) -> int:
        """Passages forgotten in all."""
        return sum(len(ids) for ids in self.forgotten.values())

    def describe(self) -> str:
        """One line per rule that forgot something (counts and ids, never text)."""
        if not self.forgotten:
            return f"Agent '{self.agent_id}': no passage past a retention rule."
        lines = [
            f"Agent '{self.agent_id}': {rule_text}: forgot {len(ids)} passage(s) {ids}"
            for rule_text, ids in self.forgotten.items()
        ]
        if self.copies or self.threads:
            lines.append(
                f"Agent '{self.agent_id}': with them {self.copies} tool message(s) quoting "
                f"them and the checkpoints of {len(self.threads)} thread(s)"
            )
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        """JSON form (the sleep-time run's state, ``--json``)."""
        return {
            "agent_id": self.agent_id,
            "count": self.count,
            "forgotten": self.forgotten,
            "copies": self.copies,
            "threads": self.threads,
        }


def apply_retention(
    memory: Memory,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None,
    now: datetime | None = None,
    actor: str = ACTOR,
) -> RetentionReport:
    """Forget every passage of the agent past one of its rules; returns what went.

    The passages go through the one eraser ``forget --passage`` uses
    (`forget.forget_passages`): rows, words, vectors and caches, the tool calls and
    search results in recall that quote them, and, in the threads' ``checkpointer``
    (required, as for every eraser: `checkpoints.existing_threads` opens a server's; None
    only where no thread was ever checkpointed), every channel of the checkpoints that
    held them and those threads' history; the engine's files are scrubbed. ``now`` is
    when the ages are measured from (default: the clock), so a test or a dry look ahead
    needs no waiting.
    """
    from langgraph_memgpt.ops.forget import forget_passages

    report = RetentionReport(memory.agent_id)
    moment = now or datetime.now(UTC)
    for item in require(memory.archival, RetentionRules, "retention").retention_rules():
        try:
            before = to_utc_iso(moment - timedelta(seconds=item.max_age_seconds))
        except (OverflowError, ValueError):
            continue  # a cut-off before year 1 (a rule stored unchecked): nothing is older
        source_tag = _source_tag(item.source) if item.source else None
        while ids := require(memory.archival, RetentionRules, "retention").expired(
            item.tag, source_tag=source_tag, before=before, limit=_BATCH
        ):
            erased = forget_passages(
                memory, ids, actor=actor, detail=item.describe(), checkpointer=checkpointer
            )
            report.reports.append(erased)
            report.copies += len(erased.echoes)
            report.threads += [t for t in erased.checkpoints if t not in report.threads]
            if erased.passages:
                report.forgotten.setdefault(item.describe(), []).extend(
                    p.id for p in erased.passages
                )
            if len(erased.passages) < len(ids):  # another process took some; never spin
                break
    return report


def _source_tag(source: str) -> str:
    """The tag ``ingest`` gives a file's passages (``source:<file name>``), as stored."""
    return normalize_tags([f"source:{one_line(source)}"[:MAX_TAG_CHARS]])[0]
