"""Replies that speak to the user: the user's facts said back as "you", never as "I".

Asked "What am I allergic to?", a 1.5B model that just read the user's own words ("I'm
allergic to hazelnuts", in a search result or in its notes) often copies them as they are:
"I'm allergic to hazelnuts." The user reads the agent claiming their allergy. Larger models
do not do this; the embedded model's wrapper (`LocalToolCallingChatModel`) repairs its
replies with `to_the_user` before anything else sees them.

The repair is narrow on purpose. It touches a reply only when the user asked about
themselves (`auto_search.is_memory_question`) or told news about themselves (then the reply
sentence must be made of their words, see `_says_a_stated_fact`), and in it only a sentence
(or, in a sentence that also speaks to the user, a clause between commas, colons or dashes)
that

* speaks in the first person and never addresses the user (a clause with "you" in it is
  the agent speaking as itself: "I remember you love teal"), and
* carries what the user stated: its content words, leaving out the question's own and the
  words an agent uses about its own knowledge ("know", "remember", "sure"...), are found
  (a third of them at least) in the user's stated facts (their ``human`` block, the
  results the agent read, their earlier messages).

Such a sentence gets its first-person words turned to the second person ("I'm" -> "you're",
"my" -> "your", "we" -> "you"), and, answering a question, the third person it copied from
its notes too ("User's husband Karl" -> "Your husband Karl"). Quoted words stay as they
were: "'My Brilliant Friend'" is a title, and a quote is someone's words. "I don't know
that." and "I found nothing about it." are left alone: they state nothing the user said.

A sentence in no person at all that names someone the user introduced by their relation
("my daughter Noor", "Brother Otto" in ``human``) gets the relation back, said to the user:
"Noor turns seven in March." -> "Your daughter Noor turns seven in March." Without it the
answer names a stranger; the user asked about *their* daughter.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langgraph_memgpt.prompts import DONT_KNOW, HUMAN_BLOCK, without_time
from langgraph_memgpt.small_model.core_gate import (
    human_lines,
    introduced_names,
    name_in,
    names_themselves,
    states_the_name,
    tells_without_i,
)
from langgraph_memgpt.small_model.kinds import (
    about_the_animal,
    animal_asked,
    kind_asked,
    kind_of,
    likely_of,
    may_be,
)
from langgraph_memgpt.small_model.people import KEPT_ANIMALS, RELATION, is_relation, names_in
from langgraph_memgpt.stores.words import STOP_WORDS, topic_stems
from langgraph_memgpt.turn.tokens import content_text

_APOSTROPHE = "['\u2019]"
_SECOND_FOR_FIRST = {
    "i'm": "you're",
    "i am": "you are",
    "i wasn't": "you weren't",
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
_WE = re.compile(
    rf"\b(we{_APOSTROPHE}re|we{_APOSTROPHE}ve|we|us|our|ours|ourselves)\b", re.IGNORECASE
)
_SENTENCE = re.compile(r"(?<=[.!?])(\s+)")

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
        "about not don't doesn't didn't can can't cannot won't isn't aren't wasn't weren't "
        "haven't hasn't nothing anything something everything nobody never any"
    )
)
"""Stems of negations and pronoun-like words the search stop list keeps: they carry no fact
("I don't know: I have nothing about that" shares "don't" and "about" with any user)."""


ANSWER_WORDS = frozenset(
    topic_stems("yes yeah yep no nope sure certainly indeed correct right exactly")
)
"""Stems of the words that open an answer ("Yes, ..."): they carry no fact either."""


_COPIED_IDENTITY = re.compile(
    rf"^\W*(?:(?:yes|yeah|oh|so|right)\W+)?i(?:{_APOSTROPHE}m|\s+am)\s+(?:an?\s+)?[\w-]+\W*$",
    re.IGNORECASE,
)
"""The agent saying it is what the user just said they are, and nothing else."""


def _says_a_stated_fact(sentence: str, question: str, stated: set[str], echo: bool) -> bool:
    own = topic_stems(sentence) - AGENT_WORDS - FUNCTION_WORDS - ANSWER_WORDS
    words = own - topic_stems(question)
    if not echo and not words:
        # An answer made only of the words of a question the user asked about themselves
        # ("Do I eat meat?" -> "Yes, I don't eat meat."): its first person is the user's,
        # unless the agent speaks of what it knows ("I have nothing about meat").
        return (
            bool(own)
            and not topic_stems(sentence) & AGENT_WORDS
            and bool(_FIRST_PERSON.search(question))
        )
    if echo:
        # Replying to news, the agent may well speak of itself ("I love jazz too"): only a
        # sentence made of the user's words, two at least, is their statement copied; or
        # what they are, in their one word ("I'm pescatarian." -> "I'm a pescatarian.").
        if len(words) == 1 and words <= stated and _COPIED_IDENTITY.match(sentence):
            return True
        return len(words) >= 2 and 3 * len(words & stated) >= 2 * len(words)
    # A third is enough: "My favourite color is teal" holds one word of the fact ("teal")
    # beside words the user put otherwise ("love the colour").
    return bool(words) and 3 * len(words & stated) >= len(words)


_QUOTED = re.compile(
    r'"[^"\n]*"|\u201c[^\u201d\n]*\u201d|\u2018[^\u2019\n]*\u2019|(?<!\w)\'[^\'\n]+\'(?!\w)'
)
_ADVERBS = (
    r"(?:(?:just|also|really|still|usually|always|never|often|now|only|even|already|"
    r"sometimes|recently|currently)\s+)*"
)
_USER_FORMS = re.compile(
    rf"\b(?:the\s+)?user(?:(?P<own>['\u2019]s)\b|\s+(?P<adverbs>{_ADVERBS})"
    r"(?P<verb>[a-z]+(?:n['\u2019]t)?)\b|\b)",
    re.IGNORECASE,
)
_USER_VERBS = {
    "is": "are",
    "isn't": "aren't",
    "was": "were",
    "wasn't": "weren't",
    "has": "have",
    "hasn't": "haven't",
    "does": "do",
    "doesn't": "don't",
}
_VERB_LIKE = re.compile(r"^[a-z]+(?<!ss)(?<!us)(?<!is)s$")
_NOT_VERBS = frozenset(
    "always sometimes perhaps nowadays afterwards towards besides thanks yes its news "
    "cheers".split()
)

_GIVEN_NAME = re.compile(
    r"^[ \t-]*(?:(?i:user['\u2019]s)\s+)?(?i:name) is ([A-Z][\w'\u2019-]+(?: [A-Z][\w'\u2019-]+)?)"
    r"|^[ \t-]*(?i:is) ([A-Z][\w'\u2019-]+)\s*[,.]"
    r"|\b(?i:call|calls) (?i:user|me|them) ([A-Z][\w'\u2019-]+)",
    re.M,
)


def user_names(stated: str) -> set[str]:
    """The names the user gave themselves in ``stated`` ("Name is Ines.", "I'm Ines.")."""
    given = {next(g for g in m.groups() if g) for m in _GIVEN_NAME.finditer(stated)}
    return given | introduced_names(stated)


@functools.lru_cache(maxsize=256)
def _named_forms(name: str) -> re.Pattern[str]:
    """The user's own name standing for them: possessive, or the subject of a verb.

    "Rosa is Ines' younger sister" is the user's sister said of someone else; the name
    alone ("Thanks, Ines!") is the user addressed, and stays, as does "Ines's the name"
    (its "'s" is "is").
    """
    verbs = "|".join(re.escape(v) for v in sorted(_USER_VERBS, key=len, reverse=True))
    return re.compile(
        rf"\b{re.escape(name)}(?:(?P<own>['\u2019]s\b(?!\s+(?:the|a|an)\b)|(?<=s)['\u2019](?!\w))|"
        rf"\s+(?P<adverbs>{_ADVERBS})(?P<verb>{verbs}|[a-z]+(?<!ss)(?<!us)(?<!is)s)\b)"
    )


KIN = (
    frozenset(
        """mother father mum mom dad parent parents brother brothers sister sisters son sons
    daughter daughters wife husband partner boyfriend girlfriend fiance fiancee spouse child
    children kid kids twin twins baby cousin aunt uncle niece nephew grandma grandpa
    grandmother grandfather grandson granddaughter stepson stepdaughter friend colleague
    boss manager neighbour neighbor roommate flatmate housemate dog dogs cat cats pet pets
    puppy kitten horse""".split()
    )
    | KEPT_ANIMALS
)
"""Nouns for the people and animals in someone's life: a closed class of English, read
from what the user stated ("my wife Ilse", "Brother Otto is a pilot", "a dog called Socks")."""
_NAMES = r"[A-Z][\w'\u2019-]*(?:(?:\s*,\s*|\s+and\s+|\s*&\s*)[A-Z][\w'\u2019-]*)*"
_RELATIVE = re.compile(
    rf"(?:\b(?i:my|our|user['\u2019]s|a|an|his|her|their)\s+|^[ \t-]*)"
    rf"(?P<relation>(?i:(?!called\b|named\b)[a-z][\w-]*\s+)?"
    rf"(?P<head>(?i:(?!called\b|named\b)[a-z][\w-]*)))\s*,?\s+"
    rf"(?:(?i:called|named)\s+)?(?P<names>{_NAMES})",
    re.MULTILINE,
)


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _QUOTED.finditer(text)]


def _unquoted(text: str) -> str:
    """``text`` with its quotes blanked: what the speaker says in their own voice."""
    return _QUOTED.sub(" ", text)


def _capitalise(word: str, at: int, text: str, opens_sentence: bool = True) -> str:
    # "I" is written upper case anywhere: only a sentence's first word stays capitalised.
    opens = opens_sentence and not text[:at].strip(" \"'\u201c")
    return word[0].upper() + word[1:] if opens and word else word


def _base_form(verb: str) -> str:
    """The verb after "you" for the one after "the user" ("loves" -> "love")."""
    lowered = verb.lower()
    if lowered in _USER_VERBS:
        return _USER_VERBS[lowered]
    if not _VERB_LIKE.match(lowered) or lowered in _NOT_VERBS:
        return verb
    if lowered.endswith("ies") and len(lowered) > 4:
        return verb[:-3] + "y"
    if re.search(r"(sh|ch|x|z|ss|o)es$", lowered):
        return verb[:-2]
    return verb[:-1]


def _second_person(match: re.Match[str]) -> str:
    """The second-person words for one first-person or "the user" match."""
    word = match.group(0)
    if match.re is _SWAP or match.re is _WE:
        return _SECOND_FOR_FIRST[" ".join(word.lower().replace("\u2019", "'").split())]
    if match.group("own"):
        return "your"
    verb = match.group("verb")
    return "you" if verb is None else f"you {match.group('adverbs')}{_base_form(verb)}"


def _re_voice(sentence: str, patterns: Sequence[re.Pattern[str]], opens: bool = True) -> str:
    """``sentence`` with each match of ``patterns`` outside quotes in the second person."""
    quoted = _quoted_spans(sentence)
    matches = sorted(
        (m for pattern in patterns for m in pattern.finditer(sentence)),
        key=lambda m: (m.start(), -m.end()),
    )
    out: list[str] = []
    at = 0
    for match in matches:
        start, end = match.span()
        if start < at or any(a <= start < b for a, b in quoted):
            continue
        out.append(sentence[at:start])
        out.append(_capitalise(_second_person(match), start, sentence, opens))
        at = end
    out.append(sentence[at:])
    return "".join(out)


def relatives(stated: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Who the user introduced by their relation: name -> (relation, names said together).

    "My daughter Noor turns seven" gives ``{"Noor": ("daughter", ("Noor",))}``; "my twins
    Aiko and Ren" gives both names the relation "twins" and the pair; "Zsuzsa, my
    girlfriend, ..." (`_APPOSED`) gives Zsuzsa the relation "girlfriend". A relation word right
    before a name of two words ("Granddaughter Wee Eilidh") is read by `_KIN_THEN_NAME`: the
    general pattern took "Granddaughter Wee" for a relation and found no kin in it.
    """
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for match in _KIN_THEN_NAME.finditer(stated):
        name = match.group("name")
        found.setdefault(name, (match.group("kin").lower(), (name,)))
    for match in _APPOSED.finditer(stated):
        relation = match.group("relation").lower()
        head = relation.split()[-1]
        if head in KIN or is_relation(head) or head in KEPT_ANIMALS:
            found.setdefault(match.group("name"), (relation, (match.group("name"),)))
    for match in _RELATIVE.finditer(stated):
        head = match.group("head").lower()
        if head not in KIN and not is_relation(head):
            continue
        relation = match.group("relation").lower()
        words = relation.split()
        if len(words) == 2 and words[0] in STOP_WORDS | {"user's", "user\u2019s"}:
            relation = words[1]
        names = tuple(re.split(r"\s*,\s*|\s+and\s+|\s*&\s*", match.group("names")))
        names = tuple(n for n in names if len(n) > 1)  # "My husband Karl and I"
        for name in names:
            found.setdefault(name, (relation, names))
    return found


