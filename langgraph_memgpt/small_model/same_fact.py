"""Whether a new ``human`` note says a held line again in other words: meaning, guarded.

A small model notes a fact the user says again as a second line ("Lives in Izmir, in a
flat near the sea." beside "Our home is in Izmir, right by the water."); words alone
(``core_gate.held_already``, ``stores.duplicates``) miss the restatements that share few
words. The embedded model's cosine finds them, but it also puts different facts of one
person close together ("Sister Anna lives in Leeds" / "Sister Priya lives in Leeds" 0.70,
"Likes jazz" / "Dislikes jazz" 0.80: ``benchmarks/restatements.py``). So a note is the same
fact as a line only when, besides a cosine of at least `SAME_MEANING`:

- every name, number and relative the note gives is in the line (`people.identities`);
- it says nothing changed ("now", "anymore", "instead", "switched", "no longer");
- it negates what the line negates, no more, no less ("doesn't", "dislikes", "never");
- it does not say all the line says and more ("Allergic to nuts, especially peanuts." is
  kept beside "Allergic to peanuts.": the core tool lets the fuller line take the place of
  the shorter, ``stores.duplicates``).

Measured by ``benchmarks/restatements.py --recorded``: of 1,008 pairs of one agent's lines in
the recorded ``local_turns`` runs, the 3 it takes for one fact are one; of its own pairs, 2
of 8 restatements merged, none of 9 pairs of different facts. A
lower cosine for a sentence the user marks as told before merged "Works as a nurse" into
"Works as a pharmacist", so there is one threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langgraph_memgpt.small_model.people import identities
from langgraph_memgpt.stores.duplicates import fact_words

SAME_MEANING = 0.7
"""Cosine (MiniLM) from which a note with nothing new is a held line said again."""

_CHANGE = re.compile(
    r"\b(?:now|anymore|any more|no longer|instead|switched|changed|moved|new|used to|"
    r"these days|since then|from now on)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|without|can['\u2019]?t|cannot|won['\u2019]?t|"
    r"\w+n['\u2019]t|dis\w+|un\w+)\b",
    re.IGNORECASE,
)


def _negations(text: str) -> int:
    return len(_NEGATION.findall(text))


def same_fact(note: str, lines: Sequence[str]) -> str | None:
    """The line of ``lines`` that ``note`` says again in other words, if one does."""
    from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

    held = [line for line in lines if line.strip()]
    if not held or not note.strip() or _CHANGE.search(note):
        return None
    who = identities(note)
    negations = _negations(note)
    words = fact_words(note)
    candidates = [
        line
        for line in held
        if who <= identities(line)
        and _negations(line) == negations
        and not fact_words(line) < words
    ]
    if not candidates:
        return None
    vectors = MiniLMEmbeddings().embed_array([note, *candidates])
    similarity = vectors[1:] @ vectors[0]
    best = int(similarity.argmax())
    return candidates[best] if float(similarity[best]) >= SAME_MEANING else None


__all__ = ["SAME_MEANING", "same_fact"]
