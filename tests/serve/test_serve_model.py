"""`serve` starts the embedded llama.cpp model only when the served runs will use it.

The rule is `llm.factory.names_embedded_model` (``local``, or ``auto`` without
OPENAI_API_KEY / OPENAI_BASE_URL). Every test points the package's model cache
(``MEMGPT_MODEL_CACHE``) below a regular file, so an attempt to start the embedded model
fails at once ("local model unavailable") instead of loading 1 GB of weights: the tests
see the attempt without letting it run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from langgraph_memgpt.cli.dev_server import free_port
from langgraph_memgpt.llm.weights import CACHE_ENV

LANGGRAPH_MEMGPT = Path(sys.executable).parent / "langgraph-memgpt"
START_TIMEOUT_S = 60.0
BLOCKED = "not a folder: no model cache can be made here\n"
HOSTED_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MEMGPT_MODEL", "MEMGPT_EMBEDDING_MODEL")


def serve_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``serve`` whose embedded model can never load."""
    blocked = tmp_path / "blocked"
    blocked.write_text(BLOCKED)
    env = {k: v for k, v in os.environ.items() if k not in HOSTED_ENV}
    env[CACHE_ENV] = str(blocked / "model.gguf")
    env["MEMGPT_EMBEDDING_MODEL"] = "none"
    env.update(extra)
    return env


def run_serve(tmp_path: Path, env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    log = (tmp_path / "serve.log").open("wb")
    try:
        return subprocess.Popen(
            [str(LANGGRAPH_MEMGPT), "serve", "--port", str(port)]
            + ["--data-dir", str(tmp_path / "data")],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        log.close()


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=25)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def exit_code(proc: subprocess.Popen[bytes], log: Path) -> int:
    """How ``serve`` ended; a server that started serving instead fails the test."""
    try:
        return proc.wait(timeout=START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        stop(proc)
        pytest.fail(f"serve kept running instead of ending:\n{log.read_text()}")


@pytest.mark.server
@pytest.mark.timeout(150)
def test_serve_with_a_scripted_model_starts_no_embedded_model_and_answers_from_the_script(
    tmp_path: Path,
) -> None:
    from langgraph_sdk import get_sync_client

    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "send_message", "args": {"message": "Hi Ada."}}]}])
    )
    port = free_port("127.0.0.1", 0)
    env = serve_env(tmp_path, MEMGPT_MODEL=f"scripted:{script}")
    log = tmp_path / "serve.log"
    proc = run_serve(tmp_path, env, port)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        client = get_sync_client(url=f"http://127.0.0.1:{port}")
        thread_id = client.threads.create()["thread_id"]
        client.runs.wait(
            thread_id,
            "memgpt",
            input={"messages": [{"role": "user", "content": "hi, I'm Ada"}]},
            context={"agent_id": "ada"},
        )
        values = client.threads.get_state(thread_id)["values"]
        assert values["messages"][-1]["content"] == "Hi Ada.", log.read_text()
    finally:
        stop(proc)
    printed = log.read_text()
    assert f"Model: 'scripted:{script}' (MEMGPT_MODEL)" in printed, printed
    assert "the embedded local model is not started" in printed
    # No attempt to start or warm the embedded model, here or in the server's worker.
    assert "starting the embedded local model" not in printed
    assert "local model unavailable" not in printed
    assert "Preparing the agent's prompt" not in printed
    assert "Could not prepare the prompt" not in printed
    assert (tmp_path / "blocked").read_text() == BLOCKED


@pytest.mark.server
@pytest.mark.timeout(90)
def test_serve_starts_the_embedded_model_when_it_is_named_even_beside_an_api_key(
    tmp_path: Path,
) -> None:
    env = serve_env(tmp_path, MEMGPT_MODEL="local", OPENAI_API_KEY="sk-not-used")
    proc = run_serve(tmp_path, env, free_port("127.0.0.1", 0))
    log = tmp_path / "serve.log"

    assert exit_code(proc, log) == 1, log.read_text()
    printed = log.read_text()
    assert "starting the embedded local model" in printed  # it was tried, and could not load
    assert "local model unavailable" in printed


@pytest.mark.parametrize(
    ("model", "named"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("gpt-4o", "MEMGPT_MODEL (model)='gpt-4o' is not allowed"),
    ],
)
@pytest.mark.timeout(90)
def test_serve_refuses_a_model_it_cannot_run_naming_what_to_set_and_starts_nothing(
    tmp_path: Path, model: str, named: str
) -> None:
    env = serve_env(tmp_path, MEMGPT_MODEL=model)
    proc = run_serve(tmp_path, env, free_port("127.0.0.1", 0))
    log = tmp_path / "serve.log"

    assert exit_code(proc, log) == 2, log.read_text()
    printed = log.read_text()
    assert named in printed, printed
    assert "Traceback" not in printed
    assert "embedded local model" not in printed
    assert "Serving the" not in printed
