"""Benchmarks of the memory system on public data (LoCoMo turn retrieval and answers).

The benchmark drives the same code path the agent's memory tools use
(``SqliteRecallMemory.search``), so its figures are what the agent actually gets.

It is not part of the runtime: nothing the served graph imports loads this package, the CLI
loads only its command's registration (``bench.cli``), and its libraries (NLTK's Porter
stemmer for LoCoMo's answer F1, ``bm25s`` for the BM25 floor) come with the ``bench`` extra.
This module itself imports neither, so `require_extra` can say what is missing before a
submodule fails to import.
"""

from __future__ import annotations

import importlib.util

#: Import names of the ``bench`` extra's libraries (pyproject.toml, ``[project.optional-
#: dependencies] bench``).
EXTRA_MODULES: tuple[str, ...] = ("nltk", "bm25s")
INSTALL_HINT = "pip install 'langgraph-memgpt[bench]'"


class BenchExtraMissing(ImportError):
    """A library of the ``bench`` extra is not installed; the message says how to add it."""


def missing_modules() -> list[str]:
    """The ``bench`` extra's libraries that cannot be imported here, in `EXTRA_MODULES` order."""
    return [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]


def require_extra() -> None:
    """Fail with an install hint unless every library of the ``bench`` extra is importable.

    Raises:
        BenchExtraMissing: naming the missing libraries and the extra that brings them.
    """
    missing = missing_modules()
    if missing:
        raise BenchExtraMissing(
            f"the benchmarks need the 'bench' extra ({', '.join(missing)} not installed): "
            f"{INSTALL_HINT}, or `make install`"
        )
