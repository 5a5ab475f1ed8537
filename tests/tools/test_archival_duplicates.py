"""One clean truth in archival memory: a fact saved twice is kept once; a changed fact
replaces the older one, which stays findable.

Each test runs on both backends (SQLite + FAISS and Postgres + pgvector), through the store
and through the tools the model calls.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import BackendFactory

from langgraph_memgpt.context import Context
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.duplicates import same_fact
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.tools.run import Provenance, execute_tool_call

LEEDS = "User's sister Priya lives in Leeds."
LEEDS_AGAIN = "The user's sister, Priya, lives in Leeds"
YORK = "User's sister Priya moved to York."


@pytest.fixture(params=["words", "vectors"])
def memory(request: pytest.FixtureRequest, make_backend: BackendFactory) -> Memory:
    """An agent's memory with no vectors, and one with MiniLM vectors, on each backend."""
    embeddings = MiniLMEmbeddings() if request.param == "vectors" else None
    memory = make_backend(embeddings).open("ada")
    memory.core.ensure_defaults(human="Name: Ada.")
    return memory


def run(memory: Memory, name: str, **args: Any) -> str:
    outcome = execute_tool_call(
        name, args, memory=memory, ctx=Context(), where=Provenance(thread_id="t1", turn=1)
    )
    result = json.loads(outcome.content)
    assert result["status"] == "OK", result
    return str(result["message"])


# ---------------------------------------------------------------- duplicates


def test_a_paraphrase_of_a_saved_fact_is_reported_as_already_saved(memory: Memory) -> None:
    first = memory.archival.insert(LEEDS, tags=["family"])
    again = memory.archival.insert(LEEDS_AGAIN)
    assert again.duplicate and not first.duplicate
    assert (again.id, again.text) == (first.id, LEEDS)
    assert memory.archival.count() == 1


def test_the_tool_says_already_saved_and_names_the_stored_passage(memory: Memory) -> None:
    saved = run(memory, "archival_memory_insert", content=LEEDS)
    assert saved.startswith("Saved passage #1")
    again = run(memory, "archival_memory_insert", content=LEEDS_AGAIN)
    assert again.startswith("Already saved: passage #1 (") and LEEDS in again
    assert "replaces=1" in again  # how to save it if the fact has changed
    assert memory.archival.count() == 1


def test_a_changed_detail_is_a_new_fact_not_a_duplicate(memory: Memory) -> None:
    memory.archival.insert(LEEDS)
    for other in (
        YORK,
        "User's sister Priya lives in Leeds with her husband Tom.",  # says more
        "User's sister Priya doesn't live in Leeds.",  # a negation
        "User's brother Priya lives in Leeds.",
        "User's sister Priya lives in Leeds 🏠.",  # a symbol says something too
    ):
        assert not memory.archival.insert(other).duplicate, other
    assert memory.archival.count() == 6


def test_with_vectors_a_shorter_restatement_is_found_among_the_nearest(
    make_backend: BackendFactory,
) -> None:
    archival = make_backend(MiniLMEmbeddings()).open("ada").archival
    stored = archival.insert("User's bike got stolen outside Shinjuku station.")
    archival.insert("User's sister Priya lives in Leeds.")
    again = archival.insert("The user's bike got stolen.")  # other key: found by meaning
    assert again.duplicate and again.id == stored.id
    assert not archival.insert("The user's car got stolen.").duplicate
    assert archival.count() == 3


def test_a_bulk_load_keeps_every_item_unless_asked_to_merge(memory: Memory) -> None:
    kept = memory.archival.insert_many([LEEDS, LEEDS_AGAIN])
    assert len({p.id for p in kept}) == 2 and not any(p.duplicate for p in kept)
    merged = memory.archival.insert_many(
        [NewPassage("Ada plays the harp on Sundays.", merge_duplicates=True)] * 2
        + ["Ada plays the harp on Sundays."]
    )
    assert merged[0].id == merged[1].id and merged[1].duplicate
    assert merged[2].id != merged[0].id  # a plain string of a bulk load is kept
    assert memory.archival.count() == 4


def test_a_core_append_restating_a_line_is_already_saved(memory: Memory) -> None:
    run(
        memory,
        "core_memory_append",
        label="human",
        content="User's bike got stolen outside Shinjuku station.",
    )
    again = run(memory, "core_memory_append", label="human", content="The user's bike got stolen.")
    assert again.startswith("Already saved: 'human' already says this:")
    assert memory.core.get("human").value.count("bike") == 1
    # The rule is the archival one: the same module decides both.
    assert same_fact(
        "The user's bike got stolen.", "User's bike got stolen outside Shinjuku station."
    )


def test_a_core_append_saying_a_line_and_more_takes_its_place(memory: Memory) -> None:
    """A fuller wording replaces the line it covers: one line, the fuller, not two."""
    run(memory, "core_memory_append", label="human", content="User's bike got stolen.")
    fuller = "User's bike got stolen outside Shinjuku station."
    said = run(memory, "core_memory_append", label="human", content=fuller)
    assert said.startswith("Updated 'human': \"User's bike got stolen.\" became")
    human = memory.core.get("human").value
    assert fuller in human and human.count("bike") == 1
    # A different fact of the same words is appended beside it.
    run(memory, "core_memory_append", label="human", content="User's car got stolen.")
    assert memory.core.get("human").value.count("stolen") == 2


