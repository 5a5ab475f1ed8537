"""``langgraph-memgpt watch``: file changes under folders become system events for an agent.

MemGPT's production guidance has the host tell the agent when "a user modifies a local
configuration file", so core memory keeps up without anyone prompting it. `Watcher` watches
paths with the ``watchfiles`` library (inotify and its equivalents, polling where they are
missing), debounced so a save that touches a file three times is one change, and turns each
batch into events (`langgraph_memgpt.events`): one per changed file, naming it, with its
changed lines (a bounded diff against the text it had) or a short summary.

Never a secret's value: a file whose name looks like a credential (``.env``, ``*.pem``,
``*key*``, ``*secret*``, ``*token*``, ``credentials*``, anything under ``.ssh``...) is never
read, and a file whose text looks like a secret (a private key block, ``password = ...``, a
cloud access key) is reported as changed with its content withheld. The events reach the
agent through a sink: `ServerSink` posts a run to a ``langgraph dev`` server with
``langgraph_sdk``; `LocalSink` runs the graph in this process on the agent's data directory.

A watched folder that is deleted is reported once and watched again when it comes back
(notify backends stop seeing a folder once it is gone, so the watch restarts on it).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import logging
import os
import re
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from langgraph_memgpt.events import MAX_EVENTS
from langgraph_memgpt.osutil import utc_now

if TYPE_CHECKING:
    from langgraph_memgpt.context import Context

log = logging.getLogger(__name__)

SOURCE = "watcher"
MAX_FILE_BYTES = 256 * 1024
"""Largest file whose text is kept for diffs; a bigger one is summarised by its size."""
MAX_SNAPSHOTS = 2000
"""Files whose text is kept at most (the first found under the paths at start)."""
MAX_SNAPSHOT_CHARS = 16 * 1024 * 1024
"""All kept text together: a folder of many large files must not fill the memory."""
MAX_DIFF_CHARS = 1500
"""The most of a diff one event carries: every event costs the agent prompt tokens."""
MAX_LINE_CHARS = 200
CREDENTIAL_NAMES = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.kdbx",
    "*.gpg",
    "*.asc",
    "*key*",
    "*secret*",
    "*token*",
    "*passw*",
    "credentials*",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
)
"""File names (case-insensitive globs) that look like credentials: never read."""
CREDENTIAL_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".docker", ".kube", "secrets"})
"""Folders whose files are all treated as credentials."""
SECRET_TEXT = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|\bsk-[A-Za-z0-9_-]{20,}"  # OpenAI-style API keys
    r"|\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\."  # JWTs
    r"|(?i:\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret)\b[\"']?\s*[:=]\s*[\"']?[^\s\"']{4,})"
)
"""Text that looks like a secret's value: the content of such a file is withheld."""


def looks_like_credential(path: Path) -> bool:
    """Whether ``path``'s name (or a folder it is in) says it holds a credential."""
    name = path.name.lower()
    if any(fnmatch.fnmatch(name, pattern) for pattern in CREDENTIAL_NAMES):
        return True
    return any(part.lower() in CREDENTIAL_DIRS for part in path.parts[:-1])


def looks_like_secret(text: str) -> bool:
    """Whether ``text`` holds something that looks like a secret's value."""
    return SECRET_TEXT.search(text) is not None


def _read_text(path: Path) -> str | None:
    """The file's text, or None: missing, unreadable, too large or not text."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _size(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError:
        return "size unknown"
    return f"{size} bytes"


def changed_lines(old: str, new: str, limit: int = MAX_DIFF_CHARS) -> str:
    """The lines that changed, ``- old`` / ``+ new``, cut to ``limit`` characters.

    No headers and no context lines: a small model reads "- output_format: json /
    + output_format: parquet" more reliably than a full unified diff.
    """
    out: list[str] = []
    used = 0
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    for line in diff:
        if line.startswith(("---", "+++", "@@")):
            continue
        text = line[1:]
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + "..."
        shown = f"{line[0]} {text}"
        if used + len(shown) + 1 > limit:
            out.append("(more changes not shown)")
            break
        out.append(shown)
        used += len(shown) + 1
    return "\n".join(out)


def _opening(text: str, limit: int = MAX_DIFF_CHARS) -> str:
    """A new file's first lines, as ``+`` lines, bounded like a diff."""
    return changed_lines("", text, limit)


