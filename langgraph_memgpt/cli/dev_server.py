"""``langgraph-memgpt serve``: ``langgraph dev`` on the memgpt graph, started and stopped.

The served graph itself (settings, checkpointer, context checks) is ``server``; this starts
the process: a free port, the embedded model shared with the server, the data directory's
lock (``dev_state``), and a clean stop on SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from rich.console import Console
from rich.markup import escape

from langgraph_memgpt.cli.console import print_error
from langgraph_memgpt.llm.factory import names_embedded_model, require_openai_endpoint
from langgraph_memgpt.ops.dev_state import serving
from langgraph_memgpt.serve.server import (
    DATA_DIR_ENV,
    GRAPH_ID,
    OFFLINE_ENV,
    langgraph_config,
)
from langgraph_memgpt.serve.settings import DATABASE_URL_ENV, MODEL_ENV, ServerSettings

SHUTDOWN_GRACE_S = 20.0
"""How long ``serve`` lets ``langgraph dev`` save its threads after Ctrl-C before killing it."""


def _warm_embedded_model(console: Console) -> None:
    """Have the embedded model read the agent's fixed prompt before the first user's turn.

    Without it the first reply of a new server re-reads the instructions and tools in full
    (see `langgraph_memgpt.serve.warmup`). Never fatal: the server is just slower to answer first.
    """
    from langgraph_memgpt.models import local_model
    from langgraph_memgpt.serve.warmup import warm_first_turn

    with console.status("Preparing the agent's prompt on the local model (once per start)..."):
        try:
            seconds = warm_first_turn(local_model(show_progress=False))
        except Exception as exc:  # noqa: BLE001 - only a speed-up: the server starts anyway
            console.print(f"[yellow]Could not prepare the prompt ahead ({exc}); serving anyway.[/]")
            return
    console.print(f"Prompt prepared on the local model ({seconds:.1f} s): the first reply is warm.")


def _no_embedded_model(spec: str, console: Console) -> None:
    """Say which model the server's runs use when it is not the embedded one (none started).

    Raises:
        ValueError: an OpenAI model with neither OPENAI_API_KEY nor OPENAI_BASE_URL.
    """
    if spec.strip().startswith("openai:"):
        require_openai_endpoint(spec.strip())
    shown = (
        "the OpenAI-compatible endpoint of OPENAI_API_KEY / OPENAI_BASE_URL"
        if spec.strip() == "auto"
        else f"{spec.strip()!r} ({MODEL_ENV})"
    )
    console.print(
        f"Model: {escape(shown)}; the embedded local model is not started.",
        soft_wrap=True,
        highlight=False,
    )


def _langgraph_executable() -> str | None:
    beside = Path(sys.executable).parent / "langgraph"
    if beside.exists():
        return str(beside)
    return shutil.which("langgraph")


@contextmanager
def _forward_sigterm(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """Turn a SIGTERM of ours into a graceful SIGINT of the server, which saves its threads."""

    def forward(signum: int, frame: FrameType | None) -> None:
        proc.send_signal(signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def free_port(host: str, port: int) -> int:
    """``port`` if it can be bound on ``host`` now, else a free port the system picks.

    ``langgraph dev`` moves to another port by itself when its port is taken, and the
    addresses printed before it starts would then be wrong: the port is chosen here, with
    the same test (a bind with ``SO_REUSEADDR``), and passed to it. 0 asks for a free one.
    """
    if port:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
                return port
            except OSError:
                pass
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def serve(
    port: int = 2024,
    host: str = "127.0.0.1",
    data_dir: str | Path | None = None,
    console: Console | None = None,
    *,
    database_url: str = "",
) -> int:
    """Run ``langgraph dev`` on the agent; the embedded model only when its runs use it.

    Everything the server keeps (checkpoints, its thread list, the agent's memory) lives
    in ``data_dir`` (default ``$MEMGPT_DATA_DIR`` or ``./.memgpt``), so threads survive a
    restart; with ``database_url`` (``MEMGPT_DATABASE_URL`` for the server) memory and
    checkpoints live in that Postgres database instead. The server's settings
    (``MEMGPT_MODEL`` and the rest) are checked first: a bad one exits 2 naming it. When
    the served model is the embedded one (`llm.factory.names_embedded_model`: ``local``, or
    ``auto`` without OPENAI_API_KEY / OPENAI_BASE_URL) the local llama.cpp model is started
    and warmed here first; the server's worker finds it through its state file and shares
    it. Any other model (``scripted:``, ``openai:``, a hosted ``auto``) starts none.
    """
    console = console or Console()
    langgraph = _langgraph_executable()
    if langgraph is None:
        print_error("langgraph-cli is not installed: pip install 'langgraph-memgpt[serve]'")
        return 1
    root = Path(data_dir or os.environ.get(DATA_DIR_ENV) or ".memgpt").expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    config_path = root / "langgraph.json"
    config_path.write_text(json.dumps(langgraph_config(), indent=2) + "\n", encoding="utf-8")
    env = {**os.environ, **OFFLINE_ENV, DATA_DIR_ENV: str(root)}
    if database_url:
        env[DATABASE_URL_ENV] = database_url
    try:
        settings = ServerSettings.from_env(env)
        if not names_embedded_model(settings.model):
            _no_embedded_model(settings.model, console)
    except ValueError as exc:  # a ContextError, or an OpenAI model with no endpoint
        print_error(str(exc))
        return 2
    if names_embedded_model(settings.model):
        from langgraph_memgpt.llm.local_server import LocalModelError, get_local_server

        console.print("No OPENAI_API_KEY / OPENAI_BASE_URL: starting the embedded local model…")
        try:
            local = get_local_server(show_progress=True)
        except LocalModelError as exc:
            print_error(str(exc))
            return 1
        except KeyboardInterrupt:
            return 130
        console.print(f"Model: embedded llama.cpp at {local.base_url} (shared with the server).")
        _warm_embedded_model(console)
    chosen = free_port(host, port)
    if chosen != port:
        taken = f"Port {port} is taken" if port else "No port given"
        console.print(f"{taken} on {host}: serving on port {chosen} instead.")
    port = chosen
    url = f"http://{host}:{port}"
    reached_as = _allow_bound_names(env, host)
    shown_root = escape(str(root))
    console.print(
        f"\n[bold]Serving the '{GRAPH_ID}' agent at {url}[/] (data in {shown_root})\n"
        f"  Studio:   https://smith.langchain.com/studio/?baseUrl={url}\n"
        f"  Memory:   {url}/memory (the agents' memory page)\n"
        f"  API docs: {url}/docs\n"
        "  Chat from Python:\n"
        "    from langgraph_sdk import get_sync_client\n"
        f"    client = get_sync_client(url='{url}')\n"
        "    thread = client.threads.create()\n"
        f"    client.runs.wait(thread['thread_id'], '{GRAPH_ID}',\n"
        "                     input={'messages': [{'role': 'user', 'content': 'hi'}]})\n"
        f"  Chat in this terminal instead: langgraph-memgpt chat --data-dir {shown_root}\n"
        f"  See the agent's memory:        langgraph-memgpt inspect --data-dir {shown_root}\n",
        soft_wrap=True,
        highlight=False,
    )
    if reached_as:
        console.print(escape(reached_as), soft_wrap=True, highlight=False)
    cmd = [langgraph, "dev", "--no-browser", "--no-reload", "--host", host, "--port", str(port)]
    cmd += ["--config", str(config_path)]
    # cwd = the data directory: langgraph dev keeps its thread list in ./.langgraph_api.
    with serving(root):  # forget leaves the server's saved state alone meanwhile
        return _run_server(cmd, env, root)


def _allow_bound_names(env: dict[str, str], host: str) -> str:
    """Add the names a server bound on ``host`` is reached by to ``MEMGPT_ALLOWED_HOSTS``.

    The served API answers only host names it knows (`langgraph_memgpt.serve.web.guard`):
    loopback always; bound beyond it, the names clients reach it by. Returns a line
    saying so ("" on loopback).
    """
    from langgraph_memgpt.serve.web.guard import ALLOWED_HOSTS_ENV, names_for_bind

    names = names_for_bind(host)
    if not names:
        return ""
    known = [h.strip() for h in env.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()]
    env[ALLOWED_HOSTS_ENV] = ",".join(dict.fromkeys([*known, *names]))
    return (
        f"  Answers as host {', '.join(names)} too (other web pages are refused); "
        f"reached under another name, add it to {ALLOWED_HOSTS_ENV}.\n"
    )


def _run_server(cmd: list[str], env: dict[str, str], root: Path) -> int:
    """Run ``langgraph dev`` in ``root`` until it exits (Ctrl-C and SIGTERM stop it)."""
    proc = subprocess.Popen(cmd, env=env, cwd=root)
    with _forward_sigterm(proc):
        try:
            return proc.wait()
        except KeyboardInterrupt:
            # The server got the same Ctrl-C: give it time to save its threads.
            try:
                return proc.wait(timeout=SHUTDOWN_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                return proc.wait()


__all__ = ["free_port", "serve"]
