"""The LLM judge of the Mem0/Zep LoCoMo protocol: is a generated answer right, yes or no.

The judge sees the question, the gold answer and the generated answer and labels the
answer ``CORRECT`` or ``WRONG``, generous about wording, length, format and how a date is
written, strict about the fact itself. It answers in JSON; a reply that holds no readable
label is a judge error, never a crash. The prompt text is this project's own.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

Label = Literal["CORRECT", "WRONG"]
LABELS: tuple[Label, ...] = ("CORRECT", "WRONG")

JUDGE_SYSTEM = """\
You grade answers to questions about a long conversation between two friends.
You get the question, the gold answer (the truth) and a generated answer.
Label the generated answer CORRECT when it states the same fact as the gold answer, \
even if it is worded differently, longer, shorter or formatted in another way. \
For dates, months and years, CORRECT means it points to the same day or period as the \
gold answer, however that date is written ("May 7, 2023" and "7 May 2023" are the same; \
"the week before 9 June 2023" matches a date inside that week). \
Label it WRONG when it names a different fact, date or person, misses the point of the \
gold answer, or says it does not know.
Reply with JSON only: {"label": "CORRECT"} or {"label": "WRONG"}."""

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": list(LABELS)}},
    "required": ["label"],
    "additionalProperties": False,
}
"""The reply's shape; sent as ``response_format`` so a grammar-constrained model keeps to it."""

JUDGE_RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "judgement", "schema": JUDGE_SCHEMA},
}

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def judge_messages(question: str, gold: str, generated: str) -> list[BaseMessage]:
    """The judge's prompt for one answer."""
    return [
        SystemMessage(JUDGE_SYSTEM),
        HumanMessage(
            f"Question: {question}\nGold answer: {gold}\nGenerated answer: {generated}\n"
            "Label the generated answer."
        ),
    ]


def parse_judgement(text: str) -> Label | None:
    """Read the label out of a judge reply; None when the reply holds no usable label.

    Accepts the JSON object bare, inside a code fence, or inside surrounding prose, with
    the label in any letter case. Anything else (no JSON, no ``label`` key, a label that
    is neither CORRECT nor WRONG, two objects that disagree) is malformed.

    Example:
        >>> parse_judgement('Verdict: {"label": "correct"}')
        'CORRECT'
        >>> parse_judgement("I think it is right") is None
        True
    """
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    candidates += [m.group(0) for m in _OBJECT.finditer(text)]
    found: set[Label] = set()
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        label = next((v for k, v in data.items() if str(k).lower() == "label"), None)
        if not isinstance(label, str):
            continue
        value = label.strip().upper()
        if value in LABELS:
            found.add(value)
    if len(found) != 1:
        return None
    return found.pop()
