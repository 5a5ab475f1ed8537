"""Run the LoCoMo retrieval benchmark through the agent's own memory search.

Each conversation is ingested into a fresh agent exactly as the agent would have lived it
(every turn a recall message, one thread per session, sessions in order), then every
scorable question is put to ``SqliteRecallMemory.search`` - the function behind the
``conversation_search`` tool - and the ranked turns are scored against the evidence.
A plain BM25 baseline is scored in the same run so every report carries its floor.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar, get_args

from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.backends import close_backend, open_backend

from .bm25 import BM25
from .locomo import (
    Conversation,
    Question,
    beam_abilities,
    recall_messages,
    turn_text,
)
from .metrics import DEFAULT_KS, MetricAccumulator, percentiles

if TYPE_CHECKING:
    from .answer import AnswerRun
    from .summaries import SessionSummarizer, SummaryArchive

_T = TypeVar("_T")
_P = ParamSpec("_P")

Mode = Literal["fts", "vector", "hybrid"]
MODES: tuple[Mode, ...] = get_args(Mode)
#: The mode ``conversation_search`` uses, so the headline figure is what the agent gets.
DEFAULT_MODE: Mode = "hybrid"
ARCHIVAL_PREFIX = "archival:"
#: Session-level scores of the ``--archival-summaries`` passages (see ``bench.summaries``).
SUMMARIES_PREFIX = "archival-summaries:"

#: Reports progress: ``(task, advance, total)``; ``total`` is set on a task's first call.
ProgressFn = Callable[[str, int, int], None]


@dataclass
class BenchOptions:
    """What to measure and where to keep the stores."""

    modes: Sequence[Mode] = (DEFAULT_MODE, "fts", "vector")
    ks: Sequence[int] = DEFAULT_KS
    data_dir: Path | None = None  # None: the caller provides a temporary folder
    archival: bool = False  # also ingest turns as archival passages and score that search
    embedding_model: str = "minilm"
    speaker_prefix: bool = True
    database_url: str = ""  # postgresql://...: the stores in Postgres; "": SQLite in data_dir


@dataclass
class _Timing:
    ingest_seconds: float = 0.0
    archival_seconds: float = 0.0
    turns: int = 0
    #: Per score key, each query's search time in ms (the search call alone, in order).
    search_ms: dict[str, list[float]] = field(default_factory=dict)

    def timed(
        self, key: str, search: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        """Run one query's ``search(*args, **kwargs)`` and keep its time under ``key``."""
        start = time.perf_counter()
        out = search(*args, **kwargs)
        self.search_ms.setdefault(key, []).append(1000.0 * (time.perf_counter() - start))
        return out

    def search_report(self) -> dict[str, dict[str, float | int | None]]:
        """Per key: queries timed, p50 / p95 and mean ms per query."""
        return {
            key: {
                "n": len(values),
                **percentiles(values, 2),
                "mean": round(sum(values) / len(values), 2) if values else None,
            }
            for key, values in self.search_ms.items()
        }


def _add(
    acc: MetricAccumulator,
    conv: Conversation,
    q: Question,
    ranked: Sequence[str],
    relevant: Sequence[str] | None = None,
) -> None:
    """Score one question's ranking under its category, BEAM ability and conversation."""
    evidence = q.evidence if relevant is None else relevant
    acc.add(q.category, ranked, evidence, ability=q.beam_type, conversation=conv.sample_id)


def parse_modes(text: str) -> list[Mode]:
    """Parse ``"fts,vector,hybrid"`` (order kept, duplicates dropped); unknown -> ValueError."""
    out: list[Mode] = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        if part not in MODES:
            raise ValueError(f"unknown mode {part!r}; choose from {', '.join(MODES)}")
        if part not in out:
            out.append(part)
    if not out:
        raise ValueError(f"no mode given; choose from {', '.join(MODES)}")
    return out


def bm25_baseline(
    conversations: Sequence[Conversation],
    ks: Sequence[int],
    progress: ProgressFn | None = None,
) -> MetricAccumulator:
    """Score plain BM25 over ``speaker: text`` turns, one index per conversation.

    Its figures are grouped as the modes' are (category, BEAM ability, conversation).
    """
    acc = MetricAccumulator(tuple(ks))
    total = sum(len(c.questions) for c in conversations)
    for conv in conversations:
        turns = [t for s in conv.sessions for t in s.turns]
        index = BM25([f"{t.speaker}: {t.text}" for t in turns])
        for q in conv.questions:
            ranked = [turns[i].dia_id for i in index.rank(q.question, max(ks))]
            _add(acc, conv, q, ranked)
            if progress:
                progress("baseline bm25", 1, total)
    return acc