@dataclass
class Watcher:
    """Watches ``paths`` and hands each debounced batch of changes to ``send`` as events.

    ``send`` gets a list of event dicts (``source``, ``time``, ``text``); a ``send`` that
    raises keeps its events for the next batch (at most `MAX_EVENTS` wait), so a server
    restarting does not lose a change. ``ignore`` holds folders never reported (the
    agent's own data directory, whose every write would be a change).
    """

    paths: Sequence[Path]
    send: Callable[[list[dict[str, str]]], None]
    ignore: Sequence[Path] = ()
    debounce_ms: int = 1600
    poll_ms: int = 500
    """How often a missing folder is looked for, and the stop flag checked."""
    force_polling: bool | None = None
    on_ready: Callable[[], None] | None = None
    """Called each time the watch (re)starts, once it is live: changes from then on are seen."""
    _texts: dict[Path, str] = field(default_factory=dict)
    _pending: list[dict[str, str]] = field(default_factory=list)
    _missing: set[Path] = field(default_factory=set)
    _kept_chars: int = 0

    def __post_init__(self) -> None:
        self.paths = [Path(p).expanduser().resolve() for p in self.paths]
        self.ignore = [Path(p).expanduser().resolve() for p in self.ignore]
        for root in self.paths:
            self._remember(root)

    def _ignored(self, path: Path) -> bool:
        return any(path == folder or folder in path.parents for folder in self.ignore)

    def _remember(self, root: Path) -> None:
        """Keep the text of the files under ``root`` now, so a first change has a diff."""
        files = [root] if root.is_file() else _walk(root)
        for path in files:
            if len(self._texts) >= MAX_SNAPSHOTS:
                return
            if self._ignored(path) or looks_like_credential(path):
                continue
            text = _read_text(path)
            if text is not None and not looks_like_secret(text):
                self._keep(path, text)

    def _keep(self, path: Path, text: str) -> None:
        """Keep ``text`` as ``path``'s last known text, within the bounds on count and size."""
        held = self._kept_chars - len(self._texts.get(path, ""))
        if (len(self._texts) >= MAX_SNAPSHOTS and path not in self._texts) or (
            held + len(text) > MAX_SNAPSHOT_CHARS
        ):
            self._forget(path)  # no diff next time: the change is summarised instead
            return
        self._texts[path] = text
        self._kept_chars = held + len(text)

    def _forget(self, path: Path) -> None:
        self._kept_chars -= len(self._texts.pop(path, ""))

    def describe(self, kind: str, path: Path) -> str:
        """The event text for one changed file (``kind``: added, modified or deleted)."""
        where = f"{path.name} (in {path.parent})"
        if looks_like_credential(path):
            self._forget(path)
            return f"{where} was {kind}: it looks like a credential file, content withheld."
        if kind == "deleted":
            self._forget(path)
            return f"{where} was deleted."
        if path.is_dir():
            self._remember(path)
            return f"Folder {where} was {kind}."
        old = self._texts.get(path)
        new = _read_text(path)
        if new is None:
            self._forget(path)
            return f"{where} was {kind} ({_size(path)}, not shown: binary or too large)."
        if looks_like_secret(new) or (old is not None and looks_like_secret(old)):
            self._forget(path)
            return f"{where} was {kind}: it looks like it holds a secret, content withheld."
        self._keep(path, new)
        if old is None:
            shown = _opening(new)
            return f"{where} was {kind}." + (f" Its lines:\n{shown}" if shown else " It is empty.")
        if old == new:
            return f"{where} was {kind} (same text as before)."
        return f"{where} was modified. Changed lines:\n{changed_lines(old, new)}"

    def events_for(self, changes: Iterable[tuple[Any, str]]) -> list[dict[str, str]]:
        """One event per changed path of a batch (a file written three times is one event)."""
        from watchfiles import Change

        kinds: dict[Path, str] = {}
        for change, raw in changes:
            path = Path(raw)
            if self._ignored(path):
                continue
            kind = {Change.added: "added", Change.modified: "modified"}.get(change, "deleted")
            if kind == "deleted" and path.exists():
                kind = "modified"  # deleted and written again in one batch (an editor's save)
            elif kinds.get(path) == "added" and kind == "modified":
                kind = "added"
            kinds[path] = kind
        now = utc_now("seconds")
        return [
            {"source": SOURCE, "time": now, "text": self.describe(kind, path)}
            for path, kind in sorted(kinds.items())
        ]

    def _deliver(self, events: list[dict[str, str]]) -> None:
        self._pending = [*self._pending, *events][-MAX_EVENTS:]
        if not self._pending:
            return
        try:
            self.send(list(self._pending))
        except Exception as exc:  # noqa: BLE001 - a failed delivery must not stop the watch
            log.warning("could not deliver %d event(s), will retry: %s", len(self._pending), exc)
            return
        self._pending = []

    def _targets(self) -> tuple[list[Path], dict[Path, Path]]:
        """The folders to watch now, and for each watched file the folder standing in for it.

        A file is watched through its folder: an editor saving by rename replaces the file,
        and a watch on the old one would see nothing more.
        """
        present: list[Path] = []
        files: dict[Path, Path] = {}
        for root in self.paths:
            if root.is_file():
                files[root] = root.parent
                present.append(root.parent)
            elif root.is_dir():
                present.append(root)
        return sorted(set(present)), files

    def _filter(self, files: dict[Path, Path], folders: list[Path]) -> Callable[[Any, str], bool]:
        """What the watch reports: watched files, and what ``watchfiles`` keeps under folders."""
        import watchfiles

        default = watchfiles.DefaultFilter()

        def keep(change: Any, raw: str) -> bool:
            path = Path(raw)
            if path in files:
                return True
            under = any(path == r or r in path.parents for r in folders)
            return under and not self._ignored(path) and default(change, raw)

        return keep

    def _under_missing(self, path: Path) -> bool:
        """A change inside a watched path that is gone: its deletion is reported once, whole."""
        return any(path == m or m in path.parents for m in self._missing)

    def _gone_and_back(self) -> tuple[list[Path], list[Path]]:
        """Watched paths that disappeared, and ones that came back, since the last look."""
        now_missing = {p for p in self.paths if not p.exists()}
        gone = sorted(now_missing - self._missing)
        back = sorted(self._missing - now_missing)
        self._missing = now_missing
        return gone, back

    def _report_presence(self) -> bool:
        """Report paths deleted or re-created; True when the set of watched paths changed."""
        gone, back = self._gone_and_back()
        now = utc_now("seconds")
        events = [
            {"source": SOURCE, "time": now, "text": f"Watched {p} was deleted."} for p in gone
        ]
        for path in back:
            self._remember(path)
            events.append({"source": SOURCE, "time": now, "text": f"Watched {path} is back."})
        if events:
            self._deliver(events)
        return bool(gone or back)

    def run(self, stop: threading.Event | None = None) -> None:
        """Watch until ``stop`` is set (or Ctrl-C); survives watched folders disappearing."""
        import watchfiles

        stop = stop or threading.Event()
        self._missing = {p for p in self.paths if not p.exists()}
        for path in sorted(self._missing):
            log.warning("%s does not exist (yet): watching for it", path)
        while not stop.is_set():
            targets, files = self._targets()
            if not targets:
                stop.wait(self.poll_ms / 1000)
                self._report_presence()
                continue
            keep = self._filter(files, [r for r in self.paths if r not in files])
            started = False
            try:
                for changes in watchfiles.watch(
                    *targets,
                    watch_filter=keep,
                    debounce=self.debounce_ms,
                    rust_timeout=self.poll_ms,
                    yield_on_timeout=True,
                    stop_event=stop,
                    force_polling=self.force_polling,
                ):
                    if not started and self.on_ready is not None:
                        self.on_ready()  # the first yield: the watch is live
                    started = True
                    changed = self._report_presence()
                    live = [(c, p) for c, p in changes if not self._under_missing(Path(p))]
                    events = self.events_for(live)
                    if events:
                        self._deliver(events)
                    if changed:
                        break  # watch again: a folder went (its watch is dead) or came back
            except FileNotFoundError:
                self._report_presence()  # removed between the look and the watch: look again


