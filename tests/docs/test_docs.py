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
