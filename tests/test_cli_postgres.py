"""The command line on Postgres: ``--database-url`` or ``MEMGPT_DATABASE_URL`` picks the memory.

``chat`` keeps memory and threads in the database (nothing in the data directory), a later
``chat`` continues the thread, and ``inspect`` shows what the served agent would see.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_memgpt.cli import main
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
