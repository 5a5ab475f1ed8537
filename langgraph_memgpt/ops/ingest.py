"""Documents into archival memory: text, Markdown and HTML files, chunked with provenance.

A chunk is a few paragraphs (about ``max_chars``), never cut inside a word. Each becomes
one archival passage whose first line names its source ("Source: notes.md, chunk 2 of 5,
characters 1180-2350"), so ``archival_memory_search`` shows where a hit came from, tagged
``document`` and ``source:<file name>``. Passages are keyed on the file's path, its
content hash and the chunk number: ingesting an unchanged file again writes nothing, and
ingesting a changed one replaces its old chunks (each removal logged as a deletion).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from langchain_text_splitters import RecursiveCharacterTextSplitter

from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.stores.capabilities import (
    ArchivalForget,
    BulkLoad,
    PassageListing,
    require,
    require_all,
)
from langgraph_memgpt.stores.passages import MAX_TAG_CHARS, NewPassage
from langgraph_memgpt.stores.types import Passage
from langgraph_memgpt.tools.file_rules import (
    OutsideFolderError,
    confined,
    looks_like_credential,
    shown_name,
    withhold_secrets,
)

TEXT_SUFFIXES = {".txt", ".text", ".md", ".markdown", ".rst"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
MAX_CHUNK_CHARS = 1200
"""About a paragraph or three: small enough that a hit is about one thing and several fit
one result page, large enough to keep a paragraph's sentences together."""
_BATCH = 64

Progress = Callable[[str, int, int], None]


class IngestError(ValueError):
    """A file cannot be ingested (the message names it and says what is accepted)."""


@dataclass(frozen=True)
class Chunk:
    """One piece of a document, with where it came from."""

    index: int
    start: int  # character offsets into the extracted text
    end: int
    text: str


@dataclass
class IngestReport:
    """What ingesting one file did."""

    path: Path
    chunks: int
    added: int
    replaced: int
    withheld: int = 0
    """Secret values (``DB_PASSWORD=...``, a private key) replaced by ``[secret withheld]``."""


