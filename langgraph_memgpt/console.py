"""Terminal front-ends: ``serve`` (langgraph dev), ``chat``, ``inspect`` and ``reembed``.

``chat`` runs the same graph in-process with a SQLite checkpointer in the data directory
(or, with a database URL, LangGraph's Postgres checkpointer and the Postgres memory), so a
terminal conversation and the server share threads' persistence format and the agent's
memory. These front-ends speak only the memory interface (`stores.base`): the backend is
chosen by `stores.backends.open_backend`. ``chat`` shows what the model does with its
memory, not just what it says: inner monologue dimmed, memory edits in yellow, replies in
bold, each line with its own marker so a transcript without colours reads the same.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from langgraph_memgpt.checkpoints import open_checkpointer
from langgraph_memgpt.context import Context
from langgraph_memgpt.dev_state import serving
from langgraph_memgpt.graph import build_graph
from langgraph_memgpt.main_context import REPLY_FLAG
from langgraph_memgpt.recovery import recover_thread
from langgraph_memgpt.server import (
    DATA_DIR_ENV,
    GRAPH_ID,
    OFFLINE_ENV,
    langgraph_config,
)
from langgraph_memgpt.settings import DATABASE_URL_ENV
from langgraph_memgpt.stores.backends import (
    open_backend,
    reembed_database,
    reembed_embedded,
    where,
)
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.types import MemoryStoreError
from langgraph_memgpt.tools import facts_of

RESULT_PREVIEW_CHARS = 200
"""Longest excerpt of a tool result shown in the chat transcript."""
SHUTDOWN_GRACE_S = 20.0
"""How long ``serve`` lets ``langgraph dev`` save its threads after Ctrl-C before killing it."""


def _error(message: str) -> None:
    Console(stderr=True).print(f"[red]error:[/] {escape(message)}", soft_wrap=True)


def _check_agent(
    backend: MemoryBackend, place: str, agent_id: str, *, forgotten_ok: bool = False
) -> bool:
    """Whether ``agent_id`` has memory in ``backend``; prints why not when it has none.

    With ``forgotten_ok`` an agent whose memory was deleted counts too (its deletion log
    remains, for ``inspect``).
    """
    agents = backend.agents()
    if forgotten_ok and agent_id not in agents and _was_forgotten(backend, agent_id):
        return True
    if not agents:
        _error(f"no agent memory in {place} (nothing stored there yet)")
        return False
    if agent_id not in agents:
        _error(f"agent '{agent_id}' has no memory in {place}; agents there: {', '.join(agents)}")
        return False
    return True


def _was_forgotten(backend: MemoryBackend, agent_id: str) -> bool:
    """Whether ``agent_id``'s memory was deleted (its deletion log remains)."""
    try:
        return bool(backend.open(agent_id).deletions.entries(1))
    except MemoryStoreError:  # nothing stored at all (e.g. a folder that does not exist)
        return False


def _progress(console: Console) -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


# --- inspect ------------------------------------------------------------------------------


