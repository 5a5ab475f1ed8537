"""Archival memory: passages with tags and provenance, searched by words and meaning.

Tests that speak the archival interface run on both backends (``open_archive`` and
``archive`` are parametrised over SQLite and Postgres); those about SQLite internals
(counts table, FAISS cache, re-embedding) use ``sqlite_open_archive``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from conftest import BackendFactory
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores import search
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.sqlite.archival import NewPassage, SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.migrations import migrate
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes
from langgraph_memgpt.stores.types import EmbeddingMismatchError, Passage

FACTS = [
    ("Alice's dog is a golden retriever called Biscuit.", ["pets"], "2026-03-01T09:00:00Z"),
    (
        "Alice works night shifts as a nurse at St Mary's hospital.",
        ["work", "bio"],
        "2026-03-02T10:00:00Z",
    ),
    ("Alice is allergic to peanuts and shellfish.", ["health"], "2026-03-03T11:00:00Z"),
    (
        "Alice's sister Joanna lives in Lisbon and teaches piano.",
        ["family"],
        "2026-03-04T12:00:00Z",
    ),
    ("The wifi password at the cabin is XK-4471-ZEBRA.", ["home"], "2026-03-05T13:00:00Z"),
    (
        "Alice wants to run the Berlin marathon next autumn.",
        ["goals", "health"],
        "2026-03-06T14:00:00Z",
    ),
    ("Alice prefers green tea to coffee in the morning.", ["preferences"], "2026-03-07T15:00:00Z"),
    ("Alice's manager at the hospital is Dr. Okafor.", ["work"], "2026-03-08T16:00:00Z"),
]


@pytest.fixture
def cache_dir(tmp_data_dir: Path) -> Path:
    return tmp_data_dir / "faiss"


@pytest.fixture
def sqlite_open_archive(
    db: sqlite_utils.Database, cache_dir: Path, embeddings: MiniLMEmbeddings
) -> Any:
    def open_(agent_id: str = "alice", **kwargs: Any) -> SqliteArchivalMemory:
        kwargs.setdefault("embeddings", embeddings)
        return SqliteArchivalMemory(db, agent_id, cache_dir=cache_dir, **kwargs)

    forget_loaded_indexes()
    return open_


@pytest.fixture
def open_archive(
    backend_kind: str,
    sqlite_open_archive: Any,
    make_backend: BackendFactory,
    embeddings: MiniLMEmbeddings,
) -> Any:
    """``open_archive(agent_id, embeddings=..., index_kind=...)`` on each backend.

    On Postgres, ``index_kind="hnsw"`` searches through the HNSW index (iterative scan)
    however small the archive.
    """
    if backend_kind == "sqlite":
        return sqlite_open_archive
    backends: dict[tuple[int, str], Any] = {}

    def open_(agent_id: str = "alice", **kwargs: Any) -> Any:
        emb = kwargs.get("embeddings", embeddings)
        kind = kwargs.get("index_kind", "auto")
        key = (id(emb), kind)
        if key not in backends:
            options = {"exact_scan_limit": 0} if kind == "hnsw" else {}
            backends[key] = make_backend(emb, **options)
        return backends[key].open(agent_id).archival

    return open_


@pytest.fixture
def archive(open_archive: Any) -> SqliteArchivalMemory:
    memory: SqliteArchivalMemory = open_archive("alice")
    memory.insert_many([NewPassage(text, tags=tags, created_at=when) for text, tags, when in FACTS])
    return memory


def texts(passages: list[Passage]) -> list[str]:
    return [p.text for p in passages]


def top_text(memory: SqliteArchivalMemory, query: str, **kwargs: Any) -> str:
    return memory.search(query, **kwargs).hits[0].item.text


# ---------------------------------------------------------------- writing


def test_insert_returns_the_passage_with_tags_and_provenance(open_archive: Any) -> None:
    memory = open_archive()
    passage = memory.insert(
        "Meeting notes: launch moved to May.",
        tags=[" Work ", "work", "Planning"],
        thread_id="thread-7",
        turn=12,
        created_at="2026-04-01T08:30:00+02:00",
    )
    assert passage.agent_id == "alice"
    assert passage.tags == ["work", "planning"]  # trimmed, lower-cased, de-duplicated
    assert (passage.thread_id, passage.turn) == ("thread-7", 12)
    assert passage.created_at == "2026-04-01T06:30:00.000000+00:00"  # stored as UTC
    assert memory.get(passage.id) == passage


def test_insert_without_a_timestamp_uses_now(open_archive: Any) -> None:
    passage = open_archive().insert("A fact.")
    assert passage.created_at.endswith("+00:00") and passage.created_at[:2] == "20"


@pytest.mark.parametrize("text", ["", "   \n"])
def test_an_empty_passage_is_refused(open_archive: Any, text: str) -> None:
    memory = open_archive()
    with pytest.raises(ValueError, match="needs some text"):
        memory.insert(text)
    assert memory.count() == 0


def test_an_insert_under_a_key_already_stored_returns_the_first_passage(
    open_archive: Any,
) -> None:
    memory = open_archive()
    first = memory.insert("Ada likes green tea", tags=["drinks"], key="call:t1:call_1")
    again = memory.insert("Ada likes green tea (replayed)", tags=["x"], key="call:t1:call_1")
    # Another key is another passage (the same fact is merged unless asked not to:
    # tests/tools/test_archival_duplicates.py).
    other = memory.insert("Ada likes green tea", key="call:t1:call_2", merge_duplicates=False)
    assert again == first
    assert other.id != first.id
    assert memory.count() == 2
    if hasattr(memory, "index"):  # the embedded backend: FAISS holds one vector each
        assert memory.index is not None and memory.index.count() == 2
    # A key is the agent's own: another agent's passage under the same key is its own.
    assert open_archive("bob").insert("Bob's note", key="call:t1:call_1").agent_id == "bob"
    mixed = memory.insert_many(
        [
            NewPassage("new one", key="k-new"),
            NewPassage("plain"),
            NewPassage("replayed", key="call:t1:call_1"),
            NewPassage("new one again", key="k-new"),
        ]
    )
    assert [p.text for p in mixed] == ["new one", "plain", "Ada likes green tea", "new one"]
    assert memory.count() == 4


def test_an_absurdly_long_passage_is_refused_with_a_readable_error(open_archive: Any) -> None:
    memory = open_archive(embeddings=None)
    with pytest.raises(ValueError, match=r"at most 1,000,000\. Nothing was saved"):
        memory.insert("x" * 1_000_001)
    assert memory.count() == 0


def test_a_bad_timestamp_is_refused(open_archive: Any) -> None:
    with pytest.raises(ValueError, match="YYYY-MM-DD or ISO-8601"):
        open_archive().insert("x", created_at="last tuesday")


def test_insert_many_keeps_order_and_shared_provenance(open_archive: Any) -> None:
    memory = open_archive()
    passages = memory.insert_many(
        ["first", "second", NewPassage("third", tags=["own"])],
        tags=["shared"],
        thread_id="t1",
        turn=3,
    )
    assert texts(passages) == ["first", "second", "third"]
    assert [p.tags for p in passages] == [["shared"], ["shared"], ["own"]]
    assert passages[0].thread_id == "t1" and passages[2].thread_id is None
    assert memory.count() == 3


# ---------------------------------------------------------------- searching


def test_search_finds_a_passage_by_meaning(archive: SqliteArchivalMemory) -> None:
    assert "Biscuit" in top_text(archive, "what kind of puppy does she have?")
    assert "peanuts" in top_text(archive, "food intolerances")


def test_search_finds_a_passage_by_a_rare_exact_word(archive: SqliteArchivalMemory) -> None:
    assert "XK-4471" in top_text(archive, "XK 4471")
    assert "XK-4471" in top_text(archive, "4471", mode="fts")


def test_each_mode_ranks_the_obvious_match_first(archive: SqliteArchivalMemory) -> None:
    for mode in ("hybrid", "fts", "vector"):
        assert "Okafor" in top_text(archive, "Okafor manager", mode=mode)


def test_fts_mode_counts_only_word_matches(archive: SqliteArchivalMemory) -> None:
    page = archive.search("hospital", mode="fts")
    assert page.total == 2
    assert all("hospital" in hit.item.text for hit in page.hits)


def test_hits_carry_fused_scores_best_first(archive: SqliteArchivalMemory) -> None:
    scores = [hit.score for hit in archive.search("Alice hospital work", page_size=8).hits]
    assert scores == sorted(scores, reverse=True)


def test_tags_any_matches_passages_with_at_least_one_tag(archive: SqliteArchivalMemory) -> None:
    page = archive.search("Alice", tags=["family", "PETS"], page_size=10)
    assert sorted(h.item.text[:12] for h in page.hits) == ["Alice's dog ", "Alice's sist"]
    assert page.total == 2


def test_tags_all_matches_passages_with_every_tag(archive: SqliteArchivalMemory) -> None:
    page = archive.search("Alice", tags=["health", "goals"], tag_match="all")
    assert [h.item.text for h in page.hits] == [FACTS[5][0]]
    assert archive.search("Alice", tags=["health", "pets"], tag_match="all").total == 0


def test_a_tag_filter_is_applied_before_ranking(open_archive: Any) -> None:
    # Forty untagged passages match the query far better than the two tagged ones; the
    # tagged ones must still come back, and nothing else.
    memory = open_archive()
    memory.insert_many([f"My dog barked at the mailman on day {n}." for n in range(40)])
    memory.insert_many(
        ["Invoice 311 was paid in full.", "Rent rises by 4% in June."], tags=["finance"]
    )
    page = memory.search("dog barking at the mailman", tags=["finance"])
    assert page.total == 2
    assert sorted(h.item.text for h in page.hits) == [
        "Invoice 311 was paid in full.",
        "Rent rises by 4% in June.",
    ]


def test_date_filters_are_inclusive_and_a_bare_end_date_covers_the_day(
    archive: SqliteArchivalMemory,
) -> None:
    def when(**kwargs: Any) -> list[str]:
        page = archive.search("Alice", page_size=20, **kwargs)
        return sorted(h.item.created_at[:10] for h in page.hits)

    assert when(start_date="2026-03-07") == ["2026-03-07", "2026-03-08"]
    assert when(end_date="2026-03-02") == ["2026-03-01", "2026-03-02"]  # 10:00 on the 2nd
    assert when(start_date="2026-03-03", end_date="2026-03-03") == ["2026-03-03"]
    assert when(start_date="2026-03-02T10:00:00Z", end_date="2026-03-03T10:59:59Z") == [
        "2026-03-02"
    ]
    assert when(start_date="2026-03-08T16:00:00+00:00") == ["2026-03-08"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start_date": "March 3rd"}, "start_date must be YYYY-MM-DD or ISO-8601"),
        ({"end_date": "2026-13-40"}, "end_date must be YYYY-MM-DD or ISO-8601"),
        ({"start_date": "2026-03-05", "end_date": "2026-03-01"}, "is after end_date"),
        ({"page": -1}, "page must be 0 or more"),
        ({"page_size": 0}, "page_size must be at least 1"),
        ({"mode": "bm25"}, "mode must be"),
        ({"tag_match": "some"}, "tag_match must be"),
    ],
)
def test_bad_search_arguments_raise_readable_errors(
    archive: SqliteArchivalMemory, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        archive.search("Alice", **kwargs)


def test_blank_dates_mean_no_bound(archive: SqliteArchivalMemory) -> None:
    assert archive.search("Alice", start_date="", end_date=" ").total == len(FACTS)


def test_pages_split_all_results_with_a_total(open_archive: Any) -> None:
    memory = open_archive()
    memory.insert_many([f"Note {n} about the garden and its tomatoes." for n in range(12)])
    seen: list[int] = []
    for page_number in range(3):
        page = memory.search("garden tomatoes", page=page_number, page_size=5)
        assert page.total == 12 and page.pages == 3 and page.page == page_number
        seen += [hit.item.id for hit in page.hits]
    assert len(seen) == 12 and len(set(seen)) == 12
    assert memory.search("garden tomatoes", page=3, page_size=5).hits == []


def test_an_empty_query_lists_newest_first(archive: SqliteArchivalMemory) -> None:
    page = archive.search("", page_size=3)
    assert page.total == len(FACTS)
    assert [h.item.text for h in page.hits] == [FACTS[7][0], FACTS[6][0], FACTS[5][0]]
    assert archive.search("  ?! ", tags=["work"]).total == 2


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "'",
        "Alice*",
        "NEAR(alice dog)",
        "alice AND OR NOT",
        "col:alice",
        "-dog",
        "((",
        "🙂🐶",
        "a" * 5000,
        "dog\x00cat",
        "^alice",
        "{alice}",
        "alice + dog",
    ],
)
def test_hostile_query_strings_never_raise(archive: SqliteArchivalMemory, query: str) -> None:
    for mode in ("hybrid", "fts", "vector"):
        page = archive.search(query, mode=mode)
        assert page.total >= 0


def test_words_only_search_when_there_are_no_embeddings(open_archive: Any) -> None:
    memory = open_archive("carol", embeddings=None)
    memory.insert("Carol collects vintage typewriters.", tags=["hobby"])
    memory.insert("Carol's flight to Oslo leaves at 7am.")
    page = memory.search("typewriters")
    assert page.total == 1 and "typewriters" in page.hits[0].item.text
    assert memory.search("typewriters", mode="vector").total == 1


def test_a_vector_search_counts_its_total_only_up_to_the_cap(
    archive: SqliteArchivalMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a million passages counting every vector cost most of a search: a lower bound."""
    archive.insert_many([NewPassage(f"Shopping list number {n}: eggs.") for n in range(120)])
    everything = len(FACTS) + 120
    assert archive.search("pets", mode="vector").total == everything
    monkeypatch.setattr(search, "VECTOR_TOTAL_CAP", 2)
    page = archive.search("pets", mode="vector", page_size=5)
    # Still every candidate ranked (the pool), never fewer than the page shows.
    assert page.total == search.ARCHIVAL_POOL.size(0, 5) < everything
    assert len(page.hits) == 5


