"""Sharing the embedded model server between processes: a borrower never loses it mid-turn.

Without the model: the server is stood in for by a sleeping process (and, where a health
check is needed, a tiny HTTP server answering ``/health``). The real model is in
``test_local_llm.py``.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_memgpt.llm import local_server
from langgraph_memgpt.llm.local_server import LocalServer


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MEMGPT_MODEL_CACHE", str(tmp_path))
    yield tmp_path
    local_server._leases.clear()


def _sleeper() -> subprocess.Popen[bytes]:
    code = "import time; time.sleep(120)"
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def _end(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()


def test_an_owner_stopping_its_server_leaves_it_running_while_a_borrower_lives(
    cache: Path,
) -> None:
    server_proc, borrower = _sleeper(), _sleeper()
    try:
        server = LocalServer("http://127.0.0.1:9/v1", server_proc.pid, cache / "m.gguf", True)
        local_server._owned[server_proc.pid] = server_proc
        lease = cache / "leases" / str(server_proc.pid) / str(borrower.pid)
        lease.parent.mkdir(parents=True)
        lease.touch()

        local_server.stop_server(server)
        time.sleep(0.2)
        assert server_proc.poll() is None, "the owner stopped a server a borrower still uses"

        _end(borrower)
        local_server._owned[server_proc.pid] = server_proc
        local_server.stop_server(server)
        assert server_proc.poll() is not None, "nobody uses it any more: it must stop"
        assert not lease.exists()
    finally:
        local_server._owned.pop(server_proc.pid, None)
        _end(server_proc)
        if borrower.poll() is None:
            _end(borrower)


def test_the_server_child_serves_on_after_its_owner_died_until_the_last_borrower_is_gone(
    cache: Path,
) -> None:
    dead_owner = _sleeper()
    _end(dead_owner)
    borrower = _sleeper()
    try:
        # The child asks about its own pid: here the test process plays the server child.
        lease = cache / "leases" / str(os.getpid()) / str(borrower.pid)
        lease.parent.mkdir(parents=True)
        lease.touch()
        assert local_server.keep_serving(dead_owner.pid, os.getppid())
        _end(borrower)
        assert not local_server.keep_serving(dead_owner.pid, os.getppid())
        assert not lease.exists(), "a dead borrower's lease is cleared"
    finally:
        if borrower.poll() is None:
            _end(borrower)


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_adopting_a_shared_server_takes_a_lease_and_stopping_gives_it_back(cache: Path) -> None:
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    server_proc = _sleeper()
    model = cache / "m.gguf"
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        (cache / "server.json").write_text(
            json.dumps({"base_url": url, "pid": server_proc.pid, "model_path": str(model)})
        )
        adopted = local_server.get_local_server(model, show_progress=False)
        lease = cache / "leases" / str(server_proc.pid) / str(os.getpid())

        assert not adopted.owned and adopted.pid == server_proc.pid
        assert lease.exists(), "a borrower must hold a lease while it uses the server"

        local_server.stop_local_server()
        assert not lease.exists()
        assert server_proc.poll() is None, "a borrower never stops a server it did not start"
    finally:
        httpd.shutdown()
        _end(server_proc)
