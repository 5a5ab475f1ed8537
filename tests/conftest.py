"""Shared fixtures: a real SQLite memory database in a temporary folder, real embeddings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlite_utils

from langgraph_memgpt.stores.db import DB_FILENAME, open_db
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings


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
