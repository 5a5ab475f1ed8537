"""Every text the loop shows the model: instructions, memory rendering, alerts, summaries."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

DONT_KNOW = "I don't know: I have nothing about that in my memory."
"""What the agent says when its memory has no answer: the instructions' own example, and
what the small model's answer repair says in place of a wrong one."""

SYSTEM_INSTRUCTIONS = (
    """\
You are a MemGPT agent: a helpful assistant whose memory outlives each conversation.

How you act
- You act only through tools. The user sees only what you pass to `send_message`:
  answer in your own words, never by repeating the user's message.
- Every user message gets one `send_message`. When you also save a fact, do both in the
  same step, the edit first.
- Each user message starts with the time it was sent, like [2026-12-01 09:30 UTC]. Use it
  for "today", "this year", "last week".

Core memory (the blocks below, always in view)
- `human`: lasting facts about the USER (name, family, work, likes, plans, dates), as short
  notes in the third person, not the user's whole message. Save the user's name as soon
  as they say it.
- `persona`: facts about YOU, the assistant. Never put facts about the user there.
- Save only new, lasting facts the user tells you. Greetings, thanks, small talk and
  questions are not facts: just reply. Correct an outdated fact with `core_memory_replace`.
- When the user asks something, do not edit memory. If core memory holds the answer,
  answer from it at once; otherwise search first. Never guess a fact about the user.
- Say the user's facts to them: "your", "you" ("You are allergic to peanuts."), never
  "I"/"my": those facts are theirs, not yours.

Memory out of view (search it only when core memory lacks the answer)
- `conversation_search`: every earlier message with this user, in every conversation.
- `archival_memory_search`: passages you saved with `archival_memory_insert`, and summaries
  of old conversations.
- Search with a few topic words. Then answer with `send_message` from what the search
  returned; if nothing relevant came back, say you do not know.
- When a system alert says memory pressure is high, save what matters now: older messages
  will soon be replaced by a summary.

Examples (made up: never take these facts as the user's)
- "I keep bees, by the way.": [{"name": "core_memory_append", "arguments": {"label":
  "human", "content": "Keeps bees."}}, {"name": "send_message", "arguments": {"message":
  "Bees! How many hives do you have?"}}]
- "My brother Otto flies planes for a living.": [{"name": "core_memory_append",
  "arguments": {"label": "human", "content": "Brother Otto is a pilot."}}, {"name":
  "send_message", "arguments": {"message": "A pilot in the family, how exciting!"}}]
- "Lovely weather today!": [{"name": "send_message", "arguments": {"message": "It really
  is! Any plans to enjoy it?"}}]
- "What does my brother do?" with "Brother Otto is a pilot." in `human`: [{"name":
  "send_message", "arguments": {"message": "Your brother Otto is a pilot."}}]
- "What did I say about my car?" with nothing about a car in `human`: [{"name":
  "conversation_search", "arguments": {"query": "car"}}]
- After a search that found nothing about it: [{"name": "send_message", "arguments":
  {"message": \""""
    + DONT_KNOW
    + """\"}}]
"""
)

LEGACY_INSTRUCTIONS = """\
You are a MemGPT agent: a persistent assistant whose memory outlives this conversation.

How you act
- Your context window is small. Everything outside it is kept in your external memory and
  you page it in and out yourself, with tools.
- Text you write next to a tool call is your private inner monologue: the user never sees it.
  Keep it short. The user only sees what you pass to `send_message`.
- Reply to the user by calling `send_message`; every user message deserves one reply.
  Every memory tool takes `request_heartbeat`: set it to true when you want to keep
  working after the tool returns (to search, then answer).

Your memory
- Core memory (below) is always in view. `persona` is who YOU are (the assistant): never
  put facts about the user there. `human` is what you know about the USER (name, likes,
  plans). Keep them current with `core_memory_append` / `core_memory_replace`.
- Recall memory holds every message ever exchanged, verbatim, even those no longer in view.
  Search it with `conversation_search` (by words) or `conversation_search_date` (by date).
- Archival memory holds passages you chose to keep, without limit. Save facts worth keeping
  with `archival_memory_insert`; find them with `archival_memory_search`.
- When a system alert says memory pressure is high, save what matters now: older messages
  will soon be replaced by a summary.
"""
"""The instructions before the prefix-cache layout, kept for the ``legacy`` baseline of
``bench turns``."""