# ---------------------------------------------------------------- updates


def test_a_newer_fact_is_shown_first_and_says_what_it_replaced(memory: Memory) -> None:
    old = memory.archival.insert(LEEDS, created_at="2026-01-10T09:00:00Z")
    memory.archival.insert("Ada's manager is Dr. Okafor.", created_at="2026-01-11T09:00:00Z")
    new = memory.archival.insert(YORK, created_at="2026-03-02T09:00:00Z", replaces=old.id)
    assert new.replaces == old.id
    # Asked in the old fact's words, search still shows the current fact first.
    for query in ("Where does Priya live?", "Leeds"):
        hits = [h.item for h in memory.archival.search(query).hits]
        ids = [p.id for p in hits]
        assert ids.index(new.id) < ids.index(old.id), (query, ids)
        shown_old = hits[ids.index(old.id)]
        assert shown_old.replaced_by == new.id
        assert shown_old.replaced_at is not None and shown_old.replaced_at.startswith("2026-03-02")
    # The older stays findable for "what did I say before?".
    assert memory.archival.get(old.id) is not None
    assert memory.archival.count() == 3


def test_the_search_tool_says_what_replaced_what_and_when(memory: Memory) -> None:
    run(memory, "archival_memory_insert", content=LEEDS)
    saved = run(memory, "archival_memory_insert", content=YORK, replaces=1)
    assert (
        saved.startswith("Saved passage #2 to archival memory, replacing #1 (") and LEEDS in saved
    )
    found = run(memory, "archival_memory_search", query="Where does the user's sister live?")
    lines = [line for line in found.splitlines() if line.startswith("- #")]
    assert lines[0].startswith("- #2 ") and "[current: replaced #1 on " in lines[0]
    assert YORK in lines[0]
    assert lines[1].startswith("- #1 ") and "[REPLACED by #2 on " in lines[1]
    # A duplicate of the older, replaced fact is no duplicate: the user may say it again.
    again = run(memory, "archival_memory_insert", content=LEEDS, replaces=2)
    assert again.startswith("Saved passage #3")
    found = run(memory, "archival_memory_search", query="Where does the user's sister live?")
    lines = [line for line in found.splitlines() if line.startswith("- #")]
    assert lines[0].startswith("- #3 ") and "[current: replaced #2" in lines[0]
    older = {line[:5]: line for line in lines[1:]}  # in the order the search ranks them
    assert set(older) == {"- #1 ", "- #2 "}
    assert "[REPLACED by #2" in older["- #1 "]
    assert "[REPLACED by #3" in older["- #2 "] and "current" not in older["- #2 "]


def test_replacing_a_missing_or_already_replaced_passage_is_refused(memory: Memory) -> None:
    old = memory.archival.insert(LEEDS)
    memory.archival.insert(YORK, replaces=old.id)
    with pytest.raises(ValueError, match="already replaced by passage 2.*replace passage 2"):
        memory.archival.insert("User's sister Priya moved to Bath.", replaces=old.id)
    with pytest.raises(ValueError, match="no archival passage 99 to replace"):
        memory.archival.insert("User's sister Priya moved to Bath.", replaces=99)
    with pytest.raises(ValueError, match="replaces must be the id"):
        memory.archival.insert("User's sister Priya moved to Bath.", replaces=0)
    assert memory.archival.count() == 2
    result = json.loads(
        execute_tool_call(
            "archival_memory_insert",
            {"content": "User's sister Priya moved to Bath.", "replaces": 99},
            memory=memory,
            ctx=Context(),
            where=Provenance(thread_id="t1", turn=1),
        ).content
    )
    assert result["status"] == "Failed" and "no archival passage 99" in result["message"]


def test_the_same_fact_saved_at_once_by_several_writers_is_stored_once(
    make_backend: BackendFactory,
) -> None:
    archival = make_backend().open("ada").archival
    wordings = [LEEDS, LEEDS_AGAIN, "the user's sister priya lives in leeds!", LEEDS] * 2
    start = threading.Barrier(len(wordings))

    def save(text: str) -> Any:
        start.wait()
        return archival.insert(text)

    with ThreadPoolExecutor(len(wordings)) as pool:
        saved = list(pool.map(save, wordings))
    assert len({p.id for p in saved}) == 1
    assert sum(not p.duplicate for p in saved) == 1
    assert archival.count() == 1


def test_facts_that_differ_only_by_a_code_are_not_merged() -> None:
    """A word holding a digit is a code, whatever its length: "w1" is not "w2"."""
    from langgraph_memgpt.stores.duplicates import same_fact

    assert not same_fact("w1 passage 1: the w1 fact number 1", "w2 passage 1: the w2 fact number 1")
    assert not same_fact(
        "The meeting is in room B2 on Friday.", "The meeting is in room B3 on Friday."
    )
    assert not same_fact("Locker code k7q2291x opens it.", "Locker code k7q2291y opens it.")
    assert same_fact("The meeting is in room B2 on Friday", "The meeting is in room B2 on Friday.")
