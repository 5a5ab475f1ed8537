"""What a search query names besides its words: calendar dates and participants.

A question such as "what did Maria start on 3 June, 2023?" names the day it is about; one
such as "what does Melanie think ...?" names who said it. Both are facts recall memory
stores next to every message (``created_at``, ``name``), and archival next to every
passage (``created_at``, its tags), so search can use them as signals of their own instead
of hoping the words match.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from typing import Any

from langgraph_memgpt.stores.dates import day_after_iso, shift_day
from langgraph_memgpt.stores.words import query_words

DATE_REACH_DAYS = 7
"""A day named in a query still lifts items this many days away (linearly less)."""

MONTHS = {  # month name or abbreviation -> number (shared with the LoCoMo loader)
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MON = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_PATTERNS = [
    ("dmy", re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MON},?\s+(\d{{4}})\b", re.IGNORECASE)),
    ("mdy", re.compile(rf"\b{_MON}\s+{_DAY},?\s+(\d{{4}})\b", re.IGNORECASE)),
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("my", re.compile(rf"\b{_MON},?\s+(\d{{4}})\b", re.IGNORECASE)),
]


def mentioned_dates(text: str) -> list[tuple[date, date]]:
    """Calendar days or months named in ``text``, as inclusive ``(first, last)`` day ranges.

    Understands "3 June, 2023", "3rd of June 2023", "June 3, 2023", "2023-06-03" and
    "June 2023" (the whole month). Relative dates ("last week") are left to the model,
    which knows today's date and can pass ``start_date``/``end_date``.
    """
    found: list[tuple[date, date]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(start <= m.start() < end for start, end in taken):
                continue
            try:
                if kind == "dmy":
                    day = date(int(m[3]), MONTHS[m[2].lower()], int(m[1]))
                    found.append((day, day))
                elif kind == "mdy":
                    day = date(int(m[3]), MONTHS[m[1].lower()], int(m[2]))
                    found.append((day, day))
                elif kind == "iso":
                    day = date(int(m[1]), int(m[2]), int(m[3]))
                    found.append((day, day))
                else:
                    year, month = int(m[2]), MONTHS[m[1].lower()]
                    first = date(year, month, 1)
                    last = date(year, month, calendar.monthrange(year, month)[1])
                    found.append((first, last))
            except (KeyError, ValueError):
                continue
            taken.append((m.start(), m.end()))
    return found


def date_closeness(day: date, ranges: Iterable[tuple[date, date]], reach_days: int) -> float:
    """1.0 inside a named range, falling linearly to 0 at ``reach_days`` outside it.

    People misremember a day by a few; a message from the day after still deserves a lift.
    """
    best = 0.0
    for first, last in ranges:
        if first <= day <= last:
            return 1.0
        distance = (first - day).days if day < first else (day - last).days
        best = max(best, 1.0 - distance / reach_days)
    return max(best, 0.0)


def mentioned_names(text: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` appear in ``text`` as whole words (case-insensitive)."""
    return {
        name
        for name in names
        if name.strip() and re.search(rf"(?<!\w){re.escape(name.strip())}(?!\w)", text, re.I)
    }


TAGS_LOOKED_AT = 1000
"""The most of an agent's tags a hybrid archival search reads before its words
(:func:`may_name_a_tag`); an agent with more starts the search's vectors after its words."""


def may_name_a_tag(query: str, tags: Sequence[str]) -> bool:
    """Whether archival's hybrid vector text may need the word matches' tags first.

    That text is the query without the tags of its word matches that it names
    (:func:`topic_of`), so a query naming none of the agent's ``tags`` (read up to
    :data:`TAGS_LOOKED_AT` + 1) is embedded as it is whatever the words match, and its
    vectors can start before them (``stores.search.SignalSource.vectors_wait_for_words``);
    nor can its tag signal (:func:`mention_signals`) name one. True when it names one, or
    when more tags were read than were looked at.
    """
    return len(tags) > TAGS_LOOKED_AT or bool(mentioned_names(query, tags))