def test_passages_saved_without_embeddings_are_embedded_later(
    sqlite_open_archive: Any,
) -> None:
    open_archive = sqlite_open_archive
    open_archive("erin", embeddings=None).insert_many([text for text, _, _ in FACTS])
    memory = open_archive("erin")
    assert memory.search("what kind of puppy does she have?", mode="vector").total == 0
    assert memory.embed_missing() == len(FACTS)
    assert memory.embed_missing() == 0
    assert "Biscuit" in top_text(memory, "what kind of puppy does she have?", mode="vector")


def test_hnsw_archive_finds_the_same_passages(open_archive: Any) -> None:
    memory = open_archive("dave", index_kind="hnsw")
    memory.insert_many([text for text, _, _ in FACTS])
    assert "Biscuit" in top_text(memory, "what kind of puppy does she have?")


def test_a_question_between_two_events_gets_the_passage_of_each(open_archive: Any) -> None:
    """The split of a question between two events (``mentions.two_events``) serves archival
    as it serves recall: one event's many passages outrank the other's one, so each event is
    also searched alone and the rankings take turns, on both backends."""
    memory = open_archive("alice")
    chatter = [f"Chat {n} about lunch, the weather and the football." for n in range(30)]
    notes = [
        f"OpenWeather API key note {n}: the OpenWeather API key and its key rules."
        for n in range(6)
    ]
    wireframe = (
        "Long evening. I sat with coffee, moved boxes around, argued with myself about "
        "colours, tried three fonts, threw two away, rang my sister, ate toast, and somewhere "
        "in all that I finished the wireframe: a search box at the top, forecast cards below "
        "it, a settings cog in the corner, and a footer that nobody will ever read, I suspect."
    )
    memory.insert_many([NewPassage(text) for text in [*chatter, *notes, wireframe]])

    def first_page(query: str) -> list[str]:
        return [hit.item.text for hit in memory.search(query, mode="hybrid", page_size=4).hits]

    asked = (
        "How many days passed between when I got my OpenWeather API key"
        " and when I finished the wireframe?"
    )
    plain = "How many days passed after I got my OpenWeather API key and I finished the wireframe?"
    assert wireframe not in first_page(plain)
    found = first_page(asked)
    assert wireframe in found and len(set(notes) & set(found)) >= 2


