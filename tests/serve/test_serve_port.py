"""`serve` prints the address the server really listens on, also when its port is taken."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from langgraph_memgpt.cli.dev_server import free_port

LANGGRAPH_MEMGPT = Path(sys.executable).parent / "langgraph-memgpt"
START_TIMEOUT_S = 60.0


def test_a_taken_port_is_replaced_by_a_free_one() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = int(held.getsockname()[1])

        chosen = free_port("127.0.0.1", taken)

        assert chosen != taken and chosen > 0
    assert free_port("127.0.0.1", chosen) == chosen  # a free port is kept


@pytest.mark.server
@pytest.mark.timeout(90)
def test_serve_on_a_taken_port_prints_the_port_it_really_serves_on(tmp_path: Path) -> None:
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = int(held.getsockname()[1])
    env = {**os.environ, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}  # no embedded model
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(LANGGRAPH_MEMGPT), "serve", "--port", str(taken)]
            + ["--data-dir", str(tmp_path / "data")],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        port = None
        while port is None:
            assert proc.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            found = re.search(r"serving on port (\d+) instead", log_path.read_text())
            port = int(found.group(1)) if found else None
            time.sleep(0.1)
        while True:
            assert proc.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        printed = log_path.read_text()
        assert f"Memory:   http://127.0.0.1:{port}/memory" in printed
        assert f"baseUrl=http://127.0.0.1:{port}" in printed
        assert f"127.0.0.1:{taken}" not in printed.replace(f"Port {taken} is taken", "")
    finally:
        held.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.mark.server
@pytest.mark.timeout(90)
def test_serve_beyond_loopback_answers_the_machines_names_and_refuses_others(
    tmp_path: Path,
) -> None:
    """``serve --host 0.0.0.0``: clients reaching it by the machine's name are answered
    (the served API checks the Host, see web/guard.py); a DNS-rebinding name is not."""
    port = free_port("127.0.0.1", 0)
    env = {**os.environ, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}  # no embedded model
    env.pop("MEMGPT_ALLOWED_HOSTS", None)
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(LANGGRAPH_MEMGPT), "serve", "--host", "0.0.0.0", "--port", str(port)]
            + ["--data-dir", str(tmp_path / "data")],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def search(host: str) -> int:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/threads/search",
            data=b'{"limit": 1}',
            method="POST",
            headers={"Host": f"{host}:{port}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        assert search(socket.gethostname()) == 200
        assert search("127.0.0.1") == 200
        assert search("evil.example") == 403
        assert "Answers as host" in log_path.read_text()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
