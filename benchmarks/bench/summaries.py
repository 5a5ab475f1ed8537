"""LoCoMo ``--archival-summaries``: recursive session summaries in archival memory.

The agent summarizes messages as they leave its window and keeps each summary in archival
memory (``summarize_evict``). This module writes those summaries for a LoCoMo conversation
as the agent would have: session by session, in order, each folding in the previous one,
with the agent's own summarizer prompt, word limit and token budget, stored with the
agent's ``summary`` tag and the session as provenance (thread = session key, created at
the session's date).

A summary stands for a whole session, so its search is scored at session level: the
ranked list is the sessions of the hit summaries, the evidence is the set of sessions of
the question's evidence turns. Those figures are not comparable with the turn-level ones.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from langgraph_memgpt.context import Context
from langgraph_memgpt.nodes.summarize_evict import (
    SUMMARY_TAG,
    TRANSCRIPT_LINE_CHARS,
    summary_word_limit,
    write_summary,
)
from langgraph_memgpt.turn.main_context import summary_token_budget
from langgraph_memgpt.turn.tokens import TokenCounter

from .answer import describe_model
from .locomo import Conversation, Question, Session, turn_text
from .metrics import percentiles

SESSION_LEVEL = "session"
SESSION_LEVEL_NOTE = (
    "session level: one archival summary per session; the ranked list is the sessions of "
    "the hit summaries and the evidence is the set of sessions holding the question's "
    "evidence turns (not comparable with the turn-level figures)"
)

#: Reports progress: ``(task, advance, total)``, as the runner's progress callback.
ProgressFn = Callable[[str, int, int], None]


class SummaryModelError(RuntimeError):
    """The summary model failed on a session; the message names the conversation and session."""


def session_transcript(session: Session) -> str:
    """A session as the summarizer sees it: its date, then one ``Speaker: text`` line a turn.

    Lines are cut at the agent's ``TRANSCRIPT_LINE_CHARS``, as evicted messages are.
    """
    lines = [f"date: {session.date_text}"]
    for turn in session.turns:
        text = " ".join(turn_text(turn, speaker_prefix=True).split())
        if len(text) > TRANSCRIPT_LINE_CHARS:
            text = text[:TRANSCRIPT_LINE_CHARS] + "…"
        lines.append(text)
    return "\n".join(lines)


def evidence_sessions(conv: Conversation, question: Question) -> tuple[str, ...]:
    """Session keys of a question's evidence turns, in order of first appearance."""
    session_of = {t.dia_id: s.key for s in conv.sessions for t in s.turns}
    out: list[str] = []
    for dia_id in question.evidence:
        key = session_of.get(dia_id)
        if key is not None and key not in out:
            out.append(key)
    return tuple(out)


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "_", text).strip("_")[:40] or "model"


class SummaryArchive:
    """One conversation's session summaries in an archival memory of their own.

    A separate database (not the one of ``--archival``'s turn passages): FTS5's BM25
    statistics are per database, so sharing one would change the turn-passage figures.
    """

    def __init__(self, folder: Path, agent_id: str, embeddings: Embeddings | None) -> None:
        from langgraph_memgpt.stores.backends import open_backend

        self.backend = open_backend(folder, embedding_model="none", embeddings=embeddings)
        self.memory = self.backend.open(agent_id).archival

    def stored(self) -> dict[str, str]:
        """Summaries already stored (a reused data dir), by session key."""
        page = self.memory.search("", tags=[SUMMARY_TAG], page_size=max(1, self.count() + 1))
        return {h.item.thread_id or "": h.item.text for h in page.hits}

    def count(self) -> int:
        """Passages stored."""
        return self.memory.count()

    def search(self, query: str, mode: Literal["fts", "vector", "hybrid"], k: int) -> list[str]:
        """Session keys of the ``k`` best summaries for ``query``."""
        page = self.memory.search(query, mode=mode, page_size=k, tags=[SUMMARY_TAG])
        return [h.item.thread_id or "" for h in page.hits]

    def close(self) -> None:
        """Persist the FAISS cache and close the database."""
        from langgraph_memgpt.stores.backends import close_backend

        close_backend(self.backend)


