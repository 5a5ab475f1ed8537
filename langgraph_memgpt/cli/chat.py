"""``langgraph-memgpt chat``: a terminal conversation with one agent.

``chat`` runs the same graph in-process with a SQLite checkpointer in the data directory
(or, with a database URL, LangGraph's Postgres checkpointer and the Postgres memory), so a
terminal conversation and the server share threads' persistence format and the agent's
memory. It shows what the model does with its memory, not just what it says: inner
monologue dimmed, memory edits in yellow, replies in bold, each line with its own marker so
a transcript without colours reads the same.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from rich.console import Console
from rich.markup import escape

from langgraph_memgpt.checkpoints import open_checkpointer
from langgraph_memgpt.cli.console import RESULT_PREVIEW_CHARS, memory_tables, print_error
from langgraph_memgpt.context import Context
from langgraph_memgpt.graph import build_graph
from langgraph_memgpt.ops.recovery import recover_thread
from langgraph_memgpt.stores.backends import (
    open_backend,
    where,
)
from langgraph_memgpt.stores.types import MemoryStoreError
from langgraph_memgpt.tools.run import facts_of
from langgraph_memgpt.turn.main_context import REPLY_FLAG


def _call_text(call: ToolCall | Mapping[str, Any]) -> str:
    args = {k: v for k, v in dict(call.get("args") or {}).items() if k != "request_heartbeat"}
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{call.get('name')}({shown})"


def _result_text(message: ToolMessage) -> str:
    text = str(message.content)
    try:
        text = str(json.loads(text).get("message", text))
    except (ValueError, AttributeError):
        pass
    text = " ".join(text.split())
    return text if len(text) <= RESULT_PREVIEW_CHARS else text[:RESULT_PREVIEW_CHARS] + "…"


def _reply(console: Console, text: object) -> None:
    console.print(f"[bold green]agent>[/] [bold]{escape(str(text))}[/]", soft_wrap=True)


class ReplyPrinter:
    """Prints the reply as the model writes it (the ``custom`` stream's reply deltas).

    The step's monologue so far is printed first, as ``(thinks)``, so the transcript reads
    in order; `show_update` then leaves out what was already printed.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.reply = ""
        self.monologue = ""
        self.thought_shown = False

    def take(self, event: Any) -> None:
        """One ``custom`` stream event (others' events are ignored)."""
        if not isinstance(event, Mapping) or not isinstance(event.get("delta"), str):
            return
        if event.get("memgpt") == "monologue":
            self.monologue += event["delta"]
        elif event.get("memgpt") == "reply":
            if not self.reply:
                if self.monologue.strip():
                    thought = escape(self.monologue.strip())
                    self.console.print(f"[dim italic]  (thinks) {thought}[/]", soft_wrap=True)
                    self.thought_shown = True
                self.console.print("[bold green]agent>[/] ", end="")
            self.reply += event["delta"]
            self.console.print(
                f"[bold]{escape(event['delta'])}[/]", end="", soft_wrap=True, highlight=False
            )

    def step_done(self) -> None:
        """A model step ended: the next one's monologue starts afresh."""
        self.monologue = ""


def show_update(
    console: Console,
    node: str,
    update: Mapping[str, Any] | None,
    printer: ReplyPrinter | None = None,
) -> None:
    """Print one node's state update as transcript lines.

    ``agent>`` is the reply the user sees, ``(thinks)`` the inner monologue, ``✎`` a
    memory edit, ``⚙`` any other tool call, ``→`` a tool result, ``✗`` a failed call and
    ``⚠`` what the runtime itself says (pressure alerts, evictions). With a `ReplyPrinter`
    that already streamed the reply, the reply ends its line instead of printing again.
    """
    for message in (update or {}).get("messages", []) or []:
        if isinstance(message, AIMessage):
            calls = message.tool_calls or message.invalid_tool_calls
            if message.additional_kwargs.get(REPLY_FLAG) or node == "respond" or not calls:
                if printer is not None and printer.reply and printer.reply == message.content:
                    console.print()  # streamed already: end its line
                else:
                    if printer is not None and printer.reply:
                        console.print()  # what streamed was revised: the final text follows
                    _reply(console, message.content)
                continue
            if message.content and not (printer is not None and printer.thought_shown):
                thought = escape(str(message.content))
                console.print(f"[dim italic]  (thinks) {thought}[/]", soft_wrap=True)
            for call in message.tool_calls:
                if call["name"] == "send_message":
                    continue
                mark, style = ("✎", "yellow") if facts_of(call["name"]).edits else ("⚙", "cyan")
                console.print(f"[{style}]  {mark} {escape(_call_text(call))}[/]", soft_wrap=True)
            for bad in message.invalid_tool_calls:
                console.print(
                    f"[red]  ✗ malformed call {escape(_call_text(bad))}[/]", soft_wrap=True
                )
        elif isinstance(message, ToolMessage):
            if message.status == "error":
                console.print(f"[red]  ✗ {escape(_result_text(message))}[/]", soft_wrap=True)
            elif message.name != "send_message":
                console.print(f"[dim]    → {escape(_result_text(message))}[/]", soft_wrap=True)
        elif isinstance(message, HumanMessage) and message.name:
            console.print(f"[magenta]  ⚠ {escape(str(message.content))}[/]", soft_wrap=True)
    if node == "summarize_evict" and update and update.get("summary"):
        summary = escape(str(update["summary"]))
        console.print(f"[magenta]  ⚠ older messages evicted behind a summary: {summary}[/]")


def chat(
    ctx: Context, thread_id: str, console: Console | None = None, *, database_url: str = ""
) -> int:
    """A terminal conversation with one agent; ``/memory`` shows its memory, ``/quit`` ends.

    With ``database_url``, memory and threads are in that Postgres database (as for a
    server with ``MEMGPT_DATABASE_URL``), else in ``ctx.data_dir``.

    Returns 0 at the end of input or ``/quit``, 2 for a bad model spec or a memory that
    cannot be used (a read-only or foreign database), 1 when the model cannot be started.
    """
    from langgraph_memgpt.llm.local_server import LocalModelError
    from langgraph_memgpt.models import resolve_model

    console = console or Console()
    try:
        resolve_model(ctx.model)  # fail now, not on the first message; starts a local model
    except ValueError as exc:  # an unknown spec, or a script that is not a list of steps
        print_error(f"cannot use model {ctx.model!r}: {exc}")
        return 2
    except (OSError, LocalModelError) as exc:
        print_error(f"cannot use model {ctx.model!r}: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    data_dir = Path(ctx.data_dir).expanduser()
    try:
        backend = open_backend(
            data_dir,
            database_url=database_url,
            embedding_model=ctx.embedding_model,
            core_block_limit=ctx.core_block_limit,
        )
        memory = backend.open(ctx.agent_id)
        memory.core.ensure_defaults(
            persona=ctx.persona, human=ctx.human, char_limit=ctx.core_block_limit
        )
        saver_cm = open_checkpointer(data_dir, database_url)
        saver: BaseCheckpointSaver[Any] = saver_cm.__enter__()
    except (ValueError, MemoryStoreError) as exc:
        print_error(str(exc))
        return 2
    try:
        if database_url:
            saver.setup()  # type: ignore[attr-defined]
        # The graph keeps memory in this backend (and, on Postgres, claims threads in it).
        graph = build_graph(memory=backend).compile(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        # A message the last process checkpointed but was killed before recording.
        recover_thread(graph, config, ctx, memory=backend)
        console.print(
            f"[bold]langgraph-memgpt[/] agent '{escape(ctx.agent_id)}', thread "
            f"'{escape(thread_id)}', model {escape(ctx.model)}, data in "
            f"{escape(where(data_dir, database_url))}."
            "\nType /memory to see the agent's memory, /quit to leave.",
            soft_wrap=True,
        )
        echo = not sys.stdin.isatty()  # piped input is not echoed by the terminal
        while True:
            try:
                text = console.input("[bold blue]you>[/] ")
            except (EOFError, KeyboardInterrupt):
                console.print()
                return 0
            if echo:
                console.print(escape(text), highlight=False, soft_wrap=True)
            command = text.strip()
            if command in {"/quit", "/exit"}:
                return 0
            if command == "/memory":
                for table in memory_tables(memory):
                    console.print(table)
                continue
            if not command or command.startswith("/"):
                console.print("[dim]Type a message, /memory or /quit.[/]")
                continue
            printer = ReplyPrinter(console)
            try:
                for mode, chunk in graph.stream(
                    {"messages": [HumanMessage(text)]},
                    config,
                    context=ctx,
                    stream_mode=["custom", "updates"],
                ):
                    if mode == "custom":
                        printer.take(chunk)
                        continue
                    if not isinstance(chunk, dict):
                        continue
                    for node, update in chunk.items():
                        show_update(
                            console, node, update if isinstance(update, dict) else None, printer
                        )
                        if node == "think":
                            printer.thought_shown = False
                            printer.step_done()
            except KeyboardInterrupt:
                console.print("[dim](turn interrupted)[/]")
            except Exception as exc:  # noqa: BLE001 - one failed turn must not end the chat
                print_error(f"the turn failed: {type(exc).__name__}: {exc}")
    finally:
        saver_cm.__exit__(None, None, None)
        backend.close()


# --- reembed ------------------------------------------------------------------------------


__all__ = ["ReplyPrinter", "chat", "show_update"]
