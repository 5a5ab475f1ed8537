"""The words a search matches on, for every backend (no database engine here).

Queries are split into words and each word is matched on its own, so any text (``don't``,
``C++ -O2``, an unbalanced parenthesis) is a valid query in SQLite FTS5 and in Postgres
full-text search alike.
"""

from __future__ import annotations

import re

# Letters and digits of any script. Underscores, punctuation and emoji are separators,
# as they are for FTS5's default unicode61 tokenizer.
_WORD = re.compile(r"[^\W_]+")

MAX_QUERY_WORDS = 64

TERM_MATCH_CAP = 250
"""Most matches a query term is scored for (its newest), in every backend."""

# Function words questions are made of ("when did ... the ..."). OR-ed into a query they
# only add noise, since every message matches some of them.
STOP_WORDS: frozenset[str] = frozenset(
    """a an and are as at be but by did do does for from had has have he her his how i in is it
    its me my of on or our she so that the their them they this to was we were what when where
    which who whom why will with you your""".split()
)


def query_words(text: str) -> list[str]:
    """Split ``text`` into distinct lowercase words, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_WORDS]


def query_terms(text: str) -> list[str]:
    """The words of ``text`` a search matches on: its words minus stop words.

    A query made only of stop words ("who are you?") keeps them, so it still finds
    something.
    """
    words = query_words(text)
    return [w for w in words if w not in STOP_WORDS] or words


STEM_LETTERS = 5
"""Words are compared on their first letters, so "learning" meets "learn" and "started"
meets "start" without a stemmer for every language."""


def topic_stems(text: str, skip: frozenset[str] = frozenset()) -> set[str]:
    """The content words of ``text`` (no stop words, no ``skip``), cut to a stem.

    Numbers are content ("2 kids" is not "3 kids"); other words of one or two letters
    are not. Every word of ``text`` counts, however long it is: a query is cut to its first
    `MAX_QUERY_WORDS` words (`query_words`), a text compared by its topic is not (a fact
    at the end of a long ``human`` block, a name late in a long message to forget).
    """
    return {
        word if word.isdigit() else word[:STEM_LETTERS]
        for word in set(_WORD.findall(text.lower()))
        if (len(word) > 2 or word.isdigit()) and word not in STOP_WORDS and word not in skip
    }
