"""The "Add a backend" section of docs/extending.md: its example runs, and does what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from langgraph_memgpt.stores import registry
from langgraph_memgpt.stores.sqlite import close_all

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def backend_section_code() -> str:
    text = PAGE.read_text()
    section = text.split("## Add a backend", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the section has one runnable example"
    return blocks[0]


def test_the_add_a_backend_example_serves_memory_and_a_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMGPT_DATABASE_URL", raising=False)
    monkeypatch.setattr(registry, "ENGINES", dict(registry.ENGINES))
    namespace: dict[str, object] = {"__name__": "extending"}
    try:
        exec(compile(backend_section_code(), "docs/extending.md", "exec"), namespace)  # noqa: S102
    finally:
        close_all()
    out = capsys.readouterr().out
    assert out.startswith("Ada keeps her bicycle in the blue shed\n")
    shown = " ".join(out.split())
    assert "core memory of agent 'ada'" in shown  # inspect's tables, through the folder engine
    assert "bicycle" in shown.split("Ada keeps", 1)[1]  # inspect read the passage back
    folder = Path(str(namespace["url"]).removeprefix("folder://"))
    assert (folder / "memory.sqlite").is_file()
    assert registry.ENGINES["folder"] is namespace["FolderBackend"]
    assert not (tmp_path / "memory.sqlite").exists()  # nothing in the working folder


def test_the_section_lists_every_front_end_capability() -> None:
    from langgraph_memgpt.stores.capabilities import ENGINE_SPECIFIC, FRONT_END_CAPABILITIES

    text = PAGE.read_text().split("## Add a backend", 1)[1]
    for capabilities in FRONT_END_CAPABILITIES.values():
        for capability in capabilities:
            assert f"`{capability.__name__}`" in text, capability  # type: ignore[attr-defined]
    for capability in ENGINE_SPECIFIC:
        assert f"`{capability.__name__}`" in text, capability
