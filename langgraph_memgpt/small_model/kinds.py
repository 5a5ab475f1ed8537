"""What kind of fact a line of core memory holds, and which kind a question asks for.

Asked "What do I do for a living?" with "Fixes lifts in office buildings." in ``human``,
the 1.5B model answers "I don't know": no word of the question is in the line, and neither
the rules nor MiniLM's nearest line (it picked "Sundays mean fishing on the river for me.")
tie them. What ties them is the kind of fact: the question asks for the user's work, and
the line is about work, as "Is a tailor, alterations mostly." and "Half my week goes on
hemming trousers" are.

So a held line's kind is scored by a linear model over its MiniLM vector (the embeddings
memory search already loads), trained by ``benchmarks/kinds/train.py`` on labelled lines
written for the purpose, in the agent's note form and in the user's own words, with many
lines a keyword rule gets wrong, and long lines that tell a fact inside a day's story
("Serviced nine boilers today, the old dear made bacon rolls ..."). The question's kind is
read by rules first (`kind_asked`), then, for the many ways to ask they miss ("when do I
move", "whats the name of my fur baby"), by a second linear model over the question's
vector, trained on labelled questions. A line counts as of a kind when the model is sure of
it (`SURE`), or, when no line is, the one line it most likely is (`LIKELY`): a wrong line
given as the answer is worse than the model's own "I don't know".
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

WEIGHTS = Path(__file__).with_name("kind_weights.json")
"""The trained models: lines, ``{"labels": [...] (`KINDS`), "weights": [[384 floats] per
label], "bias": [...]}``; questions, the same under ``"questions"`` (labels: `ASKED` and
"none")."""

KINDS = ("name", "work", "health", "home", "family", "pet", "likes", "plans", "other")
"""Every kind the model tells apart; only `ASKED` are ever answered from it."""

SURE = 0.8
"""The probability over which a line is of a kind, and may answer a question about it."""

LIKELY = 0.5
"""With no line `SURE` of the kind asked, the line most likely of it answers when that is
its own most likely kind at this probability or more (chosen on the fourth part of
``benchmarks/kinds``' lines, in blocks of seven drawn at random; the fifth reported)."""

QUESTION_SURE = 0.7
"""The probability over which the question model's kind is taken, when no rule read one
(chosen on the fourth part of ``benchmarks/kinds``' questions; the fifth reported)."""

MAYBE = 0.3
"""The probability over which a line may be of a kind: an answer from such a line is left
as the model gave it (the model may know better than the kind model)."""

_A = r"['\u2019]"
_ANIMAL = (
    r"(?:dog|cat|pup|puppy|kitten|pet|horse|pony|ferret|rabbit|bunny|hamster|gerbil|guinea\s+pig"
    r"|parrot|budgie|tortoise|turtle|snake|lizard|gecko|goldfish|fish|chicken|goat|tom|moggy)"
)
"""An animal a person keeps: "What's my ferret called?" asks for the pet line."""
_PET_NAME = re.compile(
    rf"\b(?:my|our)\s+(?:[a-z-]+\s+)?(?P<kept>{_ANIMAL})(?:{_A}s)?\s+(?:called|named|name)\b"
    rf"|\bname\s+of\s+(?:my|our)\s+(?:[a-z-]+\s+)?(?P<named>{_ANIMAL})\b",
    re.IGNORECASE,
)
"""A question for a pet's name ("What's my ferret called?", "What is my dog's name?"): the
line about that animal answers it, though "my dog" is one of theirs."""


def animal_asked(question: str) -> str | None:
    """The animal whose name ``question`` asks for ("dog" in "What's my dog called?"), if any.

    Only a line about that animal answers: asked for a dog's name never told, the line
    about their cat would be a wrong answer where "I don't know" was right.
    """
    found = _PET_NAME.search(question)
    return None if found is None else (found["kept"] or found["named"]).lower()


_SAME_ANIMAL = {
    "dog": r"dogs?|pup|puppy|hound|lurcher|retriever|labrador|lab|spaniel|terrier|collie|"
    r"poodle|beagle|pug|dachshund|husky|greyhound|whippet|sheepdog|alsatian|corgi|staffie",
    "pup": r"dogs?|pup|puppy",
    "puppy": r"dogs?|pup|puppy",
    "cat": r"cats?|kitten|kitty|tom|tomcat|moggy|tabby|siamese",
    "kitten": r"cats?|kitten|kitty",
    "tom": r"cats?|tom|tomcat",
    "moggy": r"cats?|moggy",
}
_SAME_ANIMAL["pet"] = "|".join([_ANIMAL + "s?", *_SAME_ANIMAL.values()])
"""Asked for "my pet" with no animal named, a line about any kept animal answers."""


def about_the_animal(line: str, animal: str) -> bool:
    """Whether a held line speaks of ``animal`` or of its kind ("Lurcher Biscuit ..." of a dog)."""
    words = _SAME_ANIMAL.get(animal, re.escape(animal) + "s?")
    return re.search(rf"\b(?:{words})\b", line, re.IGNORECASE) is not None


_ASKS = {
    "work": re.compile(
        r"\b(?:do|doing)\s+for\s+(?:a\s+)?(?:living|work|money|a\s+job)\b"
        r"|\bmy\s+(?:(?:day\s+|current\s+)?(?:job|role)|trade|work|line\s+of\s+(?:work|business)"
        r"|profession|occupation|career|employer|industry|shifts?)\b"
        r"|\bwhat\s+(?:kind\s+of\s+|sort\s+of\s+|type\s+of\s+|line\s+of\s+)?(?:work|job|industry"
        r"|business|shifts?)\s+(?:do|did|am)\s+i\b"
        r"|\bwhere\s+do\s+i\s+(?:work|clock\s+in|spend\s+my\s+(?:shifts|days|working))\b"
        r"|\bwho\s+do\s+i\s+work\s+for\b|\bam\s+i\s+(?:still\s+|currently\s+)?(?:employed|working|retired|studying)\b"
        r"|\bwhat\s+am\s+i\s+studying\b|\bbefore\s+i\s+retired\b"
        r"|\bhow\s+do\s+i\s+(?:earn|make)\s+(?:a|my)\s+(?:living|money)\b"
        r"|\bpays?\s+(?:my|the)\s+bills\b|\bget\s+paid\s+(?:to|for)\b|\b9\s*(?:to|-)\s*5\b"
        r"|\bkeeps?\s+me\s+busy\s+(?:on\s+)?(?:weekdays|monday|during\s+the\s+week)"
        r"|\bwhat\s+(?:do\s+)?i\s+do\b(?:\s*(?:again|exactly|then|all\s+day))?\s*[?.!]?\s*$",
        re.IGNORECASE,
    ),
    "health": re.compile(
        rf"\b(?:allergi\w*|allergy|health|medical|medic\w*|meds|conditions?|illness|diet\w*"
        rf"|intoleran\w*|disabilit\w*|diagnos\w*|injur\w*|vegetarian|vegan"
        rf"|food\s+restrictions?)\b"
        rf"|\b(?:can{_A}?t|cannot|shouldn{_A}?t|should\s+not|don{_A}?t|do\s+not|must\s+not)"
        rf"\s+(?:i\s+)?(?:eat|have|drink|take|wear|touch)\b"
        rf"|\b(?:avoid|steer\s+clear\s+of)\s+(?:eating|drinking)\b"
        rf"|\bfoods?\s+(?:make|makes)\s+me\s+(?:ill|sick)\b"
        rf"|\bwrong\s+with\s+(?:me|my)\b"
        rf"|\bdo\s+i\s+have\s+(?:a|any)\s+(?:\w+\s+)?(?:problems?|issues?)\b",
        re.IGNORECASE,
    ),
    "home": re.compile(
        rf"\bwhere\s+(?:do|did)\s+(?:i|we)\s+(?:live|stay|grow\s+up|come\s+from|call\s+home"
        rf"|spend\s+(?:my|our)\s+childhood)\b"
        rf"|\bwhere\s+(?:am|was)\s+i\s+(?:from|born|raised|brought\s+up|based|living)\b"
        rf"|\bwhere\s+i{_A}?m\s+(?:from|based|living)\b"
        rf"|\bwhere{_A}?s\s+(?:my\s+)?home\b|\bwhere\s+is\s+(?:my\s+)?home\b"
        rf"|\b(?:which|what)\s+(?:city|town|country|village|area|neighbou?rhood|part\s+of\s+[\w\s]+?)"
        rf"\s+(?:do|did|am)\s+(?:i|we)\s+(?:live|grow\s+up|come\s+from|reside|in|from)\b"
        rf"|\bin\s+which\s+(?:city|town|country)\s+do\s+i\b|\bdo\s+i\s+reside\b"
        rf"|\bwhere\s+(?:do|did)\s+(?:i|we)\s+(?:move|moved)\b"
        rf"|\bmy\s+(?:home\s*town|neighbou?rhood|local\s+area|place)\b"
        rf"|\bkind\s+of\s+(?:place|home|house)\s+do\s+i\s+live\b"
        rf"|\bdo\s+i\s+live\s+in\s+a\b|\btell\s+me\s+about\s+my\s+home\b|\bcall\s+home\b",
        re.IGNORECASE,
    ),
    "pet": re.compile(
        r"\b(?:what|which)\s+(?:kind|sort|type)\s+of\s+(?:pets?|animals?)\b"
        r"|\b(?:do|did)\s+(?:i|we)\s+have\s+(?:a|any)\s+(?:pets?|animals?|rescue)\b"
        r"|\b(?:my|our)\s+(?:pets|animals)\b|\bwhat\s+pets?\b"
        r"|\b(?:what|which|how\s+many)\s+animals\b|\banimals\s+(?:live|living)\s+with\s+me\b"
        r"|\bfurry\s+(?:friend|one)s?\b",
        re.IGNORECASE,
    ),
    "plans": re.compile(
        r"\bwhere\s+(?:am|are)\s+(?:i|we)\s+(?:moving|going|off|heading|flying|travel+ing|"
        r"relocating)\b"
        r"|\bwhat\s+(?:have|do)\s+(?:i|we)\s+(?:got\s+)?(?:coming\s+up|planned|booked|on\s+next)\b"
        r"|\bwhat['\u2019]?s\s+coming\s+up\s+for\s+(?:me|us)\b|\b(?:my|our)\s+(?:plans|next\s+big\s+thing)\b"
        r"|\bwhat\s+am\s+i\s+(?:planning|looking\s+forward\s+to)\b",
        re.IGNORECASE,
    ),
}
ASKED = tuple(_ASKS)
"""The kinds a question is read for: those whose questions share no word with their lines
("Where am I moving to?" for "We complete on the cottage in Hexham on the 19th")."""

_OWN = (
    r"(?!(?:pets?|home|job|work|trade|health|diet|career|profession|occupation|employer"
    r"|day|line|living|hearing|eyes?|back|heart|skin|knees?)\b)"
)
_ABOUT_SOMEONE_ELSE = re.compile(
    rf"\b(?:my|our)\s+{_OWN}[a-z-]+(?:['\u2019]s)?\s+(?:job|work|health|allerg\w*|diet|home)\b"
    rf"|\b(?:does|is|did)\s+(?:my|our)\s+{_OWN}\w+|\b(?:does|is|did)\s+(?:my|our)\s+pets?\b",
    re.IGNORECASE,
)
"""A question about one of the user's people ("What does my wife do?", "my son's allergy")."""


def kind_asked(question: str) -> str | None:
    """The kind of fact ``question`` asks about the user (one of `ASKED`), or None.

    "What do I do for a living?" -> work; "Anything I can't eat?" -> health; "Where's
    home for me?" -> home; "What kind of pet do I have?" -> pet. A question about one of
    their people ("What does my wife do?") asks for none; their pet's name asks for the pet.
    """
    if _PET_NAME.search(question):
        return "pet"
    if _ABOUT_SOMEONE_ELSE.search(question):
        return None
    found = [kind for kind, pattern in _ASKS.items() if pattern.search(question)]
    if found:
        return found[0] if len(found) == 1 else None
    shares = question_shares(question)
    best = max(shares, key=shares.__getitem__)
    return best if best != "none" and shares[best] >= QUESTION_SURE else None


@functools.lru_cache(maxsize=2)
def _model(part: str = "lines") -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    data = json.loads(WEIGHTS.read_text())
    if part == "questions":
        data = data["questions"]
    labels = data["labels"]
    weights = np.asarray(data["weights"], dtype=np.float32)
    return tuple(labels), weights, np.asarray(data["bias"], dtype=np.float32)


def probabilities(vectors: np.ndarray, part: str = "lines") -> np.ndarray:
    """Each row's probability of each of a model's labels (softmax of the linear scores).

    ``part``: "lines" (`KINDS` of a held line) or "questions" (`ASKED` and "none").
    """
    _, weights, bias = _model(part)
    scores = vectors @ weights.T + bias
    scores -= scores.max(axis=1, keepdims=True)
    odds = np.exp(scores)
    return np.asarray(odds / odds.sum(axis=1, keepdims=True))


@functools.lru_cache(maxsize=256)
def question_shares(question: str) -> dict[str, float]:
    """The question model's probability that ``question`` asks for each kind, or none."""
    from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

    labels, _, _ = _model("questions")
    shares = probabilities(MiniLMEmbeddings().embed_array([question.strip()]), "questions")[0]
    return {label: float(share) for label, share in zip(labels, shares, strict=True)}


@functools.lru_cache(maxsize=4096)
def kind_shares(line: str) -> dict[str, float]:
    """The model's probability of each kind for a held line.

    Cached: a thread's prompts hold the same lines.
    """
    from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

    kinds, _, _ = _model()
    shares = probabilities(MiniLMEmbeddings().embed_array([line.strip()]))[0]
    return {kind: float(share) for kind, share in zip(kinds, shares, strict=True)}


def kind_of(line: str) -> str | None:
    """The kind of fact a held line states, when the model is `SURE` of it; else None."""
    shares = kind_shares(line)
    best = max(shares, key=shares.__getitem__)
    return best if shares[best] >= SURE else None


def likely_of(lines: Sequence[str], kind: str) -> str | None:
    """The line most likely of ``kind``, if that is its own most likely kind at `LIKELY`.

    For a question when no held line is `SURE` of its kind: a long line telling the user's
    work inside a day's story scores work 0.5 to 0.8, rarely more.
    """
    best: tuple[float, str] | None = None
    for line in lines:
        shares = kind_shares(line)
        share = shares.get(kind, 0.0)
        if share >= LIKELY and share == max(shares.values()) and (best is None or share > best[0]):
            best = (share, line)
    return None if best is None else best[1]


def may_be(line: str, kind: str) -> bool:
    """Whether a held line may be of ``kind`` (`MAYBE`): an answer that says it stands."""
    return kind_shares(line).get(kind, 0.0) >= MAYBE


__all__ = [
    "ASKED",
    "KINDS",
    "LIKELY",
    "MAYBE",
    "QUESTION_SURE",
    "SURE",
    "WEIGHTS",
    "about_the_animal",
    "animal_asked",
    "kind_asked",
    "kind_of",
    "likely_of",
    "question_shares",
    "kind_shares",
    "may_be",
    "probabilities",
]
