"""Recall memory: verbatim, idempotent history; safe, filtered, paginated, hybrid search.

Tests that speak the recall interface run on both backends (``recall`` and ``hybrid`` are
parametrised over SQLite and Postgres); those about SQLite internals (FTS5, FAISS files,
bulk ingest) use ``sqlite_recall`` / ``sqlite_hybrid``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from conftest import BackendFactory
from corpora import TALK
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings, embed_texts, normalize
from langgraph_memgpt.stores.sqlite import faiss_index
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.fts import match_phrase
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.stores.words import query_terms

BASE = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def msg(
    n: int,
    text: str,
    *,
    role: str = "user",
    agent: str = "agent-a",
    thread: str = "t1",
    at: datetime | str | None = None,
    tool_calls: Sequence[dict[str, object]] = (),
    name: str | None = None,
) -> RecallMessage:
    """Message ``n`` of a conversation, one minute after message ``n - 1`` by default."""
    created = at if isinstance(at, str) else (at or BASE + timedelta(minutes=n)).isoformat()
    return RecallMessage(
        agent_id=agent,
        thread_id=thread,
        message_id=f"{agent}-{thread}-{n}",
        role=role,
        text=text,
        created_at=created,
        turn=n,
        tool_calls=list(tool_calls),
        name=name,
    )


def ids(page_or_list: object) -> list[str]:
    hits = getattr(page_or_list, "hits", None)
    items = [h.item for h in hits] if hits is not None else page_or_list
    return [m.message_id for m in items]  # type: ignore[attr-defined]


Recall = Any
"""A recall store of either backend (the protocol plus ``thread_messages``)."""


@pytest.fixture
def recall(make_backend: BackendFactory) -> Recall:
    """Words-only recall (no embeddings) on each backend: for everything not about vectors."""
    return make_backend().open("agent-a").recall


@pytest.fixture
def hybrid(make_backend: BackendFactory, embeddings: MiniLMEmbeddings) -> Recall:
    """Recall with the real MiniLM embeddings, on each backend."""
    return make_backend(embeddings).open("agent-a").recall


@pytest.fixture
def sqlite_recall(db: sqlite_utils.Database, tmp_data_dir: Path) -> SqliteRecallMemory:
    """Words-only SQLite recall, for tests of its internals."""
    return SqliteRecallMemory(db, "agent-a", None, tmp_data_dir / "faiss")


@pytest.fixture
def sqlite_hybrid(
    db: sqlite_utils.Database, tmp_data_dir: Path, embeddings: MiniLMEmbeddings
) -> SqliteRecallMemory:
    """SQLite recall with the real MiniLM embeddings and FAISS caches."""
    return SqliteRecallMemory(db, "agent-a", embeddings, tmp_data_dir / "faiss")


def is_sqlite(recall: Recall) -> bool:
    """Whether ``recall`` is the embedded backend's (which has a SQLite ``db``)."""
    return hasattr(recall, "db")


def stored_contexts(recall: Recall) -> dict[str, str | None]:
    """{message id: stored context} of every message, read from either backend's tables."""
    if is_sqlite(recall):
        return dict(recall.db.conn.execute("SELECT message_id, context FROM recall").fetchall())
    with recall.pool.connection() as conn:
        return dict(conn.execute("SELECT message_id, context FROM memgpt_recall").fetchall())


PUPPY_THREAD = [
    "Guess what, I finally adopted a puppy last weekend!",
    "Congratulations! What did you name it?",
    "Biscuit.",
    "Cute. How old is he?",
    "Ten weeks.",
]


# -- writing -------------------------------------------------------------------------


def test_adding_the_same_message_twice_stores_one_row(recall: Recall) -> None:
    first = msg(1, "hello there")
    assert recall.add([first]) == 1
    assert recall.add([first]) == 0
    assert recall.add([first, msg(2, "second"), first]) == 1
    assert recall.count() == 2
    assert len(stored_contexts(recall)) == 2
    found = ids(recall.search("hello", mode="fts"))
    assert found.count(first.message_id) == 1 and len(found) == len(set(found))


def test_messages_are_stored_verbatim(recall: Recall) -> None:
    calls: list[dict[str, object]] = [
        {"name": "core_memory_append", "args": {"label": "human", "content": "x"}, "id": "c1"}
    ]
    original = msg(1, "  spacing\tand ünïcödé 🎉  ", role="assistant", tool_calls=calls)
    tool = msg(2, '{"status": "OK"}', role="tool", name="core_memory_append")
    recall.add([original, tool])
    stored, stored_tool = recall.get([original.message_id, tool.message_id])
    assert stored.text == original.text
    assert stored.tool_calls == calls
    assert stored.role == "assistant" and stored.turn == 1
    assert stored_tool.name == "core_memory_append"
    assert datetime.fromisoformat(stored.created_at) == BASE + timedelta(minutes=1)


def test_a_failing_batch_stores_nothing(recall: Recall) -> None:
    with pytest.raises(ValueError, match="created_at must be YYYY-MM-DD or ISO-8601"):
        recall.add([msg(1, "fine"), msg(2, "bad time", at="yesterday-ish")])
    assert recall.count() == 0


def test_message_of_another_agent_is_refused(recall: Recall) -> None:
    with pytest.raises(ValueError, match="belongs to agent 'agent-b'"):
        recall.add([msg(1, "hi", agent="agent-b")])
    assert recall.count() == 0


def test_messages_persist_across_reopening(make_backend: BackendFactory) -> None:
    make_backend().open("agent-a").recall.add([msg(1, "kept on disk")])
    reopened = make_backend().open("agent-a").recall
    assert ids(reopened.search("disk", mode="fts")) == ["agent-a-t1-1"]


# -- safe full-text queries ------------------------------------------------------------

