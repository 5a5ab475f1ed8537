"""Forgetting: a deleted passage, message, thread or agent is gone from every search.

Run on both backends (real SQLite + FAISS, real Postgres + pgvector) with the real MiniLM
embeddings, through the memory protocols only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.deps import TOOL_HOST
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.ops.forget import (
    NothingToForgetError,
    forget_agent,
    forget_matching,
    forget_messages,
    forget_passage,
    forget_thread,
)
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.sqlite import close_all
from langgraph_memgpt.stores.sqlite.faiss_cache import agent_cache_dir
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.tools.run import Provenance, execute_tool_call

MODES = ("hybrid", "fts", "vector")
SECRET = "My locker code is 4471 and the locker is at Greenbriar gym"
SECRET_WORD = "Greenbriar"
CHATTER = [
    "I went hiking in the mountains last weekend",
    "The weather was sunny and warm",
    "Do you know a good pasta recipe?",
    "We talked about the new bakery downtown",
    "My sister is visiting in March",
]


def message(i: int, text: str, thread: str = "t1", agent: str = "ada") -> RecallMessage:
    return RecallMessage(
        agent_id=agent,
        thread_id=thread,
        message_id=f"{thread}-m{i}",
        role="user" if i % 2 == 0 else "assistant",
        text=text,
        created_at=f"2026-11-{10 + i:02d}T09:00:00+00:00",
    )


def conversation(memory: Memory, thread: str = "t1") -> list[RecallMessage]:
    """Chatter with the secret in the middle, so it sits in its neighbours' context."""
    texts = [*CHATTER[:3], SECRET, *CHATTER[3:]]
    messages = [message(i, text, thread, memory.agent_id) for i, text in enumerate(texts)]
    memory.recall.add(messages)
    return messages


def recall_texts(memory: Memory, query: str, mode: str) -> list[str]:
    page = memory.recall.search(query, mode=mode, page_size=50)  # type: ignore[arg-type]
    return [hit.item.text for hit in page.hits]


def archival_texts(memory: Memory, query: str, mode: str) -> list[str]:
    page = memory.archival.search(query, mode=mode, page_size=50)  # type: ignore[arg-type]
    return [hit.item.text for hit in page.hits]


@pytest.fixture
def memory(make_backend: Any, embeddings: Any) -> Memory:
    backend = make_backend(embeddings=embeddings)
    opened: Memory = backend.open("ada")
    return opened


# -- passages ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_deleted_passage_is_returned_by_no_archival_search(memory: Memory, mode: str) -> None:
    secret = memory.archival.insert(SECRET, tags=["private"])
    for text in CHATTER:
        memory.archival.insert(text)
    assert SECRET in archival_texts(memory, "locker code Greenbriar gym", mode)

    forget_passage(memory, secret.id, actor="user:test", checkpointer=None)

    for query in ("locker code Greenbriar gym", SECRET, "gym"):
        assert SECRET not in archival_texts(memory, query, mode)
    assert memory.archival.get(secret.id) is None
    assert memory.archival.count() == len(CHATTER)
    assert "private" not in memory.archival.tags()


def test_forgetting_an_unknown_passage_says_so(memory: Memory) -> None:
    with pytest.raises(NothingToForgetError, match="no archival passage 999"):
        forget_passage(memory, 999, actor="user", checkpointer=None)


def test_an_agent_cannot_delete_another_agents_passage(make_backend: Any, embeddings: Any) -> None:
    backend = make_backend(embeddings=embeddings)
    theirs = backend.open("bob").archival.insert("Bob keeps this")
    with pytest.raises(NothingToForgetError):
        forget_passage(backend.open("ada"), theirs.id, actor="user", checkpointer=None)
    assert backend.open("bob").archival.get(theirs.id) is not None


# -- messages ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_deleted_message_is_returned_by_no_recall_search(memory: Memory, mode: str) -> None:
    messages = conversation(memory)
    assert SECRET in recall_texts(memory, "locker code Greenbriar", mode)

    forget_messages(memory, [messages[3].message_id], actor="user:test", checkpointer=None)

    for query in ("locker code Greenbriar", SECRET, "gym locker"):
        assert SECRET not in recall_texts(memory, query, mode)
    assert memory.recall.count() == len(messages) - 1


