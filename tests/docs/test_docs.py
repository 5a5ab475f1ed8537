"""The README and the docs site say what the code does: their Python examples run.

Every ```python block of README.md and docs/ runs, page by page in a fresh folder (the
blocks of one page share their names, as a reader reads them in order). A block that needs
what a test cannot have (a running server, a Postgres URL, a hosted model) is marked
``<!-- compile-only: why -->`` on the line before it, and is compiled instead. Every page
under docs/ is in mkdocs.yml's nav, so a page added by anyone is reachable.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(r"(?P<mark><!-- compile-only: [^>]+-->\n)?```python\n(?P<code>.*?)```", re.S)


def blocks(page: Path) -> list[tuple[bool, str]]:
    """(runs, code) of each Python block of a page."""
    return [(not m.group("mark"), m.group("code")) for m in FENCE.finditer(page.read_text())]


def section(page: Path, heading: str) -> str:
    """The text of a page from ``heading`` (a ``## `` line) to the next heading of its level."""
    text = page.read_text()
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


@pytest.fixture(autouse=True)
def _engines_registered_by_an_example_stay_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """An example may register an engine (the Extending page's ``folder://``): for its test only."""
    from langgraph_memgpt.stores import registry

    monkeypatch.setattr(registry, "ENGINES", dict(registry.ENGINES))
    monkeypatch.setattr(registry, "EXTRAS", dict(registry.EXTRAS))


def run_examples(text: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """Run the Python blocks of ``text`` in ``folder``, as a reader would; their names."""
    monkeypatch.chdir(folder)
    for name in ("MEMGPT_DATA_DIR", "MEMGPT_DATABASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    namespace: dict[str, object] = {"__name__": "docs"}
    for number, match in enumerate(FENCE.finditer(text), start=1):
        compiled = compile(match.group("code"), f"example {number}", "exec")
        if not match.group("mark"):
            exec(compiled, namespace)  # noqa: S102
    return namespace


def test_the_readme_is_short_and_keeps_its_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "make run" in readme and "make test" in readme


def test_every_docs_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r":\s*(\S+\.md)\s*$", nav, re.M))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages - listed == set(), "add these pages to mkdocs.yml's nav"
    assert listed - pages == set(), "the nav names pages that do not exist"


def test_a_compile_only_mark_says_why() -> None:
    for page in PAGES:
        for mark in re.findall(r"<!-- compile-only:([^>]*)-->", page.read_text()):
            assert mark.strip(), f"{page}: say why the example cannot run"


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: p.name)
def test_the_python_examples_of_a_page_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("MEMGPT_DATA_DIR", "MEMGPT_DATABASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    namespace: dict[str, object] = {"__name__": "docs"}
    for number, (runs, code) in enumerate(blocks(page), start=1):
        compiled = compile(code, f"{page.name} block {number}", "exec")
        if runs:
            exec(compiled, namespace)  # noqa: S102
    assert os.getcwd() == str(tmp_path)


def test_the_extending_pages_memory_tool_runs_beside_the_memory_tools_and_saves_into_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_core.messages import ToolMessage

    from langgraph_memgpt.stores.sqlite import open_memory

    example = section(DOCS / "extending.md", "## Add a memory tool")
    names = run_examples(example, tmp_path, monkeypatch)

    # What the page says each print shows, it shows.
    said = re.findall(r"^print\(.*\)\s+# (.+)$", example, re.M)
    assert capsys.readouterr().out.splitlines() == said
    # The model is offered the new tool beside the memory tools, and the loop ran it.
    offered = {t["function"]["name"] for t in names["model"].bound_tools}  # type: ignore[attr-defined]
    assert {"add_todo", "archival_memory_search", "core_memory_append", "send_message"} <= offered
    results = {
        m.name: str(m.content)
        for m in names["out"]["messages"]  # type: ignore[index]
        if isinstance(m, ToolMessage)
    }
    assert "Saved to do: Book the dentist" in results["add_todo"]
    # The agent's own search finds what the tool saved, in the agent's memory on disk, once.
    assert "[todo] Book the dentist" in results["archival_memory_search"]
    archival = open_memory(tmp_path / "memory", "ada").archival
    assert archival.count() == 1
