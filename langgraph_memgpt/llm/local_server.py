"""The embedded llama.cpp server: one OpenAI-compatible endpoint per machine session.

xllamacpp runs llama.cpp's own HTTP server inside whatever process builds a
``xllamacpp.Server``. That process is a child of ours (``python -m
langgraph_memgpt.llm.local_server``), never ourselves: a model that crashes or
hangs cannot take the agent with it, the gigabyte of weights and the two busy CPU
threads go away with one signal, and the agent talks to it over plain OpenAI HTTP like
any hosted endpoint.

Lifetime: the child runs in its own process group; the parent kills that group at exit
(``atexit``), and the child also polls its parent and exits when the parent is gone, so a
``kill -9`` of the agent never leaves a llama.cpp server eating a shared 2-core machine.

Sharing: the running server's address is written to ``<cache dir>/server.json``. Another
process that finds a healthy server there for the same model uses it instead of loading
a second copy (requests queue on its single slot). A borrower holds a lease on it (a file
named by its pid under ``<cache dir>/leases/<server pid>/``): the owner that exits while a
borrower lives leaves the server running, and the server stops once neither its owner nor
any borrower is alive, so a ``chat`` beside ``serve`` or a test beside a benchmark never
loses the model mid-turn when the other one ends. Should the server die anyway (a crash),
`LocalToolCallingChatModel` reconnects, starting its own.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rich.console import Console

from langgraph_memgpt.llm import weights
from langgraph_memgpt.osutil import process_alive, write_atomic

MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"
N_CTX = 8192
THREADS_ENV = "MEMGPT_LLAMA_THREADS"
DEFAULT_THREADS = 2
START_TIMEOUT_S = 300.0
_READY_PREFIX = "MEMGPT_LLAMA_READY "
FALLBACK_HINT = (
    "to use a hosted or OpenAI-compatible endpoint instead, set OPENAI_API_KEY "
    "(and OPENAI_BASE_URL for a non-OpenAI server) or pass model='openai:<name>'"
)


class LocalModelError(RuntimeError):
    """The embedded model cannot run here; the message is one line saying what to do."""


@dataclass(frozen=True)
class LocalServer:
    """A running llama.cpp server.

    Attributes:
        base_url: OpenAI-compatible root, e.g. ``http://127.0.0.1:41234/v1``.
        pid: the server process id.
        model_path: the GGUF it serves.
        owned: whether this process started it (and so stops it at exit).
    """

    base_url: str
    pid: int
    model_path: Path
    owned: bool


_lock = threading.Lock()
_server: LocalServer | None = None
_owned: dict[int, subprocess.Popen[bytes]] = {}
_leases: set[int] = set()
"""Pids of adopted servers this process holds a lease on."""
_atexit_registered = False


def get_local_server(
    model_path: Path | None = None, *, refresh: bool = False, show_progress: bool = True
) -> LocalServer:
    """Return this process's llama.cpp server, starting (or adopting) it on first use.

    One server per process: asking for a different ``model_path`` replaces it.

    Args:
        model_path: GGUF to serve; default: the verified joined model (joined on demand).
        refresh: re-check a remembered server and find or start another if it stopped
            answering (after a connection error).
        show_progress: draw the join bar and the loading spinner on stderr.

    Raises:
        LocalModelError: no usable local model; the message names the fix.
    """
    global _server
    with _lock:
        current = _server
        same_model = current is not None and model_path in (None, current.model_path)
        if current is not None and same_model and not refresh:
            return current
        if current is not None and same_model and _healthy(current.base_url):
            return current
        path = model_path if model_path is not None else _verified_model(show_progress)
        if current is not None:
            _server = None
            stop_server(current)
        server = _read_shared(path)
        if server is None:
            server = launch_server(path, show_progress=show_progress)
            _write_shared(server)
        else:
            _adopt(server)
        _server = server
        return server


def _adopt(server: LocalServer) -> None:
    """Take a lease on a server another process started: it then outlives its owner."""
    global _atexit_registered
    lease = _lease_path(server.pid, os.getpid())
    try:
        lease.parent.mkdir(parents=True, exist_ok=True)
        lease.touch()
    except OSError:
        return  # without a lease the owner may stop it; the reconnect still recovers
    _leases.add(server.pid)
    if not _atexit_registered:
        atexit.register(_stop_all)
        _atexit_registered = True


def _release(server: LocalServer) -> None:
    """Give up this process's lease on an adopted server."""
    _leases.discard(server.pid)
    _lease_path(server.pid, os.getpid()).unlink(missing_ok=True)


def _lease_dir(server_pid: int) -> Path:
    return weights.cache_dir() / "leases" / str(server_pid)


def _lease_path(server_pid: int, borrower_pid: int) -> Path:
    return _lease_dir(server_pid) / str(borrower_pid)