_APPOSED = re.compile(
    r"(?<![\w'\u2019-])(?P<name>[A-Z][\w'\u2019-]+)\s*(?:,|\(|[\u2014\u2013]|\s-)\s*"
    r"(?i:my|our|user['\u2019]s)\s+(?P<relation>(?:[a-z-]+\s+){0,2}[a-z-]+)\s*(?:[,)\u2014\u2013.]|\s-)"
)
"""Someone named beside their relation: "Zsuzsa, my girlfriend, ...", "Olivier (my
husband)", "Olivier \u2014 my husband \u2014 ..."."""
_KIN_THEN_NAME = re.compile(
    rf"(?:^[ \t-]*|\b(?i:my|user['\u2019]s|our)\s+)(?P<kin>(?i:{RELATION}))\s+"
    r"(?P<name>[A-Z][\w'\u2019-]+\s+[A-Z][\w'\u2019-]+)\b",
    re.MULTILINE,
)
"""A relation, then a name of two words: "Granddaughter Wee Eilidh", "my son Radu James"."""


def _name_relation(
    sentence: str, known: dict[str, tuple[str, tuple[str, ...]]], opens: bool = True
) -> str:
    """``sentence`` with "your <relation>" before the first relative it names, if it lacks it.

    A plural relation ("twins") goes before its names only when all of them are there.
    """
    stems = topic_stems(sentence)
    quoted = _quoted_spans(sentence)
    firsts = []
    for name, (relation, names) in known.items():
        match = re.search(rf"\b{re.escape(name)}\b", sentence)
        if match is None or any(a <= match.start() < b for a, b in quoted):
            continue
        if topic_stems(relation) & stems:
            continue  # "Aiko and Ren are twins": the relation is said already
        if len(names) > 1 and not all(re.search(rf"\b{re.escape(n)}\b", sentence) for n in names):
            continue
        firsts.append((match.start(), relation))
    if not firsts:
        return sentence
    at, relation = min(firsts)
    return sentence[:at] + _capitalise(f"your {relation} ", at, sentence, opens) + sentence[at:]