def test_neighbours_are_no_longer_found_by_the_deleted_words(memory: Memory) -> None:
    conversation(memory)
    # The neighbours' context (their ±2 window) held the secret: found by its words.
    assert len(recall_texts(memory, SECRET_WORD, "fts")) > 1

    forget_messages(memory, ["t1-m3"], actor="user", checkpointer=None)

    page = memory.recall.search(SECRET_WORD, mode="fts", page_size=50)
    assert page.total == 0 and page.hits == []


def test_a_deleted_message_is_not_recorded_again_by_a_replayed_queue(memory: Memory) -> None:
    messages = conversation(memory)
    forget_messages(memory, [messages[3].message_id], actor="user", checkpointer=None)

    # The graph re-records its queue at every turn: the deleted message must stay deleted.
    assert memory.recall.add(messages) == 0
    assert memory.recall.get([messages[3].message_id]) == []
    assert SECRET not in recall_texts(memory, "locker code Greenbriar", "hybrid")


def test_forgetting_an_unknown_message_says_so(memory: Memory) -> None:
    conversation(memory)
    with pytest.raises(NothingToForgetError, match="no message 'nope'"):
        forget_messages(memory, ["nope"], actor="user", checkpointer=None)


def test_summaries_written_from_a_deleted_message_are_removed(memory: Memory) -> None:
    messages = conversation(memory)
    before = memory.archival.insert(
        "I summarised the start of the talk",
        tags=["summary"],
        thread_id="t1",
        created_at="2026-11-11T00:00:00+00:00",
    )
    after = memory.archival.insert(
        "The user told me their locker is at Greenbriar",
        tags=["summary"],
        thread_id="t1",
        created_at="2026-11-20T00:00:00+00:00",
    )
    elsewhere = memory.archival.insert(
        "Another thread's summary",
        tags=["summary"],
        thread_id="t2",
        created_at="2026-11-20T00:00:00+00:00",
    )

    report = forget_messages(memory, [messages[3].message_id], actor="user", checkpointer=None)

    assert [p.id for p in report.summaries] == [after.id]
    assert memory.archival.get(after.id) is None
    assert memory.archival.get(before.id) is not None
    assert memory.archival.get(elsewhere.id) is not None
    for mode in MODES:
        assert after.text not in archival_texts(memory, "locker Greenbriar", mode)


# -- the deletion log ----------------------------------------------------------------


def test_every_deletion_is_logged_without_its_content(memory: Memory) -> None:
    messages = conversation(memory)
    passage = memory.archival.insert(SECRET)

    forget_passage(memory, passage.id, actor="user:ops", checkpointer=None)
    forget_messages(memory, [messages[3].message_id], actor="agent:t1", checkpointer=None)

    entries = memory.deletions.entries()
    assert [(e.kind, e.item_id, e.actor) for e in entries] == [
        ("message", "t1-m3", "agent:t1"),
        ("passage", str(passage.id), "user:ops"),
    ]
    assert entries[0].thread_id == "t1"
    assert all(e.deleted_at.startswith("20") for e in entries)
    assert SECRET_WORD not in repr(entries) and "4471" not in repr(entries)


# -- threads and agents --------------------------------------------------------------


def test_forgetting_a_thread_removes_its_messages_passages_and_checkpoint(
    make_backend: Any, embeddings: Any, tmp_path: Path
) -> None:
    backend = make_backend(embeddings=embeddings)
    model = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Noted"}}]}]
    )
    saver = InMemorySaver()
    graph = build_graph(model=model, memory=backend).compile(checkpointer=saver)
    ctx = Context(agent_id="ada", data_dir=str(tmp_path / "unused"))
    graph.invoke(
        {"messages": [HumanMessage(SECRET)]}, {"configurable": {"thread_id": "t9"}}, context=ctx
    )
    memory = backend.open("ada")
    conversation(memory, thread="t1")
    memory.archival.insert("Greenbriar locker note", thread_id="t9")
    memory.archival.insert("kept: a note of another thread", thread_id="t1")

    report = forget_thread(memory, "t9", actor="user", checkpointer=saver)

    assert report.checkpoints == ["t9"]
    assert saver.get_tuple({"configurable": {"thread_id": "t9"}}) is None
    assert memory.recall.threads() == ["t1"]
    assert [p.text for p, _ in memory.archival.list_passages()] == [
        "kept: a note of another thread"
    ]
    for mode in MODES:
        assert all("Noted" not in t for t in recall_texts(memory, "Noted", mode))
    kinds = [e.kind for e in memory.deletions.entries()]
    assert kinds[:2] == ["checkpoint", "thread"]