def run_locomo(
    conversations: Sequence[Conversation],
    options: BenchOptions,
    data_dir: Path,
    *,
    embeddings: Embeddings | None = None,
    progress: ProgressFn | None = None,
    answerer: AnswerRun | None = None,
    summarizer: SessionSummarizer | None = None,
) -> dict[str, Any]:
    """Ingest every conversation into its own agent, search every question, score it.

    Args:
        conversations: Loaded LoCoMo conversations.
        options: Modes, cut-offs and flags.
        data_dir: Folder for the memory databases and FAISS caches (one subfolder per
            conversation, named after its sample id); reusing one skips
            turns already stored (ingest is idempotent).
        embeddings: Embedding model; built from ``options.embedding_model`` when a
            vector-using mode is asked for and none is given.
        progress: Progress callback (see :data:`ProgressFn`).
        answerer: When given, also answer (a subset of) the questions from the agent's
            hybrid search with a chat model and score the answers (``--answer``).
        summarizer: When given, also store one recursive summary per session in archival
            memory, as the agent's eviction would, and score their search at session
            level under ``archival-summaries:<mode>`` (``--archival-summaries``).

    Returns:
        The report as a JSON-ready dict: ``default_mode``, ``backend`` ("sqlite" or
        "postgres"), ``questions``, ``modes`` (per mode ``overall``, ``per_category``,
        ``per_conversation`` and, when questions carry BEAM's ``beam_type``,
        ``per_ability``), ``baseline`` (grouped the same), ``ingest`` (turns per second)
        and ``search_ms_per_query`` (per mode the queries timed, ``p50``, ``p95`` and
        ``mean`` of each search call's milliseconds); ``beam_abilities`` (ability ->
        category) when questions carry them; plus
        ``answer`` (see `AnswerRun.report`) with an ``answerer``; with a
        ``summarizer``, ``ingest.archival_summaries`` (see `SessionSummarizer.report`) and
        session-level entries in ``modes`` marked ``"level": "session"``.
    """
    from langgraph_memgpt.stores.embeddings import embedding_identity, get_embeddings

    ks = tuple(sorted(set(options.ks)))
    # Answering uses the agent's hybrid search, which uses vectors when there are any.
    needs_vectors = any(m != "fts" for m in options.modes) or answerer is not None
    if embeddings is None and needs_vectors:
        embeddings = get_embeddings(options.embedding_model)
    timing = _Timing()
    keys = _score_keys(options, summaries=summarizer is not None)
    # Per conversation too: a ranking change is kept only if it holds on each one alone.
    accs: dict[str, MetricAccumulator] = {m: MetricAccumulator(ks) for m in keys}
    total_turns = sum(c.turn_count for c in conversations)
    total_q = sum(len(c.questions) for c in conversations)
    total_answered = answerer.planned(conversations) if answerer is not None else 0
    total_sessions = sum(len(c.sessions) for c in conversations)
    backend = _postgres_backend(options, embeddings)
    try:
        for conv in conversations:
            with _conversation_stores(conv, data_dir, embeddings, backend) as stores:
                folder, recall, open_archival = stores
                messages = recall_messages(
                    conv, conv.sample_id, speaker_prefix=options.speaker_prefix
                )
                done = 0

                def step(n: int) -> None:
                    nonlocal done
                    if progress:
                        progress("ingest recall", n - done, total_turns)
                    done = n

                start = time.perf_counter()
                _add_all(recall, messages, step)
                timing.ingest_seconds += time.perf_counter() - start
                archival = None
                if options.archival:
                    start = time.perf_counter()
                    archival = _ingest_archival(open_archival(), conv, options)
                    timing.archival_seconds += time.perf_counter() - start
                summaries: SummaryArchive | None = None
                try:
                    if summarizer is not None:
                        summaries = summarizer.ingest(
                            conv, folder, embeddings, progress=progress, total=total_sessions
                        )
                    timing.turns += len(messages)
                    _score_conversation(
                        conv,
                        recall,
                        archival,
                        summaries,
                        options,
                        ks,
                        accs,
                        timing,
                        progress,
                        total_q,
                    )
                    if answerer is not None:
                        answerer.run_conversation(
                            conv, recall, progress=progress, total=total_answered
                        )
                finally:
                    if summaries is not None:
                        summaries.close()
    finally:
        if backend is not None:
            backend.close()
    baseline = bm25_baseline(conversations, ks, progress)

    model = None
    if embeddings is not None and needs_vectors:
        model = embedding_identity(embeddings)[0]
    report: dict[str, Any] = {
        "default_mode": DEFAULT_MODE,
        "backend": "postgres" if options.database_url else "sqlite",
        "questions": total_q,
        "conversations": len(conversations),
        "dropped_questions": sum(c.dropped_questions for c in conversations),
        "ks": list(ks),
        "modes": {
            key: _summary(acc, session_level=_is_session_level(key)) for key, acc in accs.items()
        },
        "baseline": {"bm25": _summary(baseline)},
        "ingest": {
            "turns": timing.turns,
            "seconds": round(timing.ingest_seconds, 3),
            "turns_per_second": round(timing.turns / timing.ingest_seconds, 1)
            if timing.ingest_seconds
            else None,
            "embedding_model": model,
            "archival": options.archival,
            "archival_seconds": round(timing.archival_seconds, 3) if options.archival else None,
        },
        "search_ms_per_query": timing.search_report(),
    }
    abilities = beam_abilities(conversations)
    if abilities:
        report["beam_abilities"] = abilities
    if summarizer is not None:
        report["ingest"]["archival_summaries"] = summarizer.report()
    if answerer is not None:
        report["answer"] = answerer.report()
    return report