class TagNaming:
    """:func:`may_name_a_tag` for one search's query, the agent's tags read once.

    Both archival signals ask it: whether the vector text must wait for the words
    (``vectors_wait_for_words``), and whether the tag signal needs the candidates' tags
    (``named_signals``); a query that names none of the agent's tags needs neither.
    ``agent_tags(limit)`` reads up to ``limit`` of the agent's distinct tags.
    """

    def __init__(self, agent_tags: Callable[[int], Sequence[str]]) -> None:
        self._agent_tags = agent_tags
        self._answers: dict[str, bool] = {}

    def __call__(self, query: str) -> bool:
        """Whether ``query`` may name one of the agent's tags (:func:`may_name_a_tag`)."""
        if query not in self._answers:
            self._answers[query] = may_name_a_tag(query, self._agent_tags(TAGS_LOOKED_AT + 1))
        return self._answers[query]


def without_names(text: str, names: Iterable[str]) -> str:
    """``text`` with each of ``names`` (and a possessive ``'s`` after it) taken out.

    A participant's name is in a large share of their conversation's messages (who said
    it, who it was said to), so in a query's embedding it carries no topic: it only pulls
    the query towards messages that say the name. Who is asked about is better left to the
    words and speaker signals, and the meaning to the rest of the query.
    """
    for name in names:
        if name.strip():
            pattern = rf"(?<!\w){re.escape(name.strip())}(?:['\u2019]s)?(?!\w)"
            text = re.sub(pattern, " ", text, flags=re.I)
    return " ".join(text.split())


def date_scores(
    query: str, created_between: Callable[[str, str], Iterable[tuple[int, str]]]
) -> dict[int, float] | None:
    """How close each item's day is to the days ``query`` names; None when it names none.

    ``created_between(low, high)`` returns ``(id, created_at)`` of the candidates created
    from ``low`` up to (not including) ``high``, both ISO text: the named days widened by
    :data:`DATE_REACH_DAYS`.
    """
    ranges = mentioned_dates(query)
    if not ranges:
        return None
    low = shift_day(min(r[0] for r in ranges), -DATE_REACH_DAYS)
    high = shift_day(max(r[1] for r in ranges), DATE_REACH_DAYS)
    scores = {
        int(key): date_closeness(date.fromisoformat(str(created)[:10]), ranges, DATE_REACH_DAYS)
        for key, created in created_between(low.isoformat(), day_after_iso(high))
    }
    return {key: value for key, value in scores.items() if value > 0}


def created_between(
    execute: Callable[[str, Sequence[object]], Iterable[Any]],
    table: str,
    where: str,
    params: Sequence[object],
    mark: str,
) -> Callable[[str, str], list[tuple[int, str]]]:
    """The ``created_between`` of :func:`date_scores` for one search of ``table``.

    The candidates are ``table``'s rows over the alias ``b`` that pass ``where`` (the
    search's filters, with ``params``); ``execute`` runs a statement on the search's
    connection, and ``mark`` is the engine's placeholder. Every tier of both backends
    reads a named day this way, so the statement is written once.
    """
    sql = (
        f"SELECT b.id, b.created_at FROM {table} AS b WHERE {where} "
        f"AND b.created_at >= {mark} AND b.created_at < {mark}"
    )
    return lambda low, high: list(execute(sql, (*params, low, high)))


def mention_signals(
    query: str,
    created_between: Callable[[str, str], Iterable[tuple[int, str]]],
    names: Iterable[str],
    holders: Callable[[str], Iterable[int]],
) -> list[dict[int, float]]:
    """The signals of what ``query`` names: a day (:func:`date_scores`) and one name.

    ``names`` are the names the tier knows (participants, tags); when the query mentions
    exactly one, ``holders(name)`` gives the candidates carrying it, each scored 1.0. Only
    candidates another signal found: every message of a participant would be half the
    memory, and on its own a name says nothing of topic. A signal is only added when the
    query names such a thing, so other queries rank exactly as before.
    """
    out: list[dict[int, float]] = []
    days = date_scores(query, created_between)
    if days is not None:
        out.append(days)
    named = mentioned_names(query, names)
    if len(named) == 1:
        out.append(dict.fromkeys((int(key) for key in holders(next(iter(named)))), 1.0))
    return out


ASKER_WORDS = frozenset({"i", "me", "my", "mine", "myself", "user"})
"""Words by which a query speaks of its asker: the first person singular (a user's own
question, as the agent's pre-think search passes it on) and "user" (the agent's own
queries: "the user's sprint")."""