# ---------------------------------------------------------------- statistics


def test_count_tags_last_modified_recent_and_get(archive: SqliteArchivalMemory) -> None:
    assert archive.count() == len(FACTS)
    assert archive.tags() == sorted(
        {"pets", "work", "bio", "health", "family", "home", "goals", "preferences"}
    )
    assert archive.last_modified() == "2026-03-08T16:00:00.000000+00:00"
    assert texts(archive.recent(2)) == [FACTS[7][0], FACTS[6][0]]
    first = archive.recent(100)[-1]
    assert archive.get(first.id) == first
    assert archive.get(10_000) is None


def test_counts_are_kept_per_agent_and_filled_for_a_database_made_before_them(
    sqlite_open_archive: Any, db: sqlite_utils.Database
) -> None:
    open_archive = sqlite_open_archive
    alice, bob = open_archive("alice", embeddings=None), open_archive("bob", embeddings=None)
    alice.insert_many(["one", "two", "three"])
    bob.insert("four")
    db.conn.execute("DELETE FROM archival WHERE text = 'two'")
    assert (alice.count(), bob.count()) == (2, 1)
    assert alice.search("").total == 2

    # An older database has passages but no counts table: its migration fills it.
    db.conn.execute("DROP TABLE archival_counts")
    db.conn.execute("PRAGMA user_version = 0")
    db.conn.commit()
    migrate(db.conn)
    assert open_archive("alice", embeddings=None).count() == 2
    assert open_archive("bob", embeddings=None).count() == 1


