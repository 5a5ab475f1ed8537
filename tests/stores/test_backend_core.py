"""A small backend core, optional capabilities, and engines found by URL scheme.

What the loop and the memory tools call is the core (`stores.base`, 25 members at most);
what only a front end needs is a capability (`stores.capabilities`) each engine may have
and each front end checks before it changes anything. Engines are looked up by URL scheme
(`stores.registry`): an engine added by one registry entry serves memory and the CLI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from langgraph_memgpt.cli import main
from langgraph_memgpt.ops.forget import forget_agent, forget_thread
from langgraph_memgpt.stores import base, registry
from langgraph_memgpt.stores.backends import close_backend, open_backend
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.capabilities import (
    ENGINE_SPECIFIC,
    FRONT_END_CAPABILITIES,
    MissingCapability,
    RecallForget,
    capability_methods,
)
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all
from langgraph_memgpt.stores.types import RecallMessage

PACKAGE = Path(__file__).resolve().parents[2] / "langgraph_memgpt"
CORE = (base.CoreStore, base.RecallStore, base.ArchivalStore, base.Memory, base.MemoryBackend)


def test_the_core_backend_protocol_has_at_most_25_members() -> None:
    members = {p.__name__: sorted(capability_methods(p)) for p in CORE}
    assert sum(map(len, members.values())) <= 25, members


def test_the_core_holds_what_the_loop_and_the_memory_tools_call() -> None:
    assert capability_methods(base.CoreStore) >= {"blocks", "get", "append", "replace"}
    assert capability_methods(base.RecallStore) >= {"add", "search", "search_date", "count"}
    assert capability_methods(base.ArchivalStore) >= {"insert", "search", "count", "get"}


def test_no_capability_repeats_a_core_method() -> None:
    core = {(p.__name__, m) for p in CORE for m in capability_methods(p)}
    tiers = {"core": "CoreStore", "recall": "RecallStore", "archival": "ArchivalStore"}
    for where, capabilities in FRONT_END_CAPABILITIES.items():
        for capability in capabilities:
            for method in capability_methods(capability):  # type: ignore[arg-type]
                assert (tiers.get(where, ""), method) not in core, (capability, method)


def test_each_engine_has_every_capability_a_front_end_needs(
    memory_backend: MemoryBackend,
) -> None:
    memory = memory_backend.open("ada")
    places = {"memory": memory, "backend": memory_backend}
    for where, capabilities in FRONT_END_CAPABILITIES.items():
        target = places.get(where) or getattr(memory, where)
        for capability in capabilities:
            assert isinstance(target, capability), (where, capability)  # type: ignore[arg-type]


def test_engine_specific_capabilities_are_where_their_engine_needs_them(
    memory_backend: MemoryBackend, backend_kind: str
) -> None:
    memory = memory_backend.open("ada")
    has = {
        c.__name__
        for c in ENGINE_SPECIFIC
        if isinstance(memory, c) or isinstance(memory_backend, c)
    }
    expected = {"sqlite": {"Scrubbable", "SharedOpenMemories"}, "postgres": {"ThreadLocks"}}
    assert has == expected[backend_kind]


# -- an engine without a capability ----------------------------------------------------


class _CoreOnly:
    """A real tier seen through the core protocol only (what a minimal engine would offer)."""

    def __init__(self, tier: object, protocol: type) -> None:
        for name in capability_methods(protocol):
            setattr(self, name, getattr(tier, name))


@dataclass
class CoreOnlyMemory:
    agent_id: str
    core: Any
    recall: Any
    archival: Any


@dataclass
class CoreOnlyBackend:
    """A backend of the real embedded memory that offers the core protocols and no more."""

    inner: SqliteBackend

    def open(self, agent_id: str) -> CoreOnlyMemory:
        memory = self.inner.open(agent_id)
        return CoreOnlyMemory(
            agent_id,
            _CoreOnly(memory.core, base.CoreStore),
            _CoreOnly(memory.recall, base.RecallStore),
            _CoreOnly(memory.archival, base.ArchivalStore),
        )

    def agents(self) -> list[str]:
        return self.inner.agents()

    @classmethod
    def from_url(cls, url: str, **settings: Any) -> CoreOnlyBackend:
        """A ``coreonly:///folder`` URL: the embedded memory in that folder, core only."""
        del settings["data_dir"]
        return cls(SqliteBackend(Path(url.removeprefix("coreonly://")), **settings))

    def close(self) -> None:
        self.inner.close()


