"""Search before the first step of a question turn, for models too small to decide to.

MemGPT leaves paging to the model: it calls ``conversation_search`` when the answer is not
in view. A 1.5B model often does not: asked "What is my name?" in a new thread, with the
name nowhere in core memory, it answers "[Your Name]" instead of searching, and each
search it does decide on costs a whole extra model call. ``benchmarks/local_turns.py``
compares the answers of turns with and without the loop's own search.

So for such models the loop runs that search itself when the user asks about themselves
(`is_memory_question`) and core memory does not seem to hold the answer: a
``conversation_search`` call with the question as its query, and its result, enter the
queue as if the model had made the call (flagged ``AUTO_FLAG``), and the model's first
step already reads them. The call is an ordinary one in every other way: in the queue
(Studio shows it), recorded in recall, never a search candidate itself. Its results are
what the user stated (their messages that are not questions), and the note under them says
so: earlier questions and the agent's earlier replies shaped like the new question were
what a small model answered from when the answer was nowhere. Hosted models keep deciding
for themselves (``Context.auto_search``, read through `ModelTraits.searches_first`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection, Sequence
from typing import TypeVar

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.runtime import get_runtime

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.ranking import is_question
from langgraph_memgpt.stores.types import Excluded, Hit, SearchPage
from langgraph_memgpt.stores.words import topic_stems
from langgraph_memgpt.tools.run import core_lines_about, format_page, message_line, tool_result
from langgraph_memgpt.turn.main_context import latest_user_index, thread_of
from langgraph_memgpt.turn.tokens import content_text

T = TypeVar("T")

AUTO_FLAG = "memgpt_auto_search"
"""Marks the AI message of a search the loop made on the model's behalf."""
AUTO_PAGE_SIZE = 3
"""Results the loop's own search shows (the model's searches show ``search_page_size``).

A short page: every line is prompt the model reads before it can answer; the model can
still search further itself."""
AUTO_POOL = 3 * AUTO_PAGE_SIZE
"""Results fetched to fill the page once the user's questions are left out."""
CLOSE_SCORE = 0.75
"""A result shows only when its fused score is at least this share of the best one's.

A distant second is noise to a 1.5B model: with "Someone stole my bike ..." first and
"Ugh, what a week." and "Thanks for cheering me up, bye." under it, "What was stolen
from me this week?" got "I don't know" 7 times in 7 on the embedded model; with the first
result alone, the bike 3 times in 3 (`/tmp` probe on the turn benchmark's own turns). A
close second may hold the answer as well as the first, so it stays."""

_QUESTION_START = re.compile(
    r"^\s*(what|who|whom|whose|where|when|which|why|how|do|does|did|is|are|am|was|were|can|"
    r"could|have|has|had|will|would|should|remind me|tell me"
    r"|whats|wats?|wot|whos|wheres|whens|hows|whys)\b",
    re.IGNORECASE,
)
"""A question's first word, also as typed in a hurry ("whats my pets name", "wat do i do")."""

# Words that say when, not what: in a question they are a date filter, and matching them
# against core memory ("this year") would take any dated fact for the answer.
_WHEN_WORDS = frozenset(
    """ago day days today tonight tomorrow yesterday week weeks weekend month months year
    years last next this morning evening night time recently still ever spring summer
    autumn winter monday tuesday wednesday thursday friday saturday sunday""".split()
)


_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|we|us|our|ours|i'm|i've|i'd)\b", re.IGNORECASE)


_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S")
_YOU_SHOULD_KNOW = re.compile(
    r"\b(?:you\s+(?:should|need\s+to|ought\s+to|must|have\s+to)|should\s+you)\s+know\b",
    re.IGNORECASE,
)
"""The user asked of without "me": "Is there a health thing you should know about?"."""
_LEAD = re.compile(
    r"^\s*(hey|hi|hello|so|ok|okay|well|and|but|also|now|um|oh|quick question)( there)?"
    r"(\s*[,!.:\-]+\s*|\s+)",
    re.IGNORECASE,
)


def is_memory_question(text: str) -> bool:
    """One sentence asking about the user or what they shared ("What is my name?").

    Small talk ("How are you doing?") and questions about the world ("What is the capital
    of Peru?") are not: a search would cost the model a page of results to read for nothing.
    Neither is news with a question ("I adopted a dog! Any tips?", "I got a dog, any
    tips?"): it has a fact to save.
    """
    text = text.strip()
    while (lead := _LEAD.match(text)) is not None and lead.end() < len(text):
        text = text[lead.end() :]  # "Hey, what is my name?" asks what "What is my name?" asks
    return (
        bool(_QUESTION_START.match(text))
        and not _SENTENCE_BREAK.search(text)
        and bool(_FIRST_PERSON.search(text) or _YOU_SHOULD_KNOW.search(text))
    )