def test_an_empty_archive_has_no_statistics(open_archive: Any) -> None:
    memory = open_archive("nobody")
    assert (memory.count(), memory.tags(), memory.last_modified(), memory.recent(3)) == (
        0,
        [],
        None,
        [],
    )
    assert memory.search("anything").total == 0


# ---------------------------------------------------------------- isolation


SEARCH_VARIANTS: list[dict[str, Any]] = [
    {},
    {"mode": "fts"},
    {"mode": "vector"},
    {"tags": ["secret"]},
    {"tags": ["secret", "work"], "tag_match": "all"},
    {"tags": ["secret", "nothing"], "tag_match": "any"},
    {"start_date": "2026-01-01", "end_date": "2026-12-31"},
    {"end_date": "2026-06-01"},
    {"page": 1, "page_size": 1},
    {"page_size": 50},
]


@pytest.mark.parametrize("query", ["bob's secret launch code", "", "launch"])
@pytest.mark.parametrize("variant", SEARCH_VARIANTS)
def test_agent_cannot_search_another_agents_archive(
    open_archive: Any, query: str, variant: dict[str, Any]
) -> None:
    bob = open_archive("bob")
    bob.insert_many(
        [
            "Bob's secret launch code is 0000-BLUE.",
            "Bob's secret: he hides the spare key under the mat.",
        ],
        tags=["secret", "work"],
        created_at="2026-05-05T05:05:05Z",
    )
    alice = open_archive("alice")
    alice.insert("Alice keeps notes about her garden.", created_at="2026-05-05T06:00:00Z")

    page = alice.search(query, **variant)
    assert all(hit.item.agent_id == "alice" for hit in page.hits)
    assert not any("Bob" in hit.item.text for hit in page.hits)
    assert page.total <= 1
    # Bob, searched the same way, sees his passages only.
    assert all(hit.item.agent_id == "bob" for hit in bob.search(query, **variant).hits)


