"""LoCoMo loader: conversations, sessions, turns and scorable questions.

BEAM chats converted to this schema load the same way; each question's BEAM ability
(``qa[].beam_type``) is kept for the per-ability figures.

Reads files in the public ``locomo10.json`` schema (Maharana et al., ACL 2024) and turns them
into what an agent would have lived: every turn a recall message of one thread per session,
stamped with the session's date. The file's known evidence defects (several ids packed in one
string, ids that resolve to no turn) are repaired here so every scored question has evidence
that exists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph_memgpt.stores.mentions import MONTHS
from langgraph_memgpt.stores.types import RecallMessage

#: Category labels as the data uses them; category 5 (adversarial) is never scored.
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
UNSCORED_CATEGORIES: frozenset[int] = frozenset({5})

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[\s,;]+")
_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)


class LocomoFormatError(ValueError):
    """The file is not in the LoCoMo schema; the message says what is missing and where."""


@dataclass(frozen=True)
class Turn:
    """One utterance of a LoCoMo session."""

    dia_id: str  # "D3:5"
    speaker: str
    text: str
    image_caption: str | None = None  # BLIP caption of an image the speaker shared


@dataclass(frozen=True)
class Session:
    """One session: a thread of turns that all carry the session's date."""

    key: str  # "session_3"
    number: int
    date_text: str  # as in the file: "1:56 pm on 8 May, 2023"
    created_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    """A scorable question: category 1-4 with at least one evidence turn that exists."""

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # dia ids, deduplicated, all present in the conversation
    #: BEAM's ability (``qa[].beam_type``, e.g. ``"knowledge_update"``) in a BEAM file
    #: converted to this schema; None in LoCoMo's own files.
    beam_type: str | None = None


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample: its sessions in order and its scorable questions."""

    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    dropped_questions: int  # scorable categories left with no resolvable evidence

    @property
    def turn_count(self) -> int:
        """Number of turns over all sessions."""
        return sum(len(s.turns) for s in self.sessions)

    def message_id(self, dia_id: str) -> str:
        """Recall message id of a turn, unique across conversations (``"conv-26:D3:5"``)."""
        return f"{self.sample_id}:{dia_id}"


def parse_session_date(text: str) -> datetime:
    """Parse a LoCoMo session date such as ``"1:56 pm on 8 May, 2023"`` into aware UTC.

    LoCoMo dates carry no zone; UTC keeps them exactly as written when rendered back.
    """
    match = _DATE.match(text)
    if match is None:
        raise LocomoFormatError(
            f"session date {text!r} is not in LoCoMo's form like '1:56 pm on 8 May, 2023'"
        )
    hour_s, minute_s, ampm, day_s, month_s, year_s = match.groups()
    month = MONTHS.get(month_s.lower())
    if month is None:
        raise LocomoFormatError(f"session date {text!r} has an unknown month {month_s!r}")
    hour = int(hour_s) % 12 + (12 if ampm.lower() == "p" else 0)
    try:
        return datetime(int(year_s), month, int(day_s), hour, int(minute_s), tzinfo=UTC)
    except ValueError as err:
        raise LocomoFormatError(f"session date {text!r} is not a real date: {err}") from err


def clean_evidence(raw: Iterable[Any], known_ids: Iterable[str]) -> tuple[str, ...]:
    """Repair a question's evidence list: split packed ids, drop unknown ones, deduplicate.

    LoCoMo has strings like ``"D8:6; D9:17"`` that pack several ids, and ids such as ``"D"``
    or ``"D30:05"`` that name no turn. Order of first appearance is kept.
    """
    known = set(known_ids)
    out: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            continue
        for part in _EVIDENCE_SPLIT.split(item.strip()):
            if part in known and part not in out:
                out.append(part)
    return tuple(out)


def _parse_turn(raw: Any, where: str) -> Turn:
    if not isinstance(raw, dict):
        raise LocomoFormatError(f"{where}: a turn must be an object, got {type(raw).__name__}")
    try:
        dia_id, speaker, text = str(raw["dia_id"]), str(raw["speaker"]), str(raw["text"])
    except KeyError as err:
        raise LocomoFormatError(f"{where}: turn has no {err.args[0]!r} field") from err
    caption = raw.get("blip_caption")
    return Turn(dia_id, speaker, text, str(caption) if caption else None)


def _parse_conversation(sample: Any, index: int) -> Conversation:
    where = f"sample {index}"
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        raise LocomoFormatError(f"{where}: expected an object with a 'conversation' object")
    sample_id = str(sample.get("sample_id") or f"sample-{index}")
    where = f"sample {sample_id!r}"
    conv: dict[str, Any] = sample["conversation"]
    numbered = sorted(
        (int(m.group(1)), key)
        for key in conv
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(conv[key], list)
    )
    sessions: list[Session] = []
    for number, key in numbered:
        date_text = conv.get(f"{key}_date_time")
        if not isinstance(date_text, str):
            raise LocomoFormatError(f"{where}: {key} has no {key}_date_time")
        turns = tuple(_parse_turn(t, f"{where} {key}") for t in conv[key])
        sessions.append(Session(key, number, date_text, parse_session_date(date_text), turns))
    if not sessions:
        raise LocomoFormatError(f"{where}: no session_N lists in 'conversation'")
    speakers = (str(conv.get("speaker_a", "")), str(conv.get("speaker_b", "")))
    known = [t.dia_id for s in sessions for t in s.turns]
    questions: list[Question] = []
    dropped = 0
    items = sample.get("qa") or []
    if not isinstance(items, list):
        raise LocomoFormatError(f"{where}: 'qa' must be a list of questions, got {items!r:.40}")
    for number, qa in enumerate(items, start=1):
        if not isinstance(qa, dict) or "question" not in qa:
            raise LocomoFormatError(f"{where}: every qa item needs a 'question'")
        category = _category(qa.get("category", 0), f"{where} qa {number}")
        if category in UNSCORED_CATEGORIES:
            continue
        raw_evidence = qa.get("evidence") or []
        if not isinstance(raw_evidence, list):
            raise LocomoFormatError(
                f"{where} qa {number}: 'evidence' must be a list of dialogue ids such as "
                f'"D1:3", got {raw_evidence!r:.40}'
            )
        evidence = clean_evidence(raw_evidence, known)
        if not evidence:
            dropped += 1
            continue
        answer = qa.get("answer", "")
        beam_type = _beam_type(qa.get("beam_type"), f"{where} qa {number}")
        questions.append(Question(str(qa["question"]), str(answer), category, evidence, beam_type))
    return Conversation(sample_id, speakers, tuple(sessions), tuple(questions), dropped)


def _beam_type(value: Any, where: str) -> str | None:
    """A question's BEAM ability (``beam_type``), None when absent; not a name -> format error."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise LocomoFormatError(
            f"{where}: 'beam_type' must be a BEAM ability name such as "
            f'"knowledge_update", got {value!r:.40}'
        )
    return value.strip()