NASTY = [
    "",
    "   ",
    '"',
    "'",
    '"unbalanced',
    "*",
    "pup*",
    "NEAR",
    "NEAR(a b)",
    "a NEAR/2 b",
    "AND",
    "OR OR",
    "NOT",
    "-",
    "-puppy",
    "col:puppy",
    "text:",
    "(",
    "((a)",
    ")",
    "^start",
    "{a b}",
    "🐶🐶",
    "puppy 🐶 name?",
    "C++ -O2 -Wall",
    "don't stop",
    "\x00",
    "a" * 5000,
]


@pytest.mark.parametrize("query", NASTY)
def test_any_query_text_is_safe(recall: Recall, query: str) -> None:
    recall.add([msg(i, text) for i, text in enumerate(PUPPY_THREAD)])
    for mode in ("fts", "hybrid"):
        page = recall.search(query, mode=mode)  # type: ignore[arg-type]
        assert page.total >= 0


@pytest.fixture(scope="module")
def shared_fts_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite_utils.Database]:
    root = tmp_path_factory.mktemp("fts")
    database = open_db(root / "memory.sqlite")
    memory = SqliteRecallMemory(database, "agent-a", None, root / "faiss")
    memory.add([msg(i, text) for i, text in enumerate(PUPPY_THREAD)])
    memory.add([msg(10, 'NEAR the (parens) and "quotes" col:value -dash * star')])
    yield database
    database.conn.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.one_of(
        st.text(),
        st.lists(
            st.sampled_from(['"', "*", "NEAR", ":", "-", "(", ")", "AND", "OR", "🐶", "puppy", " "])
        ).map("".join),
    )
)
def test_hypothesis_arbitrary_text_never_breaks_search(
    shared_fts_db: sqlite_utils.Database, query: str
) -> None:
    memory = SqliteRecallMemory(shared_fts_db, "agent-a", None, Path("/nonexistent"))
    page = memory.search(query, mode="fts")
    assert 0 <= len(page.hits) <= 5
    for term in query_terms(query):  # each built expression is valid FTS5 syntax on its own
        shared_fts_db.conn.execute(
            "SELECT COUNT(*) FROM recall_fts WHERE recall_fts MATCH ?", (match_phrase(term),)
        ).fetchone()


def test_raw_fts_syntax_would_have_failed_for_contrast(sqlite_recall: SqliteRecallMemory) -> None:
    recall = sqlite_recall
    recall.add([msg(1, "hello")])
    with pytest.raises(sqlite3.OperationalError):
        recall.db.conn.execute("SELECT * FROM recall_fts WHERE recall_fts MATCH ?", ('"a',))
    assert recall.search('"a', mode="fts").total == 0


def test_empty_query_lists_most_recent_first(recall: Recall) -> None:
    recall.add([msg(i, text) for i, text in enumerate(PUPPY_THREAD)])
    page = recall.search("", page_size=3)
    assert ids(page) == ["agent-a-t1-4", "agent-a-t1-3", "agent-a-t1-2"]
    assert page.total == 5


# -- what is searchable ----------------------------------------------------------------


def test_tool_results_and_search_calls_are_never_found(recall: Recall) -> None:
    """The recorder (``main_context.to_recall``) marks the model's search calls unsearchable:
    which tools search is the tools' knowledge, not the store's."""
    search_call = {"name": "conversation_search", "args": {"query": "birthday"}, "id": "s1"}
    archival_call = {"name": "archival_memory_search", "args": {"query": "birthday"}, "id": "s2"}
    date_call = {"name": "conversation_search_date", "args": {"start_date": "2026-11-01"}}
    searching = [
        msg(2, "", role="assistant", tool_calls=[search_call]),
        msg(3, "Let me search for the birthday.", role="assistant", tool_calls=[search_call]),
        msg(4, "", role="assistant", tool_calls=[archival_call, date_call]),
    ]
    recall.add(
        [
            msg(1, "My birthday is on March 3rd."),
            *(replace(m, searchable=False) for m in searching),
            msg(5, "Found: My birthday is on March 3rd.", role="tool", name="conversation_search"),
        ]
    )
    assert ids(recall.search("birthday", mode="fts")) == ["agent-a-t1-1"]
    assert ids(recall.search_date("2026-11-29", "2026-11-29")) == ["agent-a-t1-1"]
    assert ids(recall.search("", roles=["assistant", "user"])) == ["agent-a-t1-1"]
    assert recall.count() == 5  # stored all the same


def test_what_the_agent_said_through_send_message_is_searchable(recall: Recall) -> None:
    reply = {"name": "send_message", "args": {"message": "Your dentist is Dr. Okafor."}}
    recall.add([msg(1, "", role="assistant", tool_calls=[reply])])
    assert ids(recall.search("dentist", mode="fts")) == ["agent-a-t1-1"]


def test_roles_filter_keeps_only_those_roles(recall: Recall) -> None:
    recall.add(
        [
            msg(1, "I love green tea", role="user"),
            msg(2, "Green tea is great", role="assistant"),
            msg(3, "Note: tea preference saved", role="system"),
        ]
    )
    assert ids(recall.search("tea", roles=["user"], mode="fts")) == ["agent-a-t1-1"]
    assert ids(recall.search("tea", roles=["assistant"], mode="fts")) == ["agent-a-t1-2"]
    assert ids(recall.search("tea", roles=["human"], mode="fts")) == ["agent-a-t1-1"]
    assert recall.search("tea", roles=["user", "assistant"], mode="fts").total == 2
    with pytest.raises(ValueError, match="unknown role 'robot'"):
        recall.search("tea", roles=["robot"])


# -- dates -------------------------------------------------------------------------------

DAY_EDGES = {
    "before": "2026-11-28T23:59:59.999999+00:00",
    "midnight": "2026-11-29T00:00:00+00:00",
    "noon": "2026-11-29T12:00:00Z",
    "last-second": "2026-11-29T23:59:59+00:00",
    "late-elsewhere": "2026-11-30T01:30:00+02:00",  # 23:30 UTC on the 29th
    "next-day": "2026-11-30T00:00:00+00:00",
}