def test_an_engine_with_only_the_core_runs_memory_and_refuses_forget_by_name(
    tmp_path: Path,
) -> None:
    real = SqliteBackend(tmp_path / "memory", embedding_model="none")
    backend = CoreOnlyBackend(real)
    memory = backend.open("ada")
    assert isinstance(memory, Memory)
    memory.recall.add(
        [RecallMessage("ada", "t1", "m1", "user", "My locker code is 4471", "2024-01-01T00:00:00Z")]
    )
    memory.archival.insert("locker code 4471", thread_id="t1")
    assert memory.recall.search("locker").hits
    with pytest.raises(MissingCapability) as refused:
        forget_thread(memory, "t1", actor="user", checkpointer=None)
    message = str(refused.value)
    assert "forget needs the" in message and "capability" in message
    assert "test_backend_core._CoreOnly" in message  # the engine's class, by name
    # Checked before anything went: the message and the passage are both still there.
    assert memory.recall.count() == 1 and memory.archival.count() == 1
    close_all()


def test_forget_checks_every_capability_before_it_deletes_anything(tmp_path: Path) -> None:
    """An engine with every tier capability but no deletion log: nothing is forgotten unlogged."""
    real = SqliteBackend(tmp_path / "memory", embedding_model="none").open("ada")
    unlogged = CoreOnlyMemory("ada", real.core, real.recall, real.archival)  # no ``deletions``
    real.core.ensure_defaults(persona="I help Ada")
    real.recall.add([RecallMessage("ada", "t1", "m1", "user", "Hello", "2024-01-01T00:00:00Z")])
    real.archival.insert("Ada likes tea", thread_id="t1")
    with pytest.raises(MissingCapability, match="forget needs the LoggedDeletions capability"):
        forget_agent(unlogged, actor="user", checkpointer=None)
    assert (len(real.core.blocks()), real.recall.count(), real.archival.count()) == (2, 1, 1)
    close_all()


def test_a_missing_capability_names_itself_its_methods_and_the_engine(tmp_path: Path) -> None:
    backend = CoreOnlyBackend(SqliteBackend(tmp_path / "memory", embedding_model="none"))
    recall = backend.open("ada").recall
    from langgraph_memgpt.stores.capabilities import require

    with pytest.raises(
        MissingCapability, match=r"RecallForget capability \(delete, delete_all, delete_thread\)"
    ):
        require(recall, RecallForget, "forget")
    close_all()


# -- engines by URL scheme ---------------------------------------------------------------


class LabBackend(SqliteBackend):
    """An engine added from outside the package: the embedded memory at a ``lab://`` path.

    Real SQLite and FAISS files, in the folder the URL names; registered by one line.
    """

    opened: list[str] = []

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        data_dir: Path,
        embedding_model: str = "minilm",
        core_block_limit: int = 2000,
        read_only: bool = False,
        embeddings: Any = None,
    ) -> LabBackend:
        cls.opened.append(url)
        return cls(
            Path(url.removeprefix("lab://")),
            embedding_model=embedding_model,
            embeddings=embeddings,
            core_block_limit=core_block_limit,
            read_only=read_only,
        )


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    monkeypatch.delenv("MEMGPT_DATABASE_URL", raising=False)
    monkeypatch.setattr(LabBackend, "opened", [])
    monkeypatch.setattr(registry, "ENGINES", dict(registry.ENGINES))
    registry.register_engine("lab", f"{__name__}:LabBackend")
    yield f"lab://{tmp_path / 'lab-memory'}"
    close_all()


def lab_command(lab: str, tmp_path: Path, *args: str) -> int:
    """A CLI command on the lab engine (its data directory left unused)."""
    return main([*args, "--database-url", lab, "--data-dir", str(tmp_path / "unused")])


