"""Terminal front-ends: ``serve`` (langgraph dev), ``chat`` and ``inspect``.

``chat`` runs the same graph in-process with a SQLite checkpointer in the data directory,
so a terminal conversation and the server share threads' persistence format and the
agent's memory. It shows what the model does with its memory, not just what it says:
inner monologue dimmed, memory edits in yellow, replies in bold.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from rich.console import Console
from rich.table import Table

from langgraph_memgpt.context import Context
from langgraph_memgpt.graph import build_graph
from langgraph_memgpt.main_context import REPLY_FLAG
from langgraph_memgpt.server import CHECKPOINT_FILENAME
from langgraph_memgpt.stores import AgentMemory, open_memory

MEMORY_EDITS = {"core_memory_append", "core_memory_replace", "archival_memory_insert"}
OFFLINE_ENV = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
}


def memory_tables(memory: AgentMemory, recent: int = 5) -> list[Table]:
    """Core blocks, tier counts and the latest archival passages, as rich tables."""
    core = Table(title=f"core memory of agent '{memory.agent_id}'")
    for column in ("label", "chars", "value"):
        core.add_column(column)
    for block in memory.core.blocks():
        flag = " (read-only)" if block.read_only else ""
        core.add_row(block.label + flag, f"{len(block.value)}/{block.char_limit}", block.value)
    counts = Table(title="tiers")
    counts.add_column("tier")
    counts.add_column("items", justify="right")
    counts.add_row("recall (messages)", str(memory.recall.count()))
    counts.add_row("archival (passages)", str(memory.archival.count()))
    counts.add_row("archival tags", ", ".join(memory.archival.tags()) or "-")
    passages = Table(title=f"latest {recent} archival passages")
    for column in ("id", "created", "tags", "text"):
        passages.add_column(column)
    for passage in memory.archival.recent(recent):
        passages.add_row(
            str(passage.id), passage.created_at[:19], ", ".join(passage.tags), passage.text[:200]
        )
    return [core, counts, passages]


def inspect(ctx: Context, console: Console | None = None) -> int:
    """Print an agent's memory as tables."""
    console = console or Console()
    memory = open_memory(ctx.data_dir, ctx.agent_id, embedding_model=ctx.embedding_model)
    for table in memory_tables(memory):
        console.print(table)
    return 0


def _show_update(console: Console, node: str, update: dict[str, Any]) -> None:
    for message in (update or {}).get("messages", []) or []:
        if isinstance(message, AIMessage):
            if message.additional_kwargs.get(REPLY_FLAG) or (node == "respond"):
                console.print(f"[bold green]agent>[/] [bold]{message.content}[/]")
            elif message.tool_calls or message.invalid_tool_calls:
                if message.content:
                    console.print(f"[dim italic]  (thinks) {message.content}[/]")
                for call in message.tool_calls:
                    if call["name"] == "send_message":
                        continue
                    style = "yellow" if call["name"] in MEMORY_EDITS else "cyan"
                    args = json.dumps(call["args"], ensure_ascii=False)
                    console.print(f"[{style}]  ⚙ {call['name']} {args}[/]")
            else:
                console.print(f"[bold green]agent>[/] [bold]{message.content}[/]")
        elif isinstance(message, ToolMessage) and message.status == "error":
            console.print(f"[red]  ✗ {message.content}[/]")
        elif isinstance(message, HumanMessage) and message.name:
            console.print(f"[magenta]  {message.content}[/]")
    if node == "summarize_evict" and update.get("summary"):
        console.print(
            f"[magenta]  (memory pressure: older messages summarized) {update['summary']}[/]"
        )


def chat(ctx: Context, thread_id: str, console: Console | None = None) -> int:
    """A terminal conversation with one agent; ``/memory`` shows its memory, ``/quit`` ends."""
    console = console or Console()
    data_dir = Path(ctx.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    saver = SqliteSaver(sqlite3.connect(data_dir / CHECKPOINT_FILENAME, check_same_thread=False))
    graph = build_graph().compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    console.print(
        f"[bold]langgraph-memgpt[/] agent '{ctx.agent_id}', thread '{thread_id}', data in "
        f"{data_dir}. Type /memory to see memory, /quit to leave."
    )
    while True:
        try:
            text = console.input("[bold blue]you>[/] ")
        except (EOFError, KeyboardInterrupt):
            console.print()
            return 0
        if text.strip() in {"/quit", "/exit"}:
            return 0
        if text.strip() == "/memory":
            memory = open_memory(ctx.data_dir, ctx.agent_id, embedding_model=ctx.embedding_model)
            for table in memory_tables(memory):
                console.print(table)
            continue
        if not text.strip():
            console.print("[dim]Type a message (or /memory, /quit).[/]")
            continue
        for chunk in graph.stream(
            {"messages": [HumanMessage(text)]}, config, context=ctx, stream_mode="updates"
        ):
            for node, update in chunk.items():
                if isinstance(update, dict):
                    _show_update(console, node, update)


def serve(port: int, host: str = "127.0.0.1", console: Console | None = None) -> int:
    """Start ``langgraph dev`` on the embedded defaults and say how to reach it."""
    console = console or Console()
    langgraph = shutil.which("langgraph") or str(Path(sys.executable).parent / "langgraph")
    if not Path(langgraph).exists():
        console.print(
            "[red]langgraph-cli is not installed: pip install 'langgraph-memgpt[serve]'[/]"
        )
        return 1
    env = {**os.environ, **OFFLINE_ENV}
    if not (env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL")):
        from langgraph_memgpt.llm.local_server import LocalModelError, get_local_server

        console.print("No OPENAI_API_KEY / OPENAI_BASE_URL: starting the embedded local model…")
        try:
            server = get_local_server(show_progress=True)
        except LocalModelError as err:
            console.print(f"[red]{err}[/]")
            return 1
        console.print(f"Local model ready at {server.base_url}")
    url = f"http://{host}:{port}"
    console.print(
        f"\n[bold]Serving the 'memgpt' graph at {url}[/]\n"
        f"  Studio: https://smith.langchain.com/studio/?baseUrl={url}\n"
        "  Terminal chat (separate shell): .venv/bin/langgraph-memgpt chat\n"
        "  Inspect memory: .venv/bin/langgraph-memgpt inspect\n"
    )
    cmd = [langgraph, "dev", "--no-browser", "--host", host, "--port", str(port)]
    try:
        return subprocess.call(cmd, env=env, cwd=Path(__file__).resolve().parent.parent)
    except KeyboardInterrupt:
        return 0
