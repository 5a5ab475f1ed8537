r"""What a command that reads the user's files may read, and what of it may reach the model.

One rule for every file reader (``ingest``, ``watch``), so no surface keeps its own copy:

* **Confinement** (`confined`, `is_inside`): a path is resolved (links followed to the real
  file) and read only when the real file lies inside the real folder it was found in.
  ``db.txt -> ../private/.pgpass`` is outside, whatever its name.
* **Credential files** (`looks_like_credential`): decided by the link's name *and* its
  target's, and by every folder on the target's real path (``.ssh``, ``.aws``...): a link
  named ``notes.txt`` that leads to ``~/.pgpass`` is a credential file.
* **Secret text** (`secret_spans`, `holds_secret`, `withhold_secrets`): a tested pattern
  set for the common formats: private key blocks, cloud and service tokens (AWS, GitHub
  ``ghp_`` / ``github_pat_``, Slack, Stripe ``sk_live_`` / ``rk_live_``, OpenAI-style
  ``sk-``, JWTs), ``Authorization: Bearer ...``, a URL or DSN with a password, a netrc
  line, and any assignment whose key has a secret word among its parts (``DB_PASSWORD=``,
  ``SECRET_KEY =``, ``AWS_SECRET_ACCESS_KEY=``, ``POSTGRES_PASSWORD:``, ``auth_token:``,
  ``db_pass:``, ``"apiKey":``). A key is split at ``_``, ``-``, ``.`` and case changes
  before its words are compared, so ``DB_PASSWORD`` is caught (a ``\b`` after ``_`` is
  not a word boundary) and ``author`` or ``passenger`` are not.
* **Names** (`shown_name`): a file or folder name enters text the model reads with every
  control and separator character escaped, so a name cannot start a line of its own (a
  forged ``- Name: Ada`` / ``+ Name: Mallory`` diff).

``detect-secrets`` (the maintained scanner on PyPI) was tried and does not fit: its keyword
plugin missed 7 of the 11 formats above in unquoted config lines (``DB_PASSWORD=...``,
``db_pass: ...``, ``Authorization: Bearer ...``, a netrc line, ``github_pat_...``), and its
entropy plugins flag ordinary words ("output_format: parquet") without the file-level
filters a line scan lacks.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from langgraph_memgpt.stores.text import one_line

WITHHELD = "[secret withheld]"
"""What a secret's value becomes in text that is kept (``ingest``)."""

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
    "*secret*",
    "*passw*",
    "credentials*",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".git-credentials",
)
"""File names (case-insensitive globs) that look like credentials: never read."""
CREDENTIAL_WORDS = frozenset(
    {
        "key",
        "keys",
        "apikey",
        "apikeys",
        "privatekey",
        "accesskey",
        "sshkey",
        "keyfile",
        "keystore",
        "keychain",
        "keyring",
        "token",
        "tokens",
    }
)
"""Words of a file name (split at ``_``, ``-``, ``.``, spaces and case changes) that make
it a credential: ``deploy_key``, ``api-token.txt``, ``apiKey.json``, but not
``keyboard.md``, ``monkey.txt`` or ``tokenizer-notes.md``."""
CREDENTIAL_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".docker", ".kube", "secrets"})
"""Folders whose files are all treated as credentials."""


_KEY_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
"""The words of a key or a file name: ``DB_PASSWORD`` -> DB, PASSWORD; ``apiKey`` -> api, Key."""