def memory_tables(memory: Memory, recent: int = 5) -> list[Table]:
    """Core blocks, tier counts and the latest messages and passages, as rich tables."""
    blocks = memory.core.blocks()
    recall_count = memory.recall.count()
    archival_count = memory.archival.count()
    tags = memory.archival.tags()
    last_modified = memory.core.last_modified()
    messages = memory.recall.latest(recent)
    passages = memory.archival.recent(recent)
    deletions = memory.deletions.entries(recent)
    core = Table(title=f"core memory of agent '{memory.agent_id}'")
    for column in ("block", "chars", "value"):
        core.add_column(column)
    for block in blocks:
        flag = " (read-only)" if block.read_only else ""
        core.add_row(
            escape(block.label + flag),
            f"{len(block.value)}/{block.char_limit}",
            escape(block.value),
        )
    counts = Table(title="memory tiers")
    counts.add_column("tier")
    counts.add_column("items", justify="right")
    counts.add_row("core (blocks)", str(len(blocks)))
    counts.add_row("recall (messages)", str(recall_count))
    counts.add_row("archival (passages)", str(archival_count))
    counts.add_row("archival tags", escape(", ".join(tags)) or "-")
    counts.add_row("core last modified", (last_modified or "-")[:19])
    latest = Table(title=f"latest {len(messages)} messages (recall)")
    for column in ("time", "thread", "role", "text"):
        latest.add_column(column)
    for message in messages:
        calls = ", ".join(str(c.get("name")) for c in message.tool_calls)
        text = f"{message.text} [calls {calls}]".strip() if calls else message.text
        latest.add_row(
            message.created_at[:19],
            escape(message.thread_id[:12]),
            message.role,
            escape(text[:RESULT_PREVIEW_CHARS]),
        )
    archive = Table(title=f"latest {len(passages)} archival passages")
    for column in ("id", "created", "tags", "text"):
        archive.add_column(column)
    for passage in passages:
        archive.add_row(
            str(passage.id),
            passage.created_at[:19],
            escape(", ".join(passage.tags)),
            escape(passage.text[:RESULT_PREVIEW_CHARS]),
        )
    forgotten = Table(title=f"latest {len(deletions)} deletions (what, never the content)")
    for column in ("when", "what", "id", "thread", "by", "detail"):
        forgotten.add_column(column)
    for entry in deletions:
        forgotten.add_row(
            entry.deleted_at[:19],
            entry.kind,
            escape(entry.item_id),
            escape(entry.thread_id or "-"),
            escape(entry.actor),
            escape(entry.detail),
        )
    return [core, counts, latest, archive, forgotten]


def inspect(
    data_dir: str | Path,
    agent_id: str,
    recent: int = 5,
    console: Console | None = None,
    *,
    database_url: str = "",
) -> int:
    """Print an agent's memory as tables; 1 when there is no such agent.

    The memory is in ``data_dir``, or in the Postgres database of ``database_url`` when set.
    """
    console = console or Console()
    place = where(data_dir, database_url)
    # Read-only (works in a read-only data directory) and without embeddings:
    # inspecting needs no model, and works even after an embedding change.
    try:
        backend = open_backend(data_dir, database_url=database_url, read_only=True)
    except MemoryStoreError as exc:
        _error(str(exc))
        return 2
    try:
        if not _check_agent(backend, place, agent_id, forgotten_ok=True):
            return 1
        memory = backend.open(agent_id)
        for table in memory_tables(memory, recent):
            console.print(table)
    except MemoryStoreError as exc:
        _error(str(exc))
        return 2
    finally:
        backend.close()
    return 0


# --- chat ---------------------------------------------------------------------------------


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
    from langgraph_memgpt.llm.factory import resolve_model
    from langgraph_memgpt.llm.local_server import LocalModelError

    console = console or Console()
    try:
        resolve_model(ctx.model)  # fail now, not on the first message; starts a local model
    except ValueError as exc:  # an unknown spec, or a script that is not a list of steps
        _error(f"cannot use model {ctx.model!r}: {exc}")
        return 2
    except (OSError, LocalModelError) as exc:
        _error(f"cannot use model {ctx.model!r}: {exc}")
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
        _error(str(exc))
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
                _error(f"the turn failed: {type(exc).__name__}: {exc}")
    finally:
        saver_cm.__exit__(None, None, None)
        backend.close()


# --- reembed ------------------------------------------------------------------------------


