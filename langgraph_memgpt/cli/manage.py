"""Memory housekeeping from the terminal: ``forget``, ``export``, ``import`` and ``ingest``.

Each works on the embedded memory in a data directory (``memory.sqlite`` and the FAISS
caches beside it), or on the Postgres database of ``database_url`` (``--database-url`` /
``$MEMGPT_DATABASE_URL``), opened with `stores.backends.open_backend`; and on the threads'
checkpoints beside that memory (``checkpoints.sqlite``, or Postgres' checkpoint tables:
what ``chat`` and ``serve`` write), through the memory protocols and ``forget``/``transfer``.
Messages go to stderr, results to stdout; a failure is one line and a non-zero exit code.
"""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from langgraph_memgpt.checkpoints import existing_threads
from langgraph_memgpt.cli.console import check_agent, print_error, progress_bars
from langgraph_memgpt.ops.export_file import ExportFormatError, read_export
from langgraph_memgpt.ops.forget import (
    ForgetRefusedError,
    ForgetReport,
    NothingToForgetError,
    clean_server_state,
    forget_agent,
    forget_messages,
    forget_passage,
    forget_thread,
)
from langgraph_memgpt.ops.ingest import (
    MAX_CHUNK_CHARS,
    IngestError,
    document_text,
    expand_paths,
    ingest_file,
)
from langgraph_memgpt.ops.transfer import (
    ImportConflictError,
    ImportMode,
    export_agent,
    import_agent,
)
from langgraph_memgpt.stores.backends import close_backend, open_backend, recorded_embedding, where
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.text import one_line
from langgraph_memgpt.stores.types import MemoryStoreError


def cli_actor() -> str:
    """Who runs the command, as the deletion log records it (``user:<login>``)."""
    try:
        return f"user:{getpass.getuser()}"
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "user"


def _open(
    data_dir: Path, database_url: str, *, embedding_model: str = "none", read_only: bool = False
) -> MemoryBackend | None:
    """The memory of the data directory or the database; None (said why) when unusable."""
    try:
        return open_backend(
            data_dir,
            database_url=database_url,
            embedding_model=embedding_model,
            read_only=read_only,
        )
    except MemoryStoreError as exc:  # a URL that is not a Postgres one, a missing extra
        print_error(str(exc))
        return None


def _memory(backend: MemoryBackend, agent_id: str) -> Memory | None:
    """The agent's memory; None (said why) for an unknown embedding model or a bad id."""
    try:
        return backend.open(agent_id)
    except ValueError as exc:  # an unknown embedding model, an empty agent id
        print_error(str(exc))
        return None


@contextmanager
def _agent_memory(
    data_dir: str | Path, database_url: str, agent_id: str, embedding_model: str
) -> Iterator[Memory | None]:
    """The agent's memory, its backend closed after; None (said why) when it cannot open."""
    backend = _open(Path(data_dir).expanduser(), database_url, embedding_model=embedding_model)
    if backend is None:
        yield None
        return
    try:
        yield _memory(backend, agent_id)
    finally:
        close_backend(backend)


# -- forget ----------------------------------------------------------------------------