@pytest.fixture
def dated(recall: Recall) -> Recall:
    recall.add(
        [
            RecallMessage("agent-a", "t1", key, "user", f"coffee at {key}", at)
            for key, at in DAY_EDGES.items()
        ]
    )
    return recall


def test_date_only_end_date_covers_the_whole_day_inclusively(dated: Recall) -> None:
    page = dated.search("coffee", start_date="2026-11-29", end_date="2026-11-29", mode="fts")
    assert sorted(ids(page)) == sorted(["midnight", "noon", "last-second", "late-elsewhere"])
    listed = dated.search_date("2026-11-29", "2026-11-29", page_size=10)
    assert ids(listed) == ["midnight", "noon", "late-elsewhere", "last-second"]


def test_full_iso_bounds_are_inclusive(dated: Recall) -> None:
    page = dated.search_date("2026-11-29T00:00:00+00:00", "2026-11-29T12:00:00+00:00")
    assert ids(page) == ["midnight", "noon"]
    assert ids(dated.search_date(None, "2026-11-28")) == ["before"]
    assert ids(dated.search_date("2026-11-30", None)) == ["next-day"]


def test_bad_dates_are_clear_errors(dated: Recall) -> None:
    with pytest.raises(ValueError, match="start_date must be YYYY-MM-DD or ISO-8601.*'last week'"):
        dated.search("coffee", start_date="last week")
    with pytest.raises(ValueError, match="end_date must be YYYY-MM-DD or ISO-8601"):
        dated.search_date(None, "29/11/2026")
    with pytest.raises(ValueError, match="is after end_date"):
        dated.search_date("2026-11-30", "2026-11-29")


# -- pagination --------------------------------------------------------------------------


def test_pagination_walks_every_match_once_with_the_total(recall: Recall) -> None:
    recall.add([msg(i, f"walk number {i} in the park") for i in range(12)])
    recall.add([msg(100, "unrelated text", thread="elsewhere")])
    pages = [recall.search("park walk", page=p, page_size=5, mode="fts") for p in range(4)]
    assert [len(p.hits) for p in pages] == [5, 5, 2, 0]
    assert all(p.total == 12 and p.pages == 3 for p in pages)
    seen = [m for p in pages for m in ids(p)]
    assert len(seen) == len(set(seen)) == 12
    scores = [h.score for p in pages for h in p.hits]
    assert scores == sorted(scores, reverse=True)


def test_date_listing_pages_chronologically(recall: Recall) -> None:
    recall.add([msg(i, f"note {i}") for i in range(7)])
    first = recall.search_date(None, None, page=0, page_size=3)
    last = recall.search_date(None, None, page=2, page_size=3)
    assert ids(first) == [f"agent-a-t1-{i}" for i in range(3)]
    assert ids(last) == ["agent-a-t1-6"]
    assert first.total == last.total == 7 and first.pages == 3


def test_exclude_ids_leaves_those_messages_out(recall: Recall) -> None:
    recall.add([msg(i, f"tea number {i}") for i in range(4)])
    page = recall.search("tea", exclude_ids=["agent-a-t1-0", "agent-a-t1-2"], mode="fts")
    assert sorted(ids(page)) == ["agent-a-t1-1", "agent-a-t1-3"]
    assert page.total == 2
    assert recall.count(exclude_message_ids=["agent-a-t1-0", "missing"]) == 3


def test_bad_page_arguments_are_clear_errors(recall: Recall) -> None:
    with pytest.raises(ValueError, match="page must be 0 or more"):
        recall.search("x", page=-1)
    with pytest.raises(ValueError, match="page_size must be at least 1"):
        recall.search_date(None, None, page_size=0)
    with pytest.raises(ValueError, match="mode must be"):
        recall.search("x", mode="magic")  # type: ignore[arg-type]


# -- context expansion -----------------------------------------------------------------


def test_answer_is_found_through_its_neighbours_words(recall: Recall) -> None:
    recall.add([msg(i, text) for i, text in enumerate(PUPPY_THREAD)])
    # "Biscuit." shares no word with the query; its neighbours do.
    page = recall.search("puppy name", mode="fts", page_size=5)
    assert "agent-a-t1-2" in ids(page)
    if is_sqlite(recall):
        text_only = recall.db.conn.execute(
            "SELECT rowid FROM recall_fts WHERE recall_fts MATCH ?", ('"puppy" OR "name"',)
        ).fetchall()
        assert 3 not in {r[0] for r in text_only}  # not through its own text


def test_context_of_earlier_messages_is_refreshed_when_later_ones_arrive(
    recall: Recall,
) -> None:
    recall.add([msg(0, "Guess what I named him.")])
    recall.add([msg(1, "Tell me!", role="assistant")])
    recall.add([msg(2, "Biscuit.")])
    assert "agent-a-t1-2" not in ids(recall.search("dachshund", mode="fts"))
    recall.add([msg(3, "He is a dachshund, by the way.")])
    recall.add([msg(4, "Ten weeks old.")])
    assert "agent-a-t1-2" in ids(recall.search("dachshund", mode="fts"))
    # Two searchable neighbours each side, same thread only.
    contexts = stored_contexts(recall)
    assert contexts["agent-a-t1-2"] == "\n".join(
        [
            "Guess what I named him.",
            "Tell me!",
            "Biscuit.",
            "He is a dachshund, by the way.",
            "Ten weeks old.",
        ]
    )
    assert contexts["agent-a-t1-0"] == "Guess what I named him.\nTell me!\nBiscuit."
    if is_sqlite(recall):
        # Each refresh replaced the old index entry: the external-content index still
        # matches its table exactly.
        for table in ("recall_fts", "recall_context_fts"):
            recall.db.conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    assert recall.search("weeks", mode="fts").total == 3


