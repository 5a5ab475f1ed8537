"""Export / import: an agent's memory moves as one file, between ids, data dirs and backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.ops.export_file import ExportFormatError, read_export
from langgraph_memgpt.ops.transfer import export_agent, import_agent
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.sqlite import SqliteBackend
from langgraph_memgpt.stores.types import RecallMessage

QUERIES = ("hiking mountains", "Biscuit puppy name", "sister visit March", "pasta", "Lisbon trip")
MODES = ("hybrid", "fts", "vector")
TALK = [
    ("user", "I went hiking in the mountains with my sister"),
    ("assistant", "That sounds lovely! Which mountains?"),
    ("user", "The Alps, near Chamonix. We saw a glacier."),
    ("assistant", "What is your puppy's name, by the way?"),
    ("user", "Biscuit! He is a beagle."),
    ("assistant", "Biscuit is a great name."),
    ("user", "My sister visits again in March, we plan a pasta night"),
    ("assistant", "I will remember the pasta night in March."),
]


def populate(memory: Memory) -> None:
    """Core edits, two threads with a tool call and its result, tagged and keyed passages."""
    memory.core.ensure_defaults(persona="I am Sam.", human="")
    memory.core.append("human", "Has a beagle called Biscuit.", actor="agent:t1")
    memory.core.replace("human", "a beagle", "a young beagle", actor="agent:t1")
    messages = []
    for thread, day in (("t1", 3), ("t2", 9)):
        for i, (role, text) in enumerate(TALK):
            messages.append(
                RecallMessage(
                    agent_id=memory.agent_id,
                    thread_id=thread,
                    message_id=f"m{i}",
                    role=role,
                    text=f"{text} ({thread})",
                    created_at=f"2026-11-{day:02d}T10:{i:02d}:00+00:00",
                    turn=i // 2,
                )
            )
    messages.append(
        RecallMessage(
            agent_id=memory.agent_id,
            thread_id="t2",
            message_id="call",
            role="assistant",
            text="",
            created_at="2026-11-09T10:30:00+00:00",
            tool_calls=[{"name": "conversation_search", "args": {"query": "Biscuit"}, "id": "c1"}],
        )
    )
    messages.append(
        RecallMessage(
            agent_id=memory.agent_id,
            thread_id="t2",
            message_id="result",
            role="tool",
            name="conversation_search",
            text="Page 1 of 1: Biscuit! He is a beagle.",
            created_at="2026-11-09T10:31:00+00:00",
        )
    )
    memory.recall.add(messages)
    memory.archival.insert("Planning a trip to Lisbon in May", tags=["travel", "plans"])
    memory.archival.insert("Biscuit the beagle was born in April", tags=["pets"], key="call:t1:c9")
    memory.archival.insert(
        "I talked with the user about hiking and their puppy",
        tags=["summary"],
        thread_id="t1",
        turn=3,
        created_at="2026-11-03T11:00:00+00:00",
    )


def searches(memory: Memory) -> dict[str, Any]:
    """Every search the tools can run, as comparable values (no row ids)."""
    out: dict[str, Any] = {}
    for query in QUERIES:
        for mode in MODES:
            recall = memory.recall.search(query, mode=mode, page_size=20)  # type: ignore[arg-type]
            out[f"recall {mode} {query}"] = (
                recall.total,
                [
                    (h.item.thread_id, h.item.message_id, h.item.text, round(h.score, 4))
                    for h in recall.hits
                ],
            )
            archive = memory.archival.search(query, mode=mode, page_size=20)  # type: ignore[arg-type]
            out[f"archival {mode} {query}"] = (
                archive.total,
                [
                    (h.item.text, h.item.tags, h.item.created_at, round(h.score, 4))
                    for h in archive.hits
                ],
            )
    dated = memory.recall.search_date("2026-11-09", "2026-11-09", page_size=50)
    out["by date"] = [(h.item.message_id, h.item.text) for h in dated.hits]
    out["tagged"] = [h.item.text for h in memory.archival.search("", tags=["pets"]).hits]
    out["tags"] = memory.archival.tags()
    out["blocks"] = memory.core.blocks()
    out["history"] = [
        {k: v for k, v in entry.items() if k != "id"}
        for block in memory.core.blocks()
        for entry in memory.core.history(block.label)
    ]
    out["counts"] = (memory.recall.count(), memory.archival.count())
    return out


def records(path: Path) -> list[dict[str, Any]]:
    """An export's records without what differs by design (time, agent, passage ids)."""
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["type"] in ("header", "end"):
            continue
        record.pop("id", None)
        if record["type"] == "passage" and record["key"] and record["key"].startswith("import:"):
            record["key"] = None  # an unkeyed passage gets a key from its source on import
        out.append(record)
    return sorted(out, key=lambda r: json.dumps(r, sort_keys=True))


