"""Adding a CLI command is one module and one line: the docs' example, run as a reader runs it.

docs/extending.md ("Add a CLI command") shows a registrar module and the call that builds the
parser with it; here the first block is saved as ``hello.py`` and the second run beside it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from langgraph_memgpt.cli.commands import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "extending.md"


def section_blocks() -> list[str]:
    """The Python blocks of the page's "Add a CLI command" section, in order."""
    text = PAGE.read_text()
    section = text.split("## Add a CLI command", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_docs_example_adds_a_command_that_runs(tmp_path: Path) -> None:
    module, run = section_blocks()
    (tmp_path / "hello.py").write_text(module)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", run],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello, ada"
    assert done.stderr.strip() == "error: --agent is empty: name the agent to greet"


def test_every_command_is_registered_the_one_way() -> None:
    """Each entry of COMMANDS is "module:function"; each command it adds has its ``func``."""
    assert all(re.fullmatch(r"[\w.]+:add_\w+", entry) for entry in COMMANDS)
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert {"serve", "chat", "inspect", "forget", "ingest", "retention", "watch"} <= set(commands)
    assert "bench" not in commands  # the benchmarks run from the repository
    assert all(callable(sub.get_default("func")) for sub in commands.values())