def _postgres_backend(options: BenchOptions, embeddings: Embeddings | None) -> Any:
    """The backend of ``options.database_url`` (Postgres), or None for SQLite."""
    if not options.database_url:
        return None
    model = options.embedding_model if embeddings is not None else "none"
    return open_backend(
        "", database_url=options.database_url, embedding_model=model, embeddings=embeddings
    )


@contextmanager
def _conversation_stores(
    conv: Conversation, data_dir: Path, embeddings: Embeddings | None, backend: Any
) -> Iterator[tuple[Path, Any, Callable[[], Any]]]:
    """A conversation's own agent: ``(folder, recall, open archival)``, closed afterwards.

    SQLite: one database per conversation, since FTS5's BM25 statistics (document
    frequencies, average length) are per database; conversations sharing one would rank
    each other's turns differently depending on which were ingested first, and a reused
    --data-dir would change the figures. Postgres: one database for all, one agent per
    conversation (its BM25 statistics are the agent's own rows). Both through the memory
    interface (`stores.backends.open_backend`).
    """
    folder = data_dir / _folder_name(conv.sample_id)
    agent_id = conv.sample_id
    if backend is not None:
        memory = backend.open(agent_id)
        yield folder, memory.recall, lambda: memory.archival
        return
    own = open_backend(folder, embedding_model="none", embeddings=embeddings)
    try:
        memory = own.open(agent_id)
        yield folder, memory.recall, lambda: memory.archival
    finally:
        close_backend(own)


INGEST_CHUNK = 256
"""Messages per ``add`` call where the store has no bulk ingest (Postgres)."""


def _add_all(recall: Any, messages: Sequence[Any], step: Callable[[int], None]) -> None:
    """Ingest every message: the store's bulk ingest, else ``add`` in chunks in order."""
    if hasattr(recall, "add_many"):
        recall.add_many(messages, progress=step)
        return
    ordered = sorted(messages, key=lambda m: (m.thread_id, m.created_at))
    for start in range(0, len(ordered), INGEST_CHUNK):
        recall.add(ordered[start : start + INGEST_CHUNK])
        step(min(len(ordered), start + INGEST_CHUNK))


def _score_conversation(
    conv: Conversation,
    recall: Any,
    archival: Callable[[str, str, int], list[str]] | None,
    summaries: SummaryArchive | None,
    options: BenchOptions,
    ks: tuple[int, ...],
    accs: dict[str, MetricAccumulator],
    timing: _Timing,
    progress: ProgressFn | None,
    total_q: int,
) -> None:
    """Search every question of ``conv`` in each mode (recall, archival, summaries); score.

    Each search call is timed on its own (`_Timing.timed`), so a report gives the spread
    of search times per mode, not only their mean.
    """
    prefix = f"{conv.sample_id}:"
    for mode in options.modes:
        for q in conv.questions:
            page = timing.timed(mode, recall.search, q.question, mode=mode, page_size=max(ks))
            ranked = [h.item.message_id.removeprefix(prefix) for h in page.hits]
            _add(accs[mode], conv, q, ranked)
            if progress:
                progress(f"search {mode}", 1, total_q)
        if archival is not None:
            key = ARCHIVAL_PREFIX + mode
            for q in conv.questions:
                ranked = timing.timed(key, archival, q.question, mode, max(ks))
                _add(accs[key], conv, q, ranked)
                if progress:
                    progress(f"search {key}", 1, total_q)
        if summaries is not None:
            _score_summaries(conv, summaries, mode, ks, accs, timing, progress, total_q)


