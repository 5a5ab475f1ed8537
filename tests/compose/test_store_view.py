"""MemGPTStore: an agent's memory through LangGraph's BaseStore, on both backends.

LangMem's tools and any graph's ``get_store()`` must read and write the memory the MemGPT
agent pages through its own tools, through the same tier code.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from conftest import BackendFactory
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langmem import create_manage_memory_tool, create_search_memory_tool
from typing_extensions import TypedDict

from langgraph_memgpt.compose.store import MemGPTStore, namespace
from langgraph_memgpt.compose.tools import memory_tools
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.types import BlockEditError

BO = namespace("bo", "archival")


def run_tool(backend: Any, name: str, args: dict[str, Any], call_id: str = "c1") -> str:
    tool = next(t for t in memory_tools("bo", backend=backend) if t.name == name)
    out = tool.invoke(
        {"name": name, "args": args, "id": call_id, "type": "tool_call"},
        {"configurable": {"thread_id": "t1"}},
    )
    return str(out.content if isinstance(out, ToolMessage) else out)


def langmem_agent(store: MemGPTStore, steps: list[Any]) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel.from_steps(steps)
    tools = [create_manage_memory_tool(namespace=BO), create_search_memory_tool(namespace=BO)]
    return create_agent(model, tools, store=store), model


def tool_results(out: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": name, "args": args}]}


@pytest.fixture
def backend(make_backend: BackendFactory, embeddings: Any) -> Any:
    return make_backend(embeddings=embeddings)


def test_langmem_tools_write_a_memory_archival_memory_search_finds(backend: Any) -> None:
    store = MemGPTStore(backend)
    agent, _ = langmem_agent(
        store,
        [
            call("manage_memory", {"content": "Bo's sister Ines lives in Lyon."}),
            call("search_memory", {"query": "where does the sister live"}),
            "Noted.",
        ],
    )
    out = agent.invoke({"messages": [HumanMessage("My sister Ines lives in Lyon.")]})
    created, found = tool_results(out)
    key = created.split()[-1]  # "created memory <uuid>"
    hits = json.loads(found)
    assert hits[0]["key"] == key
    assert hits[0]["value"]["content"] == "Bo's sister Ines lives in Lyon."
    assert hits[0]["namespace"] == list(BO)

    result = json.loads(run_tool(backend, "archival_memory_search", {"query": "Ines Lyon"}))
    assert result["status"] == "OK"
    assert "Bo's sister Ines lives in Lyon." in result["message"]
    # Another agent's archive does not have it.
    assert store.search(namespace("al", "archival"), query="Ines Lyon") == []


def test_a_passage_the_agent_saved_is_found_by_langmem_search(backend: Any) -> None:
    saved = json.loads(
        run_tool(backend, "archival_memory_insert", {"content": "Bo's bike is a red Bianchi."})
    )
    assert saved["status"] == "OK"
    agent, _ = langmem_agent(
        MemGPTStore(backend), [call("search_memory", {"query": "what bike"}), "A Bianchi."]
    )
    out = agent.invoke({"messages": [HumanMessage("What bike do I ride?")]})
    hits = json.loads(tool_results(out)[0])
    assert hits[0]["value"]["content"] == "Bo's bike is a red Bianchi."
    assert hits[0]["score"] is not None


def test_langmem_update_and_delete_go_through_archival_forgetting(backend: Any) -> None:
    store = MemGPTStore(backend)
    store.put(BO, "k1", {"content": "Bo drinks tea."})
    store.put(BO, "k1", {"content": "Bo drinks tea."})  # the same: nothing written
    memory = store.memory("bo")
    assert memory.archival.count() == 1
    assert memory.deletions.entries() == []

    store.put(BO, "k1", {"content": "Bo drinks coffee now.", "tags": ["drinks"]})
    item = store.get(BO, "k1")
    assert item is not None and item.value["content"] == "Bo drinks coffee now."
    assert item.value["tags"] == ["drinks"]
    assert memory.archival.count() == 1
    assert [e.actor for e in memory.deletions.entries()] == ["store"]
    assert (
        "tea"
        not in json.loads(run_tool(backend, "archival_memory_search", {"query": "tea"}))["message"]
    )

    store.delete(BO, "k1")
    assert store.get(BO, "k1") is None
    assert memory.archival.count() == 0
    # A delete is `forget --passage`: the search result that showed the passage goes too.
    kinds = sorted(e.kind for e in memory.deletions.entries())
    assert kinds == ["message", "passage", "passage"]
    assert "coffee" not in json.dumps([m.text for m in memory.recall.latest(20)])


def test_a_passage_saved_without_a_key_is_read_and_deleted_by_its_id(backend: Any) -> None:
    store = MemGPTStore(backend)
    passage = store.memory("bo").archival.insert("Bo was born in Porto.")
    items = store.search(BO, query="born")
    assert [i.key for i in items] == [str(passage.id)]
    got = store.get(BO, str(passage.id))
    assert got is not None and got.value["content"] == "Bo was born in Porto."
    store.delete(BO, str(passage.id))
    assert store.memory("bo").archival.count() == 0


def test_any_graph_reads_core_and_recall_through_get_store(backend: Any) -> None:
    store = MemGPTStore(backend)
    run_tool(backend, "core_memory_append", {"label": "human", "content": "Name: Bo."})

    class S(TypedDict):
        seen: str

    def read(state: S) -> dict[str, str]:
        item = get_store().get(namespace("bo", "core"), "human")
        assert item is not None
        return {"seen": item.value["value"]}

    graph = StateGraph(S).add_node("read", read)
    graph.add_edge(START, "read").add_edge("read", END)
    assert graph.compile(store=store).invoke({"seen": ""})["seen"] == "Name: Bo."

    store.put(namespace("bo", "core"), "human", {"value": "Name: Bo. Rides a Bianchi."})
    block = store.memory("bo").core.get("human")
    assert block.value == "Name: Bo. Rides a Bianchi."
    assert store.memory("bo").core.history("human")[-1]["actor"] == "store"
    assert {i.key for i in store.search(namespace("bo", "core"))} >= {"human", "persona"}


def test_read_only_blocks_and_recall_refuse_store_writes(backend: Any) -> None:
    store = MemGPTStore(backend)
    core = store.memory("bo").core
    core.create("policy", "Never share addresses.", "rules", 500, read_only=True)
    with pytest.raises(BlockEditError):
        store.put(namespace("bo", "core"), "policy", {"value": "Share anything."})
    assert core.get("policy").value == "Never share addresses."
    # An application acting for a person may (the owner's rule, as on the CLI).
    MemGPTStore(backend, actor="user").put(
        namespace("bo", "core"), "policy", {"value": "Share nothing."}
    )
    assert core.get("policy").value == "Share nothing."
    with pytest.raises(ValueError, match="read-only through the store"):
        store.put(namespace("bo", "recall"), "m1", {"content": "made up"})
    with pytest.raises(ValueError, match="cannot be deleted"):
        store.delete(namespace("bo", "core"), "human")


def test_bad_namespaces_and_values_are_clear_errors(backend: Any) -> None:
    store = MemGPTStore(backend)
    with pytest.raises(ValueError, match=r"\('memgpt', agent_id, tier\)"):
        store.put(("memories", "bo"), "k", {"content": "x"})
    with pytest.raises(ValueError, match="content"):
        store.put(BO, "k", {"text": "x"})
    with pytest.raises(ValueError, match="unsupported filter"):
        store.search(BO, query="x", filter={"colour": "red"})
    assert store.memory("bo").archival.count() == 0


def test_recall_is_searchable_and_namespaces_are_listed(backend: Any) -> None:
    from langgraph_memgpt.turn.main_context import record

    store = MemGPTStore(backend)
    record(store.memory("bo"), [HumanMessage("I adopted a cat named Miso.", id="m1")], "t1", 0)
    hits = store.search(namespace("bo", "recall"), query="cat Miso")
    assert [(h.key, h.value["role"]) for h in hits] == [("m1", "user")]
    assert ("memgpt", "bo", "recall") in store.list_namespaces(prefix=("memgpt", "bo"))
    assert store.list_namespaces(prefix=("memgpt",), max_depth=2) == [("memgpt", "bo")]
    store.delete(namespace("bo", "recall"), "m1")
    assert store.search(namespace("bo", "recall"), query="cat Miso") == []


def test_async_operations_answer_like_the_sync_ones(backend: Any) -> None:
    store = MemGPTStore(backend)

    async def go() -> list[Any]:
        await store.aput(BO, "k2", {"content": "Bo's dentist is Dr. Sousa.", "tags": "health"})
        return await store.asearch(BO, query="dentist", filter={"tags": "health"})

    items = asyncio.run(go())
    assert [(i.key, i.value["tags"]) for i in items] == [("k2", ["health"])]


def test_deleting_a_message_forgets_one_threads_message_never_every_threads(
    backend: Any,
) -> None:
    """Message ids are numbered per thread: every thread has a message "1"."""
    from langgraph_memgpt.compose.store import thread_namespace
    from langgraph_memgpt.turn.main_context import record

    store = MemGPTStore(backend)
    memory = store.memory("bo")
    record(memory, [HumanMessage("My cat is called Miso.", id="1")], "t1", 1)
    record(memory, [HumanMessage("My dog is called Rex.", id="1")], "t2", 1)
    recall = namespace("bo", "recall")
    with pytest.raises(ValueError, match=r"in 2 threads.*name its thread"):
        store.delete(recall, "1")
    with pytest.raises(ValueError, match=r"in 2 threads"):
        store.get(recall, "1")
    assert sorted(m.thread_id for m in memory.recall.latest(10)) == ["t1", "t2"]  # both kept
    # Search results carry their thread's namespace: delete exactly what was found.
    hits = store.search(recall, query="dog Rex")
    assert {h.namespace for h in hits} <= {
        thread_namespace("bo", "t1"),
        thread_namespace("bo", "t2"),
    }
    hit = hits[0]
    assert hit.namespace == thread_namespace("bo", "t2") and hit.key == "1"
    store.delete(hit.namespace, hit.key)
    assert [(m.thread_id, m.text) for m in memory.recall.latest(10)] == [
        ("t1", "My cat is called Miso.")
    ]
    item = store.get(recall, "1")  # one thread left with that id: unambiguous
    assert item is not None and item.value["content"] == "My cat is called Miso."
    assert store.get(thread_namespace("bo", "t2"), "1") is None
    assert [i.value["content"] for i in store.search(thread_namespace("bo", "t1"))] == [
        "My cat is called Miso."
    ]


@pytest.mark.parametrize("key", ["²", "9" * 30, "١٢", "", "-1", "1e5"])
def test_any_key_is_a_key_never_a_crash(backend: Any, key: str) -> None:
    store = MemGPTStore(backend)
    for tier in ("archival", "core", "recall"):
        assert store.get(namespace("bo", tier), key) is None
    store.delete(BO, key)  # nothing under it: nothing happens
    store.delete(namespace("bo", "recall"), key)
    store.put(BO, key, {"content": f"kept under {key!r}"})
    item = store.get(BO, key)
    assert item is not None and item.value["content"] == f"kept under {key!r}"
    store.delete(BO, key)
    assert store.get(BO, key) is None and store.memory("bo").archival.count() == 0


@pytest.mark.parametrize("tier", ["archival", "core", "recall"])
def test_an_offset_or_limit_out_of_range_is_a_clear_error(backend: Any, tier: str) -> None:
    store = MemGPTStore(backend)
    ns = namespace("bo", tier)
    with pytest.raises(ValueError, match=r"at most 10000 results"):
        store.search(ns, query="cat", offset=10**19)
    with pytest.raises(ValueError, match=r"at most 10000 results"):
        store.search(ns, limit=10**6)
    with pytest.raises(ValueError, match=r"offset must be a whole number from 0"):
        store.search(ns, offset=-1)
    assert store.search(ns, offset=9_990, limit=10) == []
