"""Every earlier schema version opens, and is upgraded in place, nothing lost.

The SQLite fixtures under ``tests/fixtures/sqlite`` were written by the package's own code
at earlier commits (``make_fixtures.py`` says which): a version-0 file of each historic
shape before numbering, and a file of each numbered version a migration has since left
behind (its version opens its name). Postgres' numbered migrations are in
``test_postgres_backend.py``.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_memgpt.stores.sqlite import close_all, open_memory
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.migrations import APPLICATION_ID, LATEST, MIGRATIONS
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes
from langgraph_memgpt.stores.types import RecallMessage, StoreAccessError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sqlite"
OLD_FILES = sorted(FIXTURES.glob("*.sqlite"))


@pytest.fixture(autouse=True)
def _closed() -> Iterator[None]:
    yield
    close_all()
    forget_loaded_indexes()


def shape(path: Path) -> dict[str, list[str]]:
    """Every table, index and trigger of a file, with each table's columns."""
    conn = sqlite3.connect(path)
    try:
        names = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY 1, 2"
        ).fetchall()
        return {
            f"{kind} {name}": sorted(
                str(c[1]) for c in conn.execute(f'PRAGMA table_info("{name}")')
            )
            if kind == "table"
            else []
            for kind, name in names
        }
    finally:
        conn.close()


def pragmas(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("PRAGMA application_id").fetchone()[0],
        )
    finally:
        conn.close()


def version_in_name(path: Path) -> int:
    """The version a fixture was written at: ``v9-...`` is 9."""
    return int(path.stem.split("-")[0].removeprefix("v"))


def test_there_is_a_fixture_for_every_shape_before_numbering_and_since() -> None:
    assert [p.stem for p in OLD_FILES] == [
        "v0-before-counts",
        "v0-before-keys",
        "v0-before-rekey",
        "v0-before-sections",
        "v0-unnumbered",
        "v9-before-search-rows",
    ]
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST + 1))


@pytest.mark.parametrize("old", OLD_FILES, ids=lambda p: p.stem)
def test_a_file_of_an_earlier_version_is_upgraded_and_keeps_everything(
    old: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copyfile(old, folder / "memory.sqlite")
    version = version_in_name(old)
    assert pragmas(folder / "memory.sqlite") == (version, APPLICATION_ID if version else 0)

    memory = open_memory(folder, "ada", embedding_model="none")
    assert pragmas(folder / "memory.sqlite") == (LATEST, APPLICATION_ID)
    assert "Ada lives in Lisbon." in memory.core.get("human").value
    assert memory.core.get("human").sections == ()
    found = [h.item.text for h in memory.recall.search("Miso", mode="fts").hits]
    assert "I adopted a cat named Miso." in found
    hits = memory.archival.search("lock code", mode="fts").hits
    assert [h.item.text for h in hits] == ["Ada's bike lock code is 4712."]
    assert memory.archival.count() == 1
    # What the later migrations brought works on the old rows too.
    assert memory.archival.insert("keyed", key="k").id == memory.archival.insert("x", key="k").id
    # Passages of before migration 9 have their fact key: a restatement is already saved.
    again = memory.archival.insert("ada's bike lock code is 4712")
    assert again.duplicate and again.id == hits[0].item.id
    same_id_other_thread = RecallMessage(
        "ada", "t2", "m1", "user", "Another thread, same id.", "2026-11-30T10:00:00+00:00"
    )
    assert memory.recall.add([same_id_other_thread]) == 1
    assert memory.recall.count() == 4
    memory.core.append("human", "Ada cycles to work.")
    close_all()

    fresh = tmp_path / "fresh"
    open_memory(fresh, "ada", embedding_model="none").close()
    assert shape(folder / "memory.sqlite") == shape(fresh / "memory.sqlite")


def test_an_old_file_opened_read_only_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    shutil.copyfile(FIXTURES / "v0-before-sections.sqlite", path)
    db = open_db(path, read_only=True)
    db.conn.close()
    assert pragmas(path) == (0, 0)


def test_a_file_of_a_later_version_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    open_db(path).conn.close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreAccessError, match=rf"{path}.*later version.*{LATEST + 1}"):
        open_db(path)
    assert pragmas(path) == (LATEST + 1, APPLICATION_ID)


def test_another_applications_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1234")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreAccessError, match="application id is 0x4d2"):
        open_db(path)


# -- Postgres ----------------------------------------------------------------------------

PG_FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "postgres").glob("*.sql"))


def pg_shape(url: str) -> dict[str, list[str]]:
    """Every memgpt_ table's columns, index and trigger of a database."""
    import psycopg

    with psycopg.connect(url) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name LIKE 'memgpt%'"
        ).fetchall()
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
            "AND tablename LIKE 'memgpt%'"
        ).fetchall()
        triggers = conn.execute(
            "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'memgpt%'"
        ).fetchall()
    shape: dict[str, list[str]] = {}
    for table, column in columns:
        shape.setdefault(f"table {table}", []).append(str(column))
    shape.update({f"index {name}": [] for (name,) in indexes})
    shape.update({f"trigger {name}": [] for (name,) in triggers})
    return {key: sorted(value) for key, value in shape.items()}


def test_there_is_a_postgres_fixture_for_every_shape_before_numbering() -> None:
    assert [p.stem for p in PG_FIXTURES] == [
        "v1-before-tag-counts",
        "v1-before-word-stats",
        "v1-unnumbered",
    ]


@pytest.mark.parametrize("old", PG_FIXTURES, ids=lambda p: p.stem)
def test_a_postgres_database_of_an_earlier_version_is_upgraded_and_keeps_everything(
    old: Path, postgres_server: str
) -> None:
    import psycopg
    from conftest import _scratch_database  # type: ignore[import-not-found]

    from langgraph_memgpt.stores.postgres import SCHEMA_VERSION, PostgresBackend

    databases = _scratch_database(postgres_server), _scratch_database(postgres_server)
    url, fresh_url = (next(d) for d in databases)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(old.read_text())  # type: ignore[arg-type]
        backend = PostgresBackend(url, embedding_model="none")
        try:
            memory = backend.open("ada")
            assert "Ada lives in Lisbon." in memory.core.get("human").value
            found = [h.item.text for h in memory.recall.search("Miso", mode="fts").hits]
            assert "I adopted a cat named Miso." in found
            hits = memory.archival.search("lock code", mode="fts").hits
            assert [h.item.text for h in hits] == ["Ada's bike lock code is 4712."]
            assert memory.archival.tags() == ["bike"]
            assert (
                memory.archival.insert("k", key="k").id == memory.archival.insert("x", key="k").id
            )
            memory.core.append("human", "Ada cycles to work.")
        finally:
            backend.close()
        with psycopg.connect(url) as conn:
            rows = dict(conn.execute("SELECT name, version FROM memgpt_schema").fetchall())
        assert rows["memory"] == SCHEMA_VERSION and "ddl" not in rows
        fresh = PostgresBackend(fresh_url, embedding_model="none")
        fresh.open("ada")
        fresh.close()
        assert pg_shape(url) == pg_shape(fresh_url)
    finally:
        for database in databases:
            next(database, None)