def _walk(root: Path) -> list[Path]:
    """Files under ``root``, skipping the folders ``watchfiles`` ignores too (.git, .venv)."""
    skipped = {".git", ".hg", ".svn", ".venv", "node_modules", "__pycache__", ".mypy_cache"}
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skipped)
        found.extend(Path(folder) / n for n in sorted(names))
        if len(found) >= MAX_SNAPSHOTS:
            break
    return found


class Sink(Protocol):
    """Where a batch of events goes: a run of the agent."""

    def __call__(self, events: list[dict[str, str]]) -> None:
        """Deliver ``events`` as one run; raise if they did not arrive."""


def watch_thread(agent_id: str) -> str:
    """The watcher's own thread of an agent: a UUID (servers want one), the same every time.

    Its events stay out of the user's conversations; what they change in memory (core,
    archival) is the agent's, seen from every thread.
    """
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"langgraph-memgpt:watch:{agent_id}"))


@dataclass
class ServerSink:
    """Posts each batch as a run on a LangGraph server (``langgraph dev``, a deployment)."""

    url: str
    agent_id: str
    thread_id: str
    graph_id: str = "memgpt"
    api_key: str | None = None

    def __post_init__(self) -> None:
        from langgraph_sdk import get_sync_client

        self.client = get_sync_client(url=self.url, api_key=self.api_key)
        self.client.threads.create(thread_id=self.thread_id, if_exists="do_nothing")

    def __call__(self, events: list[dict[str, str]]) -> None:
        """One run with the events; waits for it (the next batch follows it)."""
        payload: Any = {"events": events}
        output = self.client.runs.wait(
            self.thread_id,
            self.graph_id,
            input=payload,
            context={"agent_id": self.agent_id},
            multitask_strategy="enqueue",
        )
        report(output)