_OPENING = re.compile(r"^[ \t-]*([A-Z][a-z]+)\b", re.MULTILINE)
_OWN_NOUNS = frozenset({"name", "favourite", "favorite", "birthday", "job", "home"}) | KIN
"""Nouns a note about the user may open with, its "user's" left out ("Name is Ada.")."""


def note_openings(stated: str) -> set[str]:
    """The first words of the note-style lines in ``stated`` ("Works as a welder." -> works).

    Notes about the user leave the subject out, as the instructions' examples do ("Keeps
    bees.", "Name is Ada.", "Brother Otto is a pilot."); a user's own message seldom opens
    with a verb in the third person or a bare noun.
    """
    found = set()
    for match in _OPENING.finditer(stated):
        word = match.group(1).lower()
        if word in _OWN_NOUNS or word in _USER_VERBS or _base_form(word) != word:
            found.add(word)
    return found


def _missing_subject(sentence: str, openings: set[str]) -> str | None:
    """``sentence`` said to the user when it opens as a note does, without a subject.

    "Works as a welder." -> "You work as a welder."; "Name is Ada." -> "Your name is Ada.";
    "Brother Otto is a pilot." -> "Your brother Otto is a pilot." None when it opens
    otherwise.
    """
    match = re.match(r"\s*([A-Z][a-z]+)\b", sentence)
    if match is None or match.group(1).lower() not in openings or sentence.rstrip().endswith("?"):
        return None
    word = match.group(1).lower()
    start, end = match.span(1)
    said = f"Your {word}" if word in _OWN_NOUNS else f"You {_base_form(word)}"
    return sentence[:start] + said + sentence[end:]


_CLAUSE = re.compile(r"(?<=[,;:])(\s+)|(\s+[\u2014\u2013-]\s+)")


def to_the_user(reply: str, question: str, stated: str, *, echo: bool = False) -> str:
    """``reply`` with the user's facts said to them (see the module docstring).

    Each sentence that voices what the user stated as the agent's own (or, answering a
    question, in the third person of its notes) is turned to the second person; one in no
    person that names a relative of the user gets the relation; anything else is left as
    it is. A sentence that also speaks to the user ("I'm allergic to hazelnuts, do you have
    other allergies?") is judged clause by clause, a clause with "you" in it left alone.
    ``echo``: ``question`` is the user's news, not a question, and ``stated`` that news:
    stricter (see `_says_a_stated_fact`), and only first-person words change.
    """
    stated_stems = topic_stems(stated)
    known = {} if echo else relatives(stated)
    patterns = (
        [_SWAP]
        if echo
        else [_SWAP, _USER_FORMS, *(_named_forms(n) for n in sorted(user_names(stated)))]
    )
    openings = set() if echo else note_openings(stated)

    def repair(unit: str, opens: bool) -> str:
        own = _unquoted(unit)
        if not _says_a_stated_fact(unit, question, stated_stems, echo):
            return unit
        if _SECOND_PERSON.search(own):
            # "Your mum Lupita is moving in with us": the user's "us" copied beside the
            # agent's "your" is theirs too; the agent's own "I" stays ("I'm glad your...").
            return _re_voice(unit, [_WE], opens) if not echo and _WE.search(own) else unit
        if any(p.search(own) for p in patterns):
            return _re_voice(unit, patterns, opens)
        if opens and (subject := _missing_subject(unit, openings)) is not None:
            return subject
        return _name_relation(unit, known, opens) if known else unit

    parts = _SENTENCE.split(reply)
    out = []
    for index, part in enumerate(parts):
        if index % 2 == 1:  # the whitespace between sentences
            out.append(part)
        elif not _SECOND_PERSON.search(_unquoted(part)):
            out.append(repair(part, True))
        else:
            clauses = _CLAUSE.split(part)
            out.extend(
                c if n % 3 else repair(c, n == 0) for n, c in enumerate(clauses) if c is not None
            )
    return "".join(out)


