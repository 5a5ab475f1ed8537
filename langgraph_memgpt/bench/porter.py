"""The Porter stemmer as LoCoMo's answer F1 uses it (NLTK's default ``PorterStemmer``).

LoCoMo's evaluation stems every answer token with ``nltk.stem.PorterStemmer()``, whose
default mode is Porter's 1980 algorithm plus NLTK's extensions (a few irregular words,
``-ies``/``-ied`` on four-letter words, ``y -> i`` only after a consonant, step-2 ``-fulli``
and ``-logi``). nltk is not a dependency of this package, so the algorithm is written out here;
the test suite checks it against words whose NLTK stems are known.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

_VOWELS = frozenset("aeiou")

#: Words NLTK stems by table rather than by rule.
_IRREGULAR: dict[str, str] = {
    "skies": "sky",
    "sky": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}

Condition = Callable[[str], bool] | None
Rule = tuple[str, str, Condition]


def _is_consonant(word: str, i: int) -> bool:
    char = word[i]
    if char in _VOWELS:
        return False
    if char == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``[C](VC)^m[V]``."""
    m = 0
    after_vowel = False
    for i in range(len(stem)):
        consonant = _is_consonant(stem, i)
        if consonant and after_vowel:
            m += 1
        after_vowel = not consonant
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _ends_cvc(word: str) -> bool:
    if len(word) >= 3:
        return (
            _is_consonant(word, len(word) - 3)
            and not _is_consonant(word, len(word) - 2)
            and _is_consonant(word, len(word) - 1)
            and word[-1] not in "wxy"
        )
    return len(word) == 2 and not _is_consonant(word, 0) and _is_consonant(word, 1)


def _m_positive(stem: str) -> bool:
    return _measure(stem) > 0


def _m_above_one(stem: str) -> bool:
    return _measure(stem) > 1


def _apply(word: str, rules: Sequence[Rule]) -> str:
    """The first rule whose suffix ends ``word`` decides: applied if its condition holds."""
    for suffix, replacement, condition in rules:
        if word.endswith(suffix):
            stem = word[: len(word) - len(suffix)]
            if condition is None or condition(stem):
                return stem + replacement
            return word
    return word


def _step1a(word: str) -> str:
    if word.endswith("ies") and len(word) == 4:
        return word[:-3] + "ie"
    return _apply(
        word, [("sses", "ss", None), ("ies", "i", None), ("ss", "ss", None), ("s", "", None)]
    )


def _step1b(word: str) -> str:
    if word.endswith("ied"):
        return word[:-3] + ("ie" if len(word) == 4 else "i")
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if not _has_vowel(stem):
                return word
            break
    else:
        return word
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if _ends_double_consonant(stem) and stem[-1] not in "lsz":
        return stem[:-1]
    if _measure(stem) == 1 and _ends_cvc(stem):
        return stem + "e"
    return stem


def _step1c(word: str) -> str:
    if word.endswith("y") and len(word) > 2 and _is_consonant(word, len(word) - 2):
        return word[:-1] + "i"
    return word


_STEP2: list[Rule] = [
    ("ational", "ate", _m_positive),
    ("tional", "tion", _m_positive),
    ("enci", "ence", _m_positive),
    ("anci", "ance", _m_positive),
    ("izer", "ize", _m_positive),
    ("bli", "ble", _m_positive),
    ("alli", "al", _m_positive),
    ("entli", "ent", _m_positive),
    ("eli", "e", _m_positive),
    ("ousli", "ous", _m_positive),
    ("ization", "ize", _m_positive),
    ("ation", "ate", _m_positive),
    ("ator", "ate", _m_positive),
    ("alism", "al", _m_positive),
    ("iveness", "ive", _m_positive),
    ("fulness", "ful", _m_positive),
    ("ousness", "ous", _m_positive),
    ("aliti", "al", _m_positive),
    ("iviti", "ive", _m_positive),
    ("biliti", "ble", _m_positive),
    ("fulli", "ful", _m_positive),
    # NLTK measures -logi's stem with its "l", so short stems (geo-, theo-) qualify.
    ("logi", "log", lambda stem: _m_positive(stem + "l")),
]


def _step2(word: str) -> str:
    # NLTK applies -alli first and runs the result through step 2 again.
    if word.endswith("alli") and _m_positive(word[:-4]):
        return _step2(word[:-4] + "al")
    return _apply(word, _STEP2)


_STEP3: list[Rule] = [
    ("icate", "ic", _m_positive),
    ("ative", "", _m_positive),
    ("alize", "al", _m_positive),
    ("iciti", "ic", _m_positive),
    ("ical", "ic", _m_positive),
    ("ful", "", _m_positive),
    ("ness", "", _m_positive),
]

_STEP4: list[Rule] = [
    (suffix, "", _m_above_one)
    for suffix in ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent")
] + [
    ("ion", "", lambda stem: _m_above_one(stem) and stem[-1:] in ("s", "t")),
    *((suffix, "", _m_above_one) for suffix in ("ou", "ism", "ate", "iti", "ous", "ive", "ize")),
]


def _step5(word: str) -> str:
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _ends_cvc(stem)):
            word = stem
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        word = word[:-1]
    return word


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Stem one lower- or mixed-case word the way NLTK's ``PorterStemmer().stem`` does.

    Example:
        >>> [stem(w) for w in ("running", "ponies", "generalization", "dies")]
        ['run', 'poni', 'gener', 'die']
    """
    word = word.lower()
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 2:
        return word
    word = _step1a(word)
    word = _step1b(word)
    word = _step1c(word)
    word = _step2(word)
    word = _apply(word, _STEP3)
    word = _apply(word, _STEP4)
    return _step5(word)