def reembed(
    data_dir: str | Path,
    agent_id: str,
    embedding_model: str = "minilm",
    console: Console | None = None,
    *,
    database_url: str = "",
) -> int:
    """Drop an agent's recall and archival vectors and embed everything again.

    The way out of an ``EmbeddingMismatchError`` after the embedding model changed. The
    memory is in ``data_dir``, or in the Postgres database of ``database_url`` when set.
    Data directory: stop any server or chat using it first (they hold the old vectors).
    Postgres: the new vectors are switched in with the new model in one transaction, while
    servers keep running; restart them with the new model (the old one's writes are
    refused from then on).

    Returns:
        0 on success, 1 when the agent has no memory there, 2 for a bad embedding model
        or an unusable database.
    """
    from langgraph_memgpt.stores.embeddings import embedding_identity, get_embeddings

    console = console or Console()
    root = Path(data_dir).expanduser()
    try:
        embeddings = get_embeddings(embedding_model)
    except (ValueError, RuntimeError) as exc:
        _error(str(exc))
        return 2
    if embeddings is None:
        _error("reembed needs an embedding model: with 'none' there is nothing to embed")
        return 2
    try:
        backend = open_backend(root, database_url=database_url, read_only=True)
        try:
            if not _check_agent(backend, where(root, database_url), agent_id):
                return 1
        finally:
            backend.close()
    except MemoryStoreError as exc:
        _error(str(exc))
        return 2
    model, dim = embedding_identity(embeddings)
    started = time.monotonic()
    with _progress(console) as bars:

        def advance(task_name: str) -> Callable[[int, int], None]:
            task = bars.add_task(task_name, total=None)
            return lambda done, total: bars.update(task, completed=done, total=total)

        if database_url:
            messages, passages = reembed_database(database_url, agent_id, embeddings, advance)
        else:
            messages, passages = reembed_embedded(root, agent_id, embeddings, advance)
    console.print(
        f"Re-embedded {messages} messages and {passages} passages of agent '{escape(agent_id)}' "
        f"with {escape(model)} (dim {dim}) in {time.monotonic() - started:.1f} s.",
        soft_wrap=True,
    )
    return 0


# --- serve --------------------------------------------------------------------------------


def _warm_embedded_model(console: Console) -> None:
    """Have the embedded model read the agent's fixed prompt before the first user's turn.

    Without it the first reply of a new server re-reads the instructions and tools in full
    (see `langgraph_memgpt.warmup`). Never fatal: the server is just slower to answer first.
    """
    from langgraph_memgpt.llm.factory import local_model
    from langgraph_memgpt.warmup import warm_first_turn

    with console.status("Preparing the agent's prompt on the local model (once per start)..."):
        try:
            seconds = warm_first_turn(local_model(show_progress=False))
        except Exception as exc:  # noqa: BLE001 - only a speed-up: the server starts anyway
            console.print(f"[yellow]Could not prepare the prompt ahead ({exc}); serving anyway.[/]")
            return
    console.print(f"Prompt prepared on the local model ({seconds:.1f} s): the first reply is warm.")


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
    """Run ``langgraph dev`` on the agent, with the embedded model unless an endpoint is set.

    Everything the server keeps (checkpoints, its thread list, the agent's memory) lives
    in ``data_dir`` (default ``$MEMGPT_DATA_DIR`` or ``./.memgpt``), so threads survive a
    restart; with ``database_url`` (``MEMGPT_DATABASE_URL`` for the server) memory and
    checkpoints live in that Postgres database instead. Without OPENAI_API_KEY /
    OPENAI_BASE_URL the local llama.cpp model is started here first; the server's worker
    finds it through its state file and shares it.
    """
    console = console or Console()
    langgraph = _langgraph_executable()
    if langgraph is None:
        _error("langgraph-cli is not installed: pip install 'langgraph-memgpt[serve]'")
        return 1
    root = Path(data_dir or os.environ.get(DATA_DIR_ENV) or ".memgpt").expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    config_path = root / "langgraph.json"
    config_path.write_text(json.dumps(langgraph_config(), indent=2) + "\n", encoding="utf-8")
    env = {**os.environ, **OFFLINE_ENV, DATA_DIR_ENV: str(root)}
    if database_url:
        env[DATABASE_URL_ENV] = database_url
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        console.print("Model: the OpenAI-compatible endpoint of OPENAI_API_KEY / OPENAI_BASE_URL.")
    else:
        from langgraph_memgpt.llm.local_server import LocalModelError, get_local_server

        console.print("No OPENAI_API_KEY / OPENAI_BASE_URL: starting the embedded local model…")
        try:
            local = get_local_server(show_progress=True)
        except LocalModelError as exc:
            _error(str(exc))
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
    cmd = [langgraph, "dev", "--no-browser", "--no-reload", "--host", host, "--port", str(port)]
    cmd += ["--config", str(config_path)]
    # cwd = the data directory: langgraph dev keeps its thread list in ./.langgraph_api.
    with serving(root):  # forget leaves the server's saved state alone meanwhile
        return _run_server(cmd, env, root)


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
