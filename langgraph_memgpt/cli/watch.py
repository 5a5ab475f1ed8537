"""``langgraph-memgpt watch``: file changes under folders become system events for an agent.

MemGPT's production guidance has the host tell the agent when "a user modifies a local
configuration file", so core memory keeps up without anyone prompting it. `Watcher` watches
paths with the ``watchfiles`` library (inotify and its equivalents, polling where they are
missing), debounced so a save that touches a file three times is one change, and turns each
batch into events (`langgraph_memgpt.events`): one per changed file, naming it, with its
changed lines (a bounded diff against the text it had) or a short summary.

Never a secret's value, never a file outside the folder (`langgraph_memgpt.tools.file_rules`, the
rule ``ingest`` follows too): a link leading out of its watched folder is not read; a file
whose name or link target looks like a credential (``.env``, ``*.pem``, ``deploy_key``,
``*secret*``, ``api-token.txt``, ``.pgpass``, anything under ``.ssh``...) is never read; a file
whose text holds a secret (a private key block, ``DB_PASSWORD=...``, a DSN with a password,
``Authorization: Bearer ...``, a cloud or service token) is reported as changed with its
content withheld; names are escaped. A storm of changes is coalesced (per path the latest;
past `MAX_DETAILED` one note names and counts the rest), never cut; a data directory or
``.langgraph_api`` folder under the watched paths (a server's, fed by ``--url``) is ignored. The
events reach the agent through a sink (`watch_sinks`): `ServerSink` posts a run to a
``langgraph dev`` server with ``langgraph_sdk``; `LocalSink` runs the graph in this process
on the agent's data directory.

A watched folder that is deleted is reported once and watched again when it comes back
(notify backends stop seeing a folder once it is gone, so the watch restarts on it).
"""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_memgpt.checkpoints import CHECKPOINT_FILENAME
from langgraph_memgpt.cli.watch_sinks import LocalSink, ServerSink, Sink
from langgraph_memgpt.cli.watch_sinks import watch_thread as watch_thread
from langgraph_memgpt.cli.watch_text import (
    MAX_DIFF_CHARS,
    changed_lines,
    opening_lines,
    read_text,
    size_text,
)
from langgraph_memgpt.osutil import utc_now
from langgraph_memgpt.stores.sqlite.db import DB_FILENAME
from langgraph_memgpt.tools.file_rules import holds_secret as looks_like_secret
from langgraph_memgpt.tools.file_rules import is_inside, looks_like_credential, shown_name

log = logging.getLogger(__name__)

SOURCE = "watcher"
MAX_DETAILED = 20
"""Events one delivery carries in detail; the rest of a storm is folded into one note
(every event costs the agent prompt tokens; a run takes at most ``events.MAX_EVENTS``)."""
MAX_PENDING = 10_000
"""Changed paths kept for delivery at most while the agent cannot be reached."""
DATA_FILES = (DB_FILENAME, CHECKPOINT_FILENAME)
"""A folder holding one of these is an agent's data directory (a server's too): its
writes are never changes, wherever it is (a server fed by ``--url`` names none)."""
SERVER_FOLDERS = frozenset({".langgraph_api"})
"""Folders a LangGraph server writes on every run (``langgraph dev``'s saved runs)."""
LOCK_NAMES = ("thread-*.lock", "serve.lock")
"""The lock files a data directory's ``locks`` folder holds (Postgres servers too)."""
_PRIORITY = {"modified": 0, "added": 1, "deleted": 2}
"""Which changes a folded delivery shows in detail first: edits of known files."""
MAX_SNAPSHOTS = 2000
"""Files whose text is kept at most (the first found under the paths at start)."""
MAX_SNAPSHOT_CHARS = 16 * 1024 * 1024
"""All kept text together: a folder of many large files must not fill the memory."""


Keyed = dict[str, tuple[int, dict[str, str]]]
"""Events by what they are about (a path), each with its `_PRIORITY`, in arrival order."""