def test_an_imported_agent_answers_every_search_as_the_original(
    make_backend: Any, embeddings: Any, tmp_path: Path
) -> None:
    backend = make_backend(embeddings=embeddings)
    original = backend.open("ada")
    populate(original)
    path = tmp_path / "ada.jsonl"

    counts = export_agent(original, path, embedding={"model": "all-MiniLM-L6-v2", "dim": 384})
    report = import_agent(backend.open("ada-copy"), path)

    assert counts == {"block": 2, "block_history": 4, "message": 18, "passage": 3}
    assert (report.messages_new, report.passages_new) == (18, 3)
    assert searches(backend.open("ada-copy")) == searches(original)


def test_importing_twice_adds_nothing(make_backend: Any, embeddings: Any, tmp_path: Path) -> None:
    backend = make_backend(embeddings=embeddings)
    populate(backend.open("ada"))
    path = tmp_path / "ada.jsonl"
    export_agent(backend.open("ada"), path)
    copy = backend.open("ada-copy")
    import_agent(copy, path)
    first = searches(copy)

    again = import_agent(copy, path, mode="merge")

    assert (again.messages_new, again.passages_new) == (0, 0)
    assert searches(copy) == first


def test_a_fact_that_replaced_another_keeps_its_link_through_export_and_import(
    make_backend: Any, tmp_path: Path
) -> None:
    backend = make_backend()
    original = backend.open("ada")
    populate(original)
    old = original.archival.insert("Ada's sister lives in Leeds.")
    new = original.archival.insert("Ada's sister moved to York.", replaces=old.id)
    path = tmp_path / "ada.jsonl"
    export_agent(original, path)
    copy = backend.open("ada-copy")

    import_agent(copy, path)
    import_agent(copy, path, mode="merge")  # a second import links nothing twice

    hits = [h.item for h in copy.archival.search("Where does Ada's sister live?").hits]
    texts = [p.text for p in hits]
    assert texts.index(new.text) < texts.index(old.text)
    current, older = hits[texts.index(new.text)], hits[texts.index(old.text)]
    assert current.replaces == older.id and older.replaced_by == current.id
    assert copy.archival.count() == original.archival.count() == 5


