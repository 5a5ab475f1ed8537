"""What may enter the ``human`` block: notes grounded in what the user said about themselves.

A 1.5B model saves small talk as if it were a fact about the user ("Weather has been odd
lately", "Traffic was bad this morning", "The bus was late again"): half the lines it wrote
to ``human`` on scenarios of our own were chatter, and every such line sits in every later
prompt of the agent. What makes a line a fact about the user is visible in the user's own
message: they speak about themselves ("I", "my", "we"), or they give their name ("Name's
Bram", "Dev here"). Chatter speaks about the world ("the traffic", "the weather").

`grounded_in_user_words` lets a note into ``human`` only when a sentence of the user in
view states something lasting about them (`fact_sentences`: first person or their name,
not a question, not the passing moment: "I'm so tired today") and shares a content word
with the note. It asks nothing of the
model and costs one recall lookup; a refused note is answered with a short reason, so the
model simply replies.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.words import topic_stems

if TYPE_CHECKING:
    from langgraph_memgpt.tools import Provenance

NOT_ABOUT_THE_USER = (
    "Not saved: no message of the user in view says this about themselves (small talk "
    "is not a fact). Just reply with send_message."
)

_FIRST_PERSON = re.compile(
    r"\b(i|i['\u2019](m|ve|d|ll)|im|me|my|mine|myself|we|we['\u2019](re|ve)|us|our|ours)\b",
    re.IGNORECASE,
)
_TIME_PREFIX = re.compile(r"^\s*\[\d{4}-\d\d-\d\d \d\d:\d\d UTC\]\s*")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_PASSING = re.compile(
    r"\b(today|tonight|this (morning|afternoon|evening)|right now|at the moment|lol|"
    r"haha+|ugh)\b",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^\s*((hi|hello|hey|hiya|oh|ok|okay|so|and|also|anyway|actually|well|btw|fyi|yes|no)"
    r"\b[\s,!.:-]*|(just so you know|by the way|for the record|remember that|quick one)"
    r"\b[\s,!.:-]*|[\w' ]{1,20}:\s+)+",
    re.IGNORECASE,
)
_NAME = re.compile(
    r"\b(?i:my name is|my name's|name's|call me|i'm|i am)\s+([A-Z][\w'-]+)\s*[.!,]?\s*$"
    r"|^([A-Z][\w'-]+) here\b",
)


def names_themselves(sentence: str) -> re.Match[str] | None:
    """The self-introduction in a sentence ("I'm Ada", "Name's Bram", "Dev here"), if any."""
    return _NAME.search(sentence)


def fact_sentences(message: str) -> list[str]:
    """The sentences of a user's message that state something lasting about the user."""
    found = []
    for raw in _SENTENCES.split(_TIME_PREFIX.sub("", message)):
        sentence = _LEAD.sub("", raw.strip()).strip()
        if not sentence or sentence.endswith("?") or _PASSING.search(sentence):
            continue
        if speaks_about_themselves(sentence) or names_themselves(sentence):
            found.append(sentence)
    return found


_NAMING = re.compile(r"\b(name|names|named|called|call)\b", re.IGNORECASE)
_CAPITALISED = re.compile(r"\b[A-Z][\w'\u2019-]+")


def speaks_about_themselves(text: str) -> bool:
    """Whether a user's message speaks about the user (first person)."""
    return bool(_FIRST_PERSON.search(text))


def _capitalised(text: str) -> set[str]:
    return {
        w.casefold().removesuffix("'s").removesuffix("\u2019s") for w in _CAPITALISED.findall(text)
    }


def _gives_its_name(note: str, said: str) -> bool:
    """A self-introduction without a pronoun ("Name's Bram.", "Dev here.").

    The note is about a name and shares a capitalised word, other than the naming words
    themselves, with the message.
    """
    if not _NAMING.search(note):
        return False
    return bool((_capitalised(note) & _capitalised(said)) - {"name", "names", "call", "called"})


def grounded_in_user_words(note: str, user_messages: Iterable[str]) -> bool:
    """Whether one of ``user_messages`` says ``note`` about the user themselves.

    A sentence of theirs that states something lasting about them (`fact_sentences`: not
    a question, not the passing moment) shares a content word with the note, or the note
    gives the name they introduced themselves with.
    """
    stems = topic_stems(note)
    for said in user_messages:
        if any(stems & topic_stems(sentence) for sentence in fact_sentences(said)):
            return True
        if _gives_its_name(note, said):
            return True
    return False


def allowed(note: str, memory: Memory, in_view: Collection[str]) -> bool:
    """Whether ``note`` may enter ``human``: grounded in a user message in view.

    Without a queue in view (a tool called outside a turn) there is nothing to check it
    against, and it is allowed.
    """
    if not in_view:
        return True
    said = [m.text for m in memory.recall.get(sorted(in_view)) if m.role == "user"]
    return not said or grounded_in_user_words(note, said)


def refuses_replace(label: str, old: str, new: str, memory: Memory, where: Provenance) -> bool:
    """Whether a ``human`` edit that would apply writes text no user message grounds.

    An edit that could not apply anyway (``old`` absent) is left to the store's own error.
    """
    if label != "human" or not new.strip():
        return False
    current = next((b.value for b in memory.core.blocks() if b.label == label), "")
    return bool(old) and old in current and not allowed(new, memory, where.in_view)
