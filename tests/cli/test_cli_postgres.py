"""The command line on Postgres: ``--database-url`` or ``MEMGPT_DATABASE_URL`` picks the memory.

``chat`` keeps memory and threads in the database (nothing in the data directory), a later
``chat`` continues the thread, and ``inspect`` shows what the served agent would see.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.stores.postgres import PostgresBackend


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.delenv("MEMGPT_DATABASE_URL", raising=False)
    yield


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def step(name: str, **args: object) -> dict[str, object]:
    return {"content": "", "tool_calls": [{"name": name, "args": args}]}


def test_chat_keeps_memory_and_the_thread_in_postgres_and_inspect_shows_them(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                step(
                    "core_memory_append",
                    label="human",
                    content="Name: Ada, keeps bees",
                    request_heartbeat=True,
                ),
                step("send_message", message="Hello Ada!"),
            ]
        )
    )
    data_dir = tmp_path / "data"
    monkeypatch.setattr("sys.stdin", io.StringIO("hi, I'm Ada and I keep bees\n/quit\n"))
    code, out, err = run(
        capsys,
        "chat",
        "--data-dir",
        str(data_dir),
        "--agent",
        "ada",
        "--model",
        f"scripted:{script}",
        "--database-url",
        postgres_url,
    )
    assert code == 0, err
    assert "agent> Hello Ada!" in out
    assert "data in the database at /memgpt_test_" in out  # where the data is
    # Nothing of the agent's or the thread's was written to the data directory.
    assert not (data_dir / "memory.sqlite").exists()
    assert not (data_dir / "checkpoints.sqlite").exists()

    memory = PostgresBackend(postgres_url, embedding_model="none").open("ada")
    assert memory.core.get("human").value == "Name: Ada, keeps bees"
    assert "hi, I'm Ada and I keep bees" in [m.text for m in memory.recall.latest(10)]

    # MEMGPT_DATABASE_URL does the same as --database-url.
    monkeypatch.setenv("MEMGPT_DATABASE_URL", postgres_url)
    code, out, err = run(
        capsys, "inspect", "--agent", "ada", "--data-dir", str(data_dir), "--recent", "10"
    )
    assert code == 0, err
    assert "Name: Ada, keeps bees" in out and "hi, I'm Ada and I keep bees" in out
    code, _, err = run(capsys, "inspect", "--agent", "bob", "--data-dir", str(data_dir))
    assert code == 1 and "agent 'bob' has no memory in the database" in err
    assert "agents there: ada" in err


def test_a_second_chat_continues_the_thread_from_postgres(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MEMGPT_DATABASE_URL", postgres_url)
    for i, text in enumerate(["first message", "second message"]):
        script = tmp_path / f"script{i}.json"
        script.write_text(json.dumps([step("send_message", message=f"reply {i}")]))
        monkeypatch.setattr("sys.stdin", io.StringIO(f"{text}\n/quit\n"))
        # Another data directory each time: the thread is in the database, not a folder.
        code, out, err = run(
            capsys,
            "chat",
            "--data-dir",
            str(tmp_path / f"machine{i}"),
            "--agent",
            "ada",
            "--thread",
            "t1",
            "--model",
            f"scripted:{script}",
        )
        assert code == 0 and f"agent> reply {i}" in out, err
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_url) as saver:
        checkpoint = saver.get_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
    assert checkpoint is not None
    queue = checkpoint.checkpoint["channel_values"]["messages"]
    said = [str(m.content) for m in queue if m.type in ("human", "ai") and m.content]
    assert said == ["first message", "reply 0", "second message", "reply 1"]


def test_inspect_with_a_database_url_that_is_not_postgres_says_what_to_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "inspect", "--data-dir", str(tmp_path), "--database-url", "mysql://u:secret@db/x"
    )
    assert code == 2
    assert "postgresql://user:password@host/db" in err and "secret" not in err


# -- the housekeeping commands: forget, export, import, ingest ------------------------------


def chat_in_postgres(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    """Ada tells her locker code in thread t1 (memory and checkpoint in the database)."""
    script = tmp_path / "chat.json"
    script.write_text(
        json.dumps(
            [
                step(
                    "archival_memory_insert", content="Ada's locker: 4471", request_heartbeat=True
                ),
                step("send_message", message="Noted."),
            ]
        )
    )
    monkeypatch.setattr("sys.stdin", io.StringIO("My locker code is 4471 at Greenbriar\n/quit\n"))
    code, _, err = run(
        capsys,
        "chat",
        *("--data-dir", str(tmp_path / "chat"), "--agent", "ada", "--thread", "t1"),
        *("--model", f"scripted:{script}", "--database-url", url),
    )
    assert code == 0, err


def test_forget_a_thread_on_postgres_from_memgpt_database_url_leaves_no_message_or_checkpoint(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chat_in_postgres(tmp_path, monkeypatch, capsys, postgres_url)
    from langgraph.checkpoint.postgres import PostgresSaver

    thread: Any = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        assert "Greenbriar" in repr(saver.get_tuple(thread))
    monkeypatch.setenv("MEMGPT_DATABASE_URL", postgres_url)  # no --database-url flag

    code, out, err = run(
        capsys,
        "forget",
        *("--agent", "ada", "--thread", "t1", "--embedding-model", "none"),
        *("--data-dir", str(tmp_path / "elsewhere")),
    )

    assert code == 0, err
    assert "Agent 'ada'" in out
    memory = PostgresBackend(postgres_url, embedding_model="none").open("ada")
    assert [m for _, m in memory.recall.list_messages() if "Greenbriar" in m.text] == []
    assert [p for p, _ in memory.archival.list_passages() if "4471" in p.text] == []
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        assert saver.get_tuple(thread) is None
    assert not (tmp_path / "elsewhere" / "memory.sqlite").exists()  # nothing made there


def test_export_then_import_round_trips_an_agent_on_postgres(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chat_in_postgres(tmp_path, monkeypatch, capsys, postgres_url)
    where = ["--data-dir", str(tmp_path / "empty"), "--database-url", postgres_url]
    out_file = tmp_path / "ada.jsonl"

    code, out, err = run(capsys, "export", "--agent", "ada", "--out", str(out_file), *where)
    assert code == 0, err
    assert "Exported agent 'ada'" in out and "1 passages" in out
    assert "Greenbriar" in out_file.read_text()

    restore = ["import", str(out_file), "--agent", "ada2", *where]
    restore += ["--embedding-model", "none", "--no-progress"]
    code, out, err = run(capsys, *restore)
    assert code == 0, err
    code, _, err = run(capsys, *restore)  # the agent has memory now: refused, as on SQLite
    assert code == 1 and "already has memory" in err

    backend = PostgresBackend(postgres_url, embedding_model="none")
    ada, ada2 = backend.open("ada"), backend.open("ada2")
    assert [m.text for _, m in ada2.recall.list_messages()] == [
        m.text for _, m in ada.recall.list_messages()
    ]
    assert [p.text for p, _ in ada2.archival.list_passages()] == ["Ada's locker: 4471"]
    assert {b.label: b.value for b in ada2.core.blocks()} == {
        b.label: b.value for b in ada.core.blocks()
    }
    assert not (tmp_path / "empty" / "memory.sqlite").exists()


def test_export_of_an_unknown_agent_on_postgres_names_the_known_ones(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chat_in_postgres(tmp_path, monkeypatch, capsys, postgres_url)
    monkeypatch.setenv("MEMGPT_DATABASE_URL", postgres_url)

    code, _, err = run(
        capsys, "export", "--agent", "bob", "--out", str(tmp_path / "bob.jsonl"),
        "--data-dir", str(tmp_path / "empty"),
    )  # fmt: skip

    assert code == 1 and "agent 'bob' has no memory in the database" in err
    assert "agents there: ada" in err and not (tmp_path / "bob.jsonl").exists()


def test_ingest_puts_documents_into_an_agent_on_postgres(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "bees.md"
    doc.write_text("# Bees\n\nA hive holds one queen and thousands of workers.\n")
    argv = ["ingest", str(doc), "--agent", "ada", "--data-dir", str(tmp_path / "empty")]
    argv += ["--database-url", postgres_url, "--embedding-model", "none", "--no-progress"]

    code, out, err = run(capsys, *argv)

    assert code == 0, err
    assert "1 chunks, 1 new" in out
    memory = PostgresBackend(postgres_url, embedding_model="none").open("ada")
    assert any("thousands of workers" in p.text for p, _ in memory.archival.list_passages())
    assert not (tmp_path / "empty" / "memory.sqlite").exists()


def test_an_export_from_postgres_names_the_model_its_vectors_were_made_with(
    postgres_url: str, tmp_path: Path, embeddings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = PostgresBackend(postgres_url, embeddings=embeddings).open("ada")
    memory.archival.insert("Ada keeps bees on the roof.")
    out_file = tmp_path / "ada.jsonl"

    code, out, err = run(
        capsys, "export", "--agent", "ada", "--out", str(out_file),
        "--data-dir", str(tmp_path), "--database-url", postgres_url,
    )  # fmt: skip

    assert code == 0, err
    from langgraph_memgpt.stores.embeddings import embedding_identity

    model, dim = embedding_identity(embeddings)
    header = json.loads(out_file.read_text().splitlines()[0])
    assert header["embedding"] == {"model": model, "dim": dim}
    assert f"vectors made with {model}" in out
