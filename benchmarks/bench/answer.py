"""LoCoMo question answering from the agent's retrieved memory (``bench locomo --answer``).

For each question the agent's own recall search (hybrid ``SqliteRecallMemory.search``, the call
behind ``conversation_search``) retrieves the top turns; a prompt with those turns, each
with its session date and speaker, goes to the chat model; the reply is scored with
LoCoMo's answer F1 and labelled by an LLM judge as in the Mem0/Zep protocol. Latency is
measured as Mem0 reports it: search, answer, and total = search + answer (the judge's
time is reported on its own, since a deployed agent never pays it).
"""

from __future__ import annotations

import functools
import re
import string
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from nltk.stem import PorterStemmer

from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.turn.tokens import TokenCounter, content_text

from .judge import JUDGE_RESPONSE_FORMAT, judge_messages, parse_judgement
from .locomo import Conversation, Question
from .metrics import percentiles

if TYPE_CHECKING:
    from langgraph_memgpt.stores.base import RecallStore

DEFAULT_TOP_K = 10
#: Reply caps: LoCoMo answers are short phrases, and the local model runs at ~10 tokens/s.
ANSWER_MAX_TOKENS = 64
JUDGE_MAX_TOKENS = 32
#: The search the agent's ``conversation_search`` tool runs.
ANSWER_SEARCH_MODE: Final[Literal["hybrid"]] = "hybrid"
TOKEN_ENCODING = "o200k_base"

#: Reports progress: ``(task, advance, total)``, as the runner's progress callback.
ProgressFn = Callable[[str, int, int], None]

ANSWER_SYSTEM = """\
You answer questions about a long conversation between two people. You only see the \
excerpts of it that a memory search returned; each starts with the date of the session \
it comes from and the name of the speaker.
Rules:
- Reply with the answer only: a short phrase of a few words, not a sentence, no explanation.
- Words like "yesterday", "last week" or "next month" are relative to the excerpt's own \
date: turn them into the actual date, and answer time questions with a date such as \
"7 May 2023", "June 2023" or "2022".
- When the answer is several things, list them separated by commas.
- When the excerpts do not settle it, give your best guess from them."""


class AnswerSetupError(ValueError):
    """A model for ``--answer`` cannot be used; the message says what to change."""


class AnswerModelError(RuntimeError):
    """A model call failed during the answer run; the message names the question."""


# -- LoCoMo answer F1 ------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
#: LoCoMo's evaluation stems with ``nltk.stem.PorterStemmer()``: NLTK's own class in its
#: default mode (``NLTK_EXTENSIONS``), which needs no NLTK data download.
_STEMMER = PorterStemmer()


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """NLTK's Porter stem of a word, as LoCoMo's F1 compares it (cached: answers repeat)."""
    return str(_STEMMER.stem(word))


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: drop commas, lower-case, strip punctuation, articles, "and".

    Example:
        >>> normalize_answer("The Cat, and a Dog!")
        'cat dog'
    """
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str) -> list[str]:
    """Normalised, Porter-stemmed tokens of an answer."""
    return [stem(word) for word in normalize_answer(text).split()]


def f1_score(prediction: str, gold: str) -> float:
    """Token F1 of two answers after normalisation and Porter stemming (LoCoMo's ``f1_score``)."""
    predicted = answer_tokens(prediction)
    expected = answer_tokens(gold)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Multi-hop F1: split both on commas; mean over gold parts of the best part's F1."""
    predictions = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(f1_score(p, g) for p in predictions) for g in golds) / len(golds)


