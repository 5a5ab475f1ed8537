"""Replies that speak to the user: the user's facts said back as "you", never as "I".

Asked "What am I allergic to?", a 1.5B model that just read the user's own words ("I'm
allergic to hazelnuts", in a search result or in its notes) often copies them as they are:
"I'm allergic to hazelnuts." The user reads the agent claiming their allergy. Larger models
do not do this; the embedded model's wrapper (`LocalToolCallingChatModel`) repairs its
replies with `to_the_user` before anything else sees them.

The repair is narrow on purpose. It touches a reply only when the user asked about
themselves (`auto_search.is_memory_question`) or told news about themselves (then the reply
sentence must be made of their words, see `_says_a_stated_fact`), and in it only a sentence
that

* speaks in the first person and never addresses the user (a sentence with "you" in it is
  the agent speaking as itself: "I remember you love teal"), and
* carries what the user stated: its content words, leaving out the question's own and the
  words an agent uses about its own knowledge ("know", "remember", "sure"...), are found
  (a third of them at least) in the user's stated facts (their ``human`` block, the
  results the agent read, their earlier messages).

Such a sentence gets its first-person words turned to the second person ("I'm" -> "you're",
"my" -> "your", "we" -> "you"). "I don't know that." and "I found nothing about it." are
left alone: they state nothing the user said.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_memgpt.stores.words import topic_stems
from langgraph_memgpt.tokens import content_text

_APOSTROPHE = "['\u2019]"
_SECOND_FOR_FIRST = {
    "i'm": "you're",
    "i am": "you are",
    "i was": "you were",
    "i've": "you've",
    "i'd": "you'd",
    "i'll": "you'll",
    "we're": "you're",
    "we've": "you've",
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "we": "you",
    "us": "you",
    "our": "your",
    "ours": "yours",
    "ourselves": "yourselves",
}
_SWAP = re.compile(
    r"\b("
    + "|".join(
        re.escape(k).replace("'", _APOSTROPHE).replace(r"\ ", r"\s+")
        for k in sorted(_SECOND_FOR_FIRST, key=len, reverse=True)
    )
    + r")\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(
    rf"\b(i|i{_APOSTROPHE}(m|ve|d|ll)|me|my|mine|myself|we|we{_APOSTROPHE}(re|ve)|us|our|ours|"
    r"ourselves)\b",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(
    rf"\b(you|your|yours|yourself|yourselves|you{_APOSTROPHE}(re|ve|d|ll))\b", re.IGNORECASE
)
_SENTENCE = re.compile(r"(?<=[.!?])(\s+)")
_TIME_PREFIX = re.compile(r"^\s*\[\d{4}-\d\d-\d\d \d\d:\d\d UTC\]\s*")
_HUMAN_BLOCK = re.compile(r"<human[^>]*>(.*?)</human>", re.DOTALL)

AGENT_WORDS = frozenset(
    topic_stems(
        "know knowing known remember recall sure sorry information informed memory memories "
        "found find finding mention mentioned tell told search searched help idea think "
        "believe afraid unfortunately record records saved note notes details"
    )
)
"""Stems of the words an agent uses about its own knowledge: no evidence of a user fact."""

FUNCTION_WORDS = frozenset(
    topic_stems(
        "about don't doesn't didn't can can't cannot won't isn't aren't wasn't weren't "
        "haven't hasn't nothing anything something everything nobody never any"
    )
)
"""Stems of negations and pronoun-like words the search stop list keeps: they carry no fact
("I don't know: I have nothing about that" shares "don't" and "about" with any user)."""


def _swap(match: re.Match[str]) -> str:
    word = match.group(0)
    key = " ".join(word.lower().replace("\u2019", "'").split())
    replacement = _SECOND_FOR_FIRST[key]
    # "I" is written upper case anywhere: only a sentence's first word stays capitalised.
    opens = not match.string[: match.start()].strip(" \"'\u201c")
    return replacement[0].upper() + replacement[1:] if opens else replacement


def _says_a_stated_fact(sentence: str, question: str, stated: set[str], echo: bool) -> bool:
    words = topic_stems(sentence) - topic_stems(question) - AGENT_WORDS - FUNCTION_WORDS
    if echo:
        # Replying to news, the agent may well speak of itself ("I love jazz too"): only a
        # sentence made of the user's words, two at least, is their statement copied.
        return len(words) >= 2 and 3 * len(words & stated) >= 2 * len(words)
    # A third is enough: "My favourite color is teal" holds one word of the fact ("teal")
    # beside words the user put otherwise ("love the colour").
    return bool(words) and 3 * len(words & stated) >= len(words)


def to_the_user(reply: str, question: str, stated: str, *, echo: bool = False) -> str:
    """``reply`` with the user's facts said to them (see the module docstring).

    Each sentence that voices what the user stated as the agent's own is turned to the
    second person; anything else is left as it is. ``echo``: ``question`` is the user's
    news, not a question, and ``stated`` that news: stricter (see `_says_a_stated_fact`).
    """
    stated_stems = topic_stems(stated)
    parts = _SENTENCE.split(reply)
    out = []
    for index, part in enumerate(parts):
        if index % 2 == 1:  # the whitespace between sentences
            out.append(part)
            continue
        if (
            _FIRST_PERSON.search(part)
            and not _SECOND_PERSON.search(part)
            and _says_a_stated_fact(part, question, stated_stems, echo)
        ):
            part = _SWAP.sub(_swap, part)
        out.append(part)
    return "".join(out)


def user_question(prompt: Sequence[BaseMessage]) -> str | None:
    """The newest message of the prompt when the user wrote it, without its time stamp."""
    for message in reversed(prompt):
        if isinstance(message, HumanMessage):
            if message.name:  # a runtime note (alert, summary), not the user
                return None
            return _TIME_PREFIX.sub("", content_text(message))
        if isinstance(message, SystemMessage):
            return None
    return None


_USER_LINE = re.compile(r"\buser: (.+)")


def _user_lines(result: str) -> list[str]:
    """The user's own messages in a search result (its ``- (time) user: ...`` lines).

    Only those: the rest of a result is the loop's wording ("nothing found", notes to the
    model), which says nothing the user stated.
    """
    try:
        data = json.loads(result)
    except ValueError:
        data = None
    text = str(data.get("message", "")) if isinstance(data, dict) else result
    return [m.group(1) for m in _USER_LINE.finditer(text)]


def stated_text(prompt: Sequence[BaseMessage], question: str) -> str:
    """What the user has stated in view: their ``human`` block, results read, earlier words."""
    parts: list[str] = []
    for message in prompt:
        text = content_text(message)
        if isinstance(message, SystemMessage):
            parts.extend(_HUMAN_BLOCK.findall(text))
        elif isinstance(message, ToolMessage):
            parts.extend(_user_lines(text))
        elif isinstance(message, HumanMessage) and not message.name:
            said = _TIME_PREFIX.sub("", text)
            if said != question:
                parts.append(said)
    return "\n".join(parts)


def repair_reply(message: AIMessage, prompt: Sequence[BaseMessage], reply_tool: str) -> AIMessage:
    """``message`` with its reply (``reply_tool``'s ``message``) said to the user, if needed.

    When the newest user message asks about the user, against everything they stated; when
    it is news about themselves ("Hi, I'm Ada. I love teal." answered "I love the colour
    teal."), against that news only, and stricter. Otherwise ``message`` itself.
    """
    from langgraph_memgpt.auto_search import is_memory_question

    if not any(c["name"] == reply_tool for c in message.tool_calls):
        return message
    question = user_question(prompt)
    if question is None:
        return message
    echo = not is_memory_question(question)
    if echo and (question.rstrip().endswith("?") or not _FIRST_PERSON.search(question)):
        return message
    stated = question if echo else stated_text(prompt, question)
    calls = []
    changed = False
    for call in message.tool_calls:
        text = call["args"].get("message")
        if call["name"] == reply_tool and isinstance(text, str):
            fixed = to_the_user(text, "" if echo else question, stated, echo=echo)
            if fixed != text:
                call = {**call, "args": {**call["args"], "message": fixed}}
                changed = True
        calls.append(call)
    return message.model_copy(update={"tool_calls": calls}) if changed else message