_USERS_CUE = re.compile(
    r"(?:,\s*)?\b(?:(?:like|as) I(?:['\u2019]ve)? (?:said|mentioned|told you)"
    r"|I(?:['\u2019]ve)? (?:already )?told you)\b(?:\s*[,:;]\s*)?",
    re.IGNORECASE,
)
"""How a user marks a fact as told before ("like I said", "as I told you", "I've told you"),
with the comma around it: copied into an answer from what they stated, its "I" is theirs."""


def cues_to_the_user(reply: str, stated: str) -> str:
    """``reply`` without the user's own "like I said" copied into it.

    "You design bridges for a living, like I told you." answers with the user's reminder in
    the agent's mouth; the answer is the same without it. Only a cue the user's stated
    words hold: the agent may say "as I told you" of itself.
    """
    said = {_cue_words(m.group(0)) for m in _USERS_CUE.finditer(stated)}

    def drop(match: re.Match[str]) -> str:
        if _cue_words(match.group(0)) not in said:
            return match.group(0)
        before, end = reply[: match.start()].rstrip(), match.end()
        if not before or before[-1] in ".!?":  # it opened a sentence: the next word does
            return ""
        return "" if end == len(reply) or reply[end] in ".!?" else " "

    out = _USERS_CUE.sub(drop, reply)
    return re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), out)


def _cue_words(cue: str) -> str:
    return " ".join(re.findall(r"[a-z']+", cue.casefold().replace("\u2019", "'")))


def _each_sentence(reply: str, change: Callable[[str], str]) -> str:
    """``reply`` with ``change`` applied to each of its sentences, the spaces between kept."""
    parts = _SENTENCE.split(reply)
    return "".join(part if index % 2 else change(part) for index, part in enumerate(parts))


def intros_to_the_user(reply: str, names: set[str]) -> str:
    """``reply`` without the user's self-introduction copied as the agent's.

    The model answers "Hello! Amara speaking." with "Hello! Amara speaking.": the agent
    introducing itself as the user. A reply sentence that introduces someone by one of the
    ``names`` the user gave themselves (`user_names`) greets them instead ("Nice to meet
    you, Amara!").
    """

    def greeted(sentence: str) -> str:
        named = names_themselves(sentence.strip())
        if named is None or states_the_name(named):
            return sentence  # "Leilani's the name." answers "What's my name?"
        name = name_in(named)
        return f"Nice to meet you, {name}!" if name in names else sentence

    return _each_sentence(reply, greeted) if names else reply


_ASKS_ABOUT_KIN = re.compile(rf"\b(?:my|our)\s+(?:\w+\s+)?({'|'.join(sorted(KIN))})\b", re.I)


_KIN_MEANS: dict[str, frozenset[str]] = {
    word: frozenset(means.split())
    for words, means in [
        ("mother mum mom", "mother"),
        ("father dad", "father"),
        ("parent parents", "mother father"),
        ("brother brothers", "brother"),
        ("sister sisters", "sister"),
        ("son sons stepson", "son"),
        ("daughter daughters stepdaughter", "daughter"),
        ("child children kid kids baby", "son daughter"),
        ("twin twins", "son daughter brother sister"),
        ("wife", "wife"),
        ("husband", "husband"),
        ("partner spouse", "wife husband partner"),
        ("boyfriend girlfriend fiance fiancee", "partner"),
        ("grandma grandmother", "grandmother"),
        ("grandpa grandfather", "grandfather"),
        ("dog dogs puppy", "dog"),
        ("cat cats kitten", "cat"),
        ("pet pets", "dog cat pet"),
    ]
    for word in words.split()
}
"""Who a kin word can mean: "kids" can be a son, "partner" a wife; a wife is never a son."""


def _can_be(asked: str, relation: str) -> bool:
    """Whether someone introduced as ``relation`` can be the ``asked`` one of the user's."""
    words = relation.split()
    if asked not in _KIN_MEANS or not any(w in _KIN_MEANS for w in words):
        return True  # a relation outside the table: no grounds to say no
    # "twin brother" can be the twin or the brother asked about
    return any(_KIN_MEANS[asked] & _KIN_MEANS[w] for w in words if w in _KIN_MEANS)


def not_the_user_as_kin(
    reply: str, question: str, names: set[str], known: dict[str, tuple[str, tuple[str, ...]]]
) -> str:
    """``reply`` without a name given for one of the user's people that is someone else's.

    Asked "What's my husband's name?" with no husband in memory, a 1.5B model answers with
    a name it holds: the user's own ("Your husband's name is Hana.", Hana being one of the
    ``names`` they gave themselves), or one of their people's ("Ngozi is your wife." for a
    daughter, Ngozi being their wife in ``known``, `relatives`, and no one known can be a
    daughter). Such a sentence says `prompts.DONT_KNOW` instead. When someone known can be
    the one asked about ("kids" for a son, a relation outside `_KIN_MEANS`), the model's
    other names are left alone.
    """
    asked_about = _ASKS_ABOUT_KIN.search(question)
    if asked_about is None:
        return reply
    asked = asked_about.group(1).lower()
    if any(_can_be(asked, relation.lower()) for relation, _ in known.values()):
        others: set[str] = set()  # someone who can be the one asked about is known
    else:
        others = {name for name in known if not _names(name, question)}
    own = {name for name in names if not _names(name, question)}
    if not own and not others:
        return reply

    def checked(sentence: str) -> str:
        wrong = (asked in sentence.lower() and any(_names(n, sentence) for n in own)) or any(
            _names(n, sentence) for n in others
        )
        return DONT_KNOW if wrong else sentence

    return _each_sentence(reply, checked)


