"""The ``langgraph-memgpt`` commands: inspect, chat, reembed, and their error messages."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.sqlite import close_all, open_memory
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes
from langgraph_memgpt.stores.types import EmbeddingMismatchError, RecallMessage

CLI = Path(sys.executable).parent / "langgraph-memgpt"
CONVERSATION = [
    ("user", "I just adopted a puppy!"),
    ("assistant", "Congratulations! What is the puppy's name?"),
    ("user", "Her name is Biscuit, a golden retriever."),
    ("assistant", "Biscuit is a lovely name."),
    ("user", "I also started learning the cello last month."),
]


class ToyEmbeddings:
    """Another embedding model (16 dimensions): vectors unrelated to MiniLM's."""

    model = "toy-letters-16"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = [0.01] + [0.0] * 15
        for char in text.lower():
            vector[ord(char) % 16] += 1.0
        return vector


@pytest.fixture(autouse=True)
def wide_fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Wide output (rich wraps at $COLUMNS) and no memory left open between tests."""
    monkeypatch.setenv("COLUMNS", "250")
    yield
    close_all()
    forget_loaded_indexes()


def seed(data_dir: Path, agent_id: str = "ada", embeddings: Any = None) -> None:
    memory = open_memory(data_dir, agent_id, embeddings=embeddings or MiniLMEmbeddings())
    memory.core.ensure_defaults(persona="I am Sam, a patient assistant.", human="Name: Ada")
    memory.recall.add(
        [
            RecallMessage(
                agent_id=agent_id,
                thread_id="t1",
                message_id=f"m{i}",
                role=role,
                text=text,
                created_at=f"2026-11-0{i + 1}T10:00:00+00:00",
            )
            for i, (role, text) in enumerate(CONVERSATION)
        ]
    )
    memory.archival.insert("Ada's puppy Biscuit is a golden retriever.", tags=["pets"])
    memory.archival.insert("Ada practises the cello on Sundays.", tags=["hobbies"])
    close_all()
    forget_loaded_indexes()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- inspect ------------------------------------------------------------------------------


def test_inspect_prints_core_blocks_tier_counts_and_latest_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(tmp_path)
    code, out, _ = run(capsys, "inspect", "--data-dir", str(tmp_path), "--agent", "ada")
    assert code == 0
    assert "core memory of agent 'ada'" in out
    assert "I am Sam, a patient assistant." in out and "Name: Ada" in out
    assert "9/2000" in out  # the human block's size against its limit
    assert "recall (messages)" in out and "archival (passages)" in out
    counts = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in _rows(out)}
    assert counts["recall (messages)"] == "5"
    assert counts["archival (passages)"] == "2"
    assert counts["archival tags"] == "hobbies, pets"
    assert "I also started learning the cello last month." in out
    assert "Ada's puppy Biscuit is a golden retriever." in out


def _rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.count("│") == 3]


def test_inspect_recent_limits_the_latest_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(tmp_path)
    code, out, _ = run(
        capsys, "inspect", "--data-dir", str(tmp_path), "--agent", "ada", "--recent", "1"
    )
    assert code == 0
    assert "latest 1 messages" in out and "latest 1 archival passages" in out
    assert "cello last month" in out and "Her name is Biscuit" not in out


def test_inspect_names_the_agents_there_when_the_agent_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(tmp_path)
    code, _, err = run(capsys, "inspect", "--data-dir", str(tmp_path), "--agent", "bob")
    assert code == 1
    assert "agent 'bob' has no memory in" in err and "agents there: ada" in err


def test_inspect_of_an_empty_folder_says_there_is_nothing_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "inspect", "--data-dir", str(tmp_path / "nowhere"))
    assert code == 1
    assert "no agent memory in" in err
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["inspect", "--recent", "0"], "expected a number above 0"),
        (["inspect", "--recent", "many"], "expected a whole number"),
        (["serve", "--port", "70000"], "a port is at most 65535"),
        (["reembed", "--data-dir", "x"], "the following arguments are required: --agent"),
        (["chat", "--nope"], "unrecognized arguments: --nope"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


# --- chat ---------------------------------------------------------------------------------


def write_script(path: Path) -> Path:
    path.write_text(
        json.dumps(
            [
                {
                    "content": "A new person; her name belongs in core memory.",
                    "tool_calls": [
                        {
                            "name": "core_memory_append",
                            "args": {
                                "label": "human",
                                "content": "Name: Ada, adopted a puppy",
                                "request_heartbeat": True,
                            },
                        }
                    ],
                },
                {
                    "content": "Saved. Now greet her.",
                    "tool_calls": [
                        {"name": "send_message", "args": {"message": "Nice to meet you, Ada!"}}
                    ],
                },
            ]
        )
    )
    return path


def test_chat_through_stdin_shows_reply_monologue_and_memory_edits_distinctly(
    tmp_path: Path,
) -> None:
    script = write_script(tmp_path / "script.json")
    data_dir = tmp_path / "data"
    env = {**os.environ, "COLUMNS": "250", "NO_COLOR": "1"}
    done = subprocess.run(
        [str(CLI), "chat", "--data-dir", str(data_dir), "--agent", "ada"]
        + ["--model", f"scripted:{script}"],
        input="hi, I'm Ada and I adopted a puppy\n/memory\n/quit\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    transcript, memory_part = done.stdout.split("you> /memory", 1)
    lines = transcript.splitlines()
    assert "you> hi, I'm Ada and I adopted a puppy" in lines
    assert "agent> Nice to meet you, Ada!" in lines
    assert "  (thinks) A new person; her name belongs in core memory." in lines
    assert '  ✎ core_memory_append(label="human", content="Name: Ada, adopted a puppy")' in lines
    assert any(line.startswith("    → Appended to 'human'") for line in lines)
    # The reply is shown once, and never as monologue; the monologue never as a reply.
    assert sum("Nice to meet you, Ada!" in line for line in lines) == 1
    assert not any(line.startswith("agent>") and "core memory" in line for line in lines)
    # /memory: the core blocks (with the edit) and the tier counts.
    assert "core memory of agent 'ada'" in memory_part
    assert "Name: Ada, adopted a puppy" in memory_part
    assert "recall (messages)" in memory_part and "archival (passages)" in memory_part
    rows = {r.split("│")[1].strip(): r.split("│")[2].strip() for r in _rows(memory_part)}
    assert int(rows["recall (messages)"]) >= 6  # user, 2 AI steps, 2 tool results, reply
    # The thread is durable: its checkpoint is in the data directory.
    assert (data_dir / "checkpoints.sqlite").is_file()


def test_chat_reports_a_failed_turn_and_carries_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "short.json"
    script.write_text(json.dumps(["Hello!"]))
    monkeypatch.setattr("sys.stdin", io.StringIO("first\nsecond\n"))
    code, out, err = run(
        capsys, "chat", "--data-dir", str(tmp_path / "d"), "--model", f"scripted:{script}"
    )
    assert code == 0
    assert "agent> Hello!" in out
    assert "the turn failed: ScriptExhaustedError" in err  # second message: script is empty


def test_chat_with_an_unknown_model_spec_names_the_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "chat", "--data-dir", str(tmp_path), "--model", "gpt-9")
    assert code == 2
    assert "unknown model spec 'gpt-9'" in err and "scripted:<path.json>" in err


def test_chat_with_a_missing_script_says_which_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.json"
    code, _, err = run(
        capsys, "chat", "--data-dir", str(tmp_path), "--model", f"scripted:{missing}"
    )
    assert code == 1
    assert "cannot use model" in err and "missing.json" in err


# --- reembed ------------------------------------------------------------------------------


def test_reembed_after_an_embedding_model_change_makes_memory_searchable_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(tmp_path, embeddings=ToyEmbeddings())
    with pytest.raises(EmbeddingMismatchError) as err_info:
        open_memory(tmp_path, "ada")  # now configured with MiniLM
    command = f"langgraph-memgpt reembed --data-dir {tmp_path} --agent ada"
    assert command in str(err_info.value)
    close_all()
    forget_loaded_indexes()

    code, out, _ = run(capsys, *command.split()[1:])  # exactly what the error says to run
    assert code == 0
    assert "Re-embedded 5 messages and 2 passages of agent 'ada'" in out
    assert "all-MiniLM-L6-v2-int8 (dim 384)" in out
    close_all()
    forget_loaded_indexes()

    memory = open_memory(tmp_path, "ada")
    recall_hits = memory.recall.search("what is the dog called?", mode="vector").hits
    assert any("Biscuit" in hit.item.text for hit in recall_hits[:3])
    archival_hits = memory.archival.search("a musical instrument", mode="vector").hits
    assert "cello" in archival_hits[0].item.text


def test_reembed_twice_is_harmless(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(tmp_path)
    argv = ["reembed", "--data-dir", str(tmp_path), "--agent", "ada"]
    assert run(capsys, *argv)[0] == 0
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "Re-embedded 5 messages and 2 passages" in out


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("bogus", "Unknown embedding model 'bogus'"),
        ("none", "reembed needs an embedding model"),
    ],
)
def test_reembed_refuses_a_bad_embedding_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, message: str
) -> None:
    seed(tmp_path)
    code, _, err = run(
        capsys,
        "reembed",
        "--data-dir",
        str(tmp_path),
        "--agent",
        "ada",
        "--embedding-model",
        model,
    )
    assert code == 2 and message in err


def test_reembed_of_an_unknown_agent_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(tmp_path)
    code, _, err = run(capsys, "reembed", "--data-dir", str(tmp_path), "--agent", "bob")
    assert code == 1 and "agent 'bob' has no memory" in err
    memory = open_memory(tmp_path, "ada")
    assert "Biscuit" in memory.archival.search("dog", mode="vector").hits[0].item.text


def test_the_mismatch_error_names_the_embedding_model_flag_when_it_is_not_the_default(
    tmp_path: Path,
) -> None:
    from langgraph_memgpt.stores.sqlite.db import open_db
    from langgraph_memgpt.stores.sqlite.vectors import VectorIndex

    db = open_db(tmp_path / "memory.sqlite")
    VectorIndex(
        db, tier="archival", agent_id="ada", cache_dir=tmp_path / "faiss", model="m", dim=4
    ).upsert([1], np.eye(1, 4, dtype=np.float32))
    with pytest.raises(EmbeddingMismatchError) as err_info:
        VectorIndex(
            db,
            tier="archival",
            agent_id="ada",
            cache_dir=tmp_path / "faiss",
            model="text-embedding-3-small",
            dim=1536,
        )
    db.conn.close()
    assert (
        f"langgraph-memgpt reembed --data-dir {tmp_path} --agent ada "
        "--embedding-model openai:text-embedding-3-small`"
    ) in str(err_info.value)
