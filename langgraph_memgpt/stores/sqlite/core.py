"""Core memory: the small, always-visible blocks (persona, human, ...) the agent edits itself.

SQLite is the source of truth; every change is kept in ``core_block_history`` with who
made it, so a bad edit by the model can be seen and undone. Refusals are
:class:`BlockEditError` with text written for the model to read and act on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlite_utils

from langgraph_memgpt.osutil import utc_now
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
from langgraph_memgpt.stores.sections import (
    check_names,
    check_value,
    with_headers,
)
from langgraph_memgpt.stores.sections import encode as encode_sections
from langgraph_memgpt.stores.sqlite.db import store_secret, transaction
from langgraph_memgpt.stores.sqlite.deletions import log_deletions
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import Block, BlockEditError

_BLOCK_COLUMNS = "b.label, b.value, b.description, b.char_limit, b.read_only, b.sections"
# This agent's blocks, then the blocks shared with it (attached), each in creation order.
_VISIBLE_TEMPLATE = """
SELECT {columns}, b.agent_id, 0 AS shared, b.rowid AS n FROM core_blocks AS b
WHERE b.agent_id = :agent
UNION ALL
SELECT {columns}, b.agent_id, 1 AS shared, l.rowid AS n FROM core_block_links AS l
JOIN core_blocks AS b ON b.agent_id = l.owner_id AND b.label = l.label
WHERE l.agent_id = :agent
"""
_VISIBLE = _VISIBLE_TEMPLATE.format(columns=_BLOCK_COLUMNS)
# A file made before sections, opened read-only (so not migrated): no block declares any.
_VISIBLE_UNSECTIONED = _VISIBLE_TEMPLATE.format(
    columns=_BLOCK_COLUMNS.replace("b.sections", "'' AS sections")
)


class SqliteCoreMemory(EditsBlocks):
    """The core memory blocks of one agent, stored in the shared memory database.

    Args:
        db: A database from :func:`~langgraph_memgpt.stores.sqlite.db.open_db`.
        agent_id: The agent whose blocks this object reads and writes; no method can
            reach another agent's blocks.
        default_limit: Character limit of the blocks :meth:`ensure_defaults` creates.
    """

    def __init__(self, db: sqlite_utils.Database, agent_id: str, *, default_limit: int = 2000):
        if default_limit <= 0:
            raise ValueError(f"default_limit must be positive, got {default_limit}")
        self.db = db
        self.agent_id = agent_id
        self.default_limit = default_limit
        # A file opened read-only is read as it is: one made before sections has no column.
        columns = {r[1] for r in db.conn.execute("PRAGMA table_info(core_blocks)")}
        self._visible = _VISIBLE if "sections" in columns or not columns else _VISIBLE_UNSECTIONED

    # -- reading ---------------------------------------------------------------------

    def blocks(self) -> list[Block]:
        """Return every block of the agent (its own, then those shared with it), in order."""
        rows = self.db.conn.execute(
            f"SELECT * FROM ({self._visible}) ORDER BY shared, n", {"agent": self.agent_id}
        ).fetchall()
        return [block_from_row(row[:6]) for row in rows]

    def get(self, label: str) -> Block:
        """Return the block called ``label``.

        Raises:
            BlockEditError: There is no such block (the message lists the existing ones).
        """
        block = self._find(label)
        if block is None:
            raise BlockEditError(self._unknown_label(label, "Read failed"))
        return block

    def history(self, label: str) -> list[dict[str, Any]]:
        """Return every change of block ``label``, oldest first (empty for an unknown label).

        A shared block's history is the block's own: every attached agent's edits.
        """
        cursor = self.db.conn.execute(
            "SELECT id, label, old_value, new_value, actor, op, created_at "
            "FROM core_block_history WHERE agent_id = ? AND label = ? ORDER BY id",
            (self.owner(label), label),
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def history_page(
        self, label: str, *, offset: int = 0, limit: int = 20
    ) -> tuple[int, list[dict[str, Any]]]:
        """Return how many changes block ``label`` has, and ``limit`` of them newest first.

        The page reads one page of a long history, never all of it.
        """
        owner = self.owner(label)
        total = int(
            self.db.conn.execute(
                "SELECT count(*) FROM core_block_history WHERE agent_id = ? AND label = ?",
                (owner, label),
            ).fetchone()[0]
        )
        cursor = self.db.conn.execute(
            "SELECT id, label, old_value, new_value, actor, op, created_at "
            "FROM core_block_history WHERE agent_id = ? AND label = ? "
            "ORDER BY id DESC LIMIT ? OFFSET ?",
            (owner, label, limit, offset),
        )
        names = [d[0] for d in cursor.description]
        return total, [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def last_modified(self) -> str | None:
        """Return when any block of the agent last changed (ISO-8601 UTC), or None if none exist."""
        row = self.db.conn.execute(
            "SELECT MAX(updated_at) FROM core_blocks AS b WHERE b.agent_id = :agent "
            "OR EXISTS (SELECT 1 FROM core_block_links AS l WHERE l.agent_id = :agent "
            "AND l.owner_id = b.agent_id AND l.label = b.label)",
            {"agent": self.agent_id},
        ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def latest_change_id(self, other_than: str) -> int | None:
        """Return the id of the newest change of any block by an actor other than ``other_than``.

        One walk back over the agent's changes in ``core_block_history_newest`` (which holds
        the actor, so no row is read), stopping at the first change by someone else.
        """
        actor = valid_text(other_than)
        row = self.db.conn.execute(
            "SELECT id FROM core_block_history "
            "WHERE agent_id = ? AND actor <> ? ORDER BY id DESC LIMIT 1",
            (self.agent_id, actor),
        ).fetchone()
        newest = None if row is None else int(row[0])
        for owner, label in self._links():  # a shared block changes by other agents too
            row = self.db.conn.execute(
                "SELECT MAX(id) FROM core_block_history "
                "WHERE agent_id = ? AND label = ? AND actor <> ?",
                (owner, label, actor),
            ).fetchone()
            if row is not None and row[0] is not None:
                newest = max(newest or 0, int(row[0]))
        return newest

    # -- sharing ---------------------------------------------------------------------

    def attach(self, label: str, owner_id: str) -> Block:
        """Show agent ``owner_id``'s block ``label`` in this agent's core memory (shared).

        One block, seen by every agent it is attached to: an edit by any of them (or by
        its owner) is what all of them see on their next turn, and its history holds every
        edit. Its ``read_only`` flag applies to all. Attaching again changes nothing.

        Raises:
            BlockEditError: the owner has no such block, or this agent has its own block
                with that label.
        """
        with transaction(self.db):
            own = self.db.conn.execute(
                "SELECT 1 FROM core_blocks WHERE agent_id = ? AND label = ?",
                (self.agent_id, label),
            ).fetchone()
            if own is not None and owner_id != self.agent_id:
                raise BlockEditError(
                    f"Attach failed: agent '{self.agent_id}' has its own block '{label}'."
                )
            block = self.db.conn.execute(
                "SELECT label, value, description, char_limit, read_only, sections "
                "FROM core_blocks "
                "WHERE agent_id = ? AND label = ?",
                (owner_id, label),
            ).fetchone()
            if block is None:
                raise BlockEditError(f"Attach failed: agent '{owner_id}' has no block '{label}'.")
            if owner_id != self.agent_id:
                self.db.conn.execute(
                    "INSERT INTO core_block_links (agent_id, label, owner_id) VALUES (?, ?, ?) "
                    "ON CONFLICT (agent_id, label) DO UPDATE SET owner_id = excluded.owner_id",
                    (self.agent_id, label, owner_id),
                )
            return block_from_row(block)

    def share_proof(self, label: str, owner_id: str) -> str:
        """This store's signature of the claim that this agent has ``label`` attached."""
        secret = store_secret(self.db, SHARE_SECRET)
        return "" if secret is None else share_proof(secret, self.agent_id, label, owner_id)

    def detach(self, label: str) -> None:
        """Stop showing a shared block in this agent's core memory (the block stays)."""
        with transaction(self.db):
            self.db.conn.execute(
                "DELETE FROM core_block_links WHERE agent_id = ? AND label = ?",
                (self.agent_id, label),
            )

    # -- creating --------------------------------------------------------------------

    def ensure_defaults(
        self, persona: str = "", human: str = "", char_limit: int | None = None
    ) -> None:
        """Create the ``persona`` and ``human`` blocks if the agent has no such blocks yet.

        Existing blocks are left as they are: the initial texts only seed a new agent.
        Initial text longer than the limit is stored anyway (a block over its limit still
        loads; the agent can only shorten it). Every graph step calls this, so when both
        blocks exist it only reads: taking the write lock each time made every step wait
        behind any other writer of the file. ``char_limit``: the new blocks' limit (None:
        the store's default).
        """
        if self._find("persona") is not None and self._find("human") is not None:
            return
        limit = self.default_limit if char_limit is None else char_limit
        with transaction(self.db):
            for label, value, description in (
                ("persona", persona, PERSONA_DESCRIPTION),
                ("human", human, HUMAN_DESCRIPTION),
            ):
                if self._find(label) is None:
                    self._insert(label, value, description, limit, False, "system")

    def create(
        self,
        label: str,
        value: str,
        description: str,
        char_limit: int,
        read_only: bool = False,
        sections: Sequence[str] = (),
    ) -> Block:
        """Create a new block, optionally in labelled ``sections`` (``stores.sections``).

        With sections and an empty ``value`` the block starts as their empty headers;
        a given value must hold each header once, in order.

        Raises:
            BlockEditError: The label is invalid or taken, the limit is not positive, the
                value is over the limit, or the sections are malformed.
        """
        value, names = new_block_value(label, value, char_limit, sections)
        with transaction(self.db):
            if self._find(label) is not None:
                raise BlockEditError(f"Create failed: block '{label}' already exists.")
            return self._insert(label, value, description, char_limit, read_only, "system", names)

    def declare_sections(self, label: str, sections: Sequence[str], actor: str = "user") -> Block:
        """Give block ``label`` these labelled sections (replacing any it declared).

        Headers the value lacks are added at its end (empty sections); text already in the
        block stays where it is, before the first new header. Logged as op ``sections``.

        Raises:
            BlockEditError: Unknown label, read-only block (for a non-owner), malformed
                names, or the headers present are in another order than ``sections``.
        """
        names = check_names(sections)
        with transaction(self.db):
            block = self._editable(label, actor)
            value = with_headers(block.value, names)
            check_value(value, names, label)
            owner = self.owner(label)
            self.db.conn.execute(
                "UPDATE core_blocks SET sections = ? WHERE agent_id = ? AND label = ?",
                (encode_sections(names), owner, label),
            )
            return self._write(
                Block(
                    block.label,
                    block.value,
                    block.description,
                    block.char_limit,
                    block.read_only,
                    names,
                ),
                value,
                actor,
                "sections",
            )

    # -- editing ---------------------------------------------------------------------

    def _edit(self, label: str, actor: str, op: str, change: Callable[[Block], str]) -> Block:
        """As ``EditsBlocks._edit``, under the file's write lock."""
        with transaction(self.db):
            block = self._editable(label, actor)
            return self._write(block, change(block), actor, op)

    # -- import and forgetting ---------------------------------------------------------

    def restore(self, blocks: Sequence[Block], history: Sequence[Mapping[str, Any]]) -> None:
        """Put exported blocks back with their history (import), in one transaction.

        Blocks are written as given (created, or overwritten); a history entry already
        present (same label, op, actor, time and new value) is not added twice, so
        restoring twice changes nothing.
        """
        entries = [restorable(entry) for entry in history]
        with transaction(self.db):
            for block in blocks:
                last = (
                    max((e[5] for e in entries if e[0] == block.label), default=None) or utc_now()
                )
                self.db.conn.execute(
                    "INSERT INTO core_blocks (agent_id, label, value, description, char_limit, "
                    "read_only, updated_at, sections) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (agent_id, label) DO UPDATE SET "
                    "value = excluded.value, description = excluded.description, "
                    "char_limit = excluded.char_limit, read_only = excluded.read_only, "
                    "updated_at = excluded.updated_at, sections = excluded.sections",
                    (
                        self.agent_id,
                        valid_text(block.label),
                        valid_text(block.value),
                        valid_text(block.description),
                        int(block.char_limit),
                        int(block.read_only),
                        last,
                        encode_sections(check_names(block.sections)),
                    ),
                )
            for label, old, new, actor, op, created_at in entries:
                present = self.db.conn.execute(
                    "SELECT 1 FROM core_block_history WHERE agent_id = ? AND label = ? "
                    "AND op = ? AND actor = ? AND created_at = ? AND new_value = ?",
                    (self.agent_id, label, op, actor, created_at, new),
                ).fetchone()
                if present is None:
                    self.db.conn.execute(
                        "INSERT INTO core_block_history "
                        "(agent_id, label, old_value, new_value, actor, op, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (self.agent_id, label, old, new, actor, op, created_at),
                    )

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every block and its history (one log entry, kind ``core``)."""
        with transaction(self.db):
            count = int(
                self.db.conn.execute(
                    "SELECT count(*) FROM core_blocks WHERE agent_id = ?", (self.agent_id,)
                ).fetchone()[0]
            )
            edits = self.db.conn.execute(
                "DELETE FROM core_block_history WHERE agent_id = ?", (self.agent_id,)
            ).rowcount
            self.db.conn.execute("DELETE FROM core_blocks WHERE agent_id = ?", (self.agent_id,))
            # Its links, and other agents' links to its (now deleted) blocks.
            self.db.conn.execute(
                "DELETE FROM core_block_links WHERE agent_id = :agent OR owner_id = :agent",
                {"agent": self.agent_id},
            )
            if count or edits:
                detail = f"{count} blocks, {edits} history entries"
                log_deletions(
                    self.db, self.agent_id, actor, [("core", self.agent_id, None, detail)]
                )
        return count

    # -- internals -------------------------------------------------------------------

    def _find(self, label: str) -> Block | None:
        row = self.db.conn.execute(
            f"SELECT * FROM ({self._visible}) WHERE label = :label ORDER BY shared LIMIT 1",
            {"agent": self.agent_id, "label": valid_text(label)},
        ).fetchone()
        return None if row is None else block_from_row(row[:6])

    def owner(self, label: str) -> str:
        """Whose row block ``label`` is for this agent: its own, or the sharing owner's."""
        row = self.db.conn.execute(
            f"SELECT agent_id FROM ({self._visible}) WHERE label = :label ORDER BY shared LIMIT 1",
            {"agent": self.agent_id, "label": valid_text(label)},
        ).fetchone()
        return self.agent_id if row is None else str(row[0])

    def _links(self) -> list[tuple[str, str]]:
        rows = self.db.conn.execute(
            "SELECT owner_id, label FROM core_block_links WHERE agent_id = ?", (self.agent_id,)
        ).fetchall()
        return [(str(owner), str(label)) for owner, label in rows]

    def _unknown_label(self, label: str, verb: str) -> str:
        return unknown_label(label, verb, [b.label for b in self.blocks()])

    def _editable(self, label: str, actor: str) -> Block:
        return editable(self._find(label), label, actor, lambda: [b.label for b in self.blocks()])

    def _write(self, block: Block, new_value: str, actor: str, op: str) -> Block:
        new_value = checked_value(block, new_value)
        check_value(new_value, block.sections, block.label)
        now = utc_now()
        owner = self.owner(block.label)
        self.db.conn.execute(
            "UPDATE core_blocks SET value = ?, updated_at = ? WHERE agent_id = ? AND label = ?",
            (new_value, now, owner, block.label),
        )
        self._log(block.label, block.value, new_value, actor, op, now, owner=owner)
        return Block(
            label=block.label,
            value=new_value,
            description=block.description,
            char_limit=block.char_limit,
            read_only=block.read_only,
            sections=block.sections,
        )

    def _insert(
        self,
        label: str,
        value: str,
        description: str,
        char_limit: int,
        read_only: bool,
        actor: str,
        sections: tuple[str, ...] = (),
    ) -> Block:
        now = utc_now()
        value, description = valid_text(value), valid_text(description)
        self.db.conn.execute(
            "INSERT INTO core_blocks (agent_id, label, value, description, char_limit, "
            "read_only, updated_at, sections) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self.agent_id,
                label,
                value,
                description,
                char_limit,
                int(read_only),
                now,
                encode_sections(sections),
            ),
        )
        self._log(label, None, value, actor, "create", now)
        return Block(label, value, description, char_limit, read_only, sections)

    def _log(
        self,
        label: str,
        old: str | None,
        new: str,
        actor: str,
        op: str,
        created_at: str,
        *,
        owner: str | None = None,
    ) -> None:
        self.db.conn.execute(
            "INSERT INTO core_block_history "
            "(agent_id, label, old_value, new_value, actor, op, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (owner or self.agent_id, label, old, new, valid_text(actor), op, created_at),
        )
