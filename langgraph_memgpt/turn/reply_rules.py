"""The loop's rules about the reply: whether text the model writes for the user is sent.

One copy, read by the two places that need it: the tool step (`nodes.call_memory_tool`)
applies the rules to each ``send_message`` call it runs, and the stream
(`langgraph_memgpt.turn.streaming`) applies them to the reply while the model is still writing
it, so that a client is shown only text the loop sends.

- In a turn opened by system events alone nobody is waiting: no reply is sent (the first
  is held back with a note, the next ends the turn, still unsent), no plain answer either.
- A reply written beside a call that reads (a search, a user tool declared ``reads``) was
  written before the results were read: it is held back.
- A reply that only says the user's newest message back (over three words) answers
  nothing: it is held back, once per turn.

While the reply is being written a rule is either decided (the text is sent, or never) or
not yet: `Turn.verdict` says which for the text so far, and `ReplyGate` turns the verdicts
of a step's calls into the text a client may be shown now.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, ToolCall, ToolMessage

from langgraph_memgpt import prompts
from langgraph_memgpt.tools.run import parse_args
from langgraph_memgpt.turn.main_context import awaits_reply, latest_user_index
from langgraph_memgpt.turn.tokens import content_text

REPLY_TOOL = "send_message"
REPLY_SEPARATOR = "\n\n"
"""Between the texts of a turn's ``send_message`` calls (``respond`` joins them so)."""


class Written(NamedTuple):
    """One call of a model message as far as it is written."""

    name: str
    reply: str | None
    """``send_message``'s text so far (None for other tools)."""
    closed: bool
    """The reply's text is whole."""
    valid: bool = True
    """Its arguments validate (known once the call is whole; the tool step refuses others)."""


@dataclass(frozen=True)
class Verdict:
    """Whether a reply is sent: True, False (with the reason the model reads), or None."""

    sent: bool | None
    reason: str = ""
    facts: Mapping[str, Any] = field(default_factory=dict)


SENT = Verdict(True)
UNDECIDED = Verdict(None)


@dataclass(frozen=True)
class Turn:
    """What the rules read from the queue, taken once per step."""

    awaited: bool
    """A user waits for this turn's reply (False: events alone opened it)."""
    event_reply_noted: bool
    """An event turn's reply was already held back once (the next one ends the turn)."""
    said: str
    """The user's newest message, normalised, when a copy of it would be held back ('')."""

    @classmethod
    def of(cls, queue: Sequence[BaseMessage]) -> Turn:
        """The rules' view of ``queue`` (the state a step starts from)."""
        index = latest_user_index(queue)
        results = [content_text(m) for m in queue[index or 0 :] if isinstance(m, ToolMessage)]
        said = ""
        if index is not None and not any(prompts.REPLY_ECHO in r for r in results):
            words = _words(content_text(queue[index]))
            said = words if len(words.split()) > 3 else ""
        return cls(
            awaited=awaits_reply(queue),
            event_reply_noted=any(prompts.EVENT_REPLY_HELD_BACK in r for r in results),
            said=said,
        )

    def verdict(self, reply: str, *, written: bool, reads_beside: bool | None) -> Verdict:
        """Whether ``reply`` is sent.

        Args:
            reply: the reply's text (so far, unless ``written``).
            written: the text is whole (its string is closed).
            reads_beside: a call of the same step reads; None while one may still come.
        """
        if not self.awaited:
            if self.event_reply_noted:
                return Verdict(False, prompts.EVENT_REPLY_NOT_SENT, {"goto_respond": True})
            return Verdict(False, prompts.EVENT_REPLY_HELD_BACK, {"held_back": True})
        if reads_beside:
            return Verdict(False, prompts.REPLY_HELD_BACK, {"held_back": True})
        if self.said:
            words = _words(reply)
            if written and words == self.said:
                return Verdict(False, prompts.REPLY_ECHO, {"held_back": True})
            if not written and self.said.startswith(words):
                return UNDECIDED  # it may still turn out a copy of the user's words
        return UNDECIDED if reads_beside is None else SENT

    def answer_sent(self) -> bool:
        """Whether a plain answer (a model message without tool calls) goes to the user."""
        return self.awaited


@dataclass(frozen=True)
class ReplyGate:
    """The text of a model step a client may be shown: only what the rules send.

    ``think`` builds one per step; `langgraph_memgpt.turn.streaming` asks it after every chunk.
    """

    turn: Turn
    reads: Callable[[str], bool]
    """Whether the tool of this name reads (its result must be read before replying)."""
    reply_last: bool = False
    """The model writes its reply as the step's last call (the embedded model's grammar
    does): once the reply is being written, the step's other calls are known."""

    def shown(self, calls: Sequence[Written], finished: bool) -> tuple[str, str]:
        """The step's reply text decided as sent, and the text it may still become.

        The first is safe to show now; the second (a superset: what is sent if every
        undecided rule lets it out) is what to show once the step is decided.
        """
        reads = any(self.reads(c.name) for c in calls if c.reply is None)
        beside = True if reads else (False if finished or self.reply_last else None)
        safe: list[str] = []
        hoped: list[str] = []
        decided = True
        for call in calls:
            if call.reply is None:
                continue
            if not call.valid:
                continue
            verdict = self.turn.verdict(
                call.reply, written=call.closed or finished, reads_beside=beside
            )
            if verdict.sent is False:
                continue
            hoped.append(call.reply)
            if decided and verdict.sent:
                safe.append(call.reply)
            decided = decided and bool(verdict.sent) and (call.closed or finished)
        return REPLY_SEPARATOR.join(safe), REPLY_SEPARATOR.join(hoped)

    def sent(self, tool_calls: Sequence[ToolCall]) -> str:
        """The reply text a finished step sends (what the tool step will let out)."""
        calls = [
            Written(
                c["name"],
                str(c["args"].get("message", "")) if c["name"] == REPLY_TOOL else None,
                closed=True,
                valid=c["name"] != REPLY_TOOL
                or not isinstance(parse_args(REPLY_TOOL, c["args"]), str),
            )
            for c in tool_calls
        ]
        return self.shown(calls, finished=True)[0]


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


__all__ = ["REPLY_SEPARATOR", "REPLY_TOOL", "ReplyGate", "Turn", "Verdict", "Written"]