def test_context_skips_unsearchable_messages_and_other_threads(recall: Recall) -> None:
    recall.add(
        [
            msg(0, "alpha"),
            msg(1, "tool output", role="tool", name="x"),
            msg(2, "beta", thread="t2"),
            msg(3, "gamma"),
        ]
    )
    contexts = stored_contexts(recall)
    assert contexts["agent-a-t1-3"] == "alpha\ngamma"
    assert contexts["agent-a-t1-1"] is None
    assert contexts["agent-a-t2-2"] == "beta"


def test_bulk_ingest_builds_the_same_contexts_as_one_by_one(
    db: sqlite_utils.Database, tmp_data_dir: Path
) -> None:
    history = [
        msg(i, f"line {i} of thread {t}", thread=t, role=("user", "assistant")[i % 2], agent=a)
        for a in ("one-by-one", "bulk")
        for t in ("t1", "t2")
        for i in range(11)
    ]
    single = SqliteRecallMemory(db, "one-by-one", None, tmp_data_dir / "faiss")
    for m in history[:22]:
        single.add([m])
    bulk = SqliteRecallMemory(db, "bulk", None, tmp_data_dir / "faiss")
    done: list[int] = []
    # Reversed input, odd chunk size: order and chunk borders must not matter.
    assert bulk.add_many(list(reversed(history[22:])), chunk_size=4, progress=done.append) == 22
    assert done[-1] == 22
    assert bulk.add_many(history[22:], chunk_size=4) == 0

    def contexts(agent: str) -> list[str]:
        rows = db.conn.execute(
            "SELECT context FROM recall WHERE agent_id = ? ORDER BY thread_id, created_at",
            (agent,),
        )
        return [r[0] for r in rows]

    assert contexts("one-by-one") == contexts("bulk")
    assert len(contexts("bulk")) == 22


# -- isolation -------------------------------------------------------------------------


def test_agent_cannot_search_another_agents_recall(
    make_backend: BackendFactory, embeddings: MiniLMEmbeddings
) -> None:
    backend = make_backend(embeddings)
    alice = backend.open("agent-a").recall
    bob = backend.open("agent-b").recall
    secret = msg(1, "The vault code is 4711, keep it secret.")
    alice.add([secret, msg(2, "Another private note about the vault.")])
    # Bob uses the same thread id and even the same message id: still separate rows.
    bob.add([msg(1, "Bob likes jazz.", agent="agent-b")])
    bob_clash = RecallMessage(
        "agent-b", "t1", secret.message_id, "user", "bob's own", BASE.isoformat()
    )
    assert bob.add([bob_clash]) == 1

    for mode in ("hybrid", "fts", "vector"):
        found = bob.search("vault code secret", mode=mode)  # type: ignore[arg-type]
        assert all(h.item.agent_id == "agent-b" for h in found.hits)
        assert "4711" not in str([h.item.text for h in found.hits])
    assert "4711" not in str(bob.search("", page_size=50).hits)
    assert all(h.item.agent_id == "agent-b" for h in bob.search_date(None, None).hits)
    assert bob.count() == 2
    assert [m.text for m in bob.get([secret.message_id, "agent-a-t1-2"])] == ["bob's own"]
    assert {m.agent_id for m in bob.thread_messages("t1")} == {"agent-b"}
    assert {m.agent_id for m in bob.latest(10)} == {"agent-b"}
    # And Alice still sees only her own.
    assert alice.count() == 2
    assert ids(alice.search("vault", mode="fts")) != []
    assert all(h.item.agent_id == "agent-a" for h in alice.search("jazz").hits)


# -- reading helpers -------------------------------------------------------------------


def test_get_thread_messages_and_latest(recall: Recall) -> None:
    recall.add([msg(i, f"m{i}", thread="t1" if i % 2 else "t2") for i in range(6)])
    assert ids(recall.get(["agent-a-t1-5", "nope", "agent-a-t2-0"])) == [
        "agent-a-t1-5",
        "agent-a-t2-0",
    ]
    assert ids(recall.thread_messages("t1")) == ["agent-a-t1-1", "agent-a-t1-3", "agent-a-t1-5"]
    assert ids(recall.latest(2)) == ["agent-a-t2-4", "agent-a-t1-5"]
    assert recall.latest(0) == [] and recall.get([]) == []


# -- vectors and hybrid ------------------------------------------------------------------

TOPICS = [
    "I bought a new car yesterday, a red hatchback.",
    "My favourite food is sushi with lots of wasabi.",
    "It has been raining all week here.",
    "My sister is getting married in June.",
]


def test_vector_search_finds_meaning_without_shared_words(hybrid: Recall) -> None:
    hybrid.add([msg(i, text, thread=f"t{i}") for i, text in enumerate(TOPICS)])
    assert hybrid.search("automobile purchase", mode="fts").total == 0
    page = hybrid.search("automobile purchase", mode="vector", page_size=2)
    assert ids(page)[0] == "agent-a-t0-0"
    assert page.total == 4  # every candidate has a cosine
    assert ids(hybrid.search("automobile purchase", page_size=1)) == ["agent-a-t0-0"]


def test_a_question_about_something_never_said_finds_nothing(hybrid: Recall) -> None:
    # The vector pool holds the nearest messages whatever they are; none of them matches
    # (no shared word, cosine under the floor), so none is offered as an answer.
    said = ["Hi! I'm Mira. Nice to meet you.", "Thanks for telling me!", "Talk soon!"]
    hybrid.add([msg(i, text) for i, text in enumerate(said)])
    page = hybrid.search("What is my favourite football team?")
    assert (page.total, page.hits) == (0, [])
    assert hybrid.search("What is my favourite football team?", mode="vector").total == 3
    assert ids(hybrid.search("Nice to meet you"))[0] == "agent-a-t1-0"


def test_hybrid_ranks_an_exact_word_match_first(hybrid: Recall) -> None:
    hybrid.add([msg(i, text, thread=f"t{i}") for i, text in enumerate(TOPICS)])
    page = hybrid.search("wasabi")
    # Only the message holding the word matched: the other topics are no results.
    assert ids(page) == ["agent-a-t1-1"]
    assert ids(hybrid.search("wasabi", mode="vector"))[0] == "agent-a-t1-1"


