"""A new user's first minutes: ``langgraph-memgpt serve`` on an empty data dir, then replies.

Starts ``serve`` (the embedded model unless an endpoint is configured) on a fresh data
directory, waits until the server answers ``/ok`` (the moment a client can talk to it),
then sends a new user's first message and one more, each in a new thread, through
``langgraph_sdk``. Prints the seconds to ready, to each reply, and the replies. The
baseline is the same script with ``PYTHONPATH`` pointing at an older checkout, run right
before or after on the same machine.

Run: ``.venv/bin/python benchmarks/first_reply.py [--port 2391]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import wait_for_ok  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Serve, wait for /ok, time two new users' replies; print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=2391)
    args = parser.parse_args(argv)
    from langgraph_sdk import get_sync_client

    data = tempfile.mkdtemp(prefix="first-reply-")
    command = shutil.which("langgraph-memgpt", path=os.path.dirname(sys.executable))
    started = time.monotonic()
    proc = subprocess.Popen(
        [command or "langgraph-memgpt", "serve", "--port", str(args.port), "--data-dir", data],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines: list[tuple[float, str]] = []

    def pump() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.append((time.monotonic() - started, raw.decode(errors="replace").rstrip()))

    threading.Thread(target=pump, daemon=True).start()
    url = f"http://127.0.0.1:{args.port}"
    try:
        if not wait_for_ok(url, proc):
            print("\n".join(line for _, line in lines))
            return 1
        out: dict[str, object] = {"ready_s": round(time.monotonic() - started, 1)}
        client = get_sync_client(url=url)
        for number, text in enumerate(
            ["Hi, I'm Ada. I love the colour teal.", "What a lovely day it is."], start=1
        ):
            thread = client.threads.create()
            asked = time.monotonic()
            result = client.runs.wait(
                thread["thread_id"],
                "memgpt",
                input={"messages": [{"role": "user", "content": text}]},
            )
            out[f"reply{number}_s"] = round(time.monotonic() - asked, 1)
            out[f"reply{number}"] = result["messages"][-1]["content"][:80]  # type: ignore[index]
        out["load"] = os.getloadavg()
        print(json.dumps(out))
        for at, line in lines:
            if "Prompt prepared" in line or "Local model ready" in line or "Serving" in line:
                print(f"  {at:6.1f}s {line[:120]}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
