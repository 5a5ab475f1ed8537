"""What a watched file's change says: its changed lines, or why its content is withheld.

Never a secret's value: a file whose name looks like a credential (``.env``, ``*.pem``,
``*key*``, ``*secret*``, ``*token*``, ``credentials*``, anything under ``.ssh``...) is never
read, and a file whose text looks like a secret (a private key block, ``password = ...``, a
cloud access key) is reported as changed with its content withheld. Diffs are bounded: every
event costs the agent prompt tokens. `langgraph_memgpt.watch` turns these into events.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

MAX_FILE_BYTES = 256 * 1024
"""Largest file whose text is kept for diffs; a bigger one is summarised by its size."""
MAX_DIFF_CHARS = 1500
"""The most of a diff one event carries: every event costs the agent prompt tokens."""
MAX_LINE_CHARS = 200
CREDENTIAL_NAMES = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.kdbx",
    "*.gpg",
    "*.asc",
    "*key*",
    "*secret*",
    "*token*",
    "*passw*",
    "credentials*",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
)
"""File names (case-insensitive globs) that look like credentials: never read."""
CREDENTIAL_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".docker", ".kube", "secrets"})
"""Folders whose files are all treated as credentials."""
SECRET_TEXT = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|\bsk-[A-Za-z0-9_-]{20,}"  # OpenAI-style API keys
    r"|\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\."  # JWTs
    r"|(?i:\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret)\b[\"']?\s*[:=]\s*[\"']?[^\s\"']{4,})"
)
"""Text that looks like a secret's value: the content of such a file is withheld."""


def looks_like_credential(path: Path) -> bool:
    """Whether ``path``'s name (or a folder it is in) says it holds a credential."""
    name = path.name.lower()
    if any(fnmatch.fnmatch(name, pattern) for pattern in CREDENTIAL_NAMES):
        return True
    return any(part.lower() in CREDENTIAL_DIRS for part in path.parts[:-1])


def looks_like_secret(text: str) -> bool:
    """Whether ``text`` holds something that looks like a secret's value."""
    return SECRET_TEXT.search(text) is not None


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
