"""The package's import graph has layers: every import runs down, and no modules import in a circle.

A module of the package stands in a *room*: a root module (``deps.py``) or a sub-package
(``turn/``). The rooms are layered (`LAYERS`, the ground first): a room imports only rooms of
lower layers, so the loop's core (``turn/``) never reaches up into the small-model help,
the nodes, the graph's collaborators (``deps``) or the operations (``ops/``), and the memory
tools (``tools/``) never reach up into the turn they serve. Where a lower room needs
something of a higher one it is handed in (`deps.policies_for`, `deps.TOOL_HOST`, the
eviction given to `turn.core.plan`), never imported. Every import counts: at the top of a
module, inside a function, or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "langgraph_memgpt"

LAYERS: list[set[str]] = [
    {"osutil", "context", "prompts", "redaction"},
    {"llm", "stores"},
    {"events", "tools"},
    {"state", "ownership", "models"},
    {"routes", "turn"},
    {"small_model", "checkpoints"},
    {"ops"},
    {"deps"},
    {"nodes"},
    {"graph", "compose"},
    {"serve", "__init__"},
    {"cli", "sleeptime"},
]
"""The package's rooms, the ground first: a room imports rooms of lower layers only."""


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: Collection[str]) -> Iterator[str]:
    """The package modules ``path`` imports (``from X import name`` of a module: X.name)."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            named = [f"{base}.{alias.name}" for alias in node.names]
            targets = [base] if any(n not in modules for n in named) else []
            targets += [n for n in named if n in modules]
        else:
            continue
        yield from (t for t in targets if t.split(".")[0] == "langgraph_memgpt")


def _graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (itself left out)."""
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    return {
        module: {t for t in _imports(path, paths) if t in paths and t != module}
        for module, path in paths.items()
    }


def _room(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def test_every_room_of_the_package_stands_on_one_layer() -> None:
    rooms = {_room(module) for module in _graph()}
    layered = [room for layer in LAYERS for room in layer]
    assert sorted(layered) == sorted(set(layered)), "a room stands on two layers"
    assert rooms == set(layered), f"rooms without a layer: {rooms - set(layered)}"


def test_every_import_of_the_package_runs_down() -> None:
    layer = {room: index for index, rooms in enumerate(LAYERS) for room in rooms}
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if _room(module) != _room(target) and layer[_room(target)] >= layer[_room(module)]
    )
    assert not upward, "imports that run up or sideways:\n" + "\n".join(upward)


def test_no_modules_of_the_package_import_each_other_in_a_circle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert len(graph) > 150
    assert not circles, circles
