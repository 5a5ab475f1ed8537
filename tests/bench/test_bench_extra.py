"""The benchmarks are the `bench` extra: the runtime never loads them, the CLI says what to add."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from locomo_samples import ann_and_bob, turn, write_locomo

from benchmarks.bench import EXTRA_MODULES, missing_modules
from benchmarks.bench.cli import main as bench_main

ROOT = Path(__file__).resolve().parents[2]

#: Imports every module of the package outside ``bench``, builds the served graph, runs one
#: turn of the agent on real stores, lists which benchmark modules and libraries got loaded,
#: then runs the CLI's ``inspect`` on the stores and lists them again.
_RUNTIME_SCRIPT = """
import importlib, json, pkgutil, sys
def import_all(package):  # every module of the package, but `python -m`'s entry point
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if not info.name.endswith(".__main__"):
            module = importlib.import_module(info.name)
            if info.ispkg:
                import_all(module)
import_all(importlib.import_module("langgraph_memgpt"))
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.serve.settings import ServerSettings
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.serve.server import served_graph
data = sys.argv[1]
served_graph(ServerSettings(data_dir=data), model=ScriptedChatModel.from_steps([]))
reply = {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "hi"}}]}
agent = build_graph(model=ScriptedChatModel.from_steps([reply])).compile(InMemorySaver())
agent.invoke({"messages": [HumanMessage("hello")]}, {"configurable": {"thread_id": "t"}},
             context=Context(data_dir=data, agent_id="a"))
def loaded():
    return sorted(m for m in sys.modules
                  if m.split(".")[0] in {"nltk", "bm25s"} or m.startswith("benchmarks.bench"))
by_the_agent = loaded()
code = main(["inspect", "--agent", "a", "--data-dir", data])
print(json.dumps({"code": code, "by_the_agent": by_the_agent, "by_the_cli": loaded()}))
"""


def test_the_runtime_and_the_served_graph_never_load_the_benchmarks(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _RUNTIME_SCRIPT, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=True,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["code"] == 0
    assert result["by_the_agent"] == []
    # The benchmarks left the package: the CLI registers no `bench` and loads none of them.
    assert result["by_the_cli"] == []


def test_bench_without_the_extra_names_it_and_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_locomo(
        tmp_path, [ann_and_bob("conv-a", [], session_1=[turn("Ann", "D1:1", "hello")])]
    )
    monkeypatch.setitem(sys.modules, "bm25s", None)  # `import bm25s` now fails
    assert missing_modules() == ["bm25s"]
    code = bench_main(
        ["locomo", "--data", str(path), "--no-progress",
         "--data-dir", str(tmp_path / "data")]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "'bench' extra" in err
    assert "bm25s" in err
    assert "langgraph-memgpt[bench]" in err
    assert not (tmp_path / "data").exists()


def test_the_wheel_holds_no_benchmark() -> None:
    """The benchmarks run from the repository (`python -m benchmarks.bench`), not the wheel."""
    from setuptools import find_packages

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = find_packages(str(ROOT), include=include)
    assert "langgraph_memgpt.cli" in packages and "langgraph_memgpt.serve.web" in packages
    assert [name for name in packages if "bench" in name] == []


def test_the_extra_in_pyproject_brings_every_library_the_benchmarks_import() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    bench = project["optional-dependencies"]["bench"]
    names = {re.split(r"[<>=\[ ;]", dep, maxsplit=1)[0] for dep in bench}
    # What `python -m benchmarks.bench` imports, plus what only the scripts in benchmarks/ need
    # (pysqlite3-binary: LangGraph's SqliteStore in stores_vs_langgraph.py), each one used.
    scripts = {"pysqlite3-binary": "pysqlite3"}
    assert names == set(EXTRA_MODULES) | set(scripts)
    sources = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "benchmarks").glob("*.py"))
    assert all(f"import {module}" in sources for module in scripts.values())
    assert missing_modules() == []  # `make install` installs the extra


def test_the_porter_stemmer_needs_no_nltk_data(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NLTK_DATA": str(tmp_path), "HOME": str(tmp_path)}
    script = (
        "from benchmarks.bench.answer import f1_score, stem;"
        "print(stem('skies'), f1_score('She adopted puppies', 'adopting a puppy'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out.split() == ["sky", "0.8"]
    assert list(tmp_path.iterdir()) == []  # nothing downloaded