@dataclass
class SessionSummarizer:
    """Writes and times the recursive session summaries of ``--archival-summaries``.

    Call `ingest` once per conversation (it returns the conversation's `SummaryArchive`
    for searching), then `report` for the ``ingest.archival_summaries`` section.
    """

    model: BaseChatModel
    model_spec: str
    context: Context = field(default_factory=Context)
    counter: TokenCounter = field(default_factory=TokenCounter)
    seconds: list[float] = field(default_factory=list)
    words: list[int] = field(default_factory=list)
    reused: int = 0
    empty: list[str] = field(default_factory=list)

    @property
    def max_tokens(self) -> int:
        """The agent's summary budget in tokens: the reply cap and the clip."""
        return summary_token_budget(self.context)

    @property
    def max_words(self) -> int:
        """The word limit the prompt asks for, as the agent asks it."""
        return summary_word_limit(self.max_tokens)

    def folder_name(self) -> str:
        """Subfolder of a conversation's data folder for this model's summaries.

        Named after the model, so a reused ``--data-dir`` never mixes summaries of two models.
        """
        name = f"{self.model_spec}|{describe_model(self.model)}"
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        return f"summaries-{_slug(describe_model(self.model))}-{digest}"

    def ingest(
        self,
        conv: Conversation,
        data_folder: Path,
        embeddings: Embeddings | None,
        *,
        progress: ProgressFn | None = None,
        total: int = 0,
    ) -> SummaryArchive:
        """Summarize ``conv`` session by session, store each summary, return the archive.

        Sessions whose summary a reused data folder already holds are not summarized
        again; their stored text is the next session's previous summary.

        Raises:
            SummaryModelError: the model call failed.
        """
        from langgraph_memgpt.stores.capabilities import BulkLoad, require
        from langgraph_memgpt.stores.passages import NewPassage

        archive = SummaryArchive(data_folder / self.folder_name(), conv.sample_id, embeddings)
        try:
            stored = archive.stored()
            previous = ""
            for session in conv.sessions:
                if session.key in stored:
                    previous = stored[session.key]
                    self.reused += 1
                else:
                    start = time.perf_counter()
                    text = self._summarize(conv, session, previous)
                    self.seconds.append(time.perf_counter() - start)
                    if text:
                        self.words.append(len(text.split()))
                        require(archive.memory, BulkLoad, "bench summaries").insert_many(
                            [
                                NewPassage(
                                    text,
                                    tags=(SUMMARY_TAG,),
                                    thread_id=session.key,
                                    turn=len(session.turns),
                                    created_at=session.created_at,
                                )
                            ]
                        )
                        previous = text
                    else:  # nothing to store; the agent would keep its previous summary
                        self.empty.append(f"{conv.sample_id}:{session.key}")
                if progress:
                    progress("summarize sessions", 1, total)
        except BaseException:
            archive.close()
            raise
        return archive

    def _summarize(self, conv: Conversation, session: Session, previous: str) -> str:
        """The agent's own ``write_summary`` on this session ('' if the model wrote nothing)."""
        try:
            return write_summary(
                self.model, previous, session_transcript(session), self.max_tokens, self.counter
            )
        except Exception as exc:
            raise SummaryModelError(
                f"the summary model failed on {conv.sample_id} {session.key}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def report(self) -> dict[str, Any]:
        """The ``ingest.archival_summaries`` section of the report (JSON-ready)."""
        return {
            "level": SESSION_LEVEL,
            "model": self.model_spec,
            "model_resolved": describe_model(self.model),
            "max_words": self.max_words,
            "max_tokens": self.max_tokens,
            "sessions_summarized": len(self.seconds),
            "sessions_reused": self.reused,
            "empty_summaries": self.empty,
            "seconds": round(float(sum(self.seconds)), 3),
            "seconds_per_session": percentiles(self.seconds, 2),
            "words_per_summary": percentiles(self.words, 0),
        }
