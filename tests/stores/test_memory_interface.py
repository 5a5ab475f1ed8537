"""The memory interface: the graph speaks only ``stores.base``; a backend brings its engine."""

from __future__ import annotations

import ast
import threading
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.sqlite import DB_FILENAME, SqliteBackend, list_agents
from langgraph_memgpt.stores.types import RecallMessage

PACKAGE = Path(__file__).resolve().parents[2] / "langgraph_memgpt"
ENGINES = {"sqlite3", "sqlite_utils", "faiss", "psycopg"}
SPEAKS_THE_INTERFACE = [
    *sorted((PACKAGE / "nodes").glob("*.py")),
    *sorted((PACKAGE / "sleeptime").glob("*.py")),
    PACKAGE / "tools" / "run.py",
    *sorted((PACKAGE / "small_model").glob("*.py")),
    PACKAGE / "turn" / "main_context.py",
    PACKAGE / "graph.py",
]


def imported_modules(path: Path) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


def test_no_node_or_tool_imports_a_storage_engine_or_a_backend() -> None:
    for path in SPEAKS_THE_INTERFACE:
        modules = imported_modules(path)
        engines = {m for m in modules if m.split(".")[0] in ENGINES}
        assert not engines, f"{path.name} imports {engines}"
        stores = {m for m in modules if m.startswith("langgraph_memgpt.stores")}
        assert stores <= {
            "langgraph_memgpt.stores.base",
            "langgraph_memgpt.stores.capabilities",  # optional capabilities, tested with isinstance
            "langgraph_memgpt.stores.types",
            "langgraph_memgpt.stores.text",
            "langgraph_memgpt.stores.messages",
            "langgraph_memgpt.stores.words",  # engine-free query words
            "langgraph_memgpt.stores.ranking",  # engine-free fusion rules (is_question)
            "langgraph_memgpt.stores.duplicates",  # engine-free near-duplicate rule
            # the embedding model (MiniLM, onnxruntime), no store: same_fact reads meaning
            "langgraph_memgpt.stores.embeddings",
        }, f"{path.name} imports {stores}"


CLI_MODULES = [
    *sorted((PACKAGE / "cli").glob("*.py")),
    PACKAGE.parent / "benchmarks" / "bench" / "cli.py",
    PACKAGE / "serve" / "server.py",
]


def test_no_cli_module_imports_a_storage_engine() -> None:
    """The command line picks its backend through ``stores.backends`` and speaks the interface.

    Threads' checkpoints too are opened in one place (``checkpoints``), not by each command.
    """
    for path in CLI_MODULES:
        engines = {m for m in imported_modules(path) if m.split(".")[0] in ENGINES}
        assert not engines, f"{path.name} imports {engines}"


def test_each_backend_lists_its_agents_and_nothing_of_another_store(
    make_backend: Any,
) -> None:
    backend = make_backend()
    assert backend.agents() == []
    backend.open("bob").core.ensure_defaults()
    backend.open("ada").recall.add(
        [RecallMessage("ada", "t", "m1", "user", "hi", "2026-12-01T09:00:00Z")]
    )
    assert backend.agents() == ["ada", "bob"]
    backend.close()
    assert make_backend().agents() == ["ada", "bob"]  # a new backend on the same store


def test_each_backend_meets_the_memory_protocol(memory_backend: MemoryBackend) -> None:
    memory = memory_backend.open("ada")
    assert isinstance(memory, Memory)
    assert memory.agent_id == "ada"
    assert memory_backend.open("ada") is memory  # cheap to call every step


def test_the_graph_keeps_memory_in_the_backend_it_is_given(
    memory_backend: MemoryBackend, tmp_path: Path
) -> None:
    model = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Hi"}}]}]
    )
    graph = build_graph(model=model, memory=memory_backend).compile(checkpointer=InMemorySaver())
    ctx = Context(agent_id="ada", data_dir=str(tmp_path / "ignored"))

    graph.invoke(
        {"messages": [HumanMessage("Hello there")]},
        {"configurable": {"thread_id": "t"}},
        context=ctx,
    )

    assert not (tmp_path / "ignored" / DB_FILENAME).exists()
    memory = memory_backend.open("ada")
    latest = memory.recall.latest(5)
    assert "Hello there" in [m.text for m in latest]
    replies = [c["args"] for m in latest for c in m.tool_calls if c.get("name") == "send_message"]
    assert replies == [{"message": "Hi"}]
    assert [b.label for b in memory.core.blocks()] == ["persona", "human"]


def test_a_runs_core_block_limit_holds_on_every_backend(
    memory_backend: MemoryBackend, tmp_path: Path
) -> None:
    """The served graph's backend is built once, with its own default; the run's setting wins."""
    model = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Hi"}}]}]
    )
    graph = build_graph(model=model, memory=memory_backend).compile(checkpointer=InMemorySaver())
    ctx = Context(agent_id="ada", data_dir=str(tmp_path), core_block_limit=500)

    graph.invoke(
        {"messages": [HumanMessage("Hello")]}, {"configurable": {"thread_id": "t"}}, context=ctx
    )

    limits = {b.label: b.char_limit for b in memory_backend.open("ada").core.blocks()}
    assert limits == {"persona": 500, "human": 500}


def test_the_graph_keeps_memory_where_its_backend_says(tmp_path: Path) -> None:
    backend = SqliteBackend(tmp_path / "backend", embedding_model="none")
    model = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Hi"}}]}]
    )
    graph = build_graph(model=model, memory=backend).compile(checkpointer=InMemorySaver())
    ctx = Context(agent_id="ada", data_dir=str(tmp_path / "ignored"))

    graph.invoke(
        {"messages": [HumanMessage("Hello there")]},
        {"configurable": {"thread_id": "t"}},
        context=ctx,
    )

    assert list_agents(tmp_path / "backend") == ["ada"]
    assert not (tmp_path / "ignored" / DB_FILENAME).exists()
    texts = [m.text for m in backend.open("ada").recall.latest(5)]
    assert "Hello there" in texts


def test_callers_need_no_lock_to_use_one_agent_from_many_threads(
    memory_backend: MemoryBackend,
) -> None:
    memory = memory_backend.open("ada")
    memory.core.ensure_defaults()
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(20):
                memory.recall.add(
                    [
                        RecallMessage(
                            agent_id="ada",
                            thread_id=f"t{worker}",
                            message_id=f"w{worker}-{i}",
                            role="user",
                            text=f"message {i} from worker {worker}",
                            created_at="2026-12-01T09:00:00+00:00",
                        )
                    ]
                )
                memory.core.append("human", f"fact {worker}.{i}")
                memory.archival.search("worker")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors, errors
    assert memory.recall.count() == 120
    lines = memory.core.get("human").value.splitlines()
    assert len(lines) == 120 and len(set(lines)) == 120