ASKER_WEIGHT = 1.0
"""The weight of the asker's lift (``stores.search``), as a named participant's. It was 0.5
when the lift came (bf9779b: at 1.0 one BEAM dev chat lost a question then). Since the
spread over threads and one result a repeated text, 1.0 lowers no BEAM dev chat and no
ability, at 100K tokens and at 1M, and 0.75 lowers one chat (``results/history.md``, "The
asker's lift again"). LoCoMo dev's questions name people, and it is unchanged."""

ASKER_WEIGHT_ACROSS = 0.5
"""The asker's lift for a question across conversations (`asks_across_sessions`): a
summary of how the user went about something is told as much by the assistant's replies
as by the user's messages (half of a BEAM dev summary's evidence), and at 1.0 two of ten
summaries lost all their evidence from the page. Not for a question about what the asker
brought up themselves (`asks_for_own_words`): its lift is the whole `ASKER_WEIGHT`."""

_OWN_WORDS = re.compile(r"\bI\s+(?:br(?:ought|ing)\s+up|mention(?:ed)?|raised?|ask(?:ed)?)\b")


def asks_for_own_words(query: str) -> bool:
    """Whether ``query`` asks what its asker brought up themselves.

    "The order in which I brought up ...", "what I asked about": the answer is in their
    own messages, not in the replies. A case-sensitive "I": the asker of themselves.
    """
    return _OWN_WORDS.search(query) is not None


def asks_about_asker(query: str) -> bool:
    """Whether ``query`` is about its asker: "have I used Bootstrap?", "when does my sprint end?".

    Such a question is about what its asker said, most often in their own messages, while
    the assistant's replies to them (in a chat with an assistant, several times as long)
    hold more of the query's words and outrank them on words and meaning alike.
    """
    return not ASKER_WORDS.isdisjoint(query_words(query))


_ACROSS_SESSIONS = re.compile(
    r"\b(?:(?:across|throughout|over) (?:the course of )?(?:all )?(?:of )?"
    r"(?:our|my|the|these|those|different|multiple|several|various) (?:[\w'-]+ ){0,3}"
    r"(?:conversations|sessions|chats|discussions|talks|requests|messages|questions|exchanges)"
    r"|in (?:what|which) order|the order|order in which|progress(?:ed|ion)?|over time"
    r"|evolv\w*|timeline|summar\w*)\b",
    re.IGNORECASE,
)


def asks_across_sessions(query: str) -> bool:
    """Whether ``query`` asks about what was said over several conversations.

    "Can you list the order in which I brought up ...", "how has my project progressed",
    "summarize ... across our discussions": the answer is spread over sessions, a message
    or two in each, where a plain ranking fills the page from the one session that says
    the most about it.
    """
    return bool(_ACROSS_SESSIONS.search(query))


_BETWEEN = (
    re.compile(
        r"\bbetween\s+when\s+(?P<first>[^?!]+?),?\s+and\s+when\s+(?P<second>[^?!]+)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\bbetween\s+(?:when\s+)?(?P<first>[^?.!]+?)\s+and\s+(?:when\s+)?(?P<second>[^?.!]+)",
        re.IGNORECASE,
    ),
)
"""Two events asked between: "between when X and when Y" split there, else at the first
"and" after "between"."""


def two_events(query: str) -> tuple[str, str] | None:
    """The two events a question asks between, or None.

    "How many days passed between when I got my API key and when I finished the
    wireframe?" asks between "I got my API key" and "I finished the wireframe".

    Each event is told in its own message, often sessions apart, and the question's words
    rank one of them far above the other: each is also searched alone
    (``search.hybrid_search``). None unless both parts have words to search.
    """
    found = _BETWEEN[0].search(query) or _BETWEEN[1].search(query)
    if found is None:
        return None
    first, second = found["first"].strip(" ,"), found["second"].strip(" ,")
    if not (query_words(first) and query_words(second)):
        return None
    return first, second


def topic_of(query: str, names: Iterable[str]) -> str:
    """``query`` without the ``names`` it mentions, to embed; the query itself if nothing is left.

    See :func:`without_names`: on LoCoMo this lifted hybrid recall (participants' names)
    and archival (the speaker tags of conversation passages) alike.
    """
    topic = without_names(query, mentioned_names(query, names))
    return topic if query_words(topic) else query
