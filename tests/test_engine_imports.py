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

ROOT = Path(__file__).resolve().parents[1]
STORES = ROOT / "langgraph_memgpt" / "stores"

LIBRARIES = {
    "sqlite": frozenset({"sqlite_utils", "faiss"}),
    "postgres": frozenset({"psycopg", "psycopg_pool", "pgvector"}),
}
"""The libraries each engine brings (top-level import names)."""

SQLITE_MODULES = [
    "langgraph_memgpt.stores",
    *(
        f"langgraph_memgpt.stores.{name}"
        for name in (
            "archival",
            "core",
            "db",
            "deletions",
            "foreign",
            "fts",
            "fts_parts",
            "migrations",
            "recall",
            "retention",
            "schema",
            "vectors",
        )
    ),
]
POSTGRES_MODULES = [
    "langgraph_memgpt.stores.postgres",
    *(
        f"langgraph_memgpt.stores.postgres.{path.stem}"
        for path in sorted((STORES / "postgres").glob("*.py"))
        if path.stem != "__init__"
    ),
]
NEUTRAL_MODULES = [
    f"langgraph_memgpt.stores.{name}"
    for name in (
        "base",
        "blocks",
        "bm25",
        "chunks",
        "dates",
        "embeddings",
        "mentions",
        "messages",
        "passages",
        "ranking",
        "search",
        "sections",
        "text",
        "types",
        "words",
    )
]

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


def test_the_module_lists_cover_every_store_module() -> None:
    listed = {m.rsplit(".", 1)[-1] for m in SQLITE_MODULES + NEUTRAL_MODULES}
    flat = {path.stem for path in STORES.glob("*.py")} - {"__init__", "backends"}
    assert flat <= listed, f"not yet sorted into an engine or neutral: {flat - listed}"


def test_the_sqlite_engine_never_imports_postgres_libraries() -> None:
    loaded = loaded_by(SQLITE_MODULES)
    assert "sqlite_utils" in loaded  # the probe did import the engine
    assert not loaded & LIBRARIES["postgres"]


@pytest.mark.xfail(
    strict=True,
    reason="stores/__init__.py is still the SQLite backend, so every stores.* import loads "
    "sqlite_utils; the engine layout (stores/sqlite/) removes this",
)
def test_the_postgres_engine_never_imports_sqlite_libraries() -> None:
    pytest.importorskip("psycopg", reason="the 'postgres' extra is not installed")
    loaded = loaded_by(POSTGRES_MODULES)
    assert "psycopg" in loaded  # the probe did import the engine
    assert not loaded & LIBRARIES["sqlite"]


@pytest.mark.xfail(
    strict=True,
    reason="stores/__init__.py is still the SQLite backend and chunks.py imports the FAISS "
    "module; the engine layout (stores/sqlite/) removes both",
)
def test_the_engine_neutral_stores_import_no_engine() -> None:
    loaded = loaded_by(NEUTRAL_MODULES)
    assert not loaded & (LIBRARIES["sqlite"] | LIBRARIES["postgres"])
