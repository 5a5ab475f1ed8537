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
cloud access key) is reported as changed with its content withheld (`watch_text`). The
events reach the agent through a sink (`watch_sinks`): `ServerSink` posts a run to a
``langgraph dev`` server with ``langgraph_sdk``; `LocalSink` runs the graph in this process
on the agent's data directory.

A watched folder that is deleted is reported once and watched again when it comes back
(notify backends stop seeing a folder once it is gone, so the watch restarts on it).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph_memgpt.events import MAX_EVENTS
from langgraph_memgpt.osutil import utc_now
from langgraph_memgpt.watch_sinks import LocalSink, ServerSink, Sink
from langgraph_memgpt.watch_sinks import watch_thread as watch_thread
from langgraph_memgpt.watch_text import (
    changed_lines,
    looks_like_credential,
    looks_like_secret,
    opening_lines,
    read_text,
    size_text,
)

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

SOURCE = "watcher"
MAX_SNAPSHOTS = 2000
"""Files whose text is kept at most (the first found under the paths at start)."""
MAX_SNAPSHOT_CHARS = 16 * 1024 * 1024
"""All kept text together: a folder of many large files must not fill the memory."""


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
            text = read_text(path)
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
        new = read_text(path)
        if new is None:
            self._forget(path)
            return f"{where} was {kind} ({size_text(path)}, not shown: binary or too large)."
        if looks_like_secret(new) or (old is not None and looks_like_secret(old)):
            self._forget(path)
            return f"{where} was {kind}: it looks like it holds a secret, content withheld."
        self._keep(path, new)
        if old is None:
            shown = opening_lines(new)
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
