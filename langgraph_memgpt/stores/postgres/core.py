"""Core memory in Postgres: the same blocks, rules, refusals and history as ``stores.sqlite.core``.

An edit is a read-modify-write of one row. It runs in one transaction that reads the block
``FOR UPDATE``: a concurrent edit of the same block, from any thread or process, waits for
this one to commit and then reads its result, so no edit is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from langgraph_memgpt.stores.blocks import (
    HUMAN_DESCRIPTION,
    PERSONA_DESCRIPTION,
    SHARE_SECRET,
    EditsBlocks,
    block_from_row,
    checked_value,
    editable,
    new_block_value,
    restorable,
    share_proof,
    unknown_label,
)
from langgraph_memgpt.stores.dates import to_utc_iso
from langgraph_memgpt.stores.postgres.db import pg_text, store_secret
from langgraph_memgpt.stores.postgres.deletions import log_deletions
from langgraph_memgpt.stores.sections import (
    check_names,
    check_value,
    with_headers,
)
from langgraph_memgpt.stores.sections import encode as encode_sections
from langgraph_memgpt.stores.types import Block, BlockEditError

_BLOCK = (
    "SELECT label, value, description, char_limit, read_only, sections FROM memgpt_core_blocks "
)
# This agent's blocks, then the blocks shared with it (attached), each in creation order.
_VISIBLE = """
SELECT b.label, b.value, b.description, b.char_limit, b.read_only, b.sections, b.agent_id,
       0 AS shared, b.id AS n
FROM memgpt_core_blocks AS b WHERE b.agent_id = %(agent)s
UNION ALL
SELECT b.label, b.value, b.description, b.char_limit, b.read_only, b.sections, b.agent_id,
       1 AS shared, l.id AS n