@dataclass
class Watcher:
    """Watches ``paths`` and hands each debounced batch of changes to ``send`` as events.

    ``send`` gets a list of event dicts (``source``, ``time``, ``text``); a ``send`` that
    raises keeps its events for the next batch (per path the latest), so a server
    restarting does not lose a change. A batch of more than `MAX_DETAILED` changes is
    coalesced, never cut: edits first in detail, the rest folded into one note naming them.
    ``ignore`` holds folders never reported (the agent's own data directory, whose every
    write would be a change); any data directory or server folder under the paths is
    ignored too (`DATA_FILES`, `SERVER_FOLDERS`), such as that of a server fed by ``--url``.

    What is read follows `langgraph_memgpt.tools.file_rules`: nothing a link leads to outside its
    watched folder, no credential file (by the link's name or its target's), no text that
    holds a secret; names are escaped where they enter an event's text.
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
    max_detailed: int = MAX_DETAILED
    _texts: dict[Path, str] = field(default_factory=dict)
    _pending: Keyed = field(default_factory=dict)
    _dropped: int = 0
    _missing: set[Path] = field(default_factory=set)
    _kept_chars: int = 0
    _notes: Iterator[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.paths = [_watched(Path(p)) for p in self.paths]
        self.ignore = [Path(p).expanduser().resolve() for p in self.ignore]
        for root in self.paths:
            self._remember(root)

    def _root(self, path: Path) -> Path | None:
        """The watched folder ``path`` is found in (a watched file's own folder)."""
        for watched in self.paths:
            if path == watched and not watched.is_dir():
                return watched.parent
            if path == watched or watched in path.parents:
                return watched
        return None

    def _ignored(self, path: Path) -> bool:
        if any(path == folder or folder in path.parents for folder in self.ignore):
            return True
        root = self._root(path)
        for folder in [path, *path.parents]:
            if folder.name in SERVER_FOLDERS:
                return True
            if folder == path:
                if folder.parent.name == "locks" and any(
                    fnmatch.fnmatch(path.name, n) for n in LOCK_NAMES
                ):
                    return True
            elif any((folder / name).is_file() for name in DATA_FILES):
                return True
            if root is None or folder == root:
                return False
        return False

    def _readable(self, path: Path) -> bool:
        """Whether ``path``'s content may be read: inside its folder, not a credential."""
        root = self._root(path)
        return (
            root is not None
            and not self._ignored(path)
            and not looks_like_credential(path)
            and is_inside(path, root)
        )

    def _remember(self, root: Path) -> None:
        """Keep the text of the files under ``root`` now, so a first change has a diff."""
        files = [root] if root.is_file() else _walk(root)
        for path in files:
            if len(self._texts) >= MAX_SNAPSHOTS:
                return
            if not self._readable(path):
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
        where = f"{shown_name(path.name)} (in {shown_name(path.parent)})"
        if kind == "deleted":
            self._forget(path)
            return f"{where} was deleted."
        root = self._root(path)
        if root is not None and not is_inside(path, root):
            self._forget(path)
            return (
                f"{where} was {kind}: it leads outside the watched folder "
                f"({shown_name(root)}), not read."
            )
        if looks_like_credential(path):
            self._forget(path)
            return f"{where} was {kind}: it looks like a credential file, content withheld."
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

    def _described(self, changes: Iterable[tuple[Any, str]]) -> Keyed:
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
        return {
            str(path): (
                _PRIORITY[kind],
                {"source": SOURCE, "time": now, "text": self.describe(kind, path)},
            )
            for path, kind in sorted(kinds.items())
        }

    def events_for(self, changes: Iterable[tuple[Any, str]]) -> list[dict[str, str]]:
        """The events a batch of changes makes, coalesced as they would be delivered."""
        return self._fold(self._described(changes))

    def _fold(self, keyed: Mapping[str, tuple[int, dict[str, str]]]) -> list[dict[str, str]]:
        """At most `max_detailed` events: the first by priority whole, the rest one note.

        The note counts the folded changes and names them by folder (name and kind), as
        far as `MAX_DIFF_CHARS` allows; their content is left for the agent to read.
        """
        items = list(keyed.items())
        if len(items) <= self.max_detailed and not self._dropped:
            return [event for _, (_, event) in items]
        order = sorted(range(len(items)), key=lambda i: (items[i][1][0], i))
        room = max(1, self.max_detailed - 1)
        shown = sorted(order[:room])
        folded = [items[i] for i in order[room:]]
        by_folder: dict[str, list[str]] = {}
        for key, (priority, event) in folded:
            if key.startswith("#"):  # a note about a watched path: its first line
                by_folder.setdefault("", []).append(event["text"].split("\n", 1)[0])
                continue
            path = Path(key)
            kind = next((k for k, p in _PRIORITY.items() if p == priority), "changed")
            by_folder.setdefault(shown_name(path.parent), []).append(
                f"{shown_name(path.name)} ({kind})"
            )
        lines: list[str] = []
        used = named = 0
        for folder, names in by_folder.items():
            head = f"* in {folder}: " if folder else "* "
            taken: list[str] = []
            for name in names:
                if used + len(head) + len(name) + 2 > MAX_DIFF_CHARS:
                    break
                taken.append(name)
                used += len(name) + 2
            if not taken:
                break
            lines.append(head + ", ".join(taken))
            used += len(head)
            named += len(taken)
            if len(taken) < len(names):
                break
        if named < len(folded):
            lines.append(f"* ... and {len(folded) - named} more")
        count = len(folded) + self._dropped
        earlier = (
            f" ({self._dropped} earlier ones could not be kept while the agent was unreachable)"
            if self._dropped
            else ""
        )
        note = {
            "source": SOURCE,
            "time": max(e["time"] for _, (_, e) in items) if items else utc_now("seconds"),
            "text": f"{count} more changes were folded into this note, too many at once to "
            f"show each{earlier}; read the files for their content:\n" + "\n".join(lines),
        }
        return [*(items[i][1][1] for i in shown), note]

    def _deliver(
        self, events: Mapping[str, tuple[int, dict[str, str]]] | list[dict[str, str]]
    ) -> None:
        if isinstance(events, list):  # notes about the watched paths: each kept, shown first
            events = {f"#note{next(self._notes)}": (-1, e) for e in events}
        for key, item in events.items():
            self._pending.pop(key, None)  # per path the latest, in the order they came
            self._pending[key] = item
        while len(self._pending) > MAX_PENDING:
            self._pending.pop(next(iter(self._pending)))
            self._dropped += 1
        if not self._pending:
            return
        batch = self._fold(self._pending)
        try:
            self.send(batch)
        except Exception as exc:  # noqa: BLE001 - a failed delivery must not stop the watch
            log.warning("could not deliver %d event(s), will retry: %s", len(batch), exc)
            return
        self._pending = {}
        self._dropped = 0

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
            {"source": SOURCE, "time": now, "text": f"Watched {shown_name(p)} was deleted."}
            for p in gone
        ]
        for path in back:
            self._remember(path)
            events.append(
                {"source": SOURCE, "time": now, "text": f"Watched {shown_name(path)} is back."}
            )
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
            # Gone or back since the last look: said before a watch starts on what is there,
            # so a watch is never declared live just before it is replaced.
            self._report_presence()
            targets, files = self._targets()
            if not targets:
                stop.wait(self.poll_ms / 1000)
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
                    changed = self._report_presence()
                    if not started and not changed and self.on_ready is not None:
                        self.on_ready()  # the first yield: the watch is live (and stays)
                    started = True
                    live = [(c, p) for c, p in changes if not self._under_missing(Path(p))]
                    described = self._described(live)
                    if described:
                        self._deliver(described)
                    if changed:
                        break  # watch again: a folder went (its watch is dead) or came back
            except FileNotFoundError:
                self._report_presence()  # removed between the look and the watch: look again


