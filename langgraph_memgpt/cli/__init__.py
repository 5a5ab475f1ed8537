"""The ``langgraph-memgpt`` command.

``commands`` builds the parser from every subcommand's registration; ``args`` holds the
arguments several share, ``console`` the terminal output; ``dev_server`` (``serve``),
``watch`` (with ``watch_sinks`` and ``watch_text``), ``manage``, ``retention`` and ``chat``
are commands.

``main`` is the console script's entry point (``langgraph_memgpt.cli:main``); it imports the
commands only when called, so importing a module of this package loads no command.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``langgraph-memgpt`` command line; returns the exit status."""
    from langgraph_memgpt.cli.commands import main as run

    return run(argv)