def _names(name: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


_ANY_KIN = rf"(?:{RELATION}|{'|'.join(sorted(KIN, key=len, reverse=True))})"
_ASKS_OWN_NAME = re.compile(
    r"\b(?:what(?:['\u2019]s|\s+is|\s+was)|tell\s+me|(?:know|remember)(?:\s+what)?|"
    r"remind\s+me(?:\s+of)?)\s+my\s+(?:(?:full|first|middle|last|real|given|sur)\s*)?"
    r"name\b"
    r"|\bwho\s+am\s+i\s*[?.!]*\s*$"
    r"|\bwhat\s+(?:do|does|did)\s+(?:[\w'\u2019-]+\s+){1,5}?call\s+me\b"
    r"|\bwhat\s+(?:should|shall|will|would|can|could|do)\s+you\s+call\s+me\b"
    r"|\bwhat\s+name\s+(?:did|do)\s+i\s+(?:give|go\s+by|use)\b"
    r"|\bwhat\s+(?:i(?:['\u2019]m|\s+am)|am\s+i)\s+called\b",
    re.IGNORECASE,
)
"""A question asking the user's own name, however put: "Do you know what my name is?", "What
do people back home call me?", "What should you call me?", "What name did I give you?"."""
_ASKS_KIN_NAME = re.compile(
    rf"\b(?:my|our)\s+(?:[a-z]+\s+)?(?P<kin>{_ANY_KIN})"
    rf"(?:['\u2019]s?\s+(?:(?:full|first)\s+)?name\b|\s+(?:called|named)\b)"
    rf"|\bname\s+of\s+(?:my|our)\s+(?:[a-z]+\s+)?(?P<of>{_ANY_KIN})\b"
    rf"|\bwho(?:['\u2019]s|\s+is|\s+are)\s+my\s+(?:[a-z]+\s+)?(?P<who>{_ANY_KIN})\s*\??\s*$",
    re.IGNORECASE,
)
_NAME_IS = re.compile(r"\bname(?:['\u2019]s|\s+is)\b|\bis\s+called\b", re.IGNORECASE)
"""A sentence that claims to give a name ("Your stepdad's name is your stepdad.")."""
_OPENING_NAME = re.compile(r"^\W*([A-Z][\w'\u2019-]+)(?=['\u2019]s\b|\s+is\b|\s+are\b)")
_NOT_A_NAME = frozenset({"your", "you", "it", "that", "this", "there", "he", "she", "they", "what"})


def name_asked(question: str) -> str | None:
    """Whose name ``question`` asks for: ``""`` the user's own, else the relation ("sister").

    None when it asks for no name ("What's my sister's job?").
    """
    if _ASKS_OWN_NAME.search(question):
        return ""
    match = _ASKS_KIN_NAME.search(question)
    if match is None:
        return None
    return next(g for g in (match.group("kin"), match.group("of"), match.group("who")) if g).lower()


def _is_the_one(asked: str, relation: str) -> bool:
    """Whether someone introduced as ``relation`` is the ``asked`` one.

    "Older sister" is a sister, a son one of the kids; unlike `_can_be`, a relation outside
    `_KIN_MEANS` is the one asked about only by its own word ("nana").
    """
    words = relation.split()
    if asked in words or asked.rstrip("s") in {w.rstrip("s") for w in words}:
        return True
    means = _KIN_MEANS.get(asked, frozenset())
    return any(means & _KIN_MEANS.get(word, frozenset()) for word in words)


def _names_given(sentence: str) -> set[str]:
    """The names a reply sentence gives: within it, or opening it as a subject ("Nomsa is")."""
    given = names_in(sentence)
    opening = _OPENING_NAME.match(sentence)
    if opening and opening.group(1).lower() not in _NOT_A_NAME | STOP_WORDS:
        given.add(opening.group(1))
    return given


def the_name_asked(
    reply: str,
    question: str,
    stated: str,
    names: set[str],
    known: dict[str, tuple[str, tuple[str, ...]]],
) -> str:
    """``reply`` to a question asking a name, answered with the name memory gives, if one.

    Asked "What's my sister called?" with "Sister Nomsa lives nearby." in ``human``, a
    1.5B model may still answer "I don't know", name someone else ("Your sister's name is
    Thandiwe.", the user's own name) or ask back ("What's your sister's name?"). When what
    the user stated ties exactly one name to the one asked about (the user's own name, or
    in `relatives` a relation that is the asked one), the first sentence that gives no
    such name and is more than a greeting becomes "Your sister is Nomsa." and the rest of
    the reply, which went on from the wrong answer, is left out. When none is tied, a
    sentence that gives for it a name the user never stated (made up, as "Your name is
    Otto."), or claims to give one and gives none ("Your stepdad's name is your
    stepdad."), says `prompts.DONT_KNOW`. Sentence by sentence, as a reply streams.
    """
    asked = name_asked(question)
    if asked is None:
        return reply
    if asked:
        tied = {
            name: relation
            for name, (relation, _) in known.items()
            if name not in names and _is_the_one(asked, relation) and not _names(name, question)
        }
        if len(tied) > 1:
            return reply  # two sisters: which one is not for the repair to say
        answer = next((f"Your {r} is {n}." for n, r in tied.items()), None)
    else:  # "Thandiwe, but friends call me Thandi": one person, any of the names answers
        tied = {n: "" for n in sorted(names, key=stated.find) if _names(n, stated)}
        answer = next((f"Your name is {n}." for n in tied), None)
    parts = _SENTENCE.split(reply)
    out: list[str] = []
    done = replaced = answered = False
    for index, part in enumerate(parts):
        if replaced:
            break
        if index % 2 == 1 or done or not part.strip():
            out.append(part)
            continue
        given = _names_given(part)
        if answer is None:
            made_up = {n for n in given if not _names(n, stated) and not _names(n, question)}
            nameless = not given and _NAME_IS.search(part) is not None
            # Asked their own name: one of their people's is no answer ("You're called
            # Zsuzsa." for the girlfriend), and neither is a first sentence with no name.
            theirs = not asked and any(_names(n, part) for n in known)
            greeting = _greeting(part)
            unanswered = not (asked or answered or given or greeting) and DONT_KNOW not in part
            answered = answered or not greeting
            wrong = made_up or nameless or theirs or unanswered
            out.append(DONT_KNOW if wrong else part)
            continue
        if any(_names(n, part) for n in tied):
            done = True
            out.append(part)
        elif _greeting(part):
            out.append(part)
        else:
            lead = part[: len(part) - len(part.lstrip())]
            out.append(lead + answer)
            replaced = True
    return "".join(out)


HELD_OF_A_KIND = 3
"""At most this many held lines answer a question about a kind of fact; more is a list the
model should read itself."""


_SAID_NOTE = re.compile(r'^\s*Said:\s*["\u201c](.*?)["\u201d]\s*\.?\s*$', re.DOTALL)
_OPENS_WITH_YOU = re.compile(r"^\W*(?:you|your|you['\u2019]\w+)\b", re.IGNORECASE)
_STATE_WORDS = frozenset(
    "allergic born married engaged divorced widowed originally vegetarian vegan pescatarian "
    "diabetic coeliac celiac deaf blind retired based from".split()
)
"""Words a note opens with in place of "Is ..." ("Allergic to latex.", "Born in Kochi.")."""
_SUBJECT_FOLLOWERS = frozenset(
    "is are was were can could will would may might must make makes made cause causes "
    "give gives keep keeps have has had do does did get gets".split()
)
"""Second words that show the first was a subject ("Eggs make ...", "Cats are ..."), not
a note's verb without its subject ("Fixes lifts ...")."""
_MODALS_BEFORE_A_VERB = frozenset("can't cannot can won't will".split())
_MODAL_OPENINGS = frozenset("never always only still often usually rarely mostly also".split())
"""Modals and adverbs a note opens with, its subject left out ("Can't have caffeine.",
"Never eats pork."); an adverb only before a verb ("Only surgical steel ..." is no verb)."""
_PAST_OPENINGS = frozenset(
    "grew went got left came took became began spent lost won met built bought sold ran "
    "taught studied".split()
)
"""Past tenses a note opens with, its subject left out ("Grew up in Gdansk."); those in
"-ed" are told by their ending."""


def held_to_the_user(line: str) -> str:
    """A held ``human`` line said to the user, as an answer that gives it whole.

    Notes leave the user out ("Fixes lifts in office buildings.", "Allergic to latex.",
    "User's dog Bruno is deaf.") or quote them (`Said: "I fix lifts."`): the answer says
    "You fix lifts in office buildings.", "You are allergic to latex.", "Your dog Bruno is
    deaf.". A line with a subject of its own ("Eggs make user's throat swell.") keeps it,
    said to the user ("Eggs make your throat swell."); one that still has no "you" is
    given as what they said ("From what you said: ...").
    """
    text = line.strip()
    quoted = _SAID_NOTE.match(text)
    if quoted:
        text = quoted.group(1).strip()
    text = _re_voice(text, [_SWAP, _USER_FORMS])
    words = text.split()
    if not words:
        return text
    first = words[0].strip(",.;:").lower()
    second = words[1].strip(",.;:").lower() if len(words) > 1 else ""
    if _OPENS_WITH_YOU.match(text):
        pass
    elif first in _OWN_NOUNS or first == "work":  # "Work is nights." -> "Your work is nights."
        text = f"Your {text[:1].lower()}{text[1:]}"
    elif first.replace("\u2019", "'") in _MODALS_BEFORE_A_VERB or (
        first in _MODAL_OPENINGS and len(words) > 1 and _base_form(second) != second
    ):  # "Can't have caffeine." -> "You can't ..."; "Never eats pork." -> "You never eat pork."
        rest = text[len(words[0]) :]
        if first in _MODAL_OPENINGS:
            rest = rest.replace(words[1], _base_form(words[1]), 1)
        text = f"You {text[:1].lower()}{text[1 : len(words[0])]}{rest}"
    elif second not in _SUBJECT_FOLLOWERS:
        base = _base_form(first)
        if first in _USER_VERBS or (len(first) > 3 and base != first and not base.endswith("ing")):
            text = f"You {base}{text[len(words[0]) :]}"
        elif first in _PAST_OPENINGS or (first.endswith("ed") and len(first) > 4):
            text = f"You {text[:1].lower()}{text[1:]}"
        elif first in _STATE_WORDS:
            text = f"You are {text[:1].lower()}{text[1:]}"
            text = re.sub(r"^You are born\b", "You were born", text)
    if not _SECOND_PERSON.search(text):
        text = f"From what you said: {text[:1].lower()}{text[1:]}"
    return text.rstrip().rstrip(".") + "."


@dataclass(frozen=True)
class KindAsked:
    """The held lines of the kind of fact a question asks for (`lines_of_kind_asked`)."""

    lines: tuple[str, ...] = ()
    """The lines the kind model is sure are of it: they answer."""
    maybe: tuple[str, ...] = ()
    """Every line that may be of it: an answer that says one of them stands."""
    echo: frozenset[str] = frozenset()
    """The question's own content words: an answer that shares only these with a line
    ("You are allergic to peanuts." to "What am I allergic to?") repeated the question,
    not the line."""


def lines_of_kind_asked(question: str, held: Sequence[str]) -> KindAsked:
    """The held lines that answer ``question`` by their kind (`kinds`).

    The lines the kind model is `kinds.SURE` of, or else the one most likely of the kind
    (`kinds.likely_of`). None when it asks for no kind, none is held, or more than
    `HELD_OF_A_KIND` are.
    """
    kind = kind_asked(question)
    if kind is None or name_asked(question) == "":
        return KindAsked()  # their own name is `the_name_asked`'s ("What do people here call me?")
    animal = animal_asked(question)
    answering = [line for line in held if animal is None or about_the_animal(line, animal)]
    lines = tuple(line for line in answering if kind_of(line) == kind)
    if not lines and (likely := likely_of(answering, kind)) is not None:
        lines = (likely,)
    if not lines or len(lines) > HELD_OF_A_KIND:
        return KindAsked()
    maybe = tuple(line for line in held if may_be(line, kind))
    return KindAsked(lines, maybe, frozenset(topic_stems(question) - _NO_FACT))


def _says_of(words: set[str], line: set[str]) -> bool:
    """Whether a sentence's content words say something of a line that may be of the kind.

    Two of its words, or one of a line of three words or fewer: "sleep" in advice on sleep
    is not "CPAP every night since they diagnosed sleep apnea". (Of a line the kind model is
    sure of, one word is enough: `the_kind_asked`.)
    """
    return len(words & line) >= min(2, len(line))


def the_kind_asked(reply: str, asked: KindAsked) -> str:
    """``reply`` to a question asking for a kind of fact, answered with the ``lines`` held.

    Asked "What do I do for a living?" with "Fixes lifts in office buildings." in
    ``human``, a 1.5B model says "I don't know" (no word of the question is in the line)
    or answers with another line ("You swim in the lake every morning."). ``asked`` holds
    the held lines the kind model is sure are of the kind asked (`lines_of_kind_asked`).
    Unless the first sentence that is more than a greeting says something of a line that
    may be of that kind (`_says_of`) or shares a word with one it is sure of (a word of
    its own: one the question said too shows nothing read, `KindAsked.echo`), it becomes
    those lines, as held
    (`to_the_user` then says them to the user: "You fix lifts in office buildings."), and
    the rest of the reply, which went on from the wrong answer, is left out. Sentence by
    sentence, as a reply streams.
    """
    if not asked.lines:
        return reply
    sure = [topic_stems(line) - _NO_FACT for line in asked.lines]
    held = [topic_stems(line) - _NO_FACT for line in asked.maybe]
    answer = " ".join(held_to_the_user(line) for line in asked.lines)

    def wrong(part: str) -> bool:
        words = topic_stems(_unquoted(part)) - _NO_FACT - asked.echo
        if any(words & line for line in sure):
            return False
        return not any(_says_of(words, line) for line in held)

    return _first_answer(reply, wrong, answer)


def _first_answer(reply: str, wrong: Callable[[str], bool], instead: str) -> str:
    """``reply``, or ``instead`` for its first sentence past the greetings when it is wrong.

    The rest of the reply, which went on from the wrong answer, is left out. Judged on that
    sentence alone, so a reply streamed sentence by sentence never takes back what it
    showed.
    """
    parts = _SENTENCE.split(reply)
    out: list[str] = []
    for index, part in enumerate(parts):
        if index % 2 == 1 or not part.strip() or _greeting(part):
            out.append(part)
            continue
        if not wrong(part):
            return reply
        lead = part[: len(part) - len(part.lstrip())]
        out.append(lead + instead)
        break
    return "".join(out)


_OWN_STORY = re.compile(rf"^\W*(?:i|i{_APOSTROPHE}(?:m|ve|d)|my)\b", re.IGNORECASE)
_AGENT_ITSELF = re.compile(
    rf"^\W*(?:i{_APOSTROPHE}m|i am)\s+(?:just\s+)?(?:an?\s+)?(?:[\w-]+\s+){{0,2}}"
    r"(?:assistant|ai|language model|chatbot|bot|program|computer)\b",
    re.IGNORECASE,
)
"""The agent describing itself ("I'm a software assistant designed to ..."): no answer
about the user, whatever words of knowledge it uses."""


def not_the_agents_story(reply: str, question: str, stated: str) -> str:
    """``reply`` to a question about the user, unless it answers with the agent's own story.

    Asked "What's my job?" with no job held, a 1.5B model answers about itself ("I'm a
    software assistant designed to assist with information and tasks.") or makes one up in
    the user's place ("I was born in a small town in the countryside."). When the first
    sentence that is more than a greeting describes the agent (`_AGENT_ITSELF`), or opens
    in the first person, speaks neither to the user nor of what the agent knows ("I don't
    know", "I have nothing about ..."), and says nothing the user stated (`to_the_user`
    has already turned their facts to "you"), it becomes `prompts.DONT_KNOW` and the rest
    of the reply, which went on from it, is left out. Sentence by sentence, as a reply
    streams.
    """
    stated_stems = topic_stems(stated)

    def wrong(part: str) -> bool:
        own = _unquoted(part)
        return _AGENT_ITSELF.match(own) is not None or (
            _OWN_STORY.match(own) is not None
            and not _SECOND_PERSON.search(own)
            and not topic_stems(own) & AGENT_WORDS
            and DONT_KNOW not in part
            and not _says_a_stated_fact(own, question, stated_stems, False)
        )

    return _first_answer(reply, wrong, DONT_KNOW)


_FAREWELL = re.compile(
    r"^\s*(?:good\s*night|night night|goodbye|bye|see you|take care|sleep well|sweet dreams|"
    r"have a (?:good|great|nice) (?:one|day|night|evening|weekend))\b[\s\w,!.]*$",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|sure|of course|certainly|great question|good question|yes|okay|ok)"
    r"(?:\s+there)?\s*[!.,]?\s*$",
    re.IGNORECASE,
)


