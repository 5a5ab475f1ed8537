"""Terminal front-ends of an agent's memory: ``inspect`` and ``reembed``.

The terminal output every command shares lives here, once: the red error line
(`print_error`), the progress bars (`progress_bars`), the agent check, the memory tables.

They speak only the memory interface (`stores.base`): the backend is chosen by
`stores.backends.open_backend`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn
from rich.table import Table

from langgraph_memgpt.stores.backends import (
    open_backend,
    reembed_agent,
    where,
)
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.capabilities import (
    LoggedDeletions,
    MessageListing,
    PassageListing,
    Reembeddable,
    require,
)
from langgraph_memgpt.stores.types import MemoryStoreError

RESULT_PREVIEW_CHARS = 200
"""Longest excerpt of a tool result shown in the chat transcript."""


def print_error(message: str) -> None:
    """Say what went wrong on stderr, in red, as one line."""
    Console(stderr=True).print(f"[red]error:[/] {escape(message)}", soft_wrap=True)


def check_agent(
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
        print_error(f"no agent memory in {place} (nothing stored there yet)")
        return False
    if agent_id not in agents:
        print_error(
            f"agent '{agent_id}' has no memory in {place}; agents there: {', '.join(agents)}"
        )
        return False
    return True


def _was_forgotten(backend: MemoryBackend, agent_id: str) -> bool:
    """Whether ``agent_id``'s memory was deleted (its deletion log remains)."""
    try:
        return bool(
            require(backend.open(agent_id), LoggedDeletions, "inspect").deletions.entries(1)
        )
    except MemoryStoreError:  # nothing stored at all (e.g. a folder that does not exist)
        return False


def _progress(console: Console, *, disable: bool = False) -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=disable,
    )


@contextmanager
def progress_bars(
    enabled: bool = True, *, increments: bool = False
) -> Iterator[Callable[[str, int, int], None]]:
    """Progress bars on stderr (stdout stays clean for ``--json``), one per task name.

    Yields ``advance(name, done, total)``; with ``increments`` the second number is how far
    the task moved since the last call (the benchmark runner's contract), not how far it is.
    """
    bars = _progress(Console(stderr=True), disable=not enabled)
    tasks: dict[str, TaskID] = {}

    def advance(name: str, done: int, total: int) -> None:
        if name not in tasks:
            tasks[name] = bars.add_task(name, total=total)
        if increments:
            bars.advance(tasks[name], done)
        else:
            bars.update(tasks[name], completed=done, total=total)

    with bars:
        yield advance


# --- inspect ------------------------------------------------------------------------------


def memory_tables(memory: Memory, recent: int = 5) -> list[Table]:
    """Core blocks, tier counts and the latest messages and passages, as rich tables."""
    blocks = memory.core.blocks()
    recall_count = memory.recall.count()
    archival_count = memory.archival.count()
    tags = memory.archival.tags()
    last_modified = memory.core.last_modified()
    messages = require(memory.recall, MessageListing, "inspect").latest(recent)
    passages = require(memory.archival, PassageListing, "inspect").recent(recent)
    deletions = require(memory, LoggedDeletions, "inspect").deletions.entries(recent)
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
        print_error(str(exc))
        return 2
    try:
        if not check_agent(backend, place, agent_id, forgotten_ok=True):
            return 1
        memory = backend.open(agent_id)
        for table in memory_tables(memory, recent):
            console.print(table)
    except MemoryStoreError as exc:
        print_error(str(exc))
        return 2
    finally:
        backend.close()
    return 0


# --- chat ---------------------------------------------------------------------------------


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
        print_error(str(exc))
        return 2
    if embeddings is None:
        print_error("reembed needs an embedding model: with 'none' there is nothing to embed")
        return 2
    try:
        backend = open_backend(root, database_url=database_url, read_only=True)
        try:
            if not check_agent(backend, where(root, database_url), agent_id):
                return 1
            require(backend, Reembeddable, "reembed")
        finally:
            backend.close()
    except MemoryStoreError as exc:
        print_error(str(exc))
        return 2
    model, dim = embedding_identity(embeddings)
    started = time.monotonic()
    with _progress(console) as bars:

        def advance(task_name: str) -> Callable[[int, int], None]:
            task = bars.add_task(task_name, total=None)
            return lambda done, total: bars.update(task, completed=done, total=total)

        try:
            messages, passages = reembed_agent(backend, agent_id, embeddings, advance)
        finally:
            backend.close()
    console.print(
        f"Re-embedded {messages} messages and {passages} passages of agent '{escape(agent_id)}' "
        f"with {escape(model)} (dim {dim}) in {time.monotonic() - started:.1f} s.",
        soft_wrap=True,
    )
    return 0


# --- serve --------------------------------------------------------------------------------