def test_vector_filters_apply_before_ranking(hybrid: Recall) -> None:
    hybrid.add([msg(i, text, thread=f"t{i}") for i, text in enumerate(TOPICS)])
    hybrid.add(
        [msg(10, "The weather today: sunny.", role="assistant", at=BASE - timedelta(days=3))]
    )
    # The closest match (the car) is a user message; only the assistant one is allowed.
    page = hybrid.search("automobile purchase", roles=["assistant"], mode="vector")
    assert ids(page) == ["agent-a-t1-10"]
    # "car" matches the car best, but only the weather is old enough.
    page = hybrid.search("car weather", end_date=(BASE - timedelta(days=1)).date().isoformat())
    assert ids(page) == ["agent-a-t1-10"]


def test_excluded_messages_leave_every_vector_signal(hybrid: Recall) -> None:
    # The messages in the prompt are left out of the vector signals too, and the page
    # ranks the others as a search that never held them would.
    hybrid.add([msg(i, text, thread=f"t{i}") for i, text in enumerate(TOPICS)])
    best = ids(hybrid.search("automobile purchase", mode="vector", page_size=4))
    page = hybrid.search("automobile purchase", mode="vector", exclude_ids=[best[0], "nope"])
    assert ids(page) == best[1:]
    assert page.total == 3
    page = hybrid.search("automobile purchase", exclude_ids=[best[0]])
    assert best[0] not in ids(page)


def test_message_ids_are_looked_up_without_reading_the_agent(
    sqlite_recall: SqliteRecallMemory,
) -> None:
    # A lookup by message id alone (``get``, the ids a search leaves out) seeks the
    # message index; it read every message of the agent before (~45 ms at 100k).
    plan = sqlite_recall.db.conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM recall WHERE agent_id = ? "
        "AND message_id IN (SELECT value FROM json_each(?))",
        ("agent-a", '["m"]'),
    ).fetchall()
    assert any("recall_by_message (agent_id=? AND message_id=?)" in str(row) for row in plan)


def test_the_ids_a_search_leaves_out_are_found_by_index_probes(
    sqlite_recall: SqliteRecallMemory,
) -> None:
    # Bare message ids and (thread, message) pairs are looked up through the indexes: one
    # OR of the two read every message of the agent (~20 ms at 100k, each search turn).
    from langgraph_memgpt.stores.sqlite.recall_signals import RecallSignals

    sqlite_recall.add([msg(i, f"note {i}", thread=f"t{i % 2}") for i in range(6)])
    rows = dict(sqlite_recall.db.conn.execute("SELECT message_id, id FROM recall").fetchall())
    left_out = ["agent-a-t0-0", ("t1", "agent-a-t1-3"), ("t0", "agent-a-t1-5"), "gone"]
    statements: list[str] = []
    sqlite_recall.db.conn.set_trace_callback(statements.append)
    try:
        signals = RecallSignals(
            sqlite_recall, "b.agent_id = ?", ["agent-a"], narrowed=False, excluded=left_out
        )
        found = signals.excluded_rows()
    finally:
        sqlite_recall.db.conn.set_trace_callback(None)
    # The pair names the thread: a message of another thread under that id is not left out.
    assert found == sorted([rows["agent-a-t0-0"], rows["agent-a-t1-3"]])
    (lookup,) = [s for s in statements if "json_each" in s]
    plan = [str(r) for r in sqlite_recall.db.conn.execute(f"EXPLAIN QUERY PLAN {lookup}")]
    probes = [line for line in plan if "SEARCH recall" in line]
    assert len(probes) == 2 and all("message_id=?" in line for line in probes), plan


def test_every_searchable_message_gets_turn_and_context_vectors(
    sqlite_hybrid: SqliteRecallMemory,
) -> None:
    hybrid = sqlite_hybrid
    for i, text in enumerate(PUPPY_THREAD):
        hybrid.add([msg(i, text)])
    hybrid.add([msg(9, "tool says hi", role="tool", name="t")])
    assert hybrid.vectors is not None
    turn_index, context_index = hybrid.vectors.turn, hybrid.vectors.context
    tail_index = hybrid.vectors.tail
    # Windows with both successors are final; the thread's last two wait in the tail.
    assert (turn_index.count(), context_index.count(), tail_index.count()) == (5, 3, 2)
    # The context vector of "Biscuit." was refreshed by the two messages after it: it is
    # the mean of the vectors of its window (the whole five-message thread).
    (biscuit,) = hybrid.get(["agent-a-t1-2"])
    assert hybrid.embeddings is not None
    expected = normalize(embed_texts(hybrid.embeddings, PUPPY_THREAD).mean(axis=0))
    rowid = hybrid.db.conn.execute(
        "SELECT id FROM recall WHERE message_id = ?", (biscuit.message_id,)
    ).fetchone()[0]
    (score,) = context_index.scores(expected[0], [rowid]).values()
    assert score == pytest.approx(1.0, abs=1e-4)
    assert biscuit.text == "Biscuit."
    # Two more messages complete the tail's windows: they move, the new ones wait.
    hybrid.add([msg(5, "Does Biscuit like walks?"), msg(6, "He loves them.")])
    assert (turn_index.count(), context_index.count(), tail_index.count()) == (7, 5, 2)