class _HTMLText(HTMLParser):
    """The readable text of an HTML page: no scripts or styles, blocks on their own lines."""

    _BLOCKS = frozenset(
        "p div br li ul ol h1 h2 h3 h4 h5 h6 tr table section article header footer "
        "blockquote pre hr dt dd".split()
    )
    _SKIP = frozenset({"script", "style", "head", "noscript", "template"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def document_text(path: Path) -> str:
    """The text of a text, Markdown or HTML file, every secret value withheld.

    Raises:
        IngestError: another kind of file, a credential file (by its name or the file it
            leads to), or one that is not UTF-8 text.
    """
    return _read_document(path)[0]


def _read_document(path: Path) -> tuple[str, int]:
    """`document_text`, and how many secret values it withheld (`file_rules`)."""
    if looks_like_credential(path):
        raise IngestError(
            f"{path} looks like a credential file (by its name or the file it leads to): "
            "ingest never reads credentials; leave it out, or rename it if it is not one"
        )
    suffix = path.suffix.lower()
    if suffix not in TEXT_SUFFIXES | HTML_SUFFIXES:
        accepted = ", ".join(sorted(TEXT_SUFFIXES | HTML_SUFFIXES))
        raise IngestError(
            f"{path}: cannot ingest '{suffix or 'no suffix'}' files; accepted: {accepted}"
        )
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise IngestError(f"{path} is not UTF-8 text ({err.reason}); convert it first") from None
    if suffix in HTML_SUFFIXES:
        parser = _HTMLText()
        parser.feed(raw)
        parser.close()
        raw = "".join(parser.parts)
    # Runs of spaces inside lines collapse; paragraph breaks (blank lines) stay.
    raw, withheld = withhold_secrets(raw)  # before lines are joined: a key block is whole
    lines = [" ".join(line.split()) for line in raw.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(), withheld


def chunk_text(text: str, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Split text into chunks of whole paragraphs (a long paragraph at line, then word, breaks).

    LangChain's recursive splitter packs paragraphs up to ``max_chars``; each chunk keeps
    where it starts and ends in ``text``, for the passage's source line.
    """
    if max_chars < 100:
        raise ValueError(f"max_chars must be at least 100, got {max_chars}")
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=max_chars,
        chunk_overlap=0,
        separators=["\n\n", "\n", " ", ""],
        add_start_index=True,
    )
    chunks: list[Chunk] = []
    for document in splitter.create_documents([text]):
        start = int(document.metadata["start_index"])
        end = start + len(document.page_content)
        chunks.append(Chunk(len(chunks), start, end, text[start:end]))
    return chunks


def ingest_file(
    memory: Memory,
    path: str | Path,
    *,
    max_chars: int = MAX_CHUNK_CHARS,
    actor: str = "user",
    progress: Progress | None = None,
) -> IngestReport:
    """Put one document into the agent's archival memory (idempotent per file content).

    Raises:
        IngestError: the file cannot be read as text, Markdown or HTML.
        MissingCapability: the backend cannot bulk-load, list or forget passages.
    """
    require_all(memory, "ingest", BulkLoad, PassageListing, ArchivalForget)
    path = Path(path)
    if not path.is_file():
        raise IngestError(f"{path} is not a file")
    text, withheld = _read_document(path)
    chunks = chunk_text(text, max_chars) if text else []
    where = hashlib.sha256(str(path.resolve()).encode("utf-8")).hexdigest()[:16]
    content = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    prefix = f"doc:{where}:"
    key = f"{prefix}{content}:"
    old = [
        p.id for p, k in _keyed_passages(memory) if k.startswith(prefix) and not k.startswith(key)
    ]
    before = memory.archival.count()
    name = shown_name(path.name)  # a newline in a name must not start a second line
    source_tag = f"source:{name}"[:MAX_TAG_CHARS]
    for start in range(0, len(chunks), _BATCH):
        batch = chunks[start : start + _BATCH]
        require(memory.archival, BulkLoad, "ingest").insert_many(
            [
                NewPassage(
                    text=(
                        f"Source: {name}, chunk {c.index + 1} of {len(chunks)}, "
                        f"characters {c.start}-{c.end}\n{c.text}"
                    ),
                    tags=("document", source_tag),
                    key=f"{key}{c.index}",
                )
                for c in batch
            ]
        )
        if progress is not None:
            progress(name, start + len(batch), len(chunks))
    added = memory.archival.count() - before
    # The file changed: its earlier chunks go (after the new ones are in, so a failure
    # halfway never leaves the document missing).
    replaced = (
        len(require(memory.archival, ArchivalForget, "ingest").delete(old, actor=actor))
        if old
        else 0
    )
    return IngestReport(
        path=path, chunks=len(chunks), added=added, replaced=replaced, withheld=withheld
    )


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, and the accepted files inside folders named (recursively, sorted).

    Nothing outside what was named is read: every file is resolved (symlinks followed to
    the real file) and must lie inside the real folder it was found in (the folder named,
    or a named file's own folder). A link that leads out of it, such as
    ``docs/README.md -> ../private/ssh_key.txt``, is refused; a link to a folder is not
    followed (or, where ``rglob`` follows it, refused when it leads outside).

    Raises:
        IngestError: a path does not exist, or a link leads out of the folder given.
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            root = path.resolve()
            found = sorted(
                p
                for p in path.rglob("*")
                if p.suffix.lower() in TEXT_SUFFIXES | HTML_SUFFIXES and p.is_file()
            )
            out += [_inside(p, root, path) for p in found]
        elif path.exists():
            out.append(_inside(path, path.parent.resolve(), path.parent))
        else:
            raise IngestError(f"{path} does not exist")
    return out


def _inside(path: Path, root: Path, given: Path) -> Path:
    """``path`` if its real file lies inside ``root`` (`file_rules.confined`)."""
    try:
        return confined(path, root, given)
    except OutsideFolderError as err:
        raise IngestError(str(err)) from None


def _keyed_passages(memory: Memory) -> list[tuple[Passage, str]]:
    out: list[tuple[Passage, str]] = []
    after = 0
    while page := require(memory.archival, PassageListing, "ingest").list_passages(
        after=after, limit=1000
    ):
        out += [(p, k) for p, k in page if k]
        after = page[-1][0].id
    return out


__all__ = [
    "Chunk",
    "IngestError",
    "IngestReport",
    "chunk_text",
    "document_text",
    "expand_paths",
    "ingest_file",
]