def live_borrowers(server_pid: int) -> list[int]:
    """Processes other than this one holding a lease on the server; stale leases are removed."""
    try:
        entries = list(_lease_dir(server_pid).iterdir())
    except OSError:
        return []
    alive = []
    for entry in entries:
        try:
            pid = int(entry.name)
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        if process_alive(pid):
            alive.append(pid)
        else:
            entry.unlink(missing_ok=True)
    return alive


def stop_local_server() -> None:
    """Stop this process's server if it started it and no borrower still uses it.

    An adopted server is left running (its lease given up); one a borrower still uses is
    left to the borrower (it stops by itself once no borrower lives).
    """
    global _server
    with _lock:
        server, _server = _server, None
    if server is not None:
        stop_server(server)


def stop_server(server: LocalServer) -> None:
    """Stop ``server`` if this process started it and no borrower uses it.

    Forgets it in the shared state file when stopped. An adopted server's lease is given
    up instead; a borrowed one keeps running for its borrowers (see the module docstring).
    """
    if not server.owned:
        _release(server)
        return
    proc = _owned.pop(server.pid, None)
    if proc is None:
        return
    if live_borrowers(server.pid):
        return  # it serves on, and stops itself when the last borrower is gone
    stop_process_group(proc)
    _forget_shared(server)


def _stop_all() -> None:
    for pid in list(_leases):
        _lease_path(pid, os.getpid()).unlink(missing_ok=True)
    _leases.clear()
    for pid in list(_owned):
        proc = _owned.pop(pid, None)
        if proc is not None and not live_borrowers(pid):
            stop_process_group(proc)
            _forget_pid(pid)


def _verified_model(show_progress: bool) -> Path:
    try:
        return weights.ensure_model(show_progress=show_progress)
    except (weights.WeightsError, OSError) as exc:
        raise LocalModelError(f"local model unavailable: {exc}; {FALLBACK_HINT}") from None


def launch_server(model_path: Path, *, show_progress: bool = True) -> LocalServer:
    """Start a new llama.cpp server child for ``model_path`` and wait until it answers.

    Most callers want `get_local_server` (one shared server); this is the primitive. The
    child is stopped at interpreter exit, or earlier with `stop_server`.

    Raises:
        LocalModelError: the file is missing, xllamacpp is not installed, or llama.cpp
            could not load the model; the one-line message names the fix.
    """
    global _atexit_registered
    if not model_path.is_file():
        raise LocalModelError(f"local model file {model_path} does not exist; {FALLBACK_HINT}")
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalModelError(
            f"local model needs xllamacpp ({weights.INSTALL_HINT}); {FALLBACK_HINT}"
        )
    log_path = weights.cache_dir() / "server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    threads = int(os.environ.get(THREADS_ENV, DEFAULT_THREADS))
    cmd = [
        sys.executable,
        "-m",
        "langgraph_memgpt.llm.local_server",
        "--model",
        str(model_path),
        "--threads",
        str(threads),
        "--parent-pid",
        str(os.getpid()),
    ]
    env = dict(os.environ)
    # The child must import this package even when it is not installed (a source checkout).
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    # llama.cpp is built with OpenMP, whose idle threads spin. On two cores shared with
    # other work a spinning thread starves its partner, so generation slows several-fold
    # with the default (active) policy.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    _owned[proc.pid] = proc
    if not _atexit_registered:
        atexit.register(_stop_all)
        _atexit_registered = True
    started = time.monotonic()
    try:
        address = _await_ready(proc, model_path, log_path, show_progress=show_progress)
    except BaseException:
        _owned.pop(proc.pid, None)
        stop_process_group(proc)
        raise
    if show_progress:
        Console(stderr=True).print(
            f"[green]Local model ready[/] at {address} ({time.monotonic() - started:.1f} s)"
        )
    return LocalServer(f"{address}/v1", proc.pid, model_path, owned=True)


def _await_ready(
    proc: subprocess.Popen[bytes], model_path: Path, log_path: Path, *, show_progress: bool
) -> str:
    """Wait for the runner's handshake line, then for ``/health`` to answer 200."""
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    console = Console(stderr=True)
    status = console.status(
        f"Loading local model {model_path.name} (llama.cpp, first start takes a while)..."
    )
    if show_progress:
        status.start()
    try:
        address = _read_handshake(proc, proc.stdout, deadline, log_path)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            if _healthy(f"{address}/v1"):
                return address
            time.sleep(0.25)
        raise _start_failure(proc, log_path, "did not become healthy")
    finally:
        if show_progress:
            status.stop()