def test_forgetting_an_unknown_thread_names_the_known_ones(memory: Memory) -> None:
    conversation(memory)
    with pytest.raises(NothingToForgetError, match="threads with messages: t1"):
        forget_thread(memory, "nope", actor="user", checkpointer=None)


def test_forgetting_an_agent_leaves_nothing_but_the_log(make_backend: Any, embeddings: Any) -> None:
    backend = make_backend(embeddings=embeddings)
    ada, bob = backend.open("ada"), backend.open("bob")
    for agent in (ada, bob):
        agent.core.ensure_defaults(human="Lives on Greenbriar street")
        conversation(agent)
        agent.archival.insert(SECRET)

    report = forget_agent(ada, actor="user", checkpointer=None)

    assert (report.blocks, report.message_count, report.passage_count) == (2, 6, 1)
    assert ada.core.blocks() == [] and ada.recall.count() == 0 and ada.archival.count() == 0
    for mode in MODES:
        assert recall_texts(ada, "locker Greenbriar", mode) == []
        assert archival_texts(ada, "locker Greenbriar", mode) == []
        assert SECRET in recall_texts(bob, "locker Greenbriar", mode)
    assert ada.deletions.entries()[0].kind == "agent"
    assert bob.deletions.entries() == []
    with pytest.raises(NothingToForgetError):
        forget_agent(ada, actor="user", checkpointer=None)


# -- what the model can call ---------------------------------------------------------


def test_forget_matching_deletes_what_names_every_word(memory: Memory) -> None:
    conversation(memory)
    memory.archival.insert("The Greenbriar locker code is 4471")
    memory.archival.insert("Greenbriar is a nice neighbourhood")
    memory.core.ensure_defaults(human="Goes to the gym.\nHas a locker at Greenbriar.")

    report = forget_matching(memory, "Greenbriar locker", actor="agent:t1")

    assert report.message_count == 1 and len(report.passages) == 1
    assert [p.text for p, _ in memory.archival.list_passages()] == [
        "Greenbriar is a nice neighbourhood"
    ]
    assert "core_memory_replace" in report.describe() and "'human'" in report.describe()
    for mode in MODES:
        assert SECRET not in recall_texts(memory, "locker Greenbriar", mode)


def test_forget_matching_finds_what_a_long_text_names_late(memory: Memory) -> None:
    """A long message or passage is read whole: the name at its end is matched too."""
    filler = " ".join(f"word{i}" for i in range(200))
    memory.archival.insert(f"{filler}. My locker at Greenbriar has code 4471.")

    report = forget_matching(memory, "Greenbriar locker", actor="agent:t1")

    assert len(report.passages) == 1
    assert memory.archival.count() == 0


def test_forget_matching_refuses_words_that_name_nothing(memory: Memory) -> None:
    with pytest.raises(ValueError, match="content words"):
        forget_matching(memory, "it", actor="agent")


def test_the_forget_tool_deletes_only_from_its_own_agent(
    make_backend: Any, embeddings: Any
) -> None:
    backend = make_backend(embeddings=embeddings)
    ada, bob = backend.open("ada"), backend.open("bob")
    ada.archival.insert(SECRET)
    bob.archival.insert(SECRET)

    outcome = execute_tool_call(
        "forget",
        {"about": "Greenbriar locker"},
        memory=ada,
        ctx=Context(),
        where=Provenance(thread_id="t1", turn=1, call_id="c1"),
        user_tools={},
        host=TOOL_HOST,
    )

    assert outcome.ok and "Forgot 1 passage." in outcome.content
    assert ada.archival.count() == 0 and bob.archival.count() == 1
    assert ada.deletions.entries()[0].actor == "agent:t1"


def test_the_forget_tool_run_without_the_packages_eraser_deletes_nothing_and_says_what_to_pass(
    make_backend: Any, embeddings: Any
) -> None:
    """The memory tools import nothing above them: whoever runs them hands in the eraser."""
    memory = make_backend(embeddings=embeddings).open("ada")
    memory.archival.insert(SECRET)

    outcome = execute_tool_call(
        "forget",
        {"about": "Greenbriar locker"},
        memory=memory,
        ctx=Context(),
        where=Provenance(thread_id="t1", turn=1, call_id="c1"),
    )

    assert not outcome.ok and "host=langgraph_memgpt.deps.TOOL_HOST" in outcome.content
    assert memory.archival.count() == 1