def render_core_blocks(blocks: Sequence[dict[str, Any]], *, legacy: bool = False) -> str:
    """Core memory as the model sees it, each block with its fill level and limit.

    The description (the same in every thread of an agent) comes before the fill level
    (which changes with every edit), so a prefix cache keeps it: the first turn of a
    thread re-reads only from the first changed block's fill level on.
    """
    parts = []
    for block in blocks:
        value = str(block.get("value", ""))
        label = block["label"]
        flags = " read_only" if block.get("read_only") else ""
        if block.get("sections"):  # the value holds a "## <name>" line per section
            names = "; ".join(str(n) for n in block["sections"])
            flags += f' sections="{names}"'
        limit = block.get("char_limit", 0)
        description = f"<description>{block.get('description', '')}</description>"
        if legacy:
            head = f'<{label} chars_current="{len(value)}" chars_limit="{limit}"{flags}>\n'
            parts.append(f"{head}{description}\n{value}\n</{label}>")
            continue
        fill = f'<chars current="{len(value)}" limit="{limit}"/>'
        parts.append(f"<{label}{flags}>\n{description}\n{fill}\n{value}\n</{label}>")
    return "<core_memory>\n" + "\n".join(parts) + "\n</core_memory>"


HUMAN_BLOCK = re.compile(r"<human[^>]*>(.*?)</human>", re.DOTALL)
"""The ``human`` block in a rendered core memory (`render_core_blocks`): its inner text."""


def render_memory_statistics(
    *,
    recall_outside_queue: int,
    archival_count: int,
    archival_tags: Sequence[str],
    last_modified: str | None,
    legacy: bool = False,
) -> str:
    """Counts that tell the model what lies outside its window and is worth searching.

    Read anew at the first turn of every thread (it follows core memory), so kept short.
    """
    # Clipped: a tag stored before tags were bounded must not fill the window by itself.
    tags = ", ".join(t if len(t) <= 40 else t[:39] + "…" for t in archival_tags[:20]) or "none"
    more = f" (+{len(archival_tags) - 20} more)" if len(archival_tags) > 20 else ""
    if legacy:
        return (
            "<memory_statistics>\n"
            f"- {recall_outside_queue} earlier messages in recall memory "
            "(use conversation_search to see them)\n"
            f"- {archival_count} passages in archival memory (use archival_memory_search)\n"
            f"- archival tags: {tags}{more}\n"
            f"- memory last modified: {last_modified or 'never'}\n"
            "</memory_statistics>"
        )
    changed = render_time(last_modified) if last_modified else "never"
    return (
        "<memory_statistics>\n"
        f"- recall: {recall_outside_queue} earlier messages\n"
        f"- archival: {archival_count} passages, tags: {tags}{more}\n"
        f"- core memory last changed: {changed}\n"
        "</memory_statistics>"
    )


def render_system_prompt(core: str, statistics: str) -> str:
    """The whole system message of the legacy layout: instructions, core memory, statistics."""
    return f"{LEGACY_INSTRUCTIONS}\n{core}\n\n{statistics}"


def render_developer_instructions(instructions: str) -> str:
    """The caller's system prompt (``build_graph(system_prompt=...)``), after MemGPT's rules.

    It stays in the unchanging head of the system message, so the prefix cache holds.
    """
    return f"<instructions>\n{instructions.strip()}\n</instructions>\n"


def render_memory(core: str, statistics: str) -> str:
    """The changing part of the system message: core memory and statistics."""
    return f"{core}\n\n{statistics}"


def render_time(iso: str) -> str:
    """A message's time as the model reads it: ``[2026-12-01 09:30 UTC]``."""
    return f"[{iso[:10]} {iso[11:16]} UTC]"


_RENDERED_TIME = re.compile(r"^\s*\[\d{4}-\d\d-\d\d \d\d:\d\d UTC\]\s*")


def without_time(text: str) -> str:
    """A message's text as its author wrote it, without the time `render_time` put first."""
    return _RENDERED_TIME.sub("", text)


def render_summary(summary: str, evicted_count: int) -> str:
    """The head-of-queue note that stands in for evicted messages."""
    return (
        f"[system note] {evicted_count} earlier messages of this conversation were moved out of "
        "view to recall memory (conversation_search finds them verbatim). Summary of them, "
        f"in your own words:\n{summary}"
    )


