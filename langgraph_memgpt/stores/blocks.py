"""The rules of a core-memory edit, shared by every backend (no storage engine here).

What makes an edit valid and the refusals a model reads (:class:`BlockEditError`) live
here once, so the embedded backend (``stores.sqlite.core``) and the Postgres one refuse the same
edits with the same words.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph_memgpt.stores.sections import (
    check_content,
    check_names,
    check_value,
    compose,
    edit_section,
)
from langgraph_memgpt.stores.sections import decode as decode_sections
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.stores.types import Block, BlockConflictError, BlockEditError
from langgraph_memgpt.stores.words import topic_stems

PERSONA_DESCRIPTION = (
    "Who you are: your name, personality, how you speak and behave. Stay in character; "
    "edit this block when you learn something about yourself worth keeping."
)
HUMAN_DESCRIPTION = (
    "What you know about the person you are talking with: name, preferences, plans, facts "
    "worth remembering in every future conversation. Keep it current and concise."
)

_LABEL = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_QUOTE_LIMIT = 200
OWNER_ACTORS = frozenset({"user", "admin", "operator"})
"""Actors that own read-only blocks and may change them (alone, or as ``user:<who>``).

Refusing only the literal actor ``"agent"`` let the tools' ``"agent:<thread>"`` through:
the rule is the other way round, so an actor name nobody thought of is refused too.
"""


def is_owner(actor: str) -> bool:
    """Whether ``actor`` may change a read-only block: a user, admin or operator.

    ``"user"`` and ``"user:ada"`` are owners; ``"agent"``, ``"agent:<thread>"``, ``""``
    and any other name are not.
    """
    return actor.split(":", 1)[0] in OWNER_ACTORS


def new_block_value(
    label: str, value: str, char_limit: int, sections: Sequence[str]
) -> tuple[str, tuple[str, ...]]:
    """A new block's value and section names, checked (what ``CoreStore.create`` writes).

    With sections and an empty ``value`` the block starts as their empty headers; a given
    value must hold each header once, in order.

    Raises:
        BlockEditError: The label is invalid, the limit is not positive, the value is
            over the limit, or the sections are malformed.
    """
    names = check_names(sections)
    value = compose(names) if names and not value else value
    check_value(value, names, label)
    check_new_block(label, value, char_limit)
    return value, names


def check_new_block(label: str, value: str, char_limit: int) -> None:
    """Refuse a new block with a bad label, a non-positive limit or a value over it."""
    check_label(label)
    if char_limit <= 0:
        raise BlockEditError(f"Create failed: char_limit must be positive, got {char_limit}.")
    if len(value) > char_limit:
        raise BlockEditError(
            f"Create failed: block '{label}' would hold {len(value)} characters, over its "
            f"limit of {char_limit}."
        )


SHARE_SECRET = "shared-blocks"
"""Name of the store secret that signs an export's shared-block claims (`share_proof`);
``stores.sqlite.db.SHARED_BLOCKS_SECRET`` is the same name."""


def share_proof(secret: bytes, agent_id: str, label: str, owner_id: str) -> str:
    """The signature of the claim "``agent_id`` had ``owner_id``'s block ``label`` attached".

    Written into an export by the store the agent lived in, keyed by that store's own
    secret: an import attaches a shared block again only when the file carries this
    signature for the importing agent, so a hand-edited ``shared_from`` gets a copy.
    """
    claim = json.dumps([agent_id, label, owner_id], ensure_ascii=False).encode("utf-8")
    return hmac.new(secret, claim, hashlib.sha256).hexdigest()


def check_label(label: str) -> None:
    """Refuse a label ``create()`` refuses (1-64 letters, digits, '_' or '-')."""
    if not _LABEL.match(label):
        raise BlockEditError(
            f"Create failed: block label {label!r} must be 1-64 letters, digits, '_' or '-'."
        )


def check_append(label: str, content: str) -> None:
    """Refuse an empty append."""
    if not content.strip():
        raise BlockEditError(
            f"Edit failed: nothing to append to block '{label}'; content is empty."
        )


def check_replace(label: str, old: str) -> str:
    """Refuse an empty ``old``; return it as stored text holds it (no lone surrogate)."""
    if not old:
        raise BlockEditError(
            f"Edit failed: old_content is empty. Copy the exact text to change from block "
            f"'{label}' as shown in your core memory; to add text use core_memory_append."
        )
    return valid_text(old)  # stored text never holds a lone surrogate (see checked_value)


def unknown_label(label: str, verb: str, labels: list[str]) -> str:
    """The refusal for a label the agent has no block for, naming the existing ones."""
    existing = ", ".join(f"'{x}'" for x in labels) if labels else "none"
    return f"{verb}: there is no core memory block '{label}'. Existing blocks: {existing}."


def editable(block: Block | None, label: str, actor: str, labels: Callable[[], list[str]]) -> Block:
    """``block`` if ``actor`` may edit it (not missing; read-only only to its owners)."""
    if block is None:
        raise BlockEditError(unknown_label(label, "Edit failed", labels()))
    if block.read_only and not is_owner(actor):
        raise BlockEditError(
            f"Edit failed: block '{label}' is read-only; you can read it but not change it."
        )
    return block


def appended(block: Block, content: str) -> str:
    """The value of ``block`` with ``content`` as a new last line."""
    return f"{block.value}\n{content}" if block.value else content


def append_value(block: Block, content: str, section: str | None) -> str:
    """The value of ``block`` with ``content`` appended to it, or to ``section`` when named."""
    if section:
        return edit_section(block, section, lambda part: appended(part, content))
    check_content(block, content)
    return appended(block, content)


def replace_value(block: Block, old: str, new: str, section: str | None) -> str:
    """The value of ``block`` with its one ``old`` (in ``section`` when named) made ``new``."""
    if section:
        return edit_section(block, section, lambda part: replaced(part, old, new))
    return replaced(block, old, new)


def block_from_row(row: Sequence[Any]) -> Block:
    """The block in a stored row: label, value, description, limit, read-only, sections."""
    label, value, description, char_limit, read_only, sections = row
    return Block(
        str(label),
        str(value),
        str(description),
        int(char_limit),
        bool(read_only),
        decode_sections(sections),
    )


def replaced(block: Block, old: str, new: str) -> str:
    """The value of ``block`` with its one occurrence of ``old`` replaced by ``new``.

    An ``old`` found nowhere as written but once when case is ignored is that occurrence: a
    small model copies "Preferred format: JSON" back as "preferred format: json", and the
    one place it means is not in doubt.
    """
    found = block.value.count(old)
    if found == 0:
        loose = list(re.finditer(re.escape(old), block.value, re.IGNORECASE))
        if len(loose) == 1:
            start, end = loose[0].span()
            return block.value[:start] + new + block.value[end:]
        raise BlockEditError(
            f"Edit failed: the text {_quote(old)} was not found in block '{block.label}'. "
            "Copy the exact text to change, character for character, from the block "
            "as shown in your core memory." + _lines_about(block, old)
        )
    if found > 1:
        raise BlockEditError(
            f"Edit failed: the text {_quote(old)} occurs {found} times in block "
            f"'{block.label}'. Include more of the surrounding text so it matches only once."
        )
    return block.value.replace(old, new, 1)


def _lines_about(block: Block, old: str) -> str:
    """The block's lines that share a content word with ``old``, quoted for the model.

    A small model copies the wording of what it read (a file's ``editor=emacs``) instead of
    the block's ("Writes code in Emacs."), and repeats the refused call; shown the line,
    it copies that.
    """
    wanted = topic_stems(old)
    lines = [line for line in block.value.splitlines() if wanted & topic_stems(line)]
    if not lines or len(lines) > 3:
        return ""
    return " The block's lines with those words: " + "; ".join(_quote(x) for x in lines) + "."


def checked_value(block: Block, new_value: str) -> str:
    """``new_value`` as it will be stored, refused if it makes ``block`` too long."""
    # No store can hold a lone surrogate: keep the edit, with U+FFFD for it.
    new_value = valid_text(new_value)
    # A block already over its limit (seeded long, or its limit lowered) may still be
    # edited as long as the edit does not make it longer: the agent can shrink it.
    if len(new_value) > block.char_limit and len(new_value) > len(block.value):
        raise BlockEditError(
            f"Edit failed: block '{block.label}' would hold {len(new_value)} characters, "
            f"over its limit of {block.char_limit}. Shorten the new content, or first "
            "remove or condense outdated text with core_memory_replace."
        )
    return new_value


def _quote(text: str) -> str:
    shown = text if len(text) <= _QUOTE_LIMIT else text[:_QUOTE_LIMIT] + "..."
    return repr(shown)


HistoryEntry = tuple[str, str | None, str, str, str, str]
"""(label, old value, new value, actor, op, created_at) of a block change."""


def restorable(entry: Mapping[str, Any]) -> HistoryEntry:
    """An exported history entry as stored; raises ValueError naming what is missing."""
    missing = [k for k in ("label", "new_value", "actor", "op", "created_at") if k not in entry]
    if missing:
        raise ValueError(f"a core history entry lacks {', '.join(missing)}")
    old = entry.get("old_value")
    return (
        valid_text(str(entry["label"])),
        None if old is None else valid_text(str(old)),
        valid_text(str(entry["new_value"])),
        valid_text(str(entry["actor"])),
        str(entry["op"]),
        str(entry["created_at"]),
    )


def check_expected(block: Block, expected: str | None) -> None:
    """Refuse a compare-and-set write when ``block`` no longer holds ``expected``.

    Raises:
        BlockConflictError: someone (the agent, another page) changed the block since the
            writer read ``expected``; nothing is written.
    """
    if expected is not None and block.value != expected:
        raise BlockConflictError(
            f"Set failed: block '{block.label}' changed since it was read "
            "(someone else edited it); reload it and make the change again.",
            block,
        )


class EditsBlocks:
    """``CoreStore``'s edits for every backend: what each edit checks and computes, once.

    A backend supplies :meth:`_edit`, one locked read-modify-write of a block in its own
    transaction; ``append``, ``replace`` and ``set`` are the same rules on every engine.
    """

    def _edit(self, label: str, actor: str, op: str, change: Callable[[Block], str]) -> Block:
        """Edit block ``label`` in one transaction; return the block as written.

        The block as ``actor`` may edit it (locked against concurrent edits), its new
        value ``change(block)`` checked, written and logged as ``op``.
        """
        raise NotImplementedError

    def append(
        self, label: str, content: str, actor: str = "agent", *, section: str | None = None
    ) -> Block:
        """Add ``content`` as a new line at the end of block ``label`` (or of its ``section``).

        Raises:
            BlockEditError: Empty content, unknown label or section, read-only block, or
                the result would be over the block's limit.
        """
        check_append(label, content)
        return self._edit(
            label, actor, "append", lambda block: append_value(block, content, section)
        )

    def replace(
        self, label: str, old: str, new: str, actor: str = "agent", *, section: str | None = None
    ) -> Block:
        """Replace the one occurrence of ``old`` in block ``label`` (or its ``section``).

        ``new`` may be empty, which deletes ``old``. ``old`` must occur exactly once (in
        the section, when one is named), so a short fragment cannot silently rewrite
        several places.

        Raises:
            BlockEditError: Empty ``old``, unknown label or section, read-only block,
                ``old`` not found or ambiguous, or the result would be over the limit.
        """
        old = check_replace(label, old)
        return self._edit(
            label, actor, "replace", lambda block: replace_value(block, old, new, section)
        )

    def set(
        self, label: str, value: str, actor: str = "user", *, expected: str | None = None
    ) -> Block:
        """Overwrite block ``label`` with ``value`` (for users and tools, not the model's edits).

        Read-only blocks refuse every actor but their owners (:data:`OWNER_ACTORS`).
        ``expected``: compare-and-set, the value the writer read; written only if the block
        still holds it (checked with the block locked).

        Raises:
            BlockConflictError: the block no longer holds ``expected``.
            BlockEditError: Unknown label, read-only block (for an actor that is not an
                owner), or the value is over the block's limit.
        """

        def checked(block: Block) -> str:
            check_expected(block, expected)
            return value

        return self._edit(label, actor, "set", checked)