def _category(value: Any, where: str) -> int:
    """A question's category as a number; anything else is a format error, not a crash."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise LocomoFormatError(f"{where}: 'category' must be a number 1-5, got {value!r:.40}")
    try:
        return int(value)
    except ValueError:
        raise LocomoFormatError(
            f"{where}: 'category' must be a number 1-5, got {value!r:.40}"
        ) from None


def load_locomo(path: Path | str) -> list[Conversation]:
    """Load every conversation of a LoCoMo-schema JSON file (a list of samples, or one sample).

    Raises:
        LocomoFormatError: The file cannot be read, is not JSON, is not in the LoCoMo
            schema, or two samples share a ``sample_id`` (their turns would be merged
            into one agent's memory).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise LocomoFormatError(f"LoCoMo file {path} does not exist") from err
    except OSError as err:  # a directory, no permission
        raise LocomoFormatError(f"cannot read LoCoMo file {path}: {err.strerror}") from err
    except UnicodeDecodeError as err:
        raise LocomoFormatError(f"LoCoMo file {path} is not UTF-8 text: {err}") from err
    except json.JSONDecodeError as err:
        raise LocomoFormatError(f"LoCoMo file {path} is not valid JSON: {err}") from err
    except RecursionError as err:
        raise LocomoFormatError(f"LoCoMo file {path} is nested too deeply") from err
    samples = [data] if isinstance(data, dict) else data
    if not isinstance(samples, list) or not samples:
        raise LocomoFormatError(f"LoCoMo file {path} holds no samples (expected a JSON list)")
    conversations = [_parse_conversation(sample, i) for i, sample in enumerate(samples)]
    seen: dict[str, int] = {}
    for index, conv in enumerate(conversations):
        if conv.sample_id in seen:
            raise LocomoFormatError(
                f"LoCoMo file {path}: samples {seen[conv.sample_id]} and {index} share the "
                f"sample_id {conv.sample_id!r}; give each conversation its own"
            )
        seen[conv.sample_id] = index
    return conversations


def turn_text(turn: Turn, *, speaker_prefix: bool = True) -> str:
    """Text a turn is stored with: ``"Speaker: text"`` plus the caption of a shared image.

    Both speakers are people talking to each other, so the name is part of what was said
    from the listener's side; questions name them ("When did Caroline ..."). The image
    caption is how a text-only agent would have seen the picture.
    """
    text = f"{turn.speaker}: {turn.text}" if speaker_prefix else turn.text
    if turn.image_caption:
        text += f" [shares an image: {turn.image_caption}]"
    return text


def recall_messages(
    conv: Conversation, agent_id: str, *, speaker_prefix: bool = True
) -> list[RecallMessage]:
    """The conversation as recall messages, sessions in order, one thread per session.

    The first speaker plays the user and the second the assistant; ``name`` keeps the speaker.
    """
    out: list[RecallMessage] = []
    first = conv.speakers[0]
    for session in conv.sessions:
        created_at = session.created_at.isoformat()
        for index, turn in enumerate(session.turns, start=1):
            out.append(
                RecallMessage(
                    agent_id=agent_id,
                    thread_id=session.key,
                    message_id=conv.message_id(turn.dia_id),
                    role="user" if turn.speaker == first else "assistant",
                    text=turn_text(turn, speaker_prefix=speaker_prefix),
                    created_at=created_at,
                    turn=index,
                    name=turn.speaker,
                )
            )
    return out


def beam_abilities(conversations: Sequence[Conversation]) -> dict[str, int]:
    """BEAM abilities of the scored questions and the category each is filed under.

    Ordered by category, then name; empty for LoCoMo's own files (no ``beam_type``).
    """
    found = {q.beam_type: q.category for c in conversations for q in c.questions if q.beam_type}
    return dict(sorted(found.items(), key=lambda item: (item[1], item[0])))


def scorable(conversations: Sequence[Conversation]) -> int:
    """Number of questions that will be scored over all conversations."""
    return sum(len(c.questions) for c in conversations)
