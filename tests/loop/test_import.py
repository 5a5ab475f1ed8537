"""Importing the package is cheap: it compiles no graph and loads no FAISS.

A server, the CLI and a library caller on Postgres import it; each pays for a graph or
FAISS only when it uses one. Run in a fresh interpreter, so other tests' imports do not count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import langgraph_memgpt, langgraph_memgpt.graph, langgraph_memgpt.sleeptime.graph
before = {
    "faiss": "faiss" in sys.modules,
    "graph": "graph" in vars(langgraph_memgpt.graph),
    "sleeptime": "graph" in vars(langgraph_memgpt.sleeptime.graph),
}
from langgraph_memgpt.graph import graph
from langgraph_memgpt.sleeptime.graph import graph as tidy
print(json.dumps({**before, "names": [graph.name, tidy.name]}))
"""


def test_importing_the_package_compiles_no_graph_and_loads_no_faiss() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "faiss": False,
        "graph": False,
        "sleeptime": False,
        "names": ["memgpt", "memgpt_sleeptime"],
    }


def test_langgraph_json_names_graphs_that_import() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    probe = "import importlib, sys\n" + "".join(
        f"assert callable(getattr(importlib.import_module({module!r}), {name!r}))\n"
        for module, name in (spec.split(":") for spec in config["graphs"].values())
    )
    subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