class OutsideFolderError(ValueError):
    """A path leads (through a link) out of the folder it was found in."""


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path``'s real file (links followed) lies inside ``root``'s real folder."""
    return path.resolve().is_relative_to(root.resolve())


def confined(path: Path, root: Path, given: Path | None = None) -> Path:
    """``path`` itself, if its real file lies inside the real folder ``root``.

    Raises:
        OutsideFolderError: it leads out (the message names where, and the folder given).
    """
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        raise OutsideFolderError(
            f"{path} leads to {real}, outside the folder given ({given or root}): only what "
            "is inside it is read; remove the link or name the file itself where it is"
        )
    return path


def _credential_name(path: Path) -> bool:
    name = path.name.lower()
    if any(fnmatch.fnmatch(name, pattern) for pattern in CREDENTIAL_NAMES):
        return True
    if any(w.lower() in CREDENTIAL_WORDS for w in _KEY_WORD.findall(path.name)):
        return True
    return any(part.lower() in CREDENTIAL_DIRS for part in path.parts[:-1])


def looks_like_credential(path: Path) -> bool:
    """Whether ``path`` holds a credential, judged by its name and its real target's.

    Its name, its target's name, or a folder on either path (a link is judged by where it
    leads too, not only by its name).
    """
    if _credential_name(path):
        return True
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a link loop: nothing can be read through it anyway
        return True
    return real != path and _credential_name(real)


# -- secret text ------------------------------------------------------------------------

_SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "pass",
        "pw",
        "secret",
        "secrets",
        "token",
        "apikey",
        "accesskey",
        "privatekey",
        "credential",
        "credentials",
        "dsn",
    }
)
"""Words of a key that make its value a secret (``DB_PASSWORD`` has ``password``)."""
_SECRET_PAIRS = frozenset(
    {
        ("api", "key"),
        ("access", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("signing", "key"),
        ("encryption", "key"),
        ("master", "key"),
        ("client", "key"),
        ("auth", "key"),
        ("account", "key"),
        ("service", "key"),
        ("session", "key"),
        ("account", "sid"),
    }
)
"""Two words in a row that name a secret (``STRIPE_API_KEY`` has ``api key``)."""
_ASSIGNMENT = re.compile(
    # Zero-width at each key's start, so one assignment's value never hides the next
    # ("env: DB_PASSWORD=..." holds two).
    r"""(?<![A-Za-z0-9_.\-])(?=(?P<key>[A-Za-z][A-Za-z0-9_.\-]*)["']?\s*(?::=|=>|=|:)\s*"""
    r"""["'`]?(?P<value>[^\s"'`,;]{3,}[^\s"'`]*))"""
)
_PATTERNS = (
    # A private key block, to its end (or the end of the text when it is cut).
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    ),
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),  # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),  # GitHub fine-grained tokens
    re.compile(r"\bgl(?:pat|dt|rt)-[A-Za-z0-9_\-]{20,}"),  # GitLab tokens
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"),  # Stripe keys
    re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"),  # OpenAI-style API keys
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"),  # Google API keys
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*"),  # JWTs
)
_VALUE_PATTERNS = (
    # Authorization headers: the credential after the scheme.
    re.compile(
        r"(?i)\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?"
        r"(?:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?(?P<value>[^\s\"']{6,})"
    ),
    re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/=\-]{12,})"),
    # A URL or DSN with a password: scheme://user:PASSWORD@host.
    re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@\"']*:(?P<value>[^\s@/\"']+)@"),
    # netrc: "machine host login ada password VALUE" (on one line or its own).
    re.compile(r"(?im)^[ \t]*(?:(?:machine|default)\b[^\n]*?)?\bpassword[ \t]+(?P<value>\S+)"),
)


def _secret_key(key: str) -> bool:
    """Whether a key (``DB_PASSWORD``, ``apiKey``, ``auth-token``) names a secret."""
    words = [w.lower() for w in _KEY_WORD.findall(key)]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:], strict=False))


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where secret values lie in ``text``: sorted, merged (start, end) character spans."""
    spans: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        spans += [m.span() for m in pattern.finditer(text)]
    for pattern in _VALUE_PATTERNS:
        spans += [m.span("value") for m in pattern.finditer(text)]
    for match in _ASSIGNMENT.finditer(text):
        if _secret_key(match.group("key")):
            spans.append(match.span("value"))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def holds_secret(text: str) -> bool:
    """Whether ``text`` holds something that looks like a secret's value."""
    return bool(secret_spans(text))


def withhold_secrets(text: str) -> tuple[str, int]:
    """``text`` with every secret value replaced by `WITHHELD`, and how many were."""
    spans = secret_spans(text)
    if not spans:
        return text, 0
    out: list[str] = []
    at = 0
    for start, end in spans:
        out += [text[at:start], WITHHELD]
        at = end
    out.append(text[at:])
    return "".join(out), len(spans)


def shown_name(name: str | Path) -> str:
    r"""A file or folder name as text the model reads, on one line.

    Control and separator characters are escaped (``\n``, ``\u2028``), so the name stays
    on its line and cannot forge another.
    """
    return one_line(str(name))


__all__ = [
    "CREDENTIAL_DIRS",
    "CREDENTIAL_NAMES",
    "WITHHELD",
    "OutsideFolderError",
    "confined",
    "holds_secret",
    "is_inside",
    "looks_like_credential",
    "secret_spans",
    "shown_name",
    "withhold_secrets",
]