def asks_memory_question(queue: Sequence[AnyMessage]) -> bool:
    """Whether the newest user message of the queue is a memory question."""
    index = latest_user_index(queue)
    return index is not None and is_memory_question(content_text(queue[index]))


def core_covers(question: str, memory: Memory) -> bool:
    """True when one line of core memory holds most of the question's topic words.

    Then the answer is most likely in view, and the instructions tell the model to answer
    from core memory first; a search would only cost prompt tokens. One shared word is not
    enough: "Sister Keiko is getting married in June." shares "sister" with "What is my
    sister's job?" and answers nothing about it.
    """
    asked = topic_stems(question, skip=_WHEN_WORDS)
    return any(
        2 * len(asked & topic_stems(line, skip=_WHEN_WORDS)) > len(asked)
        for _, line in core_lines_about(question, memory, skip=_WHEN_WORDS)
    )


def search_messages(queue: Sequence[AnyMessage], memory: Memory, ctx: Context) -> list[AnyMessage]:
    """The search call and its result to put before the model's first step, or nothing.

    Nothing unless the newest message of the queue is the user's question, core memory
    does not cover it and recall holds messages outside the queue.
    """
    index = latest_user_index(queue)
    if index is None or index != len(queue) - 1:
        return []
    question = " ".join(content_text(queue[index]).split())
    if not question or not is_memory_question(question) or core_covers(question, memory):
        return []
    in_view = _in_view(queue)
    if memory.recall.count(exclude_message_ids=in_view) == 0:
        return []
    return _search_call(without_when_words(question), memory, ctx, in_view=in_view)


def _in_view(queue: Sequence[AnyMessage]) -> frozenset[Excluded]:
    """The queue's messages as ``(thread, id)``: ids are unique per thread only.

    A client that numbers messages per thread has a "1" in every thread; leaving out the
    bare id would hide every other thread's "1" from the search. Outside a run (no
    thread known) the bare ids.
    """
    ids = {str(m.id) for m in queue if m.id}
    try:
        thread_id = thread_of(get_runtime())
    except RuntimeError:
        return frozenset(ids)
    return frozenset((thread_id, i) for i in ids)


_WHEN_WORD = re.compile(rf"\b({'|'.join(sorted(_WHEN_WORDS))})\b", re.IGNORECASE)


def without_when_words(question: str) -> str:
    """The question without the words that say when ("this week"), if any words are left.

    They are a date, not a topic: as search words they find whatever mentions a week
    ("Ugh, what a week.") before the message that answers ("Someone stole my bike").
    """
    stripped = " ".join(_WHEN_WORD.sub(" ", question).split())
    stripped = re.sub(r"\s+([?.!,])", r"\1", stripped)
    return stripped if topic_stems(stripped) else question


def close_to_best(hits: Sequence[Hit[T]]) -> list[Hit[T]]:
    """The first `AUTO_PAGE_SIZE` hits scoring at least `CLOSE_SCORE` of the best one."""
    if not hits:
        return []
    floor = CLOSE_SCORE * hits[0].score
    return [hit for hit in hits[:AUTO_PAGE_SIZE] if hit.score >= floor]


def _search_call(
    query: str,
    memory: Memory,
    ctx: Context,
    *,
    in_view: Collection[Excluded],
) -> list[AnyMessage]:
    call_id = f"call_auto_{uuid.uuid4().hex[:20]}"
    args = {"query": query}
    try:
        found = memory.recall.search(
            query, roles=["user"], page_size=AUTO_POOL, exclude_ids=in_view
        )
    except ValueError:
        return []  # only a help: the model can still search itself
    # What the user stated, not what they asked: an earlier question ("What is my name?")
    # shares the form of a new one ("What is the name of my dog?"), and a small model
    # answers the new one from it, or from its own earlier reply, right or wrong.
    stated = close_to_best([hit for hit in found.hits if not is_question(hit.item.text)])
    page = SearchPage(hits=stated, total=len(stated), page=0, page_size=AUTO_PAGE_SIZE)
    shown = format_page(page, message_line, ctx)
    content = tool_result(True, f"{shown}\n{prompts.AUTO_SEARCH_NOTE}", ctx.result_char_limit)
    call = AIMessage(
        content="",
        tool_calls=[{"name": "conversation_search", "args": args, "id": call_id}],
        additional_kwargs={AUTO_FLAG: True},
        id=str(uuid.uuid4()),
    )
    result = ToolMessage(
        content,
        tool_call_id=call_id,
        name="conversation_search",
        status="success",
        id=str(uuid.uuid4()),
    )
    return [call, result]