def test_vectors_that_no_longer_change_turn_hnsw_as_they_grow(
    sqlite_hybrid: SqliteRecallMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    hybrid = sqlite_hybrid
    # Vectors that are still re-pooled (the tail) stay where deleting is cheap.
    monkeypatch.setattr(faiss_index, "AUTO_HNSW_MIN_VECTORS", 3)
    hybrid.add([msg(i, text) for i, text in enumerate(PUPPY_THREAD)])
    hybrid.close()
    assert hybrid.vectors is not None
    indexes = (hybrid.vectors.turn, hybrid.vectors.context, hybrid.vectors.tail)
    kinds = [json.loads(i.sidecar_path.read_text())["kind"] for i in indexes]
    assert kinds == ["hnsw", "hnsw", "flat"]
    found = ids(hybrid.search("what is the puppy called?", page_size=5, mode="vector"))
    assert sorted(found) == [f"agent-a-t1-{i}" for i in range(len(PUPPY_THREAD))]


def test_vectors_survive_reopening_and_missing_ones_are_embedded(
    tmp_data_dir: Path, embeddings: MiniLMEmbeddings
) -> None:
    path = tmp_data_dir / "memory.sqlite"
    first = open_db(path)
    words_only = SqliteRecallMemory(first, "agent-a", None, tmp_data_dir / "faiss")
    words_only.add([msg(i, text, thread=f"t{i}") for i, text in enumerate(TOPICS)])
    with_vectors = SqliteRecallMemory(first, "agent-a", embeddings, tmp_data_dir / "faiss")
    assert with_vectors.embed_missing() == 4
    assert with_vectors.embed_missing() == 0
    with_vectors.close()
    first.conn.close()

    second = open_db(path)
    reopened = SqliteRecallMemory(second, "agent-a", embeddings, tmp_data_dir / "faiss")
    assert ids(reopened.search("automobile purchase", mode="vector", page_size=1)) == [
        "agent-a-t0-0"
    ]
    second.conn.close()


def test_without_embeddings_search_uses_words_only(recall: Recall) -> None:
    recall.add([msg(i, text, thread=f"t{i}") for i, text in enumerate(TOPICS)])
    assert ids(recall.search("sushi")) == ["agent-a-t1-1"]
    assert recall.search("automobile purchase").total == 0
    with pytest.raises(ValueError, match="needs an embedding model"):
        recall.search("car", mode="vector")


@pytest.fixture(scope="module")
def shared_hybrid(
    tmp_path_factory: pytest.TempPathFactory, embeddings: MiniLMEmbeddings
) -> Iterator[SqliteRecallMemory]:
    root = tmp_path_factory.mktemp("hybrid")
    database = open_db(root / "memory.sqlite")
    memory = SqliteRecallMemory(database, "agent-a", embeddings, root / "faiss")
    memory.add([msg(i, text) for i, text in enumerate(PUPPY_THREAD)])
    yield memory
    database.conn.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=200), roles=st.sampled_from([None, ["user"], ["assistant"]]))
def test_hypothesis_arbitrary_text_never_breaks_hybrid_search(
    shared_hybrid: SqliteRecallMemory, query: str, roles: list[str] | None
) -> None:
    page = shared_hybrid.search(query, roles=roles, start_date="2026-01-01")
    assert page.total >= len(page.hits)


@settings(max_examples=100, deadline=None)
@given(start=st.one_of(st.none(), st.text(max_size=40)), end=st.one_of(st.none(), st.text()))
def test_hypothesis_any_date_text_is_accepted_or_a_clear_value_error(
    shared_fts_db: sqlite_utils.Database, start: str | None, end: str | None
) -> None:
    memory = SqliteRecallMemory(shared_fts_db, "agent-a", None, Path("/nonexistent"))
    try:
        memory.search_date(start, end)
    except ValueError as err:
        assert "YYYY-MM-DD" in str(err) or "is after end_date" in str(err)


# -- exact matches and asking again ----------------------------------------------------------

LONG_TALK = (
    "The weekend went by too fast, we walked along the river and the kids fed the ducks, "
    "then it rained so we played cards all afternoon and cooked far too much soup. "
    "Oh, and before I forget, the storage locker code is ZX4417. "
    "My sister called about moving to the coast next year, and the neighbours are still "
    "drilling every morning at eight, which is driving everyone a little mad lately."
)
SHORT_TALK = [
    "Did you see the sunset yesterday?",
    "The train was late again this morning.",
    "I baked bread for the first time.",
    "We should try the noodle place near the river.",
    "Work has been calm this week.",
]


def test_an_identifier_inside_a_long_message_is_found_first(hybrid: Recall) -> None:
    hybrid.add([msg(0, LONG_TALK), *(msg(i + 1, t) for i, t in enumerate(SHORT_TALK))])
    for mode in ("hybrid", "fts"):
        assert ids(hybrid.search("ZX4417", mode=mode, page_size=3))[0] == "agent-a-t1-0"


def test_asking_again_does_not_bury_the_statement(hybrid: Recall) -> None:
    hybrid.add([msg(0, LONG_TALK), *(msg(i + 1, t) for i, t in enumerate(SHORT_TALK))])
    questions = ["what was ZX4417 again?", "can you remind me what ZX4417 is?"] * 3
    hybrid.add([msg(10 + i, q, thread="later") for i, q in enumerate(questions)])
    for mode in ("hybrid", "fts"):
        page = hybrid.search("ZX4417", mode=mode, page_size=7)
        assert ids(page)[0] == "agent-a-t1-0"
        texts = [hit.item.text for hit in page.hits]
        # each question asked three times takes one result (``search.once_each``)
        assert all(texts.count(q) == 1 for q in set(questions))
        assert len(texts) == len(set(texts)) >= 3


def test_a_message_without_words_is_never_a_hit(recall: Recall) -> None:
    recall.add(
        [
            msg(0, "the storage locker code is ZX4417"),
            msg(1, "", role="assistant", tool_calls=[{"name": "core_memory_append", "args": {}}]),
            msg(2, "what about ZX4417 and the locker?"),
        ]
    )
    page = recall.search("ZX4417 locker", page_size=10)
    assert ids(page) == ["agent-a-t1-0", "agent-a-t1-2"]


ASKER_CHAT = [
    ("user", "We started a new sprint at work this week."),
    *[(("assistant", "user")[n % 2], text) for n, text in enumerate(TALK)],
    ("user", "My sprint ends on Friday, the day of the review."),
    ("assistant", "Sprint planning tips: a sprint ends with a review. Keep each sprint short."),
    ("user", "Thanks, that helps."),
]