def _folder_name(sample_id: str) -> str:
    """A folder of its own, inside the data dir, for a conversation id (any characters).

    An id that is a plain name ("conv-26") is its folder's name. Any other id gets its
    characters replaced and a hash of the whole id appended: replacing alone made "a/b"
    and "a b" share one folder, and left ".." naming the folder above ``--data-dir``.
    """
    safe = re.sub(r"[^\w.-]", "_", sample_id).lstrip(".")
    if safe == sample_id and len(safe) <= 100:
        return safe
    digest = hashlib.sha1(sample_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe[:80] or 'conversation'}-{digest}"


def _score_keys(options: BenchOptions, *, summaries: bool = False) -> list[str]:
    keys: list[str] = list(options.modes)
    if options.archival:
        keys += [ARCHIVAL_PREFIX + m for m in options.modes]
    if summaries:
        keys += [SUMMARIES_PREFIX + m for m in options.modes]
    return keys


def _is_session_level(key: str) -> bool:
    return key.startswith(SUMMARIES_PREFIX)


def _summary(acc: MetricAccumulator, *, session_level: bool = False) -> dict[str, Any]:
    """One system's figures: overall, per category, per BEAM ability (if any), per conversation."""
    out: dict[str, Any] = {
        "questions": acc.count,
        "overall": acc.overall(),
        "per_category": acc.per_category(),
    }
    per_ability = acc.per_ability()
    if per_ability:
        out["per_ability"] = per_ability
    per_conversation = acc.per_conversation()
    if per_conversation:
        out["per_conversation"] = per_conversation
    if session_level:
        from .summaries import SESSION_LEVEL, SESSION_LEVEL_NOTE

        out = {"level": SESSION_LEVEL, "note": SESSION_LEVEL_NOTE, **out}
    return out


def _score_summaries(
    conv: Conversation,
    summaries: SummaryArchive,
    mode: Mode,
    ks: Sequence[int],
    accs: dict[str, MetricAccumulator],
    timing: _Timing,
    progress: ProgressFn | None,
    total_q: int,
) -> None:
    """Score the session summaries' search at session level (sessions ranked vs evidence's)."""
    from .summaries import evidence_sessions

    key = SUMMARIES_PREFIX + mode
    for q in conv.questions:
        ranked = timing.timed(key, summaries.search, q.question, mode, max(ks))
        _add(accs[key], conv, q, ranked, evidence_sessions(conv, q))
        if progress:
            progress(f"search {key}", 1, total_q)


def _ingest_archival(
    archival: Any, conv: Conversation, options: BenchOptions
) -> Callable[[str, str, int], list[str]]:
    """Insert every turn as an archival passage; return a ``(query, mode, k) -> dia ids`` search.

    Passages keep their provenance (thread = session, turn = position), which is how a hit
    is mapped back to its turn.
    """
    from langgraph_memgpt.stores.passages import NewPassage

    dia_of: dict[tuple[str, int], str] = {}
    rows: list[NewPassage] = []
    for session in conv.sessions:
        for index, turn in enumerate(session.turns, start=1):
            dia_of[(session.key, index)] = turn.dia_id
            rows.append(
                NewPassage(
                    turn_text(turn, speaker_prefix=options.speaker_prefix),
                    tags=(turn.speaker,),
                    thread_id=session.key,
                    turn=index,
                    created_at=session.created_at,
                )
            )
    # Passages have no natural key, so a reused data dir is only filled once.
    if archival.count() == 0:
        archival.insert_many(rows)

    def search(query: str, mode: str, k: int) -> list[str]:
        page = archival.search(query, mode=mode, page_size=k)
        return [
            dia_of[(p.item.thread_id or "", p.item.turn or 0)]
            for p in page.hits
            if (p.item.thread_id or "", p.item.turn or 0) in dia_of
        ]

    return search
