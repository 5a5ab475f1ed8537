"""Clear errors: a file the command cannot use is one line on stderr naming it, exit 2.

Each case once ended in a raw traceback (or worse, wrote where it should not): another
application's ``memory.sqlite``, a read-only data directory (where ``inspect`` must still
work), a data directory that is a file, a corrupt database, an OpenAI embedding model
without a key, a malformed ``scripted:`` file, malformed LoCoMo files, and LoCoMo sample
ids that escape ``--data-dir``, share a folder, or repeat.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from locomo_samples import sample, write_locomo

from benchmarks.bench.cli import main as bench_main
from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.stores.sqlite import AgentMemory, close_all
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes

QA = [{"question": "What is the puppy's name?", "answer": "Biscuit", "category": 4,
       "evidence": ["D1:3"]}]  # fmt: skip


@pytest.fixture(autouse=True)
def _wide_and_fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COLUMNS", "250")  # rich wraps at $COLUMNS: one error, one line
    yield
    close_all()
    forget_loaded_indexes()


def run_bench(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``python -m benchmarks.bench ARGV`` in-process: exit code, stdout, stderr."""
    code = bench_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_clear_line(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, (word, err)


def seeded(folder: Path) -> Path:
    memory = AgentMemory.open(folder, "ada", None)
    memory.core.ensure_defaults(persona="I am Sam.", human="Name: Ada")
    memory.archival.insert("Ada's puppy is called Biscuit")
    memory.close()
    return folder


def script(tmp_path: Path, content: Any) -> str:
    path = tmp_path / "script.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return f"scripted:{path}"


def agent_commands(data_dir: Path, tmp_path: Path) -> list[list[str]]:
    model = script(tmp_path, ["Hello!"])
    return [
        ["inspect", "--data-dir", str(data_dir), "--agent", "ada"],
        ["reembed", "--data-dir", str(data_dir), "--agent", "ada"],
        ["chat", "--data-dir", str(data_dir), "--agent", "ada", "--model", model],
    ]


# -- the data directory and its database ----------------------------------------------------


def test_another_applications_memory_sqlite_is_named_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / "memory.sqlite")
    conn.execute("CREATE TABLE recall (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("CREATE TABLE core_blocks (name TEXT)")
    conn.commit()
    conn.close()
    before = (data / "memory.sqlite").read_bytes()
    for argv in agent_commands(data, tmp_path):
        code, _, err = run(capsys, *argv)
        assert_one_clear_line(code, err, "memory.sqlite", "not a langgraph-memgpt memory database")
    assert (data / "memory.sqlite").read_bytes() == before


def test_a_database_of_unrelated_tables_gets_none_of_ours(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / "memory.sqlite")
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    code, _, err = run(capsys, *agent_commands(data, tmp_path)[2])
    assert_one_clear_line(code, err, "invoices", "another application")
    conn = sqlite3.connect(data / "memory.sqlite")
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    conn.close()
    assert tables == ["invoices"]


def test_a_data_directory_that_is_a_file_is_said_to_be_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    data.write_text("I am a file")
    for argv in agent_commands(data, tmp_path):
        code, _, err = run(capsys, *argv)
        assert_one_clear_line(code, err, str(data), "is a file")
    path = write_locomo(tmp_path, [sample("conv-1", QA)])
    code, _, err = run_bench(
        capsys, "locomo", "--data", str(path), "--modes", "fts", "--no-progress",
        "--embedding-model", "none", "--data-dir", str(data),
    )  # fmt: skip
    assert_one_clear_line(code, err, str(data))
    assert data.read_text() == "I am a file"


@pytest.mark.parametrize("command", ["inspect", "reembed"])
def test_a_corrupt_database_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "memory.sqlite").write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    code, _, err = run(capsys, command, "--data-dir", str(data), "--agent", "ada")
    assert_one_clear_line(code, err, "memory.sqlite", "corrupt")


@pytest.fixture
def read_only_data(tmp_path: Path) -> Iterator[Path]:
    """A data directory holding an agent's memory, that nothing can be written into."""
    data = seeded(tmp_path / "data")
    if os.geteuid() == 0:  # root writes through permissions; an immutable folder stops it
        if shutil.which("chattr") is None:
            pytest.skip("no chattr to make a folder read-only for root")
        done = subprocess.run(["chattr", "+i", str(data)], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"chattr +i not supported here: {done.stderr!r}")
        yield data
        subprocess.run(["chattr", "-i", str(data)], check=True)
    else:
        data.chmod(0o555)
        yield data
        data.chmod(0o755)


