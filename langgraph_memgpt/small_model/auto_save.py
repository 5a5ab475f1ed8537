"""Facts the small model did not save: noted for it, in the step where it replies.

MemGPT leaves saving to the model. A 1.5B model often does not: on scenarios of our own it
saved half the facts users stated, and almost never their name ("Hi! My name is Farah and
I run a small bakery in Cairo." got "Hello Farah!" and nothing in memory). A fact missing
from core memory is found later only by a search, if at all.

So for such models (the embedded model's wrapper, `LocalToolCallingChatModel`) the step
that answers the user's message gets a ``core_memory_append`` for each sentence of that
message which states something lasting about the user and which none of the model's own
edits in the step already covers. The call is an ordinary one (recorded, shown in Studio,
checked by the tool like any other); the AI message is flagged with `AUTO_SAVE_FLAG`.

Which sentences: `core_gate.fact_sentences`, those where the user speaks about themselves
(first person) or gives their name, that are not questions and do not speak of the passing
moment ("today", "right now"). The note is the sentence in the third person ("I work as a
welder" -> "Works as a welder"; "My sister Keiko ..." -> "User's sister Keiko ..."), kept
whole; a sentence it cannot turn safely (a "we") is kept as the user said it, in quotes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall

from langgraph_memgpt.small_model.core_gate import (
    as_a_note,
    fact_sentences,
    goes_on_from_name,
    name_in,
    names_themselves,
    speaks_about_themselves,
    third_person_note,
)
from langgraph_memgpt.stores.words import topic_stems
from langgraph_memgpt.turn.tokens import content_text

_JOINING = re.compile(r"^(?:and|but|so)\s+", re.IGNORECASE)

AUTO_SAVE_FLAG = "memgpt_auto_saved"
"""On an AI message: how many of its calls the loop added (facts the model did not save)."""


def notes_for(message: str) -> list[str]:
    """The notes a user's message gives: its name first, then each fact sentence.

    A sentence that gives the name is noted without it, and only if what is left lasts: the
    name held twice ("Name is Ikenna." and "Ikenna here, typing from user's shop") counted
    as a repeat on the eighth tune half.
    """
    notes = []
    for sentence in fact_sentences(message):
        name = names_themselves(sentence)
        if name is not None:
            notes.append(f"Name is {name_in(name)}.")
            rest = (sentence[: name.start()] + sentence[name.end() :]).strip(" ,;:-\u2013\u2014")
            rest = _JOINING.sub("", rest)  # "Siobhán's the name, and I teach piano."
            if goes_on_from_name(name):
                rest = f"I'm {rest}"  # "I'm Rustam, from Samarkand": "I'm from Samarkand"
            if not speaks_about_themselves(rest) or len(topic_stems(rest)) < 2:
                continue
            if not fact_sentences(rest):
                continue  # "Ikenna here, typing from my shop": the name, and small talk
            sentence = rest  # the name is noted once, not again inside the whole sentence
        notes.append(as_a_note(third_person_note(sentence)))
    return notes


def _covered(note: str, written: Sequence[str]) -> bool:
    """Whether one of the model's own notes is about this sentence (most of its words are)."""
    stems = topic_stems(note)
    for text in written:
        own = topic_stems(text) - {"user", "said"}
        if own and 2 * len(own & stems) >= len(own):
            return True
    return False


def add_missing_notes(
    message: AIMessage,
    prompt: Sequence[BaseMessage],
    reply_tool: str,
    companions: Collection[str],
    edit_tool: str = "core_memory_append",
) -> AIMessage:
    """``message`` with an ``edit_tool`` call added before its reply for each fact not saved.

    Only in the step that answers the user's message (it is the prompt's last message), and
    only when the step replies with nothing but edits (``companions``) beside it.
    """
    if not prompt or not isinstance(prompt[-1], HumanMessage) or prompt[-1].name:
        return message
    names = [c["name"] for c in message.tool_calls]
    if reply_tool not in names or any(n != reply_tool and n not in companions for n in names):
        return message
    written = [
        str(value)
        for c in message.tool_calls
        if c["name"] != reply_tool
        for value in c["args"].values()
        if isinstance(value, str)
    ]
    missing = [n for n in notes_for(content_text(prompt[-1])) if not _covered(n, written)]
    if not missing:
        return message
    added = [
        ToolCall(
            name=edit_tool,
            args={"label": "human", "content": note},
            id=f"call_{uuid.uuid4().hex[:24]}",
        )
        for note in missing
    ]
    reply_at = names.index(reply_tool)
    calls = [*message.tool_calls[:reply_at], *added, *message.tool_calls[reply_at:]]
    flags = {**message.additional_kwargs, AUTO_SAVE_FLAG: len(added)}
    return message.model_copy(update={"tool_calls": calls, "additional_kwargs": flags})
