"""Messages keyed per thread: in-view exclusion by (thread, id), a new thread's first message
recovered for the agent the caller names; and an unknown context key in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checkpointers import Place, open_saver
from langchain_core.messages import HumanMessage

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.context import ContextError
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.ops.recovery import recover_threads
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.tools.run import Provenance, execute_tool_call


def numbered_per_thread(memory: Any) -> None:
    """A client that numbers messages per thread: a message "1" in t1 and in t2."""
    memory.recall.add(
        [
            RecallMessage(
                agent_id=memory.agent_id,
                thread_id=thread,
                message_id="1",
                role="user",
                text=text,
                created_at=f"2026-11-0{day}T10:00:00+00:00",
            )
            for thread, text, day in (
                ("t1", "My tandem bicycle is teal.", 1),
                ("t2", "Is my tandem bicycle teal?", 2),
            )
        ]
    )


def test_a_search_leaves_out_the_in_view_message_of_its_own_thread_only(
    memory_backend: Any,
) -> None:
    memory = memory_backend.open("ada")
    numbered_per_thread(memory)

    page = memory.recall.search("tandem bicycle", mode="fts", exclude_ids=[("t2", "1")])

    assert [h.item.thread_id for h in page.hits] == ["t1"]
    assert memory.recall.count(exclude_message_ids=[("t2", "1")]) == 1
    assert memory.recall.count(exclude_message_ids=["1"]) == 0  # a bare id: every thread


def test_conversation_search_finds_another_threads_message_with_the_same_id(
    memory_backend: Any,
) -> None:
    memory = memory_backend.open("ada")
    numbered_per_thread(memory)

    outcome = execute_tool_call(
        "conversation_search",
        {"query": "tandem bicycle"},
        memory=memory,
        ctx=Context(),
        where=Provenance(thread_id="t2", turn=1, call_id="c1", in_view=frozenset({"1"})),
        user_tools={},
    )

    assert "is teal." in outcome.content


def test_a_new_threads_first_message_is_recovered_for_the_agent_the_caller_names(
    place: Place,
) -> None:
    saver, close = open_saver(place.threads)
    backend = place.backend()
    try:
        model = ScriptedChatModel.from_steps(["hi"])
        graph = build_graph(model=model, memory=backend).compile(
            checkpointer=saver, interrupt_before=["open_turn"]
        )
        ctx = {"agent_id": "ada", "data_dir": str(place.data_dir), "embedding_model": "none"}
        config: Any = {"configurable": {"thread_id": "fresh"}}
        # LangGraph checkpoints the input; the process dies before the first node runs.
        first = HumanMessage("My gate code is 8812.", id="u1")
        graph.invoke({"messages": [first]}, config, context=ctx)
        assert "agent_id" not in graph.get_state(config).values

        recorded = recover_threads(graph, ctx, memory=backend)

        memory = place.open("ada")
        assert recorded == 1
        assert [m.text for m in memory.recall.get(["u1"])] == ["My gate code is 8812."]
        assert recover_threads(graph, ctx, memory=backend) == 0  # idempotent
        nobody = {"data_dir": str(place.data_dir), "embedding_model": "none"}
        assert recover_threads(graph, nobody, memory=backend) == 0  # no agent named: no guess
    finally:
        close()
        if backend is not None:
            backend.close()


def test_an_unknown_context_key_in_process_is_a_context_error(tmp_path: Path) -> None:
    graph = build_graph(model=ScriptedChatModel.from_steps(["hi"])).compile()
    context = {"agent_id": "ada", "data_dir": str(tmp_path), "agentid": "bob"}

    with pytest.raises(ContextError, match=r"unknown field\(s\) \['agentid'\]"):
        graph.invoke({"messages": [HumanMessage("hello")]}, context=context)
    with pytest.raises(ContextError, match="agentid"):
        Context(agentid="bob")  # type: ignore[call-arg]