def test_a_question_about_its_asker_lifts_the_askers_own_messages(recall: Recall) -> None:
    """Asked in the first person ("when does my sprint end?") or about "the user", a
    hybrid search lifts the user's own messages by ``mentions.ASKER_WEIGHT`` (by
    ``ASKER_WEIGHT_ACROSS`` asked across conversations, unless it asks what the asker
    brought up: ``mentions.asks_for_own_words``): the user's
    statement comes before the assistant's reply that holds more of the words, on both
    backends. Asked without its asker, or in words-only mode, the words rank alone."""
    from langgraph_memgpt.stores.mentions import ASKER_WEIGHT, ASKER_WEIGHT_ACROSS

    recall.add([msg(n, text, role=role) for n, (role, text) in enumerate(ASKER_CHAT)])
    statement, reply = (f"agent-a-t1-{n}" for n in (len(ASKER_CHAT) - 3, len(ASKER_CHAT) - 2))

    def scores(query: str, mode: str = "hybrid") -> dict[str, float]:
        found = recall.search(query, mode=mode, page_size=len(ASKER_CHAT))
        return {h.item.message_id: h.score for h in found.hits}

    plain = scores("When does the sprint end?")
    assert max(plain, key=plain.__getitem__) == reply
    for asked in ("When does my sprint end?", "When does the user's sprint end?"):
        lifted = scores(asked)
        assert max(lifted, key=lifted.__getitem__) == statement
        assert lifted[statement] == pytest.approx(plain[statement] + ASKER_WEIGHT)
        # The reply is never lowered (it may rise: it holds every rare term of the query,
        # and such a result stays above the best result holding none, ``ranking.fuse``).
        assert lifted[reply] >= plain[reply] - 1e-9
    words = scores("When does my sprint end?", mode="fts")
    assert max(words, key=words.__getitem__) == reply
    # Across conversations (a summary is told by the replies too), half as much.
    across = scores("How did my sprint progress?")
    plain_across = scores("How did the sprint progress?")
    assert across[statement] == pytest.approx(plain_across[statement] + ASKER_WEIGHT_ACROSS)
    # What the asker brought up is in their own messages: the whole lift.
    own = scores("In what order did I mention the sprint across our chats?")
    plain_own = scores("In what order did they mention the sprint across our chats?")
    assert own[statement] == pytest.approx(plain_own[statement] + ASKER_WEIGHT)


DASHBOARD_CHAT = [
    *[(("assistant", "user")[n % 2], text) for n, text in enumerate(TALK)],
    ("user", "My dashboard API responds in 250 ms now, after the caching tweaks."),
    (
        "assistant",
        "Great progress! To cut the dashboard API response time further, profile each "
        "endpoint, cache the heavy queries and check the response time after every deploy.",
    ),
    ("user", "Thanks, I will try that."),
]


def test_asked_about_themselves_the_users_statement_outranks_the_replies_that_echo_it(
    hybrid: Recall,
) -> None:
    """A user's fact, asked about in the first person, comes before the assistant's reply
    that repeats the question's words at length: in a chat with an assistant the replies
    echo the user's words, and the user's statement is what such a question is about
    (75% of BEAM dev's evidence). Asked without the first person, the reply stays first."""
    hybrid.add([msg(n, text, role=role) for n, (role, text) in enumerate(DASHBOARD_CHAT)])
    statement, reply = (f"agent-a-t1-{n}" for n in (len(TALK), len(TALK) + 1))
    assert ids(hybrid.search("What is the dashboard API response time?"))[0] == reply
    assert ids(hybrid.search("What is my dashboard API response time?"))[0] == statement


_FILLER = [
    "The morning started with a long walk along the river before breakfast.",
    "We talked about the budget for the garden and the new fence posts.",
    "Later the train to the coast was crowded, so we stood most of the way.",
    "In the afternoon the library was quiet and the reading room smelled of paper.",
    "My notes from the meeting cover the schedule, the venue and the catering.",
    "There was a short discussion about moving the bookshelves to the hallway.",
    "The weather turned in the evening and the wind rattled the windows.",
    "Dinner was a simple soup with bread, eaten slowly while the radio played.",
    "Afterwards the dishes waited in the sink until the film was over.",
]


def _long(extra: str = "", repeat: int = 1) -> str:
    """A text of well over ``chunks.LONG_WORDS`` words: it has parts."""
    return " ".join(_FILLER * repeat + ([extra] if extra else []))


def _neighbours_chat(long: bool) -> list[RecallMessage]:
    """One thread whose middle message holds no query word but sits between two that do,
    and two lone messages that each hold one query word once."""
    pad = _long if long else (lambda extra="", repeat=1: extra or "We just chatted a bit.")
    both = "The kiln glaze cracked in the kiln, and the glaze ran down the pot."
    again = "The kiln glaze cracked in the kiln, and the glaze ran down the vase."
    return [
        msg(0, pad(both)),
        msg(1, pad("", 1) if long else "Oh no, that sounds frustrating!"),
        msg(2, pad(again)),
        msg(3, pad("We saw a kiln at the museum."), thread="t2"),
        msg(4, pad("Someone mentioned a kiln once.", 2), thread="t3"),
    ]


@pytest.mark.parametrize("long", [False, True], ids=["short turns", "long messages"])
def test_a_messages_neighbours_words_count_for_short_turns_not_for_long_messages(
    recall: Recall, long: bool
) -> None:
    """A short reply ("Oh no, that sounds frustrating!") is found by its neighbours'
    words: they hold what it answers. A long message says what it is about itself; when
    the memory's messages are long, its neighbours' words no longer count, so a message
    whose neighbours alone hold the query's words is no match at all, and the search does
    not read them (``search.neighbours_weight``), on both backends."""
    recall.add(_neighbours_chat(long))
    page = recall.search("kiln glaze", mode="fts", page_size=10)
    ranked = ids(page)
    between, lone = "agent-a-t1-1", "agent-a-t2-3"
    assert set(ranked[:2]) == {"agent-a-t1-0", "agent-a-t1-2"}
    if long:
        assert between not in ranked
        assert page.total == 4
    else:
        assert ranked.index(between) < ranked.index(lone)


