"""Each storage engine loads only its own libraries, and the engine-neutral stores neither.

A library caller on Postgres should not need FAISS or sqlite-utils to import the package, and
the embedded default should never pay for (or need) psycopg. Each probe runs in a fresh
interpreter, so what other tests imported does not count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORES = ROOT / "langgraph_memgpt" / "stores"

LIBRARIES = {
    "sqlite": frozenset({"sqlite_utils", "faiss"}),
    "postgres": frozenset({"psycopg", "psycopg_pool", "pgvector"}),
}
"""The libraries each engine brings (top-level import names)."""


def modules_in(folder: Path) -> list[str]:
    """Every module of the package under ``folder`` (the package itself first)."""
    package = ".".join(folder.relative_to(ROOT).parts)
    return sorted(
        package if path.stem == "__init__" else f"{package}.{path.stem}"
        for path in folder.glob("*.py")
    )


SQLITE_MODULES = modules_in(STORES / "sqlite")
POSTGRES_MODULES = modules_in(STORES / "postgres")
NEUTRAL_MODULES = [m for m in modules_in(STORES) if m != "langgraph_memgpt.stores.backends"]
"""``backends`` is the one module at the top that opens an engine: it picks one."""

PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted({module.split(".")[0] for module in sys.modules})))
"""


def loaded_by(modules: list[str]) -> set[str]:
    """The top-level packages a fresh interpreter holds after importing ``modules``."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_sqlite_engine_never_imports_postgres_libraries() -> None:
    loaded = loaded_by(SQLITE_MODULES)
    assert "sqlite_utils" in loaded  # the probe did import the engine
    assert not loaded & LIBRARIES["postgres"]


def test_the_postgres_engine_never_imports_sqlite_libraries() -> None:
    pytest.importorskip("psycopg", reason="the 'postgres' extra is not installed")
    loaded = loaded_by(POSTGRES_MODULES)
    assert "psycopg" in loaded  # the probe did import the engine
    assert not loaded & LIBRARIES["sqlite"]


def test_the_engine_neutral_stores_import_no_engine() -> None:
    loaded = loaded_by(NEUTRAL_MODULES)
    assert "langgraph_memgpt.stores" in NEUTRAL_MODULES  # the package: its SQLite names load lazily
    assert not loaded & (LIBRARIES["sqlite"] | LIBRARIES["postgres"])
