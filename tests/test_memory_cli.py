"""The ``forget``, ``export``, ``import`` and ``ingest`` commands, run as a user runs them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.cli import main
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.server import CHECKPOINT_FILENAME
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all, list_agents

SECRET = "My locker code is 4471 at Greenbriar gym"


def chat_once(data_dir: Path, thread: str, text: str, message_id: str | None = None) -> None:
    """One real turn of the graph, checkpointed where `chat` and `serve` keep threads."""
    model = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Noted"}}]}]
    )
    backend = SqliteBackend(data_dir, embedding_model="none")
    with sqlite3.connect(data_dir / CHECKPOINT_FILENAME, check_same_thread=False) as conn:
        graph = build_graph(model=model, memory=backend).compile(checkpointer=SqliteSaver(conn))
        graph.invoke(
            {"messages": [HumanMessage(text, id=message_id)]},
            {"configurable": {"thread_id": thread}},
            context=Context(agent_id="ada", data_dir=str(data_dir), embedding_model="none"),
        )
    close_all()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    chat_once(folder, "t1", SECRET, message_id="secret-1")
    chat_once(folder, "t2", "I like hiking")
    return folder


def thread_has_checkpoint(data_dir: Path, thread: str) -> bool:
    with sqlite3.connect(data_dir / CHECKPOINT_FILENAME) as conn:
        saver = SqliteSaver(conn)
        return saver.get_tuple({"configurable": {"thread_id": thread}}) is not None


def test_forget_a_message_then_inspect_shows_the_deletion_not_the_text(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--agent", "ada", "--data-dir", str(data_dir), "--embedding-model", "none"]
    code, out, _ = run(capsys, "forget", *common, "--message", "secret-1")
    assert code == 0 and "Forgot 1 message" in out

    code, out, _ = run(capsys, "inspect", "--agent", "ada", "--data-dir", str(data_dir))
    assert code == 0
    assert "deletions" in out and "secret-1" in out and "message" in out
    assert "Greenbriar" not in out
    backend = SqliteBackend(data_dir, embedding_model="none")
    assert backend.open("ada").recall.search("Greenbriar locker").hits == []


def test_forget_a_thread_deletes_its_checkpoint(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert thread_has_checkpoint(data_dir, "t1")
    common = ["--agent", "ada", "--data-dir", str(data_dir), "--embedding-model", "none"]

    code, out, _ = run(capsys, "forget", *common, "--thread", "t1")

    # t1's checkpoint deleted; t2's cleaned of its search result quoting t1 (issue 27).
    assert code == 0 and "1 tool message quoting it, the checkpoint of 2 threads" in out
    assert not thread_has_checkpoint(data_dir, "t1") and thread_has_checkpoint(data_dir, "t2")
    assert SqliteBackend(data_dir, embedding_model="none").open("ada").recall.threads() == ["t2"]


def test_forget_everything_leaves_the_log_for_inspect(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--agent", "ada", "--data-dir", str(data_dir), "--embedding-model", "none"]

    code, out, _ = run(capsys, "forget", *common, "--all")

    assert code == 0 and "the checkpoint of 2 threads" in out
    assert list_agents(data_dir) == []
    code, out, _ = run(capsys, "inspect", "--agent", "ada", "--data-dir", str(data_dir))
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
    data_dir: Path, capsys: pytest.CaptureFixture[str], what: list[str], says: str
) -> None:
    common = ["--agent", "ada", "--data-dir", str(data_dir), "--embedding-model", "none"]
    code, _, err = run(capsys, "forget", *common, *what)
    assert code == 1 and says in err


def test_forgetting_an_unknown_agent_names_the_known_ones(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "forget", "--agent", "zed", "--data-dir", str(data_dir), "--all")
    assert code == 1 and "agent 'zed' has no memory" in err and "ada" in err


def test_export_then_import_elsewhere_twice(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "ada.jsonl"
    code, out, _ = run(
        capsys, "export", "--agent", "ada", "--data-dir", str(data_dir), "--out", str(out_file)
    )
    assert code == 0 and "2 core blocks" in out and "8 messages" in out
    target = tmp_path / "elsewhere"
    args = ["import", str(out_file), "--agent", "ada2", "--data-dir", str(target)]
    args += ["--embedding-model", "none", "--no-progress"]

    code, out, _ = run(capsys, *args)
    assert code == 0 and "8 of 8 messages new" in out
    code, _, err = run(capsys, *args)
    assert code == 1 and "already has memory" in err and "--merge" in err
    code, out, _ = run(capsys, *args, "--merge")
    assert code == 0 and "0 of 8 messages new" in out

    hits = SqliteBackend(target, embedding_model="none").open("ada2").recall.search("Greenbriar")
    assert hits.hits[0].item.text == SECRET


def test_importing_a_truncated_file_fails_and_writes_nothing(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "ada.jsonl"
    run(capsys, "export", "--agent", "ada", "--data-dir", str(data_dir), "--out", str(out_file))
    out_file.write_bytes(out_file.read_bytes()[:-40])
    target = tmp_path / "elsewhere"

    code, _, err = run(
        capsys, "import", str(out_file), "--agent", "ada2", "--data-dir", str(target)
    )

    assert code == 1 and "truncated" in err and "nothing was imported" in err
    assert list_agents(target) == []


def test_ingest_documents_is_idempotent_and_shows_the_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Trip\n\nWe fly to Lisbon on May 3.\n\nHotel: Casa Azul.\n")
    (docs / "page.html").write_text(
        "<html><head><style>p{}</style></head><body><p>The boiler code is K-77.</p>"
        "<script>var x = 1;</script></body></html>"
    )
    data = tmp_path / "data"
    args = ["ingest", str(docs), "--agent", "ada", "--data-dir", str(data)]
    args += ["--embedding-model", "none", "--no-progress"]

    code, out, _ = run(capsys, *args)
    assert code == 0 and "notes.md: 1 chunks, 1 new" in out and "page.html: 1 chunks, 1 new" in out
    code, out, _ = run(capsys, *args)
    assert code == 0 and "1 chunks, 0 new" in out

    memory = SqliteBackend(data, embedding_model="none").open("ada")
    hit = memory.archival.search("boiler code").hits[0].item
    assert hit.text.startswith("Source: page.html, chunk 1 of 1")
    assert "var x" not in hit.text and "source:page.html" in hit.tags
    assert memory.archival.count() == 2


def test_ingest_refuses_an_unsupported_file_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.md").write_text("fine")
    (tmp_path / "b.pdf").write_bytes(b"%PDF-1.4")
    data = tmp_path / "data"

    code, _, err = run(
        capsys,
        "ingest",
        str(tmp_path / "a.md"),
        str(tmp_path / "b.pdf"),
        "--agent",
        "ada",
        "--data-dir",
        str(data),
        "--embedding-model",
        "none",
    )

    assert code == 1 and "cannot ingest '.pdf'" in err and "nothing was ingested" in err
    assert list_agents(data) == []