def test_the_neighbours_weight_falls_from_one_to_nothing_as_matches_get_long() -> None:
    from langgraph_memgpt.stores.search import SELF_CONTAINED_SHARE, neighbours_weight

    assert neighbours_weight(0.0) == 1.0
    assert neighbours_weight(SELF_CONTAINED_SHARE / 2) == pytest.approx(0.5)
    assert neighbours_weight(SELF_CONTAINED_SHARE) == 0.0
    assert neighbours_weight(1.0) == 0.0


_SHED_SESSIONS = [
    msg(0, "Garden shed roof: felt.", thread="s1"),
    msg(1, "Garden shed roof: tiles.", thread="s1"),
    msg(2, "Garden shed roof: metal.", thread="s1"),
    msg(3, "Garden shed roof: slate.", thread="s1"),
    msg(10, "Garden shed roof: gutter.", thread="s2"),
    msg(20, "Garden shed roof: paint.", thread="s3"),
]


def test_a_question_across_conversations_gets_a_message_from_each_one(recall: Recall) -> None:
    """ "In what order did ... come up across our conversations?" needs a message from
    every session, and the session that talked most about it fills the page otherwise:
    such a question's first results take turns between the threads, each one already
    taken lowering the next of its thread by ``search.SPREAD_DISCOUNT``
    (``search.spread_sessions``), on both backends; any other question is ranked as it was."""
    recall.add(_SHED_SESSIONS)

    def threads(query: str) -> list[str]:
        return [m.item.thread_id for m in recall.search(query, mode="hybrid", page_size=5).hits]

    plain = threads("What about the garden shed roof?")
    assert plain.count("s1") == 4 and "s2" not in plain
    spread = threads("In what order did the garden shed roof come up across our conversations?")
    assert set(spread) == {"s1", "s2", "s3"} and spread.count("s1") == 3


def test_a_question_asks_across_conversations_by_its_words() -> None:
    from langgraph_memgpt.stores.mentions import asks_across_sessions

    assert asks_across_sessions("Can you list the order in which I brought up the budget?")
    assert asks_across_sessions("How has my app project progressed?")
    assert asks_across_sessions("How many columns did I want across my weather app chats?")
    assert asks_across_sessions("Give me a summary of what I said about triangles.")
    assert not asks_across_sessions("What did I say about the bakery across the street?")
    assert not asks_across_sessions("What do I need in order to renew my passport?")
    assert not asks_across_sessions("When does my sprint end?")


def test_a_message_said_again_word_for_word_takes_one_result(recall: Recall) -> None:
    """A text pasted or said in several sessions ranks as high each time; its copies would
    fill the page with one result. The best-ranked copy stands for them all
    (``search.once_each``), on both backends, and the next page goes on after it."""
    repeated = "Water the fig tree on the balcony twice a week."
    recall.add([msg(n, repeated, thread=f"s{n}") for n in range(5)])
    recall.add([msg(10, "The fig tree on the balcony has new leaves.", thread="s9")])
    first = recall.search("fig tree balcony", mode="fts", page_size=2)
    assert sorted(h.item.text for h in first.hits) == [
        "The fig tree on the balcony has new leaves.",
        repeated,
    ]
    assert recall.search("fig tree balcony", mode="fts", page_size=2, page=1).hits == []


_KEY_THEN_WIREFRAME = [
    *(
        msg(n, f"Chat {n} about lunch, the weather and the football.", thread="s0")
        for n in range(30)
    ),
    *(
        msg(
            40 + n,
            f"OpenWeather API key note {n}: the OpenWeather API key and its key rules.",
            thread="s1",
        )
        for n in range(6)
    ),
    msg(
        60,
        "Long evening. I sat with coffee, moved boxes around, argued with myself about colours, "
        "tried three fonts, threw two away, rang my sister, ate toast, and somewhere in all "
        "that I finished the wireframe: a search box at the top, forecast cards below it, a "
        "settings cog in the corner, and a footer that nobody will ever read, I suspect.",
        thread="s2",
    ),
]


def test_a_question_between_two_events_gets_the_message_of_each(recall: Recall) -> None:
    """ "How many days passed between when I got my API key and when I finished the
    wireframe?": one event's many messages outrank the other's one, so each event is also
    searched alone and the rankings take turns (``mentions.two_events``), on both
    backends."""
    recall.add(_KEY_THEN_WIREFRAME)

    def first_page(query: str) -> list[str]:
        hits = recall.search(query, mode="hybrid", page_size=4).hits
        return [m.item.message_id.rsplit("-", 1)[-1] for m in hits]

    asked = (
        "How many days passed between when I got my OpenWeather API key"
        " and when I finished the wireframe?"
    )
    plain = "How many days passed after I got my OpenWeather API key and I finished the wireframe?"
    assert "60" not in first_page(plain)
    found = first_page(asked)
    assert "60" in found and len({str(40 + n) for n in range(6)} & set(found)) >= 2


def test_the_two_events_of_a_question_are_read_from_its_words() -> None:
    from langgraph_memgpt.stores.mentions import two_events

    assert two_events(
        "How long between when I moved to Leeds and when I started at the bakery?"
    ) == (
        "I moved to Leeds",
        "I started at the bakery",
    )
    assert two_events("How many weeks passed between the wedding and the move?") == (
        "the wedding",
        "the move",
    )
    assert two_events("What is the difference between a loan and a mortgage?") == (
        "a loan",
        "a mortgage",
    )
    assert two_events("Was there a gap between the two sessions?") is None
    assert two_events("Did I mention cats and dogs?") is None
