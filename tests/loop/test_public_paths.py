"""Every import path a user was shown still works after the package moved by concept.

A module that moved keeps its old documented path as an alias (``langgraph_memgpt.MOVED``):
the same module object, with a ``DeprecationWarning`` naming the new path. Every path the
README, the docs, the examples and ``langgraph.json`` name today imports, without one.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import warnings
from pathlib import Path

import pytest

import langgraph_memgpt
from langgraph_memgpt import MOVED

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [
    ROOT / "README.md",
    ROOT / "langgraph.json",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "examples").rglob("*.py")),
    *sorted((ROOT / "examples").rglob("*.json")),
]
DOTTED = re.compile(r"\blanggraph_memgpt(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?")


def _forget_alias(old: str) -> None:
    """Drop an alias an earlier test imported, so this import goes through the table again."""
    for name in [m for m in sys.modules if m == old or m.startswith(old + ".")]:
        del sys.modules[name]


def resolve(path: str) -> object:
    """The object a dotted path names: the longest importable module, then attributes."""
    dotted = path.replace(":", ".")
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(path)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_documented_path_imports_the_same_module_with_a_warning(old: str) -> None:
    old_path, new_path = f"langgraph_memgpt.{old}", f"langgraph_memgpt.{MOVED[old]}"
    new = importlib.import_module(new_path)
    _forget_alias(old_path)
    with pytest.warns(DeprecationWarning, match=re.escape(f"moved to {new_path}")):
        module = importlib.import_module(old_path)
    assert module is new
    assert module.__spec__ is not None and module.__spec__.name == new_path


def test_a_module_under_an_old_path_is_the_module_under_the_new_one() -> None:
    _forget_alias("langgraph_memgpt.web")
    with pytest.warns(DeprecationWarning):
        from langgraph_memgpt.web.app import app as old_app
    from langgraph_memgpt.serve.web.app import app

    assert old_app is app
    assert sys.modules["langgraph_memgpt.web.app"] is sys.modules["langgraph_memgpt.serve.web.app"]


def test_langgraph_json_of_the_flat_layout_still_loads_the_same_graph() -> None:
    _forget_alias("langgraph_memgpt.server")
    with pytest.warns(DeprecationWarning):
        old = resolve("langgraph_memgpt.server:checkpointer")
    assert old is resolve("langgraph_memgpt.serve.server:checkpointer")


def test_an_old_path_never_hides_a_name_the_package_defines() -> None:
    """``langgraph_memgpt.memory_tools`` stays the function, also after the module's import."""
    _forget_alias("langgraph_memgpt.memory_tools")
    with pytest.warns(DeprecationWarning):
        from langgraph_memgpt.memory_tools import memory_tools
    assert langgraph_memgpt.memory_tools is memory_tools
    assert callable(langgraph_memgpt.memory_tools)


def test_every_path_the_docs_name_imports_without_a_warning() -> None:
    named = sorted(
        {match for page in DOCUMENTS for match in DOTTED.findall(page.read_text())}
        - {"langgraph_memgpt.MOVED"}
        # the module the Extending page has a reader write (tests/cli/test_extending_cli.py)
        - {"langgraph_memgpt.cli.hello:add_hello_command"}
    )
    assert len(named) > 20
    assert "langgraph_memgpt.serve.server:graph" in named
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".* moved to .*", category=DeprecationWarning)
        missing = []
        for path in named:
            try:
                resolve(path)
            except (ImportError, AttributeError) as exc:
                missing.append(f"{path}: {exc}")
    assert not missing, missing
    assert json.loads((ROOT / "langgraph.json").read_text())["graphs"]["memgpt"] == (
        "langgraph_memgpt.serve.server:graph"
    )
