"""When a new fact is one memory already holds: the one near-duplicate rule.

Archival inserts (``ArchivalStore.insert``, the ``archival_memory_insert`` tool) and core
appends (``core_memory_append``) both ask this module, so a fact said twice in other words
is "already saved" in every tier, for every model, by the same rule:

- the same text once case, spacing and punctuation are set aside ("Name: Ada." and
  "name: ada"); or
- every content word of the new text is in the stored one, there are at least
  `MIN_FACT_WORDS` of them, and they are at least `SAME_FACT_SHARE` of the stored one's
  ("User's sister Priya lives in Leeds." and "The user's sister, Priya, lives in Leeds").

Content words are the words that are not function words ("the", "is", "in"), cut to their
first letters (`STEM_LETTERS`: "training" meets "trains"); numbers, negations and symbols
count ("2 cats" is not "3 cats"; "can't swim" is not "can swim"; "🍕" is not "🍣"). A new
text that adds one word the stored one lacks ("Leeds" for "York") is never its duplicate.

The thresholds are measured, not guessed: ``benchmarks/archival_dedup.py`` inserts every
turn of the LoCoMo and BEAM dev files as a passage and lists what merged (no false merge;
``benchmarks/README.md``).

Stores look the rule up by `fact_key`: two texts with the same key are always duplicates,
so an index over the key finds them without reading the agent's passages. When the agent
has vectors, its `NEAREST` passages closest in meaning are checked by the rule as well
(a restatement with fewer words: "The user's bike got stolen." beside "User's bike got
stolen outside Shinjuku station."); the vectors only find the candidates, the words decide.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence

from langgraph_memgpt.stores.words import STEM_LETTERS, STOP_WORDS

MIN_FACT_WORDS = 3
"""Fewer content words than this, and only the same text (normalised) is a duplicate:
"Sounds great!" and "Great sounds" are no fact to merge."""

COVERED_MIN_WORDS = 2
"""A stored line this short may be covered by a fuller new one (`first_covered`): "Plays
the cello." is said, and more, by "Plays the cello in an orchestra." (its words are not
"no fact to merge": the new line carries them on)."""

SAME_FACT_SHARE = 0.5
"""The new text's content words must be at least this share of the stored text's: a short
line is not "already saved" because a long passage happens to use its words."""

NEAREST = 5
"""Passages closest in meaning checked against a new one, when the agent has vectors."""

_NEGATED = re.compile(r"n[’']t\b")
_TOKEN = re.compile(r"[^\W_]+|[^\w\s]")
_KEPT_SHORT = frozenset({"no", "not", "nor"})


def _coded(token: str) -> bool:
    return any(char.isdigit() for char in token)


def _punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P")


class _PunctuationAsSpace(dict[int, int | str]):
    """A `str.translate` table that maps each punctuation code point to a space.

    Filled as characters are first met (a search normalises every result's text, and
    long messages made a per-character Python test the larger half of a word search);
    it holds at most the code points the process has seen.
    """

    def __missing__(self, code: int) -> int | str:
        value: int | str = " " if _punctuation(chr(code)) else code
        self[code] = value
        return value


_PUNCTUATION_AS_SPACE = _PunctuationAsSpace()


def normalised(text: str) -> str:
    """``text`` lower-cased, punctuation as spaces, spaces collapsed.

    Only punctuation goes (Unicode's P categories): a symbol or an emoji is part of what a
    text says ("I love 🍕" is not "I love 🍣"). Text of punctuation alone is kept as it is.
    """
    folded = text.casefold()
    spaced = folded.translate(_PUNCTUATION_AS_SPACE)
    return " ".join(spaced.split()) or " ".join(folded.split())


@functools.lru_cache(maxsize=4096)
def fact_words(text: str) -> frozenset[str]:
    """The content words of ``text``, cut to stems; numbers, negations and symbols kept.

    A word holding a digit is a number or a code ("w1", "B2", "k7q2291"): kept whole, of
    any length, since "room B2" is not "room B3".
    """
    tokens = _TOKEN.findall(_NEGATED.sub(" not", text.casefold()))
    return frozenset(
        token if _coded(token) or len(token) == 1 else token[:STEM_LETTERS]
        for token in tokens
        if _coded(token)
        or token in _KEPT_SHORT
        or (len(token) > 2 and token not in STOP_WORDS)
        or (len(token) == 1 and not token.isalnum() and not _punctuation(token))
    )


def same_fact(new: str, stored: str, min_words: int = MIN_FACT_WORDS) -> bool:
    """Whether ``new`` says nothing ``stored`` does not (the rule in the module docstring)."""
    if normalised(new) == normalised(stored):
        return True
    words, held = fact_words(new), fact_words(stored)
    return len(words) >= min_words and words <= held and len(words) >= SAME_FACT_SHARE * len(held)


def first_same(new: str, stored: Iterable[str]) -> str | None:
    """The first of ``stored`` that ``new`` duplicates (`same_fact`), or None."""
    return next((text for text in stored if same_fact(new, text)), None)


def first_covered(new: str, stored: Iterable[str]) -> str | None:
    """The first of ``stored`` that ``new`` says all of and more (it duplicates ``new``).

    A stored line of `COVERED_MIN_WORDS` content words counts: the fuller line keeps them.
    """
    return next(
        (text for text in stored if text.strip() and same_fact(text, new, COVERED_MIN_WORDS)),
        None,
    )


def with_line(lines: Sequence[str], new: str) -> list[str]:
    """``lines`` (a block's) after adding ``new`` by the rule: nothing said twice.

    ``new`` is left out when a line already says it (`first_same`); when ``new`` says all
    a line says and more ("Works as a nurse in Porto, Portugal" beside "Works as a nurse
    in Porto"), it takes that line's place (`first_covered`), so the block keeps the
    fuller wording once; else it is added at the end.
    """
    if first_same(new, lines) is not None:
        return list(lines)
    covered = first_covered(new, lines)
    if covered is None:
        return [*lines, new]
    at = lines.index(covered)
    return [*lines[:at], new, *(line for line in lines[at + 1 :] if not same_fact(line, new))]


def fact_key(text: str) -> str:
    """A short key equal for two texts whenever they have the same content words.

    With fewer than `MIN_FACT_WORDS` content words, the key is the normalised text's. Equal
    keys always mean `same_fact`; stores keep the key in an indexed column.
    """
    words = fact_words(text)
    basis = (
        "w:" + " ".join(sorted(words))
        if len(words) >= MIN_FACT_WORDS
        else "t:" + (normalised(text))
    )
    return hashlib.sha256(basis.encode("utf-8", "surrogatepass")).hexdigest()[:24]


__all__ = [
    "MIN_FACT_WORDS",
    "NEAREST",
    "SAME_FACT_SHARE",
    "fact_key",
    "fact_words",
    "first_covered",
    "first_same",
    "normalised",
    "same_fact",
    "with_line",
]