def test_inspect_works_in_a_read_only_data_directory(
    read_only_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "inspect", "--data-dir", str(read_only_data), "--agent", "ada")
    assert code == 0, err
    assert "Name: Ada" in out and "Biscuit" in out
    assert sorted(p.name for p in read_only_data.iterdir()) == ["memory.sqlite"]


@pytest.mark.parametrize("command", ["reembed", "chat"])
def test_writing_commands_in_a_read_only_data_directory_say_so(
    read_only_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    argv = {a[0]: a for a in agent_commands(read_only_data, tmp_path)}[command]
    code, _, err = run(capsys, *argv)
    assert_one_clear_line(code, err, "memory.sqlite", "writable")


def test_reembed_with_an_openai_model_and_no_key_says_what_to_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    data = seeded(tmp_path / "data")
    code, _, err = run(
        capsys, "reembed", "--data-dir", str(data), "--agent", "ada",
        "--embedding-model", "openai:text-embedding-3-small",
    )  # fmt: skip
    assert_one_clear_line(code, err, "OPENAI_API_KEY", "openai:text-embedding-3-small")


MALFORMED_SCRIPTS = [
    "{not json",
    [5],
    [None],
    [{"tool_calls": 5}],
    [{"content": 5}],
    [{"content": "hi", "tool_calls": [7]}],
    [{"tool_calls": [{"name": "send_message", "args": "hello"}]}],
]


@pytest.mark.parametrize("content", MALFORMED_SCRIPTS, ids=str)
def test_chat_with_a_malformed_script_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any
) -> None:
    model = script(tmp_path, content)
    code, _, err = run(capsys, "chat", "--data-dir", str(tmp_path / "data"), "--model", model)
    assert_one_clear_line(code, err, "cannot use model", "script.json")


# -- bench locomo ----------------------------------------------------------------------------


def bench(capsys: pytest.CaptureFixture[str], data: Path, data_dir: Path) -> tuple[int, str, str]:
    return run_bench(
        capsys, "locomo", "--data", str(data), "--modes", "fts", "--json",
        "--no-progress", "--embedding-model", "none", "--data-dir", str(data_dir),
    )  # fmt: skip


MALFORMED_LOCOMO: dict[str, Any] = {
    "a null category": [sample("c1", [{**QA[0], "category": None}])],
    "a category that is not a number": [sample("c1", [{**QA[0], "category": "four"}])],
    "qa that is a number": [{**sample("c1", QA), "qa": 5}],
    "evidence that is a number": [sample("c1", [{**QA[0], "evidence": 7}])],
    "deep nesting": "[" * 100_000 + "]" * 100_000,
}


@pytest.mark.parametrize("case", list(MALFORMED_LOCOMO))
def test_bench_locomo_on_a_malformed_file_says_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    content = MALFORMED_LOCOMO[case]
    path = tmp_path / "locomo.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    code, _, err = bench(capsys, path, tmp_path / "data")
    assert_one_clear_line(code, err)


def test_bench_locomo_on_a_directory_says_it_cannot_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = bench(capsys, tmp_path, tmp_path / "data")
    assert_one_clear_line(code, err, "cannot read", str(tmp_path))


def test_bench_locomo_keeps_every_sample_id_inside_its_data_dir_and_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = ["..", ".", "a/b", "a b", "a_b", "../../escape"]
    path = write_locomo(tmp_path, [sample(i, QA) for i in ids])
    data_dir = tmp_path / "nest" / "data"
    code, out, err = bench(capsys, path, data_dir)
    assert code == 0, err
    assert json.loads(out)["questions"] == len(ids)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locomo.json", "nest"]
    assert [p.name for p in (tmp_path / "nest").iterdir()] == ["data"]
    folders = [p for p in data_dir.iterdir() if p.is_dir()]
    assert len(folders) == len(ids)  # one database per conversation, none shared
    assert all((folder / "memory.sqlite").is_file() for folder in folders)


def test_bench_locomo_refuses_two_samples_with_one_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_locomo(tmp_path, [sample("conv-1", QA), sample("conv-1", QA)])
    code, _, err = bench(capsys, path, tmp_path / "data")
    assert_one_clear_line(code, err, "conv-1", "share the sample_id")
    assert not (tmp_path / "data").exists()