def _greeting(sentence: str) -> bool:
    return _GREETING.match(sentence) is not None


_NO_FACT = AGENT_WORDS | FUNCTION_WORDS | ANSWER_WORDS
_KIN_STEMS = frozenset(topic_stems(" ".join(KIN)))


def answer_only(reply: str, question: str, stated: str) -> str:
    """``reply`` to a question about the user without the memories it recites unasked.

    A 1.5B model answers "What sets off my migraines?" and goes on with whatever else it
    read ("Bright lights set your migraines off. A wasp got into the kitchen."). Once a
    sentence has answered (it holds the question's words or something the user stated), a
    later sentence that recites something else the user stated and shares no word with the
    question is left out, with the space after it; one about their people is kept when the
    question asks about people ("What are my kids called?"). Sentences that state nothing
    of the user ("How exciting!") stay. Each sentence is judged on the ones before it only,
    so a reply streamed sentence by sentence never takes back what it showed.
    """
    asked = topic_stems(question) - _NO_FACT
    stated_stems = topic_stems(stated)
    about_people = bool(asked & _KIN_STEMS)
    out: list[str] = []
    answered = dropped = False
    for index, part in enumerate(_SENTENCE.split(reply)):
        if index % 2 == 1:  # the space after a sentence goes with it
            if not dropped:
                out.append(part)
            continue
        words = topic_stems(_unquoted(part)) - _NO_FACT
        recites = bool(words & stated_stems)
        on_topic = bool(words & asked) or (about_people and bool(words & _KIN_STEMS))
        dropped = answered and recites and not on_topic
        if not dropped:
            out.append(part)
        answered = answered or recites or on_topic
    return "".join(out)


