"""One numbered step of a memory schema: the migration type both engines use.

Each engine keeps its schema as one ordered tuple of migrations, numbered without gaps
(``stores.sqlite.migrations.MIGRATIONS`` from 1, ``stores.postgres.db.MIGRATIONS`` from 2),
records the version a database has, and runs the ones it has not had, in order, in one
transaction. ``Conn`` is the engine's connection type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

Conn = TypeVar("Conn")


@dataclass(frozen=True)
class Migration(Generic[Conn]):
    """One numbered step of a schema: what it does, and the function that does it."""

    version: int
    does: str
    apply: Callable[[Conn], None]


def latest_version(migrations: Sequence[Migration[Conn]], *, first: int = 1) -> int:
    """The last version of ``migrations``, checked to be numbered ``first``, ``first + 1``...

    Raises:
        ValueError: a version is missing, repeated or out of order.
    """
    versions = [m.version for m in migrations]
    if not versions or versions != list(range(first, first + len(versions))):
        raise ValueError(f"migrations must be numbered {first}, {first + 1}, ...: {versions}")
    return versions[-1]


def pending(migrations: Sequence[Migration[Conn]], done: int) -> list[Migration[Conn]]:
    """The migrations a database at version ``done`` has not had, in order."""
    return [m for m in migrations if m.version > done]


__all__ = ["Migration", "latest_version", "pending"]