def forget(
    data_dir: str | Path,
    agent_id: str,
    *,
    passage: int | None = None,
    message: str | None = None,
    thread: str | None = None,
    everything: bool = False,
    embedding_model: str = "minilm",
    database_url: str = "",
    console: Console | None = None,
) -> int:
    """Delete one passage, one message, one thread or the whole agent.

    The memory is in ``data_dir``, or in the Postgres database of ``database_url`` when set;
    the threads' checkpoints are cleaned where they are kept beside it
    (`checkpoints.existing_threads`). The memory is opened with its embedding model, so the
    messages around a deleted one get their context vectors recomputed (without a model
    they would lose them).

    Returns:
        0 when something was deleted, 1 when the agent or the item does not exist.
    """
    console = console or Console()
    root = Path(data_dir).expanduser()
    if sum(x is not None for x in (passage, message, thread)) + everything != 1:
        print_error("say what to forget: one of --passage, --message, --thread or --all")
        return 2
    backend = _open(root, database_url, embedding_model=embedding_model)
    if backend is None:
        return 2
    actor = cli_actor()
    try:
        if not check_agent(backend, where(root, database_url), agent_id):
            return 1
        memory = _memory(backend, agent_id)
        if memory is None:
            return 2
        with existing_threads(root, database_url) as saver:
            report: ForgetReport
            if passage is not None:
                report = forget_passage(memory, passage, actor=actor, checkpointer=saver)
            elif message is not None:
                report = forget_messages(memory, [message], actor=actor, checkpointer=saver)
            elif thread is not None:
                report = forget_thread(memory, thread, actor=actor, checkpointer=saver)
            else:
                report = forget_agent(memory, actor=actor, checkpointer=saver)
    except (NothingToForgetError, ForgetRefusedError) as exc:
        print_error(str(exc))
        return 1
    finally:
        close_backend(backend)
    deleted = [thread] if thread in report.checkpoints else report.checkpoints if everything else []
    note = clean_server_state(root, report, deleted)
    if note:
        report.notes.append(note)
    console.print(f"Agent '{escape(agent_id)}': {escape(report.describe())}", soft_wrap=True)
    return 0


# -- export / import -------------------------------------------------------------------


def export(
    data_dir: str | Path,
    agent_id: str,
    out: str | Path,
    console: Console | None = None,
    *,
    database_url: str = "",
) -> int:
    """Write an agent's memory to one JSON Lines file; 1 when the agent has no memory.

    The memory is in ``data_dir``, or in the Postgres database of ``database_url`` when set.
    """
    console = console or Console()
    root = Path(data_dir).expanduser()
    # Read-only and without a model: exporting needs no embeddings (vectors stay behind).
    backend = _open(root, database_url, read_only=True)
    if backend is None:
        return 2
    try:
        if not check_agent(backend, where(root, database_url), agent_id):
            return 1
        embedding = recorded_embedding(backend, agent_id)
        counts = export_agent(backend.open(agent_id), out, embedding=embedding)
    finally:
        close_backend(backend)
    model = f", vectors made with {embedding.get('model')}" if embedding else ""
    console.print(
        f"Exported agent '{escape(agent_id)}' to {escape(str(out))}: {counts['block']} core "
        f"blocks ({counts['block_history']} edits), {counts['message']} messages, "
        f"{counts['passage']} passages{escape(model)}.",
        soft_wrap=True,
    )
    return 0


