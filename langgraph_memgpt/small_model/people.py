"""Who a fact is about: the user's people, and what tells one fact from another.

Their people by their relation, and a fact's names, numbers and relatives. Shared by the
core gate (`core_gate`: whose sentence a note is, whether a restated note is a held line)
and `same_fact` (whether a note in other words is a held line).
"""

from __future__ import annotations

import re

RELATION = (
    r"(?:mother|mum|mom|father|dad|parents?|brother|sister|siblings?|sons?|daughters?|kids?|"
    r"children|child|baby|twins?|wife|husband|partner|girlfriend|boyfriend|fianc\w*|"
    r"grand\w+|gran|granny|nana|nan|nanna|aunt|auntie|uncle|cousin|niece|nephew|"
    r"god(?:son|daughter|mother|father|child)|step\w+|\w+-in-law|ex-\w+|family|in-laws?|"
    r"best friend|friend|(?:best\s+)?mate|bestie|buddy|pal|boss|colleague|flatmate|roommate|"
    r"dog|cat|pet|horse)"
)
"""The words for the people and animals of someone's life, as a regular expression."""
KEPT_ANIMALS = frozenset(
    """parrot budgie cockatiel canary hamster gerbil rabbit bunny tortoise turtle gecko lizard
    snake ferret goldfish pony retriever labrador spaniel terrier collie poodle beagle pug
    dachshund husky greyhound whippet sheepdog kitten puppy tabby""".split()
)
"""Animals a person keeps, by kind: "our golden retriever Bruno" names one of theirs."""

_RELATION_WORD = re.compile(RELATION, re.IGNORECASE)


def is_relation(word: str) -> bool:
    """Whether ``word`` is one of `RELATION`'s: "nana", "stepdad", "sister-in-law"."""
    return _RELATION_WORD.fullmatch(word) is not None


_NAME_WORD = re.compile(
    r"(?<![.!?:]\s)(?<![\"'\u2018\u201c])(?<!^)\b(?!I\b|I['\u2019])[A-Z][\w'\u2019-]+",
    re.MULTILINE,
)


def names_in(text: str) -> set[str]:
    """The capitalised words of ``text`` that open no sentence, line or quote: its names.

    "Wife Ngozi", "from Oslo"; not "Lives", "I'm", "'No gluten'".
    """
    return set(_NAME_WORD.findall(text))


_NUMBER = re.compile(r"\b\d[\w.:/-]*")
_KIN_WORD = re.compile(rf"\b{RELATION}\b", re.IGNORECASE)


def identities(text: str) -> set[str]:
    """What tells one fact from another of its kind: names, numbers and relations.

    "Sister Anna lives in Leeds" is not "Sister Priya lives in Leeds", nor "Lives in York"
    "Lives in Leeds", though half their words meet. A capitalised word opening a sentence
    or a quote is no name.
    """
    names = {name.lower() for name in names_in(text)}
    numbers = {m.group(0) for m in _NUMBER.finditer(text)}
    kin = {m.group(0).lower().rstrip("s") for m in _KIN_WORD.finditer(text)}
    return names | numbers | kin


__all__ = ["KEPT_ANIMALS", "RELATION", "identities", "is_relation", "names_in"]