def bad_file(tmp_path: Path, how: str) -> Path:
    source = SqliteBackend(tmp_path / "source", embedding_model="none")
    populate(source.open("ada"))
    path = tmp_path / "ada.jsonl"
    export_agent(source.open("ada"), path)
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    if how == "cut mid-line":
        path.write_bytes(data[: len(data) // 2])
    elif how == "cut at a line":
        path.write_bytes(b"".join(lines[:-3]))
    elif how == "no end record":
        path.write_bytes(b"".join(lines[:-1]))
    elif how == "a record altered":
        record = json.loads(lines[5])
        record["text" if "text" in record else "value"] = "something else"
        lines[5] = (json.dumps(record) + "\n").encode()
        path.write_bytes(b"".join(lines))
    elif how == "a malformed record":
        lines[5] = b'{"type": "message", "role": 7}\n'
        path.write_bytes(b"".join(lines))
    elif how == "not an export":
        path.write_text('{"hello": "world"}\n')
    return path


def test_a_shared_block_is_attached_again_from_the_agents_own_export(
    make_backend: Any, tmp_path: Path
) -> None:
    backend = make_backend()
    team = backend.open("team")
    team.core.create("project", "Launch on Friday.", "The team's plan.", 500)
    ada = backend.open("ada")
    ada.core.ensure_defaults(persona="I am Ada's helper.", human="Name: Ada.")
    ada.core.attach("project", "team")
    path = tmp_path / "ada.jsonl"
    export_agent(ada, path)
    assert read_export(path).shared == {"project": "team"}
    ada.core.detach("project")  # lost since: the backup puts it back

    report = import_agent(ada, path, mode="merge")

    assert report.attached == {"project": "team"} and report.copied == {}
    assert ada.core.owner("project") == "team" and ada.core.owner("human") == "ada"
    team.core.append("project", "Demo on Thursday.", actor="user")
    assert "Demo on Thursday." in ada.core.get("project").value  # one block, not a copy


def test_another_agents_export_gets_a_copy_of_its_shared_block(
    make_backend: Any, tmp_path: Path
) -> None:
    backend = make_backend()
    backend.open("team").core.create("project", "Launch on Friday.", "The team's plan.", 500)
    ada = backend.open("ada")
    ada.core.attach("project", "team")
    path = tmp_path / "ada.jsonl"
    export_agent(ada, path)

    report = import_agent(backend.open("ada-copy"), path)

    copy = backend.open("ada-copy")
    assert report.copied == {"project": "team"} and report.attached == {}
    assert copy.core.owner("project") == "ada-copy"
    copy.core.append("project", "Copied note.", actor="user")
    assert "Copied note." not in backend.open("team").core.get("project").value


def test_a_shared_block_whose_owner_is_missing_is_imported_as_a_copy(
    make_backend: Any, tmp_path: Path
) -> None:
    source = make_backend()
    source.open("team").core.create("project", "Launch on Friday.", "The plan.", 500)
    ada = source.open("ada")
    ada.core.ensure_defaults(persona="", human="Name: Ada.")
    ada.core.attach("project", "team")
    path = tmp_path / "ada.jsonl"
    export_agent(ada, path)

    elsewhere = SqliteBackend(tmp_path / "elsewhere", embedding_model="none")  # no "team"
    report = import_agent(elsewhere.open("ada"), path)

    moved = elsewhere.open("ada")
    assert report.copied == {"project": "team"} and report.attached == {}
    assert moved.core.owner("project") == "ada"
    assert moved.core.get("project").value == "Launch on Friday."
    assert [e["new_value"] for e in moved.core.history("project")] == ["Launch on Friday."]


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("cut mid-line", "truncated"),
        ("cut at a line", "truncated"),
        ("no end record", "truncated"),
        ("a record altered", "altered"),
        ("a malformed record", "line 6"),
        ("not an export", "not a langgraph-memgpt export"),
    ],
)
def test_a_damaged_file_is_refused_and_the_target_left_untouched(
    make_backend: Any, tmp_path: Path, how: str, says: str
) -> None:
    path = bad_file(tmp_path, how)
    target = make_backend().open("new")

    with pytest.raises(ExportFormatError, match=says):
        import_agent(target, path)

    assert target.core.blocks() == []
    assert (target.recall.count(), target.archival.count()) == (0, 0)


def test_a_memory_moves_from_sqlite_to_postgres_and_back(
    embeddings: Any, postgres_url: str, tmp_path: Path
) -> None:
    from langgraph_memgpt.stores.postgres import PostgresBackend

    sqlite = SqliteBackend(tmp_path / "a", embeddings=embeddings)
    postgres = PostgresBackend(postgres_url, embeddings=embeddings)
    try:
        populate(sqlite.open("ada"))
        export_agent(sqlite.open("ada"), tmp_path / "1.jsonl")
        import_agent(postgres.open("ada-pg"), tmp_path / "1.jsonl")
        export_agent(postgres.open("ada-pg"), tmp_path / "2.jsonl")
        back = SqliteBackend(tmp_path / "b", embeddings=embeddings)
        import_agent(back.open("ada-back"), tmp_path / "2.jsonl")
        export_agent(back.open("ada-back"), tmp_path / "3.jsonl")

        assert records(tmp_path / "2.jsonl") == records(tmp_path / "1.jsonl")
        assert records(tmp_path / "3.jsonl") == records(tmp_path / "1.jsonl")
        for memory in (postgres.open("ada-pg"), back.open("ada-back")):
            hits = memory.recall.search("puppy name", page_size=3).hits
            assert any("Biscuit!" in h.item.text for h in hits)
            found = memory.archival.search("Lisbon", mode="vector", page_size=1).hits
            assert found[0].item.text == "Planning a trip to Lisbon in May"
    finally:
        postgres.close()


def test_an_export_carries_no_vectors_and_names_the_model(
    make_backend: Any, embeddings: Any, tmp_path: Path
) -> None:
    backend = make_backend(embeddings=embeddings)
    populate(backend.open("ada"))
    path = tmp_path / "ada.jsonl"

    export_agent(backend.open("ada"), path, embedding={"model": "all-MiniLM-L6-v2", "dim": 384})

    export = read_export(path)
    assert export.agent_id == "ada"
    assert export.embedding == {"model": "all-MiniLM-L6-v2", "dim": 384}
    assert "embedding" not in {k for r in export.messages for k in r}
    assert [r["searchable"] for r in export.messages if r["role"] == "tool"] == [False]
