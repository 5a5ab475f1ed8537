"""What a watched file's change says: its changed lines, or why its content is withheld.

Which files may be read and what counts as a secret is `langgraph_memgpt.tools.file_rules`' (the
rule ``ingest`` follows too). Diffs are bounded: every event costs the agent prompt tokens.
`langgraph_memgpt.cli.watch` turns these into events.
"""

from __future__ import annotations

import difflib
from pathlib import Path

MAX_FILE_BYTES = 256 * 1024
"""Largest file whose text is kept for diffs; a bigger one is summarised by its size."""
MAX_DIFF_CHARS = 1500
"""The most of a diff one event carries: every event costs the agent prompt tokens."""
MAX_LINE_CHARS = 200


def read_text(path: Path) -> str | None:
    """The file's text, or None: missing, unreadable, too large or not text."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def size_text(path: Path) -> str:
    """The file's size as an event says it ("2048 bytes")."""
    try:
        size = path.stat().st_size
    except OSError:
        return "size unknown"
    return f"{size} bytes"


def changed_lines(old: str, new: str, limit: int = MAX_DIFF_CHARS) -> str:
    """The lines that changed, ``- old`` / ``+ new``, cut to ``limit`` characters.

    No headers and no context lines: a small model reads "- output_format: json /
    + output_format: parquet" more reliably than a full unified diff.
    """
    out: list[str] = []
    used = 0
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    for line in diff:
        if line.startswith(("---", "+++", "@@")):
            continue
        text = line[1:]
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + "..."
        shown = f"{line[0]} {text}"
        if used + len(shown) + 1 > limit:
            out.append("(more changes not shown)")
            break
        out.append(shown)
        used += len(shown) + 1
    return "\n".join(out)


def opening_lines(text: str, limit: int = MAX_DIFF_CHARS) -> str:
    """A new file's first lines, as ``+`` lines, bounded like a diff."""
    return changed_lines("", text, limit)