def test_agent_cannot_read_another_agents_archive_statistics(open_archive: Any) -> None:
    bob = open_archive("bob")
    secret = bob.insert("Bob's secret.", tags=["secret"], created_at="2026-09-09")
    alice = open_archive("alice")
    alice.insert("Alice's note.", created_at="2026-01-01")
    assert alice.count() == 1
    assert alice.tags() == []
    assert alice.last_modified() == "2026-01-01T00:00:00.000000+00:00"
    assert texts(alice.recent(10)) == ["Alice's note."]
    assert alice.get(secret.id) is None
    assert bob.get(secret.id) == secret


def test_agent_ids_are_data_not_sql(open_archive: Any) -> None:
    sneaky = open_archive("x' OR '1'='1")
    open_archive("bob").insert("Bob's secret.")
    assert sneaky.count() == 0
    assert sneaky.search("secret").total == 0


# ---------------------------------------------------------------- embeddings and cache


class ToyEmbeddings(Embeddings):
    """A deterministic 16-dimensional bag-of-letters model standing in for 'another model'."""

    model = "toy-letters-16"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = [0.0] * 16
        for char in text.lower():
            vector[ord(char) % 16] += 1.0
        vector[0] += 0.01
        return vector


def test_switching_embedding_model_needs_a_reembed(
    db: sqlite_utils.Database, cache_dir: Path, sqlite_open_archive: Any, tmp_data_dir: Path
) -> None:
    open_archive = sqlite_open_archive
    toy = open_archive(embeddings=ToyEmbeddings())
    toy.insert_many([text for text, _, _ in FACTS])
    with pytest.raises(EmbeddingMismatchError, match="reembed --data-dir") as err:
        open_archive()  # now configured with MiniLM
    assert "toy-letters-16 (dim 16)" in str(err.value)
    assert "all-MiniLM-L6-v2-int8 (dim 384)" in str(err.value)

    memory = SqliteArchivalMemory.reembed(db, "alice", MiniLMEmbeddings(), cache_dir)
    assert memory.count() == len(FACTS)
    assert "Biscuit" in top_text(memory, "what kind of puppy does she have?")
    assert "Biscuit" in top_text(open_archive(), "what kind of puppy does she have?")