def _watched(path: Path) -> Path:
    """A watched path in absolute form.

    A folder's real path; a file in its folder's real path, the file itself not resolved
    (a link must lead inside that folder).
    """
    path = path.expanduser().absolute()
    if path.is_dir():
        return path.resolve()
    return path.parent.resolve() / path.name


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
    from langgraph_memgpt.cli.args import data_dir, database_url
    from langgraph_memgpt.cli.console import print_error
    from langgraph_memgpt.context import Context

    try:
        import watchfiles  # noqa: F401 - the optional extra, checked before anything starts
    except ImportError:
        print_error("watch needs watchfiles: pip install 'langgraph-memgpt[watch]'")
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
        print_error(f"watch: {type(exc).__name__}: {exc}")
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
        args.paths,
        sink,
        ignore=[folder, *args.ignore],
        debounce_ms=args.debounce_ms,
        on_ready=ready,
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
    from langgraph_memgpt.cli.args import add_memory_place, positive_int

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
    parser.add_argument(
        "--ignore",
        action="append",
        type=Path,
        default=[],
        metavar="FOLDER",
        help="a folder never reported (repeatable); data directories (memory.sqlite, "
        "checkpoints.sqlite) and .langgraph_api under PATH are ignored without it",
    )
    add_memory_place(parser)
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
