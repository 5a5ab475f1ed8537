"""A rule both engines follow is written once, in a neutral module both call.

The engines differ in their SQL; what they share (what a core edit checks, the archival
search's signature and its current-first order, reading rows by time, the settings an
engine is opened with, the re-embedding callback) lives in one place, so a change to a
rule cannot reach one engine and miss the other. The behaviour itself is proved on both
backends by the tier tests (``test_core_memory.py``, ``test_archival_memory.py``,
``test_recall_memory.py``, ``tests/tools/test_archival_duplicates.py``).
"""

from __future__ import annotations

import inspect
from typing import get_type_hints

import pytest

from langgraph_memgpt.stores import capabilities, pages, registry
from langgraph_memgpt.stores.blocks import EditsBlocks
from langgraph_memgpt.stores.search import SearchesArchival
from langgraph_memgpt.stores.sqlite import SqliteBackend, archival_rows, recall_rows
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.core import SqliteCoreMemory
from langgraph_memgpt.stores.supersession import SearchesCurrentFirst

pytest.importorskip("psycopg", reason="the 'postgres' extra is not installed")

from langgraph_memgpt.stores.postgres import PostgresBackend  # noqa: E402
from langgraph_memgpt.stores.postgres import archival as pg_archival  # noqa: E402
from langgraph_memgpt.stores.postgres import recall_rows as pg_recall_rows  # noqa: E402
from langgraph_memgpt.stores.postgres.core import PgCoreMemory  # noqa: E402

ENGINES = [SqliteBackend, PostgresBackend]
CORES = [SqliteCoreMemory, PgCoreMemory]
ARCHIVES = [SqliteArchivalMemory, pg_archival.PgArchivalMemory]


@pytest.mark.parametrize("core", CORES, ids=lambda c: c.__name__)
def test_both_engines_edit_core_blocks_by_the_one_set_of_rules(core: type) -> None:
    """append, replace and set are `EditsBlocks`'; an engine writes only its locked edit."""
    assert issubclass(core, EditsBlocks)
    assert not {"append", "replace", "set"} & set(vars(core)), (
        f"{core.__name__} restates a core edit; supply EditsBlocks._edit instead"
    )
    assert "_edit" in vars(core)


@pytest.mark.parametrize("archive", ARCHIVES, ids=lambda c: c.__name__)
def test_both_engines_search_archival_through_the_one_search_signature(archive: type) -> None:
    """Only `SearchesArchival` states ``search``; current-first is a hook, not an override."""
    assert issubclass(archive, SearchesCurrentFirst)
    owners = [cls.__name__ for cls in archive.__mro__ if "search" in vars(cls)]
    assert owners == [SearchesArchival.__name__]


def test_both_engines_read_rows_by_time_through_one_reader() -> None:
    """Every listing page and newest-few read is a `pages.ByTime` of the engine's table."""
    readers = {
        "sqlite recall": recall_rows.BY_TIME,
        "sqlite archival": archival_rows.BY_TIME,
        "postgres recall": pg_recall_rows.BY_TIME,
        "postgres archival": pg_archival._BY_TIME,
    }
    for name, reader in readers.items():
        assert isinstance(reader, pages.ByTime), name
    assert {r.mark for n, r in readers.items() if n.startswith("sqlite")} == {"?"}
    assert {r.mark for n, r in readers.items() if n.startswith("postgres")} == {"%s"}


@pytest.mark.parametrize("engine", ENGINES, ids=lambda c: c.__name__)
def test_an_engine_takes_the_settings_named_once_in_engine_settings(engine: type) -> None:
    """``from_url(url, **settings)``: the list of settings is `registry.EngineSettings`."""
    parameters = inspect.signature(engine.from_url).parameters
    assert [p.kind for p in parameters.values()] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_KEYWORD,
    ]
    assert set(registry.EngineSettings.__annotations__) == {
        "data_dir",
        "embedding_model",
        "core_block_limit",
        "read_only",
        "embeddings",
    }


@pytest.mark.parametrize("engine", ENGINES, ids=lambda c: c.__name__)
def test_an_engine_reembeds_with_the_one_progress_callback_type(engine: type) -> None:
    """``reembed``'s ``progress_for`` is `capabilities.ProgressFor`, as `Reembeddable` says."""
    hints = get_type_hints(engine.reembed, vars(capabilities) | {"Embeddings": object})
    assert hints["progress_for"] == capabilities.ProgressFor
