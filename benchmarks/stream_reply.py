"""What a chat UI streams from the served agent: reply chunks, when they arrive, what else.

Starts ``langgraph-memgpt serve`` (the embedded model unless an endpoint is configured) on
a fresh data directory, waits for ``/ok``, then streams turns the way a chat UI does, with
``stream_mode="messages-tuple"``: through the Python ``langgraph_sdk`` and through
LangGraph's JS SDK (``tests/js/stream_reply.mjs``, ``@langchain/langgraph-sdk``; skipped
when ``node`` or ``tests/js/node_modules`` is missing). Each turn is a new thread.

For each turn it prints: the message chunks with text (what a UI shows), the seconds to
the first of them and to the end of the run, whether the joined chunks are the reply the
thread holds afterwards, and anything else the stream carried that a UI would show: tool
results (``{"status": ...}`` JSON) or text of a message that is not the reply (the inner
monologue). The baseline is the issue's measurement before the reply streamed (3 chunks,
the first at the run's end, one of them a tool result).

Run: ``.venv/bin/python benchmarks/stream_reply.py [--port 2392] [--json FILE]``
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
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import wait_for_ok  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
JS = REPO / "tests" / "js"
MESSAGES = (
    "Hi, I'm Ada. I love the colour teal.",
    "What a lovely day it is. Any plans for the weekend?",
    "Can you tell me a little about what you can remember for me?",
)


def summarise(events: list[tuple[float, str, Any]], reply: str, run_s: float) -> dict[str, Any]:
    """One turn's stream as a chat UI meets it: ``events`` are (seconds, event, data)."""
    shown: list[tuple[float, dict[str, Any]]] = []
    for at, event, data in events:
        if not event.startswith("messages") or not isinstance(data, list) or not data:
            continue
        chunk = data[0]
        if isinstance(chunk, dict) and isinstance(chunk.get("content"), str) and chunk["content"]:
            shown.append((at, chunk))
    text = "".join(c["content"] for _, c in shown)
    tool_json = [c["content"][:60] for _, c in shown if c.get("type") in ("tool", "ToolMessage")]
    tool_json += [
        c["content"][:60] for _, c in shown if c["content"].lstrip().startswith('{"status"')
    ]
    return {
        "chunks": len(shown),
        "first_chunk_s": round(shown[0][0], 2) if shown else None,
        "last_chunk_s": round(shown[-1][0], 2) if shown else None,
        "run_s": round(run_s, 2),
        "chunks_before_end": sum(1 for at, _ in shown if at < run_s),
        "streamed_is_the_reply": text.strip() == reply.strip(),
        "tool_results_shown": tool_json,
        "other_text": "" if text.strip() == reply.strip() else text[:160],
        "reply": reply[:100],
    }


def python_turn(url: str, text: str) -> dict[str, Any]:
    """One turn streamed through the Python SDK."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    thread = client.threads.create()
    events: list[tuple[float, str, Any]] = []
    started = time.monotonic()
    for part in client.runs.stream(
        thread["thread_id"],
        "memgpt",
        input={"messages": [{"role": "user", "content": text}]},
        stream_mode="messages-tuple",
    ):
        events.append((time.monotonic() - started, part.event, part.data))
    run_s = time.monotonic() - started
    state = client.threads.get_state(thread["thread_id"])
    return summarise(events, _reply(state["values"]), run_s)


def js_turn(url: str, text: str) -> dict[str, Any] | None:
    """One turn streamed through LangGraph's JS SDK; None when it cannot run here."""
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "@langchain").exists():
        return None
    out = subprocess.run(
        [node, str(JS / "stream_reply.mjs"), url, "default", text],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    events = []
    for line in out.stdout.splitlines():
        item = json.loads(line)
        events.append((item["ms"] / 1000.0, item["event"], item["data"]))
    run_s = max([at for at, _, _ in events] + [0.0])
    from langgraph_sdk import get_sync_client

    threads = get_sync_client(url=url).threads.search(
        limit=1, sort_by="created_at", sort_order="desc"
    )
    reply = _reply(threads[0]["values"]) if threads else ""
    # The JS run's end is taken as its last event (a lower bound on chunks before the end).
    return summarise(events, reply, run_s)


def _reply(values: Any) -> str:
    """The reply the thread holds: its last AI message's text."""
    for message in reversed((values or {}).get("messages", [])):
        if message.get("type") == "ai" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def main(argv: list[str] | None = None) -> int:
    """Serve, wait for /ok, stream each turn through both SDKs; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=2392)
    parser.add_argument("--json", type=Path, help="write every turn here")
    args = parser.parse_args(argv)
    data = tempfile.mkdtemp(prefix="stream-reply-")
    command = shutil.which("langgraph-memgpt", path=os.path.dirname(sys.executable))
    proc = subprocess.Popen(
        [command or "langgraph-memgpt", "serve", "--port", str(args.port), "--data-dir", data],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{args.port}"
    turns: list[dict[str, Any]] = []
    try:
        if not wait_for_ok(url, proc):
            print("the server did not start")
            return 1
        for text in MESSAGES:
            for sdk, run in (("python", python_turn), ("js", js_turn)):
                figures = run(url, text)
                if figures is None:
                    print(f"  {sdk}: skipped (no node or tests/js/node_modules)")
                    continue
                turns.append({"sdk": sdk, "message": text, **figures})
                print(json.dumps(turns[-1]), flush=True)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)
    ok = [t for t in turns if t["chunks_before_end"] >= 3 and not t["tool_results_shown"]]
    print(
        f"turns with >= 3 reply chunks before the run ended and no tool result shown: "
        f"{len(ok)}/{len(turns)}; streamed text = the reply: "
        f"{sum(t['streamed_is_the_reply'] for t in turns)}/{len(turns)}; load {os.getloadavg()}"
    )
    if args.json:
        args.json.write_text(json.dumps({"turns": turns, "load": os.getloadavg()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
