"""``langgraph-memgpt retention``: set, list, remove and apply archival retention rules.

Works on the embedded memory in a data directory or on Postgres (``--database-url``),
through the memory protocols (``retention``). ``apply`` without ``--agent`` applies every
agent's rules, e.g. from a system cron beside ``langgraph dev``.
"""

from __future__ import annotations

import argparse
import json
from contextlib import AbstractContextManager
from typing import Any

from rich.console import Console
from rich.markup import escape

from langgraph_memgpt.checkpoints import existing_threads
from langgraph_memgpt.cli.args import add_memory_place, data_dir, database_url
from langgraph_memgpt.cli.console import print_error
from langgraph_memgpt.ops.forget import clean_server_state
from langgraph_memgpt.ops.retention import RetentionRuleError, apply_retention, rule, rule_view
from langgraph_memgpt.stores.backends import close_backend, open_backend
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.capabilities import RetentionRules, require


def _backend(args: argparse.Namespace) -> MemoryBackend:
    # No embedding model: forgetting a passage needs none (its vectors go by id).
    return open_backend(data_dir(args), database_url=database_url(args), embedding_model="none")


def _apply(args: argparse.Namespace, backend: MemoryBackend, agents: list[str]) -> int:
    """Apply each agent's rules in turn; one agent that fails stops none of the others.

    The threads' checkpoints are opened too (the data directory's, or Postgres'), so a
    forgotten passage leaves them as it leaves ``forget --passage``; and so is
    ``langgraph dev``'s saved copy of runs in the data directory.

    Returns 0, or 1 when an agent's rules could not be applied (each named on stderr).
    """
    with _checkpoints(args) as saver:
        return _apply_each(args, backend, agents, saver)


def _checkpoints(args: argparse.Namespace) -> AbstractContextManager[Any]:
    """The threads' checkpointer of the data directory or database (None: it has none)."""
    return existing_threads(data_dir(args), database_url(args))


def _apply_each(
    args: argparse.Namespace, backend: MemoryBackend, agents: list[str], saver: Any
) -> int:
    console = Console()
    reports: list[dict[str, object]] = []
    failed = 0
    root = data_dir(args)
    for agent in agents:
        try:
            report = apply_retention(backend.open(agent), checkpointer=saver)
            # `serve`'s own copy of threads in the data directory (Postgres ones too).
            for erased in report.reports:
                note = clean_server_state(root, erased)
                if note:
                    print_error(note)
                    break
        except Exception as exc:  # noqa: BLE001 - named, then the next agent's rules run
            failed += 1
            print_error(f"agent '{agent}': retention not applied: {type(exc).__name__}: {exc}")
            reports.append({"agent_id": agent, "error": f"{type(exc).__name__}: {exc}"})
            continue
        reports.append(report.as_dict())
        if not args.json:
            console.print(escape(report.describe()), soft_wrap=True)
    if args.json:
        print(json.dumps(reports))
    return 1 if failed else 0


def cmd_retention(args: argparse.Namespace) -> int:
    """Run ``retention <action>``; 0 on success, 1 for nothing to remove, 2 for bad input."""
    console = Console()
    backend = _backend(args)
    try:
        if args.action == "apply":
            return _apply(args, backend, [args.agent] if args.agent else backend.agents())
        if not args.agent:
            print_error(f"retention {args.action} needs --agent")
            return 2
        if args.action in ("set", "remove") and not args.tag:
            print_error(f"retention {args.action} needs --tag")
            return 2
        if args.action == "set" and not args.max_age:
            print_error("retention set needs --max-age, e.g. 48h")
            return 2
        memory = backend.open(args.agent)
        if args.action == "set":
            try:
                item = rule(args.tag, args.max_age, args.source)
            except RetentionRuleError as exc:
                print_error(str(exc))
                return 2
            require(memory.archival, RetentionRules, "retention").set_retention_rule(item)
            console.print(f"Agent '{escape(args.agent)}': {escape(item.describe())}")
            return 0
        if args.action == "remove":
            if not require(memory.archival, RetentionRules, "retention").remove_retention_rule(
                args.tag, args.source
            ):
                print_error(f"agent '{args.agent}' has no retention rule for tag '{args.tag}'")
                return 1
            console.print(
                f"Agent '{escape(args.agent)}': rule for tag '{escape(args.tag)}' removed"
            )
            return 0
        rules: list[dict[str, Any]] = [
            rule_view(r)
            for r in require(memory.archival, RetentionRules, "retention").retention_rules()
        ]
        if args.json:
            print(json.dumps(rules))
        elif not rules:
            console.print(f"Agent '{escape(args.agent)}' has no retention rules.")
        for item_view in rules if not args.json else []:
            console.print(escape(str(item_view["describe"])))
        return 0
    finally:
        close_backend(backend)


def add_retention_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Register ``retention`` (``set``, ``list``, ``remove``, ``apply``) on the CLI."""
    parser = subparsers.add_parser(
        "retention",
        help="archival retention rules: forget passages with a tag after a maximum age",
        description="A rule (per agent, by tag, optionally by ingested source file) forgets "
        "archival passages older than its age everywhere they live, each deletion logged with "
        "the rule (never the text). The sleep-time run applies the rules too.",
    )
    parser.add_argument("action", choices=("set", "list", "remove", "apply"))
    parser.add_argument("--agent", help="agent id (apply: every agent when left out)")
    parser.add_argument("--tag", help="set/remove: the passages' tag, e.g. raw_html")
    parser.add_argument("--source", default=None, help="set/remove: only this ingested file")
    parser.add_argument("--max-age", help="set: e.g. 48h, 30d, 2w, 900s")
    parser.add_argument("--json", action="store_true", help="list/apply: print JSON")
    add_memory_place(parser)
    parser.set_defaults(func=cmd_retention)