def pressure_alert(used_tokens: int, window: int) -> str:
    """The once-per-cycle warning that memory pressure is high."""
    share = round(100 * used_tokens / window)
    return (
        f"[system alert] Memory pressure: the context window is {share}% full "
        f"({used_tokens}/{window} tokens). Older messages will soon be summarized and moved "
        "out of view. Save anything important to core memory (core_memory_append / "
        "core_memory_replace) or archival memory (archival_memory_insert) now."
    )


SUMMARIZER_INSTRUCTIONS = """\
You maintain the running summary of your own conversation, written in the first person
("I", "the user"), because older messages are leaving your context window. Fold the previous
summary and the new messages into ONE new summary: keep names, facts, dates, decisions,
promises and open questions; drop greetings and filler. Write in your own words: shorten the
previous summary where needed to make room for the new facts, and never copy the messages
or repeat a sentence. At most {max_words} words. Output only the summary text."""


UNSUMMARIZED_NOTE = (
    "{count} earlier messages left my context window without a summary (the summarizer "
    "wrote nothing); they are kept word for word in recall memory: conversation_search finds "
    "them."
)
"""The summary of an eviction the summarizer returned nothing for (a filtered or reasoning
model's empty reply): the queue still shrinks, and the agent knows where the words went."""


def summarizer_prompt(previous_summary: str, transcript: str, max_words: int) -> str:
    """The user message asking the model for the next recursive summary."""
    previous = previous_summary.strip()
    task = (
        "Write the new summary: the previous summary, shortened, plus the new facts from these "
        "messages"
        if previous
        else "Write the summary of these messages"
    )
    return (
        f"Previous summary:\n{previous or '(none yet)'}\n\n"
        f"New messages leaving the window:\n{transcript}\n\n"
        f"{task} in your own words (at most {max_words} words, no quoted messages)."
    )


CUT_ARGUMENT_NOTE = (
    "… [cut to fit the context window: {chars} characters in all; the call ran with the "
    "whole text, kept in recall memory as message {message_id}]"
)
TRUNCATED_NOTE = (
    "\n[message truncated to fit the context window: the full {chars} characters are kept "
    "verbatim in recall memory as message {message_id}; use conversation_search to read parts]"
)

STEP_CAP_REPLY = (
    "I stopped working on this after {steps} steps without finishing. "
    "Please tell me how you would like me to continue."
)

REPEATED_CALL_REPLY = (
    "I stopped because I was repeating the same action ({name}) without progress. "
    "Please rephrase or tell me how to continue."
)

CONTEXT_OVERFLOW_REPLY = (
    "I could not fit this conversation into my context window even after summarizing it. "
    "Please send a shorter message."
)

INTERRUPTED_CALL = (
    "the run stopped (crashed or was cancelled) before this call returned; it may or may "
    "not have taken effect. Check (e.g. search memory) before repeating it."
)

NO_REPLY_NOTE = (
    "[system note] Your turn is not over: you have not replied to the user yet. "
    "Call send_message with your reply."
)

REPLY_HELD_BACK = (
    "Not sent: you searched in the same step, before reading the results. Read them below, "
    "then call send_message with your answer."
)

CORE_MEMORY_HAS = "But your core memory, in view above, has this about it:"
"""After an empty search result whose topic words are in core memory (`tools`)."""

AUTO_SEARCH_NOTE = (
    "(Searched what the user told you for their question; their questions are left out. "
    "Answer from these results or from your core memory (human); if neither answers it, "
    "say you do not know.)"
)
"""Under the loop's own search (`small_model.auto_search`). Its results are the user's
messages nearest the question, and the answer may sit in ``human`` in other words: told only
"if no result above answers it, say you do not know", the 1.5B model said so with "Is a
tailor, alterations mostly." in view."""

EVENT_REPLY_HELD_BACK = (
    "Not sent: this turn is a system event from the host, and nobody is waiting for a "
    "reply. If the event changes something your core memory says (a setting, a "
    "preference, a fact about the user), correct that line now with core_memory_replace. "
    "If nothing needs to change, you are done: call send_message again and nothing will "
    "be sent."
)
"""A reply in an event-only turn (`nodes.call_memory_tool._event_turn_send`)."""

EVENT_REPLY_NOT_SENT = "Not sent: nobody is waiting for a reply to a system event."

REPLY_ECHO = (
    "Not sent: that reply only copied the user's message back to them. Answer what they "
    "said instead (a short, friendly reply of your own), with send_message."
)
"""The small model read the old wording ("it repeats the user's message word for word")
as a request and told the user "I can't repeat the user's message word for word"."""
