"""Labelled sections inside one core block, shared by every backend (no storage here).

A block may declare sections (``Block.sections``, e.g. ``("User Profile", "Technical
Environment")``). Its value then holds one header line per section, in that order, each
section's text under its header::

    ## User Profile
    Name: Ada
    ## Technical Environment
    Prefers JSON output.

The header lines are part of the value, so the prompt, the history diffs, the char limit
and export see the labels with no extra rendering. An edit that names a section changes
only the text between its header and the next one: every other byte of the block stays as
it was. An edit that names none works on the whole value as for a block without sections,
but may not remove, move or add a header (that would silently merge two sections). A
block that declares no sections is edited exactly as before sections existed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from langgraph_memgpt.stores.types import Block, BlockEditError

HEADER_PREFIX = "## "
MAX_SECTIONS = 20
MAX_SECTION_NAME = 64


def header(name: str) -> str:
    """The line that opens section ``name`` in a block's value."""
    return f"{HEADER_PREFIX}{name}"


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    """Section names as declared, refused if empty, multi-line, too long or repeated."""
    out: list[str] = []
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise BlockEditError("Sections failed: a section name must be non-empty text.")
        if name != name.strip() or "\n" in name or "\r" in name:
            raise BlockEditError(
                f"Sections failed: section name {name!r} must be one line without "
                "leading or trailing spaces."
            )
        if any("\ud800" <= ch <= "\udfff" for ch in name):
            # A lone surrogate cannot be stored as written (it is kept as U+FFFD), so the
            # stored header would never match the declared name and the block would refuse
            # every later edit.
            raise BlockEditError(
                f"Sections failed: section name {name!r} holds a lone surrogate (an invalid "
                "character, half of a UTF-16 pair): use only whole characters."
            )
        if len(name) > MAX_SECTION_NAME:
            raise BlockEditError(
                f"Sections failed: section name {name[:40]!r}... is over "
                f"{MAX_SECTION_NAME} characters."
            )
        if name.casefold() in {n.casefold() for n in out}:
            raise BlockEditError(f"Sections failed: section {name!r} is declared twice.")
        out.append(name)
    if len(out) > MAX_SECTIONS:
        raise BlockEditError(f"Sections failed: at most {MAX_SECTIONS} sections per block.")
    return tuple(out)


def encode(names: Sequence[str]) -> str:
    """How a block's section names are stored (a JSON list; '' for none)."""
    return json.dumps(list(names)) if names else ""


def decode(stored: object) -> tuple[str, ...]:
    """The section names a stored column holds (tolerates '' and NULL: none)."""
    if not stored:
        return ()
    value = json.loads(str(stored))
    return tuple(str(n) for n in value) if isinstance(value, list) else ()


def compose(names: Sequence[str], texts: dict[str, str] | None = None) -> str:
    """A block value holding a header per section, each followed by its text (if any)."""
    texts = texts or {}
    lines: list[str] = []
    for name in names:
        lines.append(header(name))
        body = texts.get(name, "").strip("\n")
        if body:
            lines.append(body)
    return "\n".join(lines)


def _header_starts(value: str, names: Sequence[str]) -> list[tuple[str, int]]:
    """(name, offset of its header line) for each header line in ``value``, in order."""
    wanted = {header(n): n for n in names}
    found: list[tuple[str, int]] = []
    offset = 0
    for line in value.split("\n"):
        if line in wanted:
            found.append((wanted[line], offset))
        offset += len(line) + 1
    return found


def check_value(value: str, names: Sequence[str], label: str) -> None:
    """Refuse a value of a sectioned block unless each header is there once, in order."""
    if not names:
        return
    found = [name for name, _ in _header_starts(value, names)]
    if found != list(names):
        expected = ", ".join(repr(header(n)) for n in names)
        raise BlockEditError(
            f"Edit failed: block '{label}' is in sections and must keep its header lines "
            f"{expected}, each once and in that order. To change text inside a section, "
            "name it with the section argument."
        )


def resolve(block: Block, section: str) -> str:
    """The declared name ``section`` means (case and outer spaces ignored), or a refusal."""
    wanted = section.strip().casefold()
    for name in block.sections:
        if name.casefold() == wanted:
            return name
    if not block.sections:
        raise BlockEditError(
            f"Edit failed: block '{block.label}' has no sections; leave section empty."
        )
    names = ", ".join(f"'{n}'" for n in block.sections)
    raise BlockEditError(
        f"Edit failed: block '{block.label}' has no section '{section}'. Its sections: {names}."
    )


def check_content(block: Block, content: str) -> None:
    """Refuse new text holding a header line of the block (it would split a section)."""
    if not block.sections:
        return
    headers = {header(n) for n in block.sections}
    for line in content.split("\n"):
        if line in headers:
            raise BlockEditError(
                f"Edit failed: the new text holds the section header {line!r} of block "
                f"'{block.label}'; write only the text that goes inside the section."
            )


def body(block: Block, section: str) -> str:
    """The text of section ``section`` of ``block`` (without its header)."""
    start, end = _span(block, resolve(block, section))[1:]
    return block.value[start:end] if end > start else ""


def edit_section(block: Block, section: str, edit: Callable[[Block], str]) -> str:
    """The value of ``block`` with only section ``section``'s text changed by ``edit``.

    ``edit`` receives the section as a block of its own (value: the section's text) and
    returns its new text; every byte outside that text is kept.
    """
    name = resolve(block, section)
    header_end, start, end = _span(block, name)
    old = block.value[start:end] if end > start else ""
    new = edit(
        Block(f"{block.label}' section '{name}", old, "", block.char_limit, block.read_only)
    ).strip("\n")
    check_content(block, new)
    if end <= start:  # empty section: the text goes on its own line after the header
        return block.value[:header_end] + ("\n" + new if new else "") + block.value[header_end:]
    if not new:  # emptied: drop the line break that held the text
        return block.value[:header_end] + block.value[end:]
    return block.value[:start] + new + block.value[end:]


def _span(block: Block, name: str) -> tuple[int, int, int]:
    """(end of the header line, start, end) of section ``name``'s text in the value."""
    check_value(block.value, block.sections, block.label)
    starts = _header_starts(block.value, block.sections)
    index = [n for n, _ in starts].index(name)
    header_end = starts[index][1] + len(header(name))
    start = header_end + 1
    end = starts[index + 1][1] - 1 if index + 1 < len(starts) else len(block.value)
    return header_end, start, max(end, min(start, len(block.value)))


def split(block: Block) -> list[dict[str, str]]:
    """The block as ``[{"name", "text"}]`` for display, one entry per section.

    Text before the first header (if any) comes first under name ``""``; a block without
    sections is one such entry.
    """
    if not block.sections:
        return [{"name": "", "text": block.value}]
    starts = _header_starts(block.value, block.sections)
    if [n for n, _ in starts] != list(block.sections):
        return [{"name": "", "text": block.value}]  # an owner's odd value still shows
    out: list[dict[str, str]] = []
    if starts and starts[0][1] > 0:
        out.append({"name": "", "text": block.value[: starts[0][1]].rstrip("\n")})
    for name in block.sections:
        out.append({"name": name, "text": body(block, name)})
    return out


def with_headers(value: str, names: Sequence[str]) -> str:
    """``value`` with the headers of ``names`` it lacks added at its end, in order."""
    present = set(value.split("\n"))
    missing = [n for n in names if header(n) not in present]
    if not missing:
        return value
    tail = compose(missing)
    return f"{value}\n{tail}" if value else tail