def locomo_f1(prediction: str, gold: str, category: int) -> float:
    """LoCoMo's per-category answer score for categories 1-4.

    Category 1 (multi-hop) uses `multi_answer_f1`; 2-4 plain `f1_score`, with the gold of
    category 3 cut at its first ``;`` as LoCoMo's evaluation does.
    """
    if category == 1:
        return multi_answer_f1(prediction, gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return f1_score(prediction, gold)


# -- prompts ---------------------------------------------------------------------------


def memory_line(message: RecallMessage) -> str:
    """One retrieved turn for the prompt: ``[8 May 2023] Caroline: text``."""
    try:
        when = datetime.fromisoformat(message.created_at)
        date = f"{when.day} {when:%B %Y}"
    except ValueError:
        date = message.created_at
    text = " ".join(message.text.split())
    name = message.name or ""
    if name and not text.startswith(f"{name}:"):
        text = f"{name}: {text}"
    return f"[{date}] {text}"


def answer_messages(question: str, memories: Sequence[RecallMessage]) -> list[BaseMessage]:
    """The answer prompt: instructions, the retrieved turns oldest first, the question."""
    ordered = sorted(memories, key=lambda m: (m.created_at, m.thread_id, m.turn))
    lines = "\n".join(memory_line(m) for m in ordered) or "(memory search found nothing)"
    return [
        SystemMessage(ANSWER_SYSTEM),
        HumanMessage(f"Excerpts, oldest first:\n{lines}\n\nQuestion: {question}\nAnswer:"),
    ]


_ANSWER_PREFIX = re.compile(r"^\s*(?:final\s+)?answer\s*:\s*", re.IGNORECASE)


def clean_answer(text: str) -> str:
    """The reply's first non-empty line without an ``Answer:`` label."""
    for line in text.strip().splitlines():
        line = _ANSWER_PREFIX.sub("", line).strip()
        if line:
            return line
    return ""


# -- models ----------------------------------------------------------------------------


def resolve_bench_model(spec: str, flag: str = "--model") -> BaseChatModel:
    """Resolve a model spec for the answer run, or explain what to change.

    Raises:
        AnswerSetupError: unknown spec, ``openai:`` without a configured endpoint, a
            script file that is missing or not a script, a local model that cannot start.
    """
    from langgraph_memgpt.llm.factory import SPEC_CHOICES, hosted_endpoint_configured
    from langgraph_memgpt.llm.local_server import LocalModelError
    from langgraph_memgpt.models import resolve_model as factory_resolve

    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    if kind == "openai" and arg and not hosted_endpoint_configured():
        raise AnswerSetupError(
            f"{flag} {spec} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a self-hosted "
            f"endpoint) in the environment; set it, or use {flag} local"
        )
    if kind == "scripted" and arg and not Path(arg.strip()).is_file():
        raise AnswerSetupError(f"{flag} {spec}: script file {arg.strip()} does not exist")
    try:
        return factory_resolve(spec)
    except LocalModelError as exc:
        raise AnswerSetupError(
            f"{flag} {spec}: the embedded local model cannot run: {exc} (or use "
            f"{flag} openai:<name> with OPENAI_API_KEY set)"
        ) from exc
    except (OSError, ValueError) as exc:
        raise AnswerSetupError(
            f"{flag} {spec}: {exc} (choose one of: {', '.join(SPEC_CHOICES)})"
        ) from exc


def describe_model(model: BaseChatModel) -> str:
    """A short name of what a spec resolved to, e.g. ``local-tool-calling (memgpt-local)``."""
    inner = getattr(model, "inner", model)
    name = getattr(inner, "model_name", None) or getattr(inner, "model", None)
    return f"{model._llm_type} ({name})" if isinstance(name, str) else model._llm_type


# -- the run ---------------------------------------------------------------------------


@dataclass
class AnswerOptions:
    """How many questions to answer and how much memory goes into each prompt."""

    top_k: int = DEFAULT_TOP_K
    limit: int | None = None  # answer only the first N scorable questions per conversation
    answer_max_tokens: int = ANSWER_MAX_TOKENS
    judge_max_tokens: int = JUDGE_MAX_TOKENS
    model_spec: str = "auto"
    judge_spec: str = "auto"


@dataclass
class QuestionResult:
    """What one answered question measured."""

    conversation: str
    question: str
    category: int
    gold: str
    answer: str
    f1: float
    label: str | None  # "CORRECT" | "WRONG" | None (judge error)
    judge_reply: str
    search_ms: float
    answer_ms: float
    judge_ms: float
    prompt_tokens: int
    prompt_tokens_from_model: bool
    context_tokens: int
    evidence_retrieved: bool

    @property
    def total_ms(self) -> float:
        """Search + answer, the latency a user of the agent waits for."""
        return self.search_ms + self.answer_ms

    def as_item(self) -> dict[str, Any]:
        """The JSON form in the report's ``items``."""
        return {
            "conversation": self.conversation,
            "category": self.category,
            "question": self.question,
            "gold": self.gold,
            "answer": self.answer,
            "f1": round(self.f1, 4),
            "judge": self.label,
            "judge_reply": None if self.label else self.judge_reply[:500],
            "evidence_retrieved": self.evidence_retrieved,
            "search_ms": round(self.search_ms, 2),
            "answer_ms": round(self.answer_ms, 1),
            "judge_ms": round(self.judge_ms, 1),
            "prompt_tokens": self.prompt_tokens,
        }


def summarize(results: Sequence[QuestionResult]) -> dict[str, Any]:
    """F1, J, judge errors, latency and prompt-token percentiles of some results."""
    n = len(results)
    correct = sum(r.label == "CORRECT" for r in results)
    return {
        "n": n,
        "f1": round(sum(r.f1 for r in results) / n, 4) if n else None,
        "j": round(correct / n, 4) if n else None,
        "judge_errors": sum(r.label is None for r in results),
        "evidence_retrieved": round(sum(r.evidence_retrieved for r in results) / n, 4)
        if n
        else None,
        "search_ms": percentiles((r.search_ms for r in results), 2),
        "answer_ms": percentiles(r.answer_ms for r in results),
        "total_ms": percentiles(r.total_ms for r in results),
        "judge_ms": percentiles(r.judge_ms for r in results),
        "prompt_tokens": percentiles((r.prompt_tokens for r in results), 0),
        "context_tokens": percentiles((r.context_tokens for r in results), 0),
    }


def _usage_input_tokens(message: AIMessage) -> int | None:
    usage = message.usage_metadata
    if usage and usage.get("input_tokens"):
        return int(usage["input_tokens"])
    return None


@dataclass
class AnswerRun:
    """Answers, scores and times LoCoMo questions from a recall memory.

    Call `run_conversation` once per ingested conversation, then `report`. The answer
    and the judge call of a question are made back to back (answer 1, judge 1, answer
    2, ...), which is the order a scripted model sharing both roles replays.
    """

    model: BaseChatModel
    judge: BaseChatModel
    options: AnswerOptions = field(default_factory=AnswerOptions)
    counter: TokenCounter = field(default_factory=lambda: TokenCounter(TOKEN_ENCODING))
    results: list[QuestionResult] = field(default_factory=list)

    def questions_of(self, conv: Conversation) -> Sequence[Question]:
        """The questions answered for ``conv``: the first ``limit`` scorable ones."""
        limit = self.options.limit
        return conv.questions if limit is None else conv.questions[:limit]

    def planned(self, conversations: Sequence[Conversation]) -> int:
        """How many questions a run over ``conversations`` answers."""
        return sum(len(self.questions_of(c)) for c in conversations)

    def run_conversation(
        self,
        conv: Conversation,
        recall: RecallStore,
        *,
        progress: ProgressFn | None = None,
        total: int = 0,
    ) -> None:
        """Answer and score every selected question of one ingested conversation."""
        prefix = f"{conv.sample_id}:"
        for q in self.questions_of(conv):
            start = time.perf_counter()
            page = recall.search(q.question, mode=ANSWER_SEARCH_MODE, page_size=self.options.top_k)
            search_ms = 1000.0 * (time.perf_counter() - start)
            memories = [hit.item for hit in page.hits]
            retrieved = {m.message_id.removeprefix(prefix) for m in memories}
            prompt = answer_messages(q.question, memories)

            start = time.perf_counter()
            reply = self._call(self.model, prompt, q, "answer", self.options.answer_max_tokens)
            answer_ms = 1000.0 * (time.perf_counter() - start)
            answer = clean_answer(content_text(reply))
            reported = _usage_input_tokens(reply)

            start = time.perf_counter()
            verdict = self._call(
                self.judge,
                judge_messages(q.question, q.answer, answer),
                q,
                "judge",
                self.options.judge_max_tokens,
                extra_body={"response_format": JUDGE_RESPONSE_FORMAT},
            )
            judge_ms = 1000.0 * (time.perf_counter() - start)
            judge_reply = content_text(verdict)

            self.results.append(
                QuestionResult(
                    conversation=conv.sample_id,
                    question=q.question,
                    category=q.category,
                    gold=q.answer,
                    answer=answer,
                    f1=locomo_f1(answer, q.answer, q.category),
                    label=parse_judgement(judge_reply),
                    judge_reply=judge_reply,
                    search_ms=search_ms,
                    answer_ms=answer_ms,
                    judge_ms=judge_ms,
                    prompt_tokens=reported
                    if reported is not None
                    else self.counter.messages(prompt),
                    prompt_tokens_from_model=reported is not None,
                    context_tokens=self.counter.text("\n".join(memory_line(m) for m in memories)),
                    evidence_retrieved=bool(retrieved & set(q.evidence)),
                )
            )
            if progress:
                progress("answer + judge", 1, total)

    @staticmethod
    def _call(
        model: BaseChatModel,
        prompt: list[BaseMessage],
        question: Question,
        role: str,
        max_tokens: int,
        **kwargs: Any,
    ) -> AIMessage:
        try:
            reply = model.invoke(prompt, max_tokens=max_tokens, **kwargs)
        except Exception as exc:
            raise AnswerModelError(
                f"the {role} model failed on question {question.question!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(reply, AIMessage):  # pragma: no cover - chat models return these
            raise AnswerModelError(f"the {role} model returned {type(reply).__name__}")
        return reply

    def report(self) -> dict[str, Any]:
        """The ``answer`` section of the benchmark report (JSON-ready)."""
        by_category: dict[int, list[QuestionResult]] = defaultdict(list)
        for result in self.results:
            by_category[result.category].append(result)
        from_model = sum(r.prompt_tokens_from_model for r in self.results)
        if self.results and from_model == len(self.results):
            source = "model usage_metadata.input_tokens"
        elif from_model == 0:
            source = f"estimated with tokens.py ({TOKEN_ENCODING})"
        else:
            source = f"mixed: {from_model} from model usage, the rest estimated with tokens.py"
        return {
            "model": self.options.model_spec,
            "judge_model": self.options.judge_spec,
            "model_resolved": describe_model(self.model),
            "judge_resolved": describe_model(self.judge),
            "search_mode": ANSWER_SEARCH_MODE,
            "top_k": self.options.top_k,
            "limit": self.options.limit,
            "answer_max_tokens": self.options.answer_max_tokens,
            "questions": len(self.results),
            "overall": summarize(self.results),
            "per_category": {str(cat): summarize(by_category[cat]) for cat in sorted(by_category)},
            "prompt_tokens_source": source,
            "notes": {
                "f1": "LoCoMo answer F1: normalised tokens, Porter-stemmed (NLTK's default "
                "rules); category 1 split on commas, category 3 gold cut at ';'",
                "j": "fraction judged CORRECT among answered questions; a judge error "
                "counts as not correct",
                "total_ms": "search + answer (judge time excluded, reported as judge_ms)",
                "context_tokens": f"tokens.py ({TOKEN_ENCODING}) count of the retrieved "
                "turns as put in the prompt",
            },
            "items": [r.as_item() for r in self.results],
        }