def test_search_survives_a_lost_faiss_cache(cache_dir: Path, sqlite_open_archive: Any) -> None:
    open_archive = sqlite_open_archive
    archive = open_archive("alice")
    archive.insert_many(
        [NewPassage(text, tags=tags, created_at=when) for text, tags, when in FACTS]
    )
    archive.close()
    shutil.rmtree(cache_dir)
    forget_loaded_indexes()
    reopened = open_archive()
    assert "Biscuit" in top_text(reopened, "what kind of puppy does she have?", mode="vector")


# -- exact matches ---------------------------------------------------------------------------

LONG_NOTE = (
    "Notes from the weekend: we walked along the river, the kids fed the ducks, it rained "
    "so we played cards and cooked far too much soup. The storage locker code is ZX4417. "
    "My sister called about moving to the coast, and the neighbours are still drilling "
    "every morning at eight, which is driving everyone a little mad."
)


def test_an_identifier_inside_a_long_passage_is_found_first(open_archive: Any) -> None:
    memory = open_archive()
    memory.insert_many(
        [
            NewPassage(LONG_NOTE),
            NewPassage("Did you see the sunset yesterday?"),
            NewPassage("The train was late again this morning."),
            NewPassage("what was ZX4417 again?"),
            NewPassage("can you remind me what ZX4417 is?"),
        ]
    )
    for mode in ("hybrid", "fts"):
        assert top_text(memory, "ZX4417", mode=mode) == LONG_NOTE


# ------------------------------------- what surrounds a passage, what a query names

CHAT = [  # one conversation, saved a turn at a time, as a model archives what it hears
    "How did the move to the new flat go?",
    "Smooth, the van came early and nothing broke.",
    "What did you end up calling the puppy?",
    "We went with Biscuit, after the cookie jar.",
    "Cute. Are you still cycling to work?",
    "Most days, unless it rains.",
]


def _archive_chat(
    memory: SqliteArchivalMemory, tags: list[list[str]] | None = None
) -> list[Passage]:
    return [
        memory.insert(text, tags=tags[i] if tags else (), thread_id="chat", turn=i + 1)
        for i, text in enumerate(CHAT)
    ]


def test_a_passage_is_found_by_the_question_asked_just_before_it(open_archive: Any) -> None:
    """Its neighbours' words count for it, two turns each way, as recall's context does."""
    memory = open_archive()
    passages = _archive_chat(memory)
    memory.insert("The puppy class starts in June.")  # no thread: no neighbours
    found = texts([h.item for h in memory.search("puppy", mode="fts", page_size=10).hits])
    assert found[0] in {CHAT[2], "The puppy class starts in June."}
    assert CHAT[3] in found  # the answer, which never says "puppy"
    assert CHAT[5] not in found  # three turns after the question
    assert {p.text for p in passages[:5]} <= set(found)


def test_neighbours_outside_the_search_filters_are_not_pulled_in(open_archive: Any) -> None:
    memory = open_archive()
    tags = [["chat"]] * len(CHAT)
    tags[3] = ["private"]
    _archive_chat(memory, tags)
    page = memory.search("puppy", mode="fts", tags=["chat"], page_size=10)
    found = texts([h.item for h in page.hits])
    assert CHAT[2] in found and CHAT[4] in found
    assert CHAT[3] not in found


def test_a_day_the_query_names_lifts_the_passages_of_that_day(open_archive: Any) -> None:
    memory = open_archive()
    for day in ("2026-03-01", "2026-03-04", "2026-03-05", "2026-04-20"):
        memory.insert(  # the same words on four days: kept apart to rank them
            "We walked along the beach at low tide.",
            created_at=f"{day}T10:00:00Z",
            merge_duplicates=False,
        )
    hits = memory.search("beach walk on 5 March 2026", mode="fts").hits
    days = [h.item.created_at[:10] for h in hits]
    assert days[:2] == ["2026-03-05", "2026-03-04"]  # a day off: still lifted, less


def test_a_tag_the_query_names_lifts_the_passages_carrying_it(open_archive: Any) -> None:
    memory = open_archive()
    for tag in ("joanna", "okafor"):  # the same words twice: kept apart to rank them
        memory.insert(
            "Dinner was lovely, we should book that place again.",
            tags=[tag],
            merge_duplicates=False,
        )
    for name in ("Okafor", "Joanna"):  # whichever was saved first
        hits = memory.search(f"dinner with {name}", mode="fts").hits
        assert hits[0].item.tags == [name.lower()]
        assert len(hits) == 2
