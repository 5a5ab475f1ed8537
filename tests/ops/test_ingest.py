"""Documents into archival memory: chunks keep their source, re-ingest is idempotent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_memgpt import Context
from langgraph_memgpt.ops.ingest import IngestError, chunk_text, document_text, ingest_file
from langgraph_memgpt.tools.run import Provenance, execute_tool_call

PARAGRAPHS = [f"Paragraph {i} talks about topic{i} " + "and more words " * 20 for i in range(8)]


def test_chunks_are_whole_paragraphs_within_the_size_with_their_offsets() -> None:
    text = "\n\n".join(PARAGRAPHS)

    chunks = chunk_text(text, max_chars=700)

    assert len(chunks) > 1 and all(len(c.text) <= 700 for c in chunks)
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text.startswith("Paragraph") and chunk.text.endswith("words")
    assert " ".join(c.text for c in chunks).split() == text.split()  # no word lost or doubled


def test_a_paragraph_longer_than_a_chunk_is_cut_between_words() -> None:
    text = " ".join(f"word{i}" for i in range(400))

    chunks = chunk_text(text, max_chars=300)

    assert all(len(c.text) <= 300 for c in chunks)
    assert " ".join(c.text for c in chunks) == text


def test_html_keeps_the_readable_text_only(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text(
        "<html><head><title>T</title><style>b{}</style></head><body><h1>Title</h1>"
        "<p>First &amp; second.</p><script>alert(1)</script><ul><li>one</li><li>two</li></ul>"
        "</body></html>"
    )

    assert document_text(page) == "Title\n\nFirst & second.\n\none\n\ntwo"


def test_other_files_are_refused_with_what_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "x.docx").write_bytes(b"PK")
    with pytest.raises(IngestError, match=r"cannot ingest '\.docx'.*\.md"):
        document_text(tmp_path / "x.docx")


def test_ingested_chunks_are_found_by_the_search_tool_with_their_source(
    make_backend: Any, embeddings: Any, tmp_path: Path
) -> None:
    memory = make_backend(embeddings=embeddings).open("ada")
    doc = tmp_path / "handbook.md"
    doc.write_text("\n\n".join(PARAGRAPHS + ["The wifi password of the office is tulip42."]))

    report = ingest_file(memory, doc, max_chars=700)
    again = ingest_file(memory, doc, max_chars=700)

    assert report.added == report.chunks > 1 and again.added == 0
    outcome = execute_tool_call(
        "archival_memory_search",
        {"query": "office wifi password"},
        memory=memory,
        ctx=Context(),
        where=Provenance(thread_id="t", turn=1),
        user_tools={},
    )
    first_hit = json.loads(outcome.content)["message"].splitlines()[1]
    assert f"Source: handbook.md, chunk {report.chunks} of {report.chunks}" in first_hit
    assert "tulip42" in first_hit and "source:handbook.md" in first_hit


def test_a_changed_file_replaces_its_chunks(make_backend: Any, tmp_path: Path) -> None:
    memory = make_backend().open("ada")
    doc = tmp_path / "plan.txt"
    doc.write_text("We meet on Monday.")
    ingest_file(memory, doc)
    doc.write_text("We meet on Tuesday.")

    report = ingest_file(memory, doc)

    assert (report.added, report.replaced) == (1, 1)
    assert [p.text.splitlines()[1] for p, _ in memory.archival.list_passages()] == [
        "We meet on Tuesday."
    ]
    assert memory.deletions.entries()[0].kind == "passage"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="abc xyz.\t", min_size=0, max_size=400),
            st.sampled_from(["\n\n", "\n", "\n\n\n", " \n \n", "\n  \n\n"]),
        ),
        max_size=12,
    ),
    st.integers(min_value=100, max_value=600),
)
def test_chunks_are_the_documents_own_text_and_lose_no_word(
    paragraphs: list[tuple[str, str]], max_chars: int
) -> None:
    text = "".join(p + sep for p, sep in paragraphs)
    chunks = chunk_text(text, max_chars=max_chars)
    for chunk in chunks:
        assert chunk.text == text[chunk.start : chunk.end]  # the source line's offsets hold
        assert len(chunk.text) <= max_chars
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    assert " ".join(c.text for c in chunks).split() == text.split()