def said_to_them(reply: str, stated: str) -> str:
    """``reply`` to a question about the user with the fact it gives said to them.

    A 1.5B model answers with no person at all, in the words the user put it in ("Leilani's
    the name.", "Caffeine is not allowed."): read aloud, it could be about anyone. The
    first sentence that says something the user stated, with no "you" before it and no
    person of its own, opens with "As you said, ". Judged on the sentences before it only,
    as a reply streams.
    """
    stated_stems = topic_stems(stated)
    names = names_in(stated)
    done = False

    def opened(sentence: str) -> str:
        nonlocal done
        if done or not sentence.strip():
            return sentence
        if _SECOND_PERSON.search(sentence) or DONT_KNOW in sentence:
            done = True
            return sentence
        text = sentence.lstrip()
        words = topic_stems(_unquoted(text)) - _NO_FACT
        if text.endswith("?") or _FIRST_PERSON.search(text) or not words & stated_stems:
            return sentence
        if _greeting(text) or _FAREWELL.match(text):  # "Good night!" is no fact of theirs
            return sentence
        done = True
        first = re.sub(r"['\u2019]s$", "", text.split(" ", 1)[0].strip(".,!?:;"))
        opening = text if first in names else text[:1].lower() + text[1:]
        return sentence[: len(sentence) - len(text)] + "As you said, " + opening

    return _each_sentence(reply, opened)