def _read_handshake(
    proc: subprocess.Popen[bytes], stdout: IO[bytes], deadline: float, log_path: Path
) -> str:
    selector = selectors.DefaultSelector()
    selector.register(stdout, selectors.EVENT_READ)
    buffer = b""
    try:
        while time.monotonic() < deadline:
            if selector.select(timeout=0.25):
                chunk = os.read(stdout.fileno(), 4096)
                if not chunk:
                    break
                buffer += chunk
                for line in buffer.decode("utf-8", "replace").splitlines():
                    if line.startswith(_READY_PREFIX):
                        return line[len(_READY_PREFIX) :].strip().rstrip("/")
            elif proc.poll() is not None:
                break
    finally:
        selector.close()
    raise _start_failure(proc, log_path, "did not start")


def _start_failure(proc: subprocess.Popen[bytes], log_path: Path, what: str) -> LocalModelError:
    code = proc.poll()
    reason = _last_error_line(log_path) or (f"exit code {code}" if code is not None else "timeout")
    return LocalModelError(
        f"local llama.cpp server {what} ({reason}; log: {log_path}); {FALLBACK_HINT}"
    )


def _last_error_line(log_path: Path) -> str:
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        lowered = line.lower()
        if "error" in lowered or "failed" in lowered or "exception" in lowered:
            return line.strip()[:200]
    return ""


def _healthy(base_url: str) -> bool:
    root = base_url.removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/health", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def stop_process_group(
    proc: subprocess.Popen[bytes],
    first: signal.Signals = signal.SIGTERM,
    grace_s: float = 5.0,
) -> None:
    """Send ``first`` to the process group, wait ``grace_s``, then SIGKILL what is left."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((first, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _state_path() -> Path:
    return weights.cache_dir() / "server.json"


def _write_shared(server: LocalServer) -> None:
    state = {"base_url": server.base_url, "pid": server.pid, "model_path": str(server.model_path)}
    try:
        write_atomic(_state_path(), json.dumps(state).encode("utf-8"))
    except OSError:
        pass  # another process sharing this server then starts its own: slower, still right


def _read_shared(model_path: Path) -> LocalServer | None:
    try:
        state = json.loads(_state_path().read_text(encoding="utf-8"))
        base_url, pid, path = str(state["base_url"]), int(state["pid"]), Path(state["model_path"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if path != model_path or not process_alive(pid) or not _healthy(base_url):
        return None
    return LocalServer(base_url, pid, path, owned=False)


def _forget_shared(server: LocalServer) -> None:
    _forget_pid(server.pid)


def _forget_pid(pid: int) -> None:
    """Remove the shared state file if it names server ``pid``, and the server's leases."""
    try:
        state = json.loads(_state_path().read_text(encoding="utf-8"))
        if int(state.get("pid", -1)) == pid:
            _state_path().unlink(missing_ok=True)
    except (OSError, ValueError, TypeError):
        pass
    try:
        for entry in _lease_dir(pid).iterdir():
            entry.unlink(missing_ok=True)
        _lease_dir(pid).rmdir()
    except OSError:
        pass


def keep_serving(parent_pid: int, original_parent: int) -> bool:
    """Whether the server child should go on: its owner lives, or a borrower does."""
    owner_alive = os.getppid() == original_parent and process_alive(parent_pid)
    return owner_alive or bool(live_borrowers(os.getpid()))


# --- the child process -------------------------------------------------------------------


def _serve(model: str, threads: int, parent_pid: int) -> int:
    """Run llama.cpp's server in this process until the parent goes away or we are signalled."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {MODEL_ALIAS}
    params.n_ctx = N_CTX
    params.n_parallel = 1  # one slot: the whole 8k window, and one prefix cache to reuse
    params.cache_prompt = True  # reuse the KV of the unchanged prompt prefix between calls
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free loopback port; we report the real one
    params.ui = False
    params.warmup = False
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # noqa: BLE001 - any load failure must reach the parent's log
        print(f"error: llama.cpp failed to load {model}: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"{_READY_PREFIX}{server.listening_address}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    original_parent = os.getppid()
    # Poll instead of PR_SET_PDEATHSIG: that signal fires when the *thread* that spawned
    # us exits, and graph nodes often run in short-lived worker threads.
    while not stop.wait(1.0):
        if not keep_serving(parent_pid, original_parent):
            break
    _forget_pid(os.getpid())
    # Exit here, while `server` is still referenced: returning would drop it, and its
    # destructor waits for llama.cpp's main loop, which never ends while a request from a
    # killed client is still generating (seen: an orphaned server kept both cores busy).
    # The OS frees everything anyway.
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the server child process (``python -m ...local_server``)."""
    parser = argparse.ArgumentParser(description="Run the embedded llama.cpp server.")
    parser.add_argument("--model", required=True)
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    parser.add_argument("--parent-pid", type=int, required=True)
    args = parser.parse_args(argv)
    return _serve(args.model, args.threads, args.parent_pid)


if __name__ == "__main__":
    os._exit(main())