FROM memgpt_core_block_links AS l
JOIN memgpt_core_blocks AS b ON b.agent_id = l.owner_id AND b.label = l.label
WHERE l.agent_id = %(agent)s
"""


class PgCoreMemory(EditsBlocks):
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
                (self._owner(conn, label), pg_text(label)),
            )
            names = [d.name for d in cursor.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def history_page(
        self, label: str, *, offset: int = 0, limit: int = 20
    ) -> tuple[int, list[dict[str, Any]]]:
        """How many changes ``label`` has, and ``limit`` of them newest first."""
        with self.pool.connection() as conn:
            owner = self._owner(conn, label)
            row = conn.execute(
                "SELECT count(*) FROM memgpt_core_block_history WHERE agent_id = %s AND label = %s",
                (owner, pg_text(label)),
            ).fetchone()
            cursor = conn.execute(
                "SELECT id, label, old_value, new_value, actor, op, created_at "
                "FROM memgpt_core_block_history WHERE agent_id = %s AND label = %s "
                "ORDER BY id DESC LIMIT %s OFFSET %s",
                (owner, pg_text(label), limit, offset),
            )
            names = [d.name for d in cursor.description or ()]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        return (int(row[0]) if row else 0), rows

    def last_modified(self) -> str | None:
        """When any block of the agent last changed (ISO-8601 UTC), or None."""
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT max(v.updated_at) FROM ({_VISIBLE}) AS s JOIN memgpt_core_blocks AS v "
                "ON v.agent_id = s.agent_id AND v.label = s.label",
                {"agent": self.agent_id},
            ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def latest_change_id(self, other_than: str) -> int | None:
        """Id of the newest change of any block by an actor other than ``other_than``."""
        with self.pool.connection() as conn:
            actor = pg_text(other_than)
            row = conn.execute(
                "SELECT id FROM memgpt_core_block_history WHERE agent_id = %s AND actor <> %s "
                "ORDER BY id DESC LIMIT 1",
                (self.agent_id, actor),
            ).fetchone()
            newest = None if row is None else int(row[0])
            shared = conn.execute(  # a shared block changes by other agents too
                "SELECT max(h.id) FROM memgpt_core_block_links AS l "
                "JOIN memgpt_core_block_history AS h ON h.agent_id = l.owner_id "
                "AND h.label = l.label WHERE l.agent_id = %s AND h.actor <> %s",
                (self.agent_id, actor),
            ).fetchone()
        if shared is not None and shared[0] is not None:
            newest = max(newest or 0, int(shared[0]))
        return newest

    # -- sharing ---------------------------------------------------------------------

    def attach(self, label: str, owner_id: str) -> Block:
        """Show agent ``owner_id``'s block ``label`` here, shared (as ``stores.sqlite.core``)."""
        with self.pool.connection() as conn, conn.transaction():
            own = conn.execute(
                _BLOCK + "WHERE agent_id = %s AND label = %s", (self.agent_id, pg_text(label))
            ).fetchone()
            if own is not None and owner_id != self.agent_id:
                raise BlockEditError(
                    f"Attach failed: agent '{self.agent_id}' has its own block '{label}'."
                )
            row = conn.execute(
                _BLOCK + "WHERE agent_id = %s AND label = %s", (pg_text(owner_id), pg_text(label))
            ).fetchone()
            if row is None:
                raise BlockEditError(f"Attach failed: agent '{owner_id}' has no block '{label}'.")
            if owner_id != self.agent_id:
                conn.execute(
                    "INSERT INTO memgpt_core_block_links (agent_id, label, owner_id) "
                    "VALUES (%s, %s, %s) ON CONFLICT (agent_id, label) "
                    "DO UPDATE SET owner_id = excluded.owner_id",
                    (self.agent_id, pg_text(label), pg_text(owner_id)),
                )
            return block_from_row(row)

    def share_proof(self, label: str, owner_id: str) -> str:
        """This store's signature of the claim that this agent has ``label`` attached."""
        with self.pool.connection() as conn, conn.transaction():
            secret = store_secret(conn, SHARE_SECRET)
        return share_proof(secret, self.agent_id, label, owner_id)

    def detach(self, label: str) -> None:
        """Stop showing a shared block in this agent's core memory (the block stays)."""
        with self.pool.connection() as conn:
            conn.execute(
                "DELETE FROM memgpt_core_block_links WHERE agent_id = %s AND label = %s",
                (self.agent_id, pg_text(label)),
            )

    # -- creating --------------------------------------------------------------------

    def ensure_defaults(
        self, persona: str = "", human: str = "", char_limit: int | None = None
    ) -> None:
        """Create the ``persona`` and ``human`` blocks if missing (never overwrites).

        ``char_limit``: the new blocks' limit (None: the backend's default).
        """
        limit = self.default_limit if char_limit is None else char_limit
        with self.pool.connection() as conn, conn.transaction():
            for label, value, description in (
                ("persona", persona, PERSONA_DESCRIPTION),
                ("human", human, HUMAN_DESCRIPTION),
            ):
                if self._find(conn, label) is None:  # a shared block of that label counts
                    self._insert(conn, label, value, description, limit, False)

    def create(
        self,
        label: str,
        value: str,
        description: str,
        char_limit: int,
        read_only: bool = False,
        sections: Sequence[str] = (),
    ) -> Block:
        """Create a new block, optionally in ``sections`` (as ``stores.sqlite.core``)."""
        value, names = new_block_value(label, value, char_limit, sections)
        with self.pool.connection() as conn, conn.transaction():
            block = self._insert(conn, label, value, description, char_limit, read_only, names)
            if block is None:
                raise BlockEditError(f"Create failed: block '{label}' already exists.")
            return block

    def declare_sections(self, label: str, sections: Sequence[str], actor: str = "user") -> Block:
        """Give block ``label`` these labelled sections (as ``stores.sqlite.core``)."""
        names = check_names(sections)
        with self.pool.connection() as conn, conn.transaction():
            block = self._editable(conn, label, actor)
            value = with_headers(block.value, names)
            check_value(value, names, label)
            conn.execute(
                "UPDATE memgpt_core_blocks SET sections = %s WHERE agent_id = %s AND label = %s",
                (encode_sections(names), self._owner(conn, label), block.label),
            )
            sectioned = Block(
                block.label,
                block.value,
                block.description,
                block.char_limit,
                block.read_only,
                names,
            )
            return self._write(conn, sectioned, value, actor, "sections")

    # -- editing ---------------------------------------------------------------------

    def _edit(self, label: str, actor: str, op: str, change: Callable[[Block], str]) -> Block:
        """As ``EditsBlocks._edit``: the block's row read ``FOR UPDATE`` (see the module)."""
        with self.pool.connection() as conn, conn.transaction():
            block = self._editable(conn, label, actor)
            return self._write(conn, block, change(block), actor, op)

    # -- import and forgetting ---------------------------------------------------------

    def restore(self, blocks: Sequence[Block], history: Sequence[Mapping[str, Any]]) -> None:
        """Put exported blocks back with their history, once (as ``stores.sqlite.core``)."""
        entries = [restorable(entry) for entry in history]
        with self.pool.connection() as conn, conn.transaction():
            for block in blocks:
                last = (
                    max((e[5] for e in entries if e[0] == block.label), default=None)
                    or to_utc_iso()
                )
                conn.execute(
                    "INSERT INTO memgpt_core_blocks (agent_id, label, value, description, "
                    "char_limit, read_only, updated_at, sections) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent_id, label) "
                    "DO UPDATE SET value = excluded.value, description = excluded.description, "
                    "char_limit = excluded.char_limit, read_only = excluded.read_only, "
                    "updated_at = excluded.updated_at, sections = excluded.sections",
                    (
                        self.agent_id,
                        pg_text(block.label),
                        pg_text(block.value),
                        pg_text(block.description),
                        int(block.char_limit),
                        bool(block.read_only),
                        last,
                        encode_sections(check_names(block.sections)),
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
            # Its links, and other agents' links to its (now deleted) blocks.
            conn.execute(
                "DELETE FROM memgpt_core_block_links WHERE agent_id = %(a)s OR owner_id = %(a)s",
                {"a": self.agent_id},
            )
            if count or edits:
                detail = f"{count} blocks, {edits} history entries"
                log_deletions(conn, self.agent_id, actor, [("core", self.agent_id, None, detail)])
        return int(count)

    # -- internals -------------------------------------------------------------------

    def _blocks(self, conn: psycopg.Connection[Any]) -> list[Block]:
        rows = conn.execute(
            f"SELECT * FROM ({_VISIBLE}) AS v ORDER BY shared, n", {"agent": self.agent_id}
        ).fetchall()
        return [block_from_row(row[:6]) for row in rows]

    def owner(self, label: str) -> str:
        """The agent whose block ``label`` is: this agent, or the owner it is attached from."""
        with self.pool.connection() as conn:
            return self._owner(conn, label)

    def _owner(self, conn: psycopg.Connection[Any], label: str) -> str:
        """Whose row block ``label`` is for this agent: its own, or the sharing owner's."""
        row = conn.execute(
            f"SELECT agent_id FROM ({_VISIBLE}) AS v WHERE label = %(label)s "
            "ORDER BY shared LIMIT 1",
            {"agent": self.agent_id, "label": pg_text(label)},
        ).fetchone()
        return self.agent_id if row is None else str(row[0])

    def _find(
        self, conn: psycopg.Connection[Any], label: str, *, for_update: bool = False
    ) -> Block | None:
        owner = self._owner(conn, label)
        row = conn.execute(
            _BLOCK + "WHERE agent_id = %s AND label = %s" + (" FOR UPDATE" if for_update else ""),
            (owner, pg_text(label)),
        ).fetchone()
        return None if row is None else block_from_row(row)

    def _editable(self, conn: psycopg.Connection[Any], label: str, actor: str) -> Block:
        block = self._find(conn, label, for_update=True)
        return editable(block, label, actor, lambda: [b.label for b in self._blocks(conn)])

    def _write(
        self, conn: psycopg.Connection[Any], block: Block, new_value: str, actor: str, op: str
    ) -> Block:
        new_value = pg_text(checked_value(block, new_value))
        check_value(new_value, block.sections, block.label)
        now = to_utc_iso()
        owner = self._owner(conn, block.label)
        conn.execute(
            "UPDATE memgpt_core_blocks SET value = %s, updated_at = %s "
            "WHERE agent_id = %s AND label = %s",
            (new_value, now, owner, block.label),
        )
        self._log(conn, block.label, block.value, new_value, actor, op, now, owner=owner)
        return Block(
            block.label,
            new_value,
            block.description,
            block.char_limit,
            block.read_only,
            block.sections,
        )

    def _insert(
        self,
        conn: psycopg.Connection[Any],
        label: str,
        value: str,
        description: str,
        char_limit: int,
        read_only: bool,
        sections: tuple[str, ...] = (),
    ) -> Block | None:
        """Insert a block unless the label is taken (then None); logs the creation."""
        now = to_utc_iso()
        value, description = pg_text(value), pg_text(description)
        row = conn.execute(
            "INSERT INTO memgpt_core_blocks (agent_id, label, value, description, char_limit, "
            "read_only, updated_at, sections) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (agent_id, label) DO NOTHING RETURNING id",
            (
                self.agent_id,
                label,
                value,
                description,
                char_limit,
                read_only,
                now,
                encode_sections(sections),
            ),
        ).fetchone()
        if row is None:
            return None
        self._log(conn, label, None, value, "system", "create", now)
        return Block(label, value, description, char_limit, read_only, sections)

    def _log(
        self,
        conn: psycopg.Connection[Any],
        label: str,
        old: str | None,
        new: str,
        actor: str,
        op: str,
        created_at: str,
        *,
        owner: str | None = None,
    ) -> None:
        conn.execute(
            "INSERT INTO memgpt_core_block_history "
            "(agent_id, label, old_value, new_value, actor, op, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (owner or self.agent_id, label, old, new, pg_text(actor), op, created_at),
        )