def test_forgetting_a_queued_message_takes_it_out_of_the_checkpoint(
    make_backend: Any, embeddings: Any, tmp_path: Path
) -> None:
    backend = make_backend(embeddings=embeddings)
    model = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Noted"}}]}]
    )
    graph = build_graph(model=model, memory=backend).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    ctx = Context(agent_id="ada", data_dir=str(tmp_path / "unused"))
    graph.invoke({"messages": [HumanMessage(SECRET, id="secret-1")]}, config, context=ctx)
    memory = backend.open("ada")

    report = forget_messages(memory, ["secret-1"], actor="user", checkpointer=graph.checkpointer)

    assert report.checkpoints == ["t1"]
    queue = graph.get_state(config).values["messages"]
    assert "secret-1" not in [m.id for m in queue] and len(queue) >= 2
    assert memory.recall.get(["secret-1"]) == []


# -- the FAISS cache (embedded backend) ----------------------------------------------


def test_a_deleted_vector_leaves_the_faiss_cache_file(
    make_backend: Any, embeddings: Any, backend_kind: str, tmp_path: Path
) -> None:
    if backend_kind != "sqlite":
        pytest.skip("FAISS caches belong to the embedded backend")
    backend = make_backend(embeddings=embeddings)
    memory = backend.open("ada")
    secret = memory.archival.insert(SECRET)
    memory.archival.insert("another passage")
    conversation(memory)

    forget_passage(memory, secret.id, actor="user", checkpointer=None)
    forget_messages(memory, ["t1-m3"], actor="user", checkpointer=None)
    close_all()
    forget_loaded_indexes()

    folder = agent_cache_dir(tmp_path / "memory" / "faiss", "ada")
    sizes = {p.name: faiss.read_index(str(p)).ntotal for p in folder.glob("*.faiss")}
    assert sizes["archival.text.faiss"] == 1
    assert sizes["recall.turn.faiss"] == len(CHATTER)
    # And a reopened memory still finds nothing of them, by any signal.
    reopened = backend.open("ada")
    for mode in MODES:
        assert SECRET not in archival_texts(reopened, "locker Greenbriar", mode)
        assert SECRET not in recall_texts(reopened, "locker Greenbriar", mode)


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_a_purged_vector_is_nowhere_in_the_faiss_file(tmp_path: Path, kind: str) -> None:
    from langgraph_memgpt.stores.sqlite.db import open_db
    from langgraph_memgpt.stores.sqlite.vectors import VectorIndex

    db = open_db(tmp_path / "memory.sqlite")
    index = VectorIndex(
        db,
        tier="archival",
        agent_id="ada",
        cache_dir=tmp_path / "faiss",
        model="m",
        dim=8,
        kind=kind,  # type: ignore[arg-type]
    )
    vectors = np.random.default_rng(3).standard_normal((40, 8)).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index.upsert(list(range(40)), vectors)

    index.delete([7])
    index.purge()

    stored = faiss.read_index(str(index.path))
    inner = faiss.downcast_index(stored.index)
    flat = faiss.downcast_index(inner.storage) if kind == "hnsw" else inner
    rows = faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * 8).reshape(flat.ntotal, 8)
    assert not np.isclose(rows @ vectors[7], 1.0, atol=1e-4).any()
    assert 7 not in [item for item, _ in index.search(vectors[7], 40)]
    db.conn.close()


def test_an_eviction_summary_never_restates_a_message_forgotten_while_in_view(
    memory_backend: Any,
) -> None:
    """The forget tool deletes messages still in the queue; the summary written when they
    leave it must not bring them back (it is archived, so searchable)."""
    from langchain_core.messages import AIMessage

    from langgraph_memgpt.nodes.summarize_evict import remembered
    from langgraph_memgpt.turn.main_context import record

    memory = memory_backend.open("ada")
    queue = [
        HumanMessage("My address is 12 Rose Street.", id="m1"),
        AIMessage("Noted.", id="m2"),
        HumanMessage("Please forget my address.", id="m3"),
    ]
    record(memory, queue, "t1", 1)
    forget_matching(memory, "Rose Street", actor="agent:t1")
    assert [m.id for m in remembered(memory, queue)] == ["m2", "m3"]
