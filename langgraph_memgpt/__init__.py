"""langgraph-memgpt: MemGPT's tiered memory as a LangGraph state graph.

The package is laid out by concept (``turn``, ``tools``, ``ops``, ``compose``, ``serve``,
``cli``; see docs/reference/layout.md). Module paths that an earlier layout
documented still import, as the same module object, with a ``DeprecationWarning`` naming the
new path: `MOVED` is that table, the one place such an alias lives.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

#: Documented module paths of the flat layout -> where each module lives now.
MOVED: dict[str, str] = {
    "admission": "turn.admission",
    "auth": "serve.auth",
    "file_rules": "tools.file_rules",
    "forget": "ops.forget",
    "ingest": "ops.ingest",
    "memory_tools": "compose.tools",
    "middleware": "compose.middleware",
    "recovery": "ops.recovery",
    "retention": "ops.retention",
    "server": "serve.server",
    "settings": "serve.settings",
    "store": "compose.store",
    "streaming": "turn.streaming",
    "threads": "turn.threads",
    "transfer": "ops.transfer",
    "web": "serve.web",
}


def _moved_to(fullname: str) -> str | None:
    """The module's new dotted path, when ``fullname`` is (or lies under) a moved path."""
    prefix = __name__ + "."
    if not fullname.startswith(prefix):
        return None
    head, dot, rest = fullname[len(prefix) :].partition(".")
    new = MOVED.get(head)
    return None if new is None else prefix + new + dot + rest


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path as the module at its new path (the same object), with a warning."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = _moved_to(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin=new)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = str(spec.origin)
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__  # put back by exec_module
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system stamped the alias' spec on the module: keep the module's own.
        spec = module.__spec__
        if spec is not None and spec.loader_state is not None:
            module.__spec__ = spec.loader_state


class _Package(types.ModuleType):
    """This package: importing an old path never hides a name the package defines."""

    def __setattr__(self, name: str, value: object) -> None:
        # `import langgraph_memgpt.memory_tools` would bind the module over the
        # `memory_tools` function below.
        if name in MOVED and name in self.__dict__ and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())
sys.modules[__name__].__class__ = _Package

from langgraph_memgpt.compose.tools import memory_prompt, memory_tools, recorder  # noqa: E402
from langgraph_memgpt.context import Context  # noqa: E402
from langgraph_memgpt.graph import build_graph  # noqa: E402
from langgraph_memgpt.state import InputState, OutputState, State  # noqa: E402
from langgraph_memgpt.tools.facts import ToolFacts, declare_tool  # noqa: E402

__all__ = [
    "MOVED",
    "Context",
    "InputState",
    "OutputState",
    "State",
    "ToolFacts",
    "build_graph",
    "declare_tool",
    "memory_prompt",
    "memory_tools",
    "recorder",
]