def user_question(prompt: Sequence[BaseMessage]) -> str | None:
    """The newest message of the prompt when the user wrote it, without its time stamp."""
    for message in reversed(prompt):
        if isinstance(message, HumanMessage):
            if message.name:  # a runtime note (alert, summary), not the user
                return None
            return without_time(content_text(message))
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
            parts.extend(HUMAN_BLOCK.findall(text))
        elif isinstance(message, ToolMessage):
            parts.extend(_user_lines(text))
        elif isinstance(message, HumanMessage) and not message.name:
            said = without_time(text)
            if said != question:
                parts.append(said)
    return "\n".join(parts)


@dataclass(frozen=True)
class ReplyVoice:
    """How replies to one prompt are said to the user (`reply_voice`)."""

    repair: Callable[[str], str]
    """The repaired reply; sentence by sentence, so whole sentences may be repaired alone."""
    echo: bool
    """Answering news, only first-person words change (else a sentence may gain a subject
    or a relation at its start)."""

    def settled(self, text: str) -> str:
        """What of an unfinished reply may be shown already, repaired.

        Its whole sentences, repaired; of the open sentence, answering news, the words
        before its first first-person word (nothing else there can change).
        """
        ends = [m.end() for m in _SENTENCE.finditer(text)]
        whole = ends[-1] if ends else 0
        shown = self.repair(text[:whole]) if whole else ""
        if self.echo:
            rest = text[whole:]
            first = _FIRST_PERSON.search(rest)
            shown += rest[: first.start() if first else _last_word_start(rest)]
        return shown


def _last_word_start(text: str) -> int:
    """Where the last (maybe unfinished) word of ``text`` starts: it may still become "I'm"."""
    return len(text.rstrip()) - len(text.rstrip().split(" ")[-1]) if text.strip() else 0


def reply_voice(prompt: Sequence[BaseMessage]) -> ReplyVoice | None:
    """The repair a reply to ``prompt`` gets, or None when replies to it are left alone.

    When the newest user message asks about the user, `to_the_user` against everything
    they stated; when it is news about themselves ("Hi, I'm Ada. I love teal." answered "I
    love the colour teal."), against that news only, and stricter.
    """
    from langgraph_memgpt.small_model.auto_search import is_memory_question

    question = user_question(prompt)
    if question is None:
        return None
    echo = not is_memory_question(question)
    if echo and (
        question.rstrip().endswith("?")
        or not (_FIRST_PERSON.search(question) or user_names(question) or tells_without_i(question))
    ):
        return None
    stated = question if echo else stated_text(prompt, question)
    names = user_names(stated)  # once, not at every streamed chunk
    known = {} if echo else relatives(stated)
    if echo:

        def news(text: str) -> str:
            return intros_to_the_user(to_the_user(text, "", stated, echo=True), names)

        return ReplyVoice(news, True)

    of_kind = lines_of_kind_asked(question, human_lines(prompt))  # once: a model reads them

    def answer(text: str) -> str:
        said = the_kind_asked(text, of_kind)
        said = cues_to_the_user(to_the_user(said, question, stated), stated)
        said = not_the_user_as_kin(intros_to_the_user(said, names), question, names, known)
        said = the_name_asked(said, question, stated, names, known)
        said = not_the_agents_story(said, question, stated)
        return said_to_them(answer_only(said, question, stated), stated)

    return ReplyVoice(answer, False)


def repair_reply(message: AIMessage, prompt: Sequence[BaseMessage], reply_tool: str) -> AIMessage:
    """``message`` with its reply (``reply_tool``'s ``message``) said to the user.

    ``message`` itself when no repair applies (`reply_voice`) or none changes it.
    """
    if not any(c["name"] == reply_tool for c in message.tool_calls):
        return message
    voice = reply_voice(prompt)
    if voice is None:
        return message
    calls = []
    changed = False
    for call in message.tool_calls:
        text = call["args"].get("message")
        if call["name"] == reply_tool and isinstance(text, str):
            fixed = voice.repair(text)
            if fixed != text:
                call = {**call, "args": {**call["args"], "message": fixed}}
                changed = True
        calls.append(call)
    return message.model_copy(update={"tool_calls": calls}) if changed else message