def test_an_engine_registered_by_one_line_serves_memory_and_the_cli(
    lab: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = open_backend(tmp_path / "unused", database_url=lab, embedding_model="none")
    assert type(backend) is LabBackend
    memory = backend.open("ada")
    memory.archival.insert("Ada keeps her bicycle in the blue shed", tags=["home"])
    memory.recall.add(
        [RecallMessage("ada", "t1", "m1", "user", "My locker code is 4471", "2024-01-01T00:00:00Z")]
    )
    assert memory.archival.search("bicycle shed").hits[0].item.text.startswith("Ada keeps")
    close_backend(backend)
    assert (tmp_path / "lab-memory" / "memory.sqlite").is_file()

    assert lab_command(lab, tmp_path, "inspect", "--agent", "ada") == 0
    assert "bicycle" in capsys.readouterr().out
    exported = tmp_path / "ada.jsonl"
    assert lab_command(lab, tmp_path, "export", "--agent", "ada", "--out", str(exported)) == 0
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    assert any(r.get("text", "").startswith("Ada keeps her bicycle") for r in records)
    assert any(r.get("text") == "My locker code is 4471" for r in records)
    forget = ("forget", "--agent", "ada", "--thread", "t1", "--embedding-model", "none")
    assert lab_command(lab, tmp_path, *forget) == 0, capsys.readouterr()
    reopened = open_backend("", database_url=lab, embedding_model="none").open("ada")
    assert reopened.recall.count() == 0 and reopened.archival.count() == 1
    assert len(LabBackend.opened) >= 4  # every command opened it through the registry
    assert not (tmp_path / "unused").exists()  # nothing went to the data directory


def test_a_url_no_engine_serves_is_refused_naming_the_known_schemes(tmp_path: Path) -> None:
    with pytest.raises(registry.BackendSetupError, match=r"known: postgres://, postgresql://"):
        open_backend(tmp_path, database_url="mysql://me:secret@db/memory")
    with pytest.raises(registry.BackendSetupError) as refused:
        open_backend(tmp_path, database_url="mysql://me:secret@db/memory")
    assert "secret" not in str(refused.value)


def test_the_neutral_modules_name_no_engine_but_the_registry() -> None:
    """Only ``stores.registry`` names engine modules; the chooser and protocols go through it."""
    for name in ("backends.py", "base.py", "capabilities.py"):
        source = (PACKAGE / "stores" / name).read_text()
        for engine in ("stores.sqlite", "stores.postgres"):
            assert engine not in source, f"stores/{name} names {engine}"
    assert "langgraph_memgpt.stores.sqlite:" in (PACKAGE / "stores" / "registry.py").read_text()


def test_both_engines_number_their_schema_with_one_migration_type() -> None:
    from langgraph_memgpt.stores.migration import Migration, latest_version
    from langgraph_memgpt.stores.postgres.db import MIGRATIONS as POSTGRES
    from langgraph_memgpt.stores.sqlite.migrations import MIGRATIONS as SQLITE

    assert {type(m) for m in (*SQLITE, *POSTGRES)} == {Migration}
    gap = [Migration(1, "one", print), Migration(3, "three", print)]
    with pytest.raises(ValueError, match=r"numbered 1, 2, \.\.\.: \[1, 3\]"):
        latest_version(gap)


def test_the_memory_page_answers_a_missing_capability_with_501_naming_it(
    tmp_path: Path,
) -> None:
    import asyncio

    from starlette.requests import Request

    from langgraph_memgpt.serve.web import views
    from langgraph_memgpt.serve.web.app import _answer

    memory = CoreOnlyBackend(SqliteBackend(tmp_path / "memory", embedding_model="none")).open("ada")

    async def history(request: Request) -> Any:
        return views.history_view(memory, "persona")

    memory.core.ensure_defaults(persona="I help Ada")
    response = asyncio.run(_answer(history)(Request({"type": "http", "method": "GET"})))
    assert response.status_code == 501
    assert "the memory page needs the BlockHistory capability" in response.body.decode()
    close_all()


def test_a_command_on_an_engine_without_a_capability_says_which_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MEMGPT_DATABASE_URL", raising=False)
    monkeypatch.setattr(registry, "ENGINES", dict(registry.ENGINES))
    registry.register_engine("coreonly", CoreOnlyBackend)
    url = f"coreonly://{tmp_path / 'memory'}"
    memory = open_backend("", database_url=url, embedding_model="none").open("ada")
    memory.recall.add([RecallMessage("ada", "t1", "m1", "user", "Hello", "2024-01-01T00:00:00Z")])
    code = main(
        [
            "forget",
            "--agent",
            "ada",
            "--thread",
            "t1",
            "--embedding-model",
            "none",
            "--database-url",
            url,
            "--data-dir",
            str(tmp_path / "unused"),
        ]
    )
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "forget needs the" in err and "CoreOnly" in err and "Traceback" not in err
    assert memory.recall.count() == 1  # nothing was forgotten
    close_all()
