"""The ``forget``, ``export``, ``import`` and ``ingest`` commands, run as a user runs them.

Each test runs on both backends (the ``place`` fixture): a data directory (``--data-dir``),
and a Postgres database (``--database-url``), where the threads' checkpoints are too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checkpointers import Place, open_saver
from langchain_core.messages import HumanMessage

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all

SECRET = "My locker code is 4471 at Greenbriar gym"


@pytest.fixture(autouse=True)
def _no_database_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMGPT_DATABASE_URL", raising=False)  # the place says where


def chat_once(place: Place, thread: str, text: str, message_id: str | None = None) -> None:
    """One real turn of the graph, checkpointed where `chat` and `serve` keep threads."""
    model = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Noted"}}]}]
    )
    backend = place.backend() or SqliteBackend(place.data_dir, embedding_model="none")
    saver, close = open_saver(place.threads)
    try:
        graph = build_graph(model=model, memory=backend).compile(checkpointer=saver)
        graph.invoke(
            {"messages": [HumanMessage(text, id=message_id)]},
            {"configurable": {"thread_id": thread}},
            context=Context(agent_id="ada", data_dir=str(place.data_dir), embedding_model="none"),
        )
    finally:
        close()
        backend.close()
        close_all()


def run(capsys: pytest.CaptureFixture[str], place: Place, *args: str) -> tuple[int, str, str]:
    """A command on ``place``: its data directory, and its database when it is Postgres."""
    where = ["--data-dir", str(place.data_dir)]
    code = main([*args, *where, *(["--database-url", place.url] if place.url else [])])
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


def agents(place: Place) -> list[str]:
    backend = place.backend() or SqliteBackend(place.data_dir, embedding_model="none")
    try:
        return backend.agents()
    finally:
        backend.close()


@pytest.fixture
def data(place: Place) -> Place:
    """Ada's two threads (t1 tells her locker code), on the test's backend."""
    place.data_dir.mkdir(parents=True, exist_ok=True)
    chat_once(place, "t1", SECRET, message_id="secret-1")
    chat_once(place, "t2", "I like hiking")
    return place


def elsewhere(place: Place, tmp_path: Path) -> Place:
    """Where an import goes: another data directory, or (Postgres) the same database."""
    return Place("sqlite", tmp_path / "elsewhere") if place.kind == "sqlite" else place


def thread_has_checkpoint(place: Place, thread: str) -> bool:
    saver, close = open_saver(place.threads)
    try:
        config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        return saver.get_tuple(config) is not None
    finally:
        close()


def test_forget_a_message_then_inspect_shows_the_deletion_not_the_text(
    data: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--agent", "ada", "--embedding-model", "none"]
    code, out, _ = run(capsys, data, "forget", *common, "--message", "secret-1")
    assert code == 0 and "Forgot 1 message" in out

    code, out, _ = run(capsys, data, "inspect", "--agent", "ada")
    assert code == 0
    assert "deletions" in out and "secret-1" in out and "message" in out
    assert "Greenbriar" not in out
    assert data.open("ada").recall.search("Greenbriar locker").hits == []


def test_forget_a_thread_deletes_its_checkpoint(
    data: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    assert thread_has_checkpoint(data, "t1")
    common = ["--agent", "ada", "--embedding-model", "none"]

    code, out, _ = run(capsys, data, "forget", *common, "--thread", "t1")

    # t1's checkpoint deleted; t2's cleaned of its search result quoting t1 (issue 27).
    assert code == 0 and "1 tool message quoting it, the checkpoint of 2 threads" in out
    assert not thread_has_checkpoint(data, "t1") and thread_has_checkpoint(data, "t2")
    assert data.open("ada").recall.threads() == ["t2"]


def test_forget_everything_leaves_the_log_for_inspect(
    data: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--agent", "ada", "--embedding-model", "none"]

    code, out, _ = run(capsys, data, "forget", *common, "--all")

    assert code == 0 and "the checkpoint of 2 threads" in out
    assert agents(data) == []
    code, out, _ = run(capsys, data, "inspect", "--agent", "ada")
    assert code == 0 and "agent" in out and "Greenbriar" not in out


@pytest.mark.parametrize(
    ("what", "says"),
    [
        (["--passage", "99"], "no archival passage 99"),
        (["--message", "nope"], "no message 'nope'"),
        (["--thread", "nope"], "threads with messages: t1, t2"),
    ],
)
def test_forgetting_what_does_not_exist_fails_and_says_so(
    data: Place, capsys: pytest.CaptureFixture[str], what: list[str], says: str
) -> None:
    common = ["--agent", "ada", "--embedding-model", "none"]
    code, _, err = run(capsys, data, "forget", *common, *what)
    assert code == 1 and says in err


def test_forgetting_an_unknown_agent_names_the_known_ones(
    data: Place, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, data, "forget", "--agent", "zed", "--all")
    assert code == 1 and "agent 'zed' has no memory" in err and "ada" in err


def test_export_then_import_elsewhere_twice(
    data: Place, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "ada.jsonl"
    code, out, _ = run(capsys, data, "export", "--agent", "ada", "--out", str(out_file))
    assert code == 0 and "2 core blocks" in out and "8 messages" in out
    target = elsewhere(data, tmp_path)
    args = ["import", str(out_file), "--agent", "ada2", "--embedding-model", "none"]
    args += ["--no-progress"]

    code, out, _ = run(capsys, target, *args)
    assert code == 0 and "8 of 8 messages new" in out
    code, _, err = run(capsys, target, *args)
    assert code == 1 and "already has memory" in err and "--merge" in err
    code, out, _ = run(capsys, target, *args, "--merge")
    assert code == 0 and "0 of 8 messages new" in out

    hits = target.open("ada2").recall.search("Greenbriar")
    assert hits.hits[0].item.text == SECRET


def test_importing_a_truncated_file_fails_and_writes_nothing(
    data: Place, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "ada.jsonl"
    run(capsys, data, "export", "--agent", "ada", "--out", str(out_file))
    out_file.write_bytes(out_file.read_bytes()[:-40])
    target = elsewhere(data, tmp_path)

    code, _, err = run(capsys, target, "import", str(out_file), "--agent", "ada2")

    assert code == 1 and "truncated" in err and "nothing was imported" in err
    assert "ada2" not in agents(target)


def test_ingest_documents_is_idempotent_and_shows_the_source(
    place: Place, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Trip\n\nWe fly to Lisbon on May 3.\n\nHotel: Casa Azul.\n")
    (docs / "page.html").write_text(
        "<html><head><style>p{}</style></head><body><p>The boiler code is K-77.</p>"
        "<script>var x = 1;</script></body></html>"
    )
    args = ["ingest", str(docs), "--agent", "ada", "--embedding-model", "none", "--no-progress"]

    code, out, _ = run(capsys, place, *args)
    assert code == 0 and "notes.md: 1 chunks, 1 new" in out and "page.html: 1 chunks, 1 new" in out
    code, out, _ = run(capsys, place, *args)
    assert code == 0 and "1 chunks, 0 new" in out

    memory = place.open("ada")
    hit = memory.archival.search("boiler code").hits[0].item
    assert hit.text.startswith("Source: page.html, chunk 1 of 1")
    assert "var x" not in hit.text and "source:page.html" in hit.tags
    assert memory.archival.count() == 2


def test_ingest_refuses_an_unsupported_file_before_writing(
    place: Place, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.md").write_text("fine")
    (tmp_path / "b.pdf").write_bytes(b"%PDF-1.4")

    code, _, err = run(
        capsys, place, "ingest", str(tmp_path / "a.md"), str(tmp_path / "b.pdf"),
        "--agent", "ada", "--embedding-model", "none",
    )  # fmt: skip

    assert code == 1 and "cannot ingest '.pdf'" in err and "nothing was ingested" in err
    assert agents(place) == []
