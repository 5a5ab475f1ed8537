"""Core memory in Postgres: the same blocks, rules, refusals and history as ``stores.core``.

An edit is a read-modify-write of one row. It runs in one transaction that reads the block
``FOR UPDATE``: a concurrent edit of the same block, from any thread or process, waits for
this one to commit and then reads its result, so no edit is lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.blocks import (
    HUMAN_DESCRIPTION,
    PERSONA_DESCRIPTION,
    appended,
    check_append,
    check_new_block,
    check_replace,
    checked_value,
    editable,
    replaced,
    restorable,
    unknown_label,
)
from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.postgres.db import pg_text
from langgraph_memgpt.stores.postgres.deletions import log_deletions
from langgraph_memgpt.stores.types import Block, BlockEditError

_BLOCK = "SELECT label, value, description, char_limit, read_only FROM memgpt_core_blocks "


class PgCoreMemory:
    """The core memory blocks of one agent in Postgres (meets ``stores.base.CoreStore``)."""

    def __init__(self, pool: ConnectionPool[Any], agent_id: str, *, default_limit: int = 2000):
        if default_limit <= 0:
            raise ValueError(f"default_limit must be positive, got {default_limit}")
        self.pool = pool
        self.agent_id = agent_id
        self.default_limit = default_limit

    # -- reading ---------------------------------------------------------------------

    def blocks(self) -> list[Block]:
        """Every block of the agent, in creation order."""
        with self.pool.connection() as conn:
            return self._blocks(conn)

    def get(self, label: str) -> Block:
        """The block ``label``; raises ``BlockEditError`` (naming the labels) if absent."""
        with self.pool.connection() as conn:
            block = self._find(conn, label)
            if block is None:
                labels = [b.label for b in self._blocks(conn)]
                raise BlockEditError(unknown_label(label, "Read failed", labels))
            return block

    def history(self, label: str) -> list[dict[str, Any]]:
        """Every change of block ``label``, oldest first (empty for an unknown label)."""
        with self.pool.connection() as conn:
            cursor = conn.execute(
                "SELECT id, label, old_value, new_value, actor, op, created_at "
                "FROM memgpt_core_block_history WHERE agent_id = %s AND label = %s ORDER BY id",
                (self.agent_id, pg_text(label)),
            )
            names = [d.name for d in cursor.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def last_modified(self) -> str | None:
        """When any block of the agent last changed (ISO-8601 UTC), or None."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT max(updated_at) FROM memgpt_core_blocks WHERE agent_id = %s",
                (self.agent_id,),
            ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def latest_change_id(self, other_than: str) -> int | None:
        """Id of the newest change of any block by an actor other than ``other_than``."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT id FROM memgpt_core_block_history WHERE agent_id = %s AND actor <> %s "
                "ORDER BY id DESC LIMIT 1",
                (self.agent_id, pg_text(other_than)),
            ).fetchone()
        return None if row is None else int(row[0])

    # -- creating --------------------------------------------------------------------

    def ensure_defaults(self, persona: str = "", human: str = "") -> None:
        """Create the ``persona`` and ``human`` blocks if missing (never overwrites)."""
        with self.pool.connection() as conn, conn.transaction():
            for label, value, description in (
                ("persona", persona, PERSONA_DESCRIPTION),
                ("human", human, HUMAN_DESCRIPTION),
            ):
                self._insert(conn, label, value, description, self.default_limit, False)

    def create(
        self, label: str, value: str, description: str, char_limit: int, read_only: bool = False
    ) -> Block:
        """Create a new block; refuses a bad or taken label, or a value over the limit."""
        check_new_block(label, value, char_limit)
        with self.pool.connection() as conn, conn.transaction():
            block = self._insert(conn, label, value, description, char_limit, read_only)
            if block is None:
                raise BlockEditError(f"Create failed: block '{label}' already exists.")
            return block

    # -- editing ---------------------------------------------------------------------

    def append(self, label: str, content: str, actor: str = "agent") -> Block:
        """Add ``content`` as a new line of ``label`` (one locked read-modify-write)."""
        check_append(label, content)
        with self.pool.connection() as conn, conn.transaction():
            block = self._editable(conn, label, actor)
            return self._write(conn, block, appended(block, content), actor, "append")

    def replace(self, label: str, old: str, new: str, actor: str = "agent") -> Block:
        """Replace the one occurrence of ``old`` in ``label`` (empty ``new`` deletes)."""
        old = check_replace(label, old)
        with self.pool.connection() as conn, conn.transaction():
            block = self._editable(conn, label, actor)
            return self._write(conn, block, replaced(block, old, new), actor, "replace")

    def set(self, label: str, value: str, actor: str = "user") -> Block:
        """Overwrite ``label`` (a person's edit; read-only blocks refuse only the agent)."""
        with self.pool.connection() as conn, conn.transaction():
            block = self._editable(conn, label, actor)
            return self._write(conn, block, value, actor, "set")

    # -- import and forgetting ---------------------------------------------------------

    def restore(self, blocks: Sequence[Block], history: Sequence[Mapping[str, Any]]) -> None:
        """Put exported blocks back with their history, once (as ``stores.core``)."""
        entries = [restorable(entry) for entry in history]
        with self.pool.connection() as conn, conn.transaction():
            for block in blocks:
                last = (
                    max((e[5] for e in entries if e[0] == block.label), default=None)
                    or to_utc_iso()
                )
                conn.execute(
                    "INSERT INTO memgpt_core_blocks "
                    "(agent_id, label, value, description, char_limit, read_only, updated_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent_id, label) DO UPDATE "
                    "SET value = excluded.value, description = excluded.description, "
                    "char_limit = excluded.char_limit, read_only = excluded.read_only, "
                    "updated_at = excluded.updated_at",
                    (
                        self.agent_id,
                        pg_text(block.label),
                        pg_text(block.value),
                        pg_text(block.description),
                        int(block.char_limit),
                        bool(block.read_only),
                        last,
                    ),
                )
            for label, old, new, actor, op, created_at in entries:
                label, new, actor = pg_text(label), pg_text(new), pg_text(actor)
                present = conn.execute(
                    "SELECT 1 FROM memgpt_core_block_history WHERE agent_id = %s AND label = %s "
                    "AND op = %s AND actor = %s AND created_at = %s AND new_value = %s",
                    (self.agent_id, label, op, actor, created_at, new),
                ).fetchone()
                if present is None:
                    self._log(
                        conn,
                        label,
                        None if old is None else pg_text(old),
                        new,
                        actor,
                        op,
                        created_at,
                    )

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every block and its history (one log entry, kind ``core``)."""
        with self.pool.connection() as conn, conn.transaction():
            edits = conn.execute(
                "DELETE FROM memgpt_core_block_history WHERE agent_id = %s", (self.agent_id,)
            ).rowcount
            count = conn.execute(
                "DELETE FROM memgpt_core_blocks WHERE agent_id = %s", (self.agent_id,)
            ).rowcount
            if count or edits:
                detail = f"{count} blocks, {edits} history entries"
                log_deletions(conn, self.agent_id, actor, [("core", self.agent_id, None, detail)])
        return int(count)

    # -- internals -------------------------------------------------------------------

    def _blocks(self, conn: psycopg.Connection[Any]) -> list[Block]:
        rows = conn.execute(_BLOCK + "WHERE agent_id = %s ORDER BY id", (self.agent_id,)).fetchall()
        return [_block(row) for row in rows]

    def _find(
        self, conn: psycopg.Connection[Any], label: str, *, for_update: bool = False
    ) -> Block | None:
        row = conn.execute(
            _BLOCK + "WHERE agent_id = %s AND label = %s" + (" FOR UPDATE" if for_update else ""),
            (self.agent_id, pg_text(label)),
        ).fetchone()
        return None if row is None else _block(row)

    def _editable(self, conn: psycopg.Connection[Any], label: str, actor: str) -> Block:
        block = self._find(conn, label, for_update=True)
        return editable(block, label, actor, lambda: [b.label for b in self._blocks(conn)])

    def _write(
        self, conn: psycopg.Connection[Any], block: Block, new_value: str, actor: str, op: str
    ) -> Block:
        new_value = pg_text(checked_value(block, new_value))
        now = to_utc_iso()
        conn.execute(
            "UPDATE memgpt_core_blocks SET value = %s, updated_at = %s "
            "WHERE agent_id = %s AND label = %s",
            (new_value, now, self.agent_id, block.label),
        )
        self._log(conn, block.label, block.value, new_value, actor, op, now)
        return Block(block.label, new_value, block.description, block.char_limit, block.read_only)

    def _insert(
        self,
        conn: psycopg.Connection[Any],
        label: str,
        value: str,
        description: str,
        char_limit: int,
        read_only: bool,
    ) -> Block | None:
        """Insert a block unless the label is taken (then None); logs the creation."""
        now = to_utc_iso()
        value, description = pg_text(value), pg_text(description)
        row = conn.execute(
            "INSERT INTO memgpt_core_blocks "
            "(agent_id, label, value, description, char_limit, read_only, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent_id, label) DO NOTHING "
            "RETURNING id",
            (self.agent_id, label, value, description, char_limit, read_only, now),
        ).fetchone()
        if row is None:
            return None
        self._log(conn, label, None, value, "system", "create", now)
        return Block(label, value, description, char_limit, read_only)

    def _log(
        self,
        conn: psycopg.Connection[Any],
        label: str,
        old: str | None,
        new: str,
        actor: str,
        op: str,
        created_at: str,
    ) -> None:
        conn.execute(
            "INSERT INTO memgpt_core_block_history "
            "(agent_id, label, old_value, new_value, actor, op, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (self.agent_id, label, old, new, pg_text(actor), op, created_at),
        )


def _block(row: tuple[Any, ...]) -> Block:
    label, value, description, char_limit, read_only = row
    return Block(str(label), str(value), str(description), int(char_limit), bool(read_only))