def import_file(
    path: str | Path,
    data_dir: str | Path,
    agent_id: str,
    *,
    embedding_model: str = "minilm",
    mode: ImportMode = "new",
    progress: bool = True,
    database_url: str = "",
    console: Console | None = None,
) -> int:
    """Restore an export under ``agent_id``; 1 (nothing written) for a bad file or a taken id.

    Into the memory in ``data_dir``, or the Postgres database of ``database_url`` when set.
    """
    console = console or Console()
    try:
        read_export(path)  # checked before the memory (and its model) is even opened
    except ExportFormatError as exc:
        print_error(f"{exc}; nothing was imported")
        return 1
    except OSError as exc:
        print_error(f"cannot read {path}: {exc.strerror or exc}; nothing was imported")
        return 1
    try:
        with _agent_memory(data_dir, database_url, agent_id, embedding_model) as memory:
            if memory is None:
                return 2
            target = _model_of(memory)
            with progress_bars(progress) as advance:
                report = import_agent(memory, path, mode=mode, progress=advance)
    except (ExportFormatError, ImportConflictError) as exc:
        print_error(f"{exc}; nothing was imported")
        return 1
    source = report.source_embedding or {}
    embedded = f"embedded with {target}" if target else "no embedding model: words-only search"
    if source.get("model") and target and source.get("model") != target:
        embedded = f"re-embedded with {target} (the file was made with {source.get('model')})"
    console.print(
        f"Imported agent '{escape(report.source_agent)}' from {escape(str(path))} as "
        f"'{escape(agent_id)}': {report.blocks} core blocks ({report.history} edits), "
        f"{report.messages_new} of {report.messages_total} messages new, "
        f"{report.passages_new} of {report.passages_total} passages new; {escape(embedded)}.",
        soft_wrap=True,
    )
    for label, owner in report.attached.items():
        console.print(f"Block '{escape(label)}' is shared again: attached from '{escape(owner)}'.")
    for label, owner in report.copied.items():
        console.print(
            f"Block '{escape(label)}' was shared from '{escape(owner)}'; it is not attached "
            "(the owner has no such block here, or the file is not this agent's own export "
            "from this memory): restored as the agent's private copy.",
            soft_wrap=True,
        )
    for label in report.kept:
        console.print(
            f"Block '{escape(label)}' kept as the agent had it (read-only, shared with it, "
            "or --merge); the file's version was not written.",
            soft_wrap=True,
        )
    if report.collisions:
        console.print(
            f"{len(report.collisions)} item(s) the agent already had with other content were "
            "kept as the agent has them; the file's version was not written:",
            soft_wrap=True,
        )
        for line in report.collisions[:_SHOWN_COLLISIONS]:
            console.print(f"  {escape(line)}", soft_wrap=True)
        if len(report.collisions) > _SHOWN_COLLISIONS:
            console.print(f"  ... and {len(report.collisions) - _SHOWN_COLLISIONS} more")
    return 0


_SHOWN_COLLISIONS = 20
"""Collisions an import names one by one (the rest are counted)."""


def _model_of(memory: Memory) -> str | None:
    from langgraph_memgpt.stores.embeddings import embedding_identity

    embeddings: Any = getattr(memory.archival, "embeddings", None)
    return None if embeddings is None else embedding_identity(embeddings)[0]


# -- ingest ----------------------------------------------------------------------------


def ingest(
    paths: list[str | Path],
    data_dir: str | Path,
    agent_id: str,
    *,
    embedding_model: str = "minilm",
    max_chars: int = MAX_CHUNK_CHARS,
    progress: bool = True,
    database_url: str = "",
    console: Console | None = None,
) -> int:
    """Put documents into an agent's archival memory; 1 when a file cannot be ingested.

    The memory is in ``data_dir``, or in the Postgres database of ``database_url`` when set.

    Every file is read and chunked before anything is written, so a bad one among many
    stops the command before it stored half of them.
    """
    console = console or Console()
    if max_chars < 100:
        print_error(f"--chunk-chars must be at least 100, got {max_chars}")
        return 2
    try:
        files = expand_paths(paths)
        for path in files:
            document_text(path)
    except IngestError as exc:
        print_error(f"{exc}; nothing was ingested")
        return 1
    if not files:
        print_error("no text, Markdown or HTML files there; nothing was ingested")
        return 1
    with _agent_memory(data_dir, database_url, agent_id, embedding_model) as memory:
        if memory is None:
            return 2
        with progress_bars(progress) as advance:
            reports = [
                ingest_file(memory, path, max_chars=max_chars, actor=cli_actor(), progress=advance)
                for path in files
            ]
    for report in reports:
        replaced = f", {report.replaced} old chunks replaced" if report.replaced else ""
        withheld = (
            f", {report.withheld} secret value(s) withheld ([secret withheld] in their place)"
            if report.withheld
            else ""
        )
        shown = escape(one_line(str(report.path)))
        console.print(
            f"{shown}: {report.chunks} chunks, {report.added} new{replaced}{withheld}",
            soft_wrap=True,
        )
    return 0


__all__ = ["cli_actor", "export", "forget", "import_file", "ingest"]