@dataclass
class LocalSink:
    """Runs the graph in this process on the agent's memory and checkpoints (``--data-dir``)."""

    ctx: Context
    thread_id: str
    database_url: str = ""
    _stack: ExitStack = field(default_factory=ExitStack)

    def __post_init__(self) -> None:
        from langgraph_memgpt.checkpoints import open_checkpointer
        from langgraph_memgpt.graph import build_graph
        from langgraph_memgpt.stores.backends import open_backend

        data_dir = Path(self.ctx.data_dir).expanduser()
        backend = open_backend(
            data_dir,
            database_url=self.database_url,
            embedding_model=self.ctx.embedding_model,
            core_block_limit=self.ctx.core_block_limit,
        )
        self._stack.callback(backend.close)
        backend.open(self.ctx.agent_id).core.ensure_defaults(
            persona=self.ctx.persona, human=self.ctx.human, char_limit=self.ctx.core_block_limit
        )
        saver = self._stack.enter_context(open_checkpointer(data_dir, self.database_url))
        if self.database_url:
            saver.setup()
        self.graph = build_graph(memory=backend).compile(checkpointer=saver)

    def __call__(self, events: list[dict[str, str]]) -> None:
        """One run of the graph with the events."""
        config: Any = {"configurable": {"thread_id": self.thread_id}}
        payload: Any = {"events": events}
        report(self.graph.invoke(payload, config, context=self.ctx))

    def close(self) -> None:
        """Close the checkpointer and the memory."""
        self._stack.close()


def report(output: Any) -> None:
    """Log what a run did with the events (the memory edits of its ``event_outcome``)."""
    outcome = output.get("event_outcome") if isinstance(output, dict) else None
    if not isinstance(outcome, dict):
        log.info("events delivered")
        return
    edits = outcome.get("edits") or []
    log.info(
        "%d event(s) delivered; memory edits: %s",
        len(outcome.get("events") or []),
        "; ".join(f"{e.get('tool')} {e.get('args')}" for e in edits) or "none",
    )


def cmd_watch(args: argparse.Namespace) -> int:
    """Run ``watch``: until Ctrl-C; 2 when the agent's memory or the server cannot be used."""
    from langgraph_memgpt.cli_args import data_dir, database_url
    from langgraph_memgpt.context import Context

    try:
        import watchfiles  # noqa: F401 - the optional extra, checked before anything starts
    except ImportError:
        print(
            "langgraph-memgpt watch: error: needs watchfiles: pip install "
            "'langgraph-memgpt[watch]'",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    thread_id = args.thread or watch_thread(args.agent)
    folder = data_dir(args)
    sink: Sink
    closing: Callable[[], None] = lambda: None  # noqa: E731 - nothing to close for a server
    try:
        if args.url:
            sink = ServerSink(args.url, args.agent, thread_id, args.graph, args.api_key)
        else:
            ctx = Context(agent_id=args.agent, model=args.model, data_dir=str(folder))
            local = LocalSink(ctx, thread_id, database_url(args))
            sink, closing = local, local.close
    except Exception as exc:  # noqa: BLE001 - a server or memory that cannot be used: one line
        print(f"langgraph-memgpt watch: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    where = args.url or f"the agent's memory in {folder}"
    said: list[bool] = []

    def ready() -> None:
        if not said:  # once the watch is live: a change from now on is seen
            print(
                f"Watching {', '.join(map(str, args.paths))} for agent '{args.agent}' ({where}).",
                flush=True,
            )
            said.append(True)

    watcher = Watcher(
        args.paths, sink, ignore=[folder], debounce_ms=args.debounce_ms, on_ready=ready
    )
    try:
        watcher.run()
    except KeyboardInterrupt:
        pass
    finally:
        closing()
    return 0


def add_watch_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``watch`` on the CLI."""
    from langgraph_memgpt.cli_args import add_data_dir, add_database_url, positive_int

    parser = subparsers.add_parser(
        "watch",
        help="turn file changes under folders into system events for an agent",
        description="Each debounced change of a file under PATH becomes a system event for the "
        "agent (the file's name and changed lines; a credential's content is never sent). "
        "With --url the events go to that LangGraph server, else the agent runs here.",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="folders or files")
    parser.add_argument("--agent", required=True, help="agent id")
    parser.add_argument("--url", help="LangGraph server (e.g. http://127.0.0.1:2024)")
    parser.add_argument("--api-key", default=None, help="the server's API key, if it needs one")
    parser.add_argument("--graph", default="memgpt", help="graph id on the server (memgpt)")
    parser.add_argument("--thread", help="thread id for the events (default: the watcher's own)")
    parser.add_argument(
        "--model", default="auto", help="without --url: the model, as for chat (default: auto)"
    )
    parser.add_argument(
        "--debounce-ms", type=positive_int, default=1600, help="changes grouped (default 1600)"
    )
    add_data_dir(parser)
    add_database_url(parser)
    parser.set_defaults(func=cmd_watch)


__all__ = [
    "add_watch_command",
    "cmd_watch",
    "LocalSink",
    "ServerSink",
    "Watcher",
    "changed_lines",
    "looks_like_credential",
    "looks_like_secret",
    "watch_thread",
]
