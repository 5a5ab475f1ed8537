"""Two real turns of the agent on the embedded llama.cpp model (no scripted replies)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ValidationError

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.stores.sqlite import open_memory
from langgraph_memgpt.tools.run import MEMORY_TOOLS


@pytest.mark.local_llm
def test_two_real_turns_complete_with_well_formed_tool_calls(tmp_path: Path) -> None:
    graph = build_graph().compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), model="local", max_steps=6)
    config = {"configurable": {"thread_id": "real"}}
    for text in ("Hi! My name is Ada and my favourite colour is teal.", "What is my name?"):
        out = graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
        assert isinstance(out["messages"][-1], AIMessage)

    queue = graph.get_state(config).values["messages"]
    calls = [c for m in queue if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls, "the local model made no tool call at all"
    for m in queue:
        if isinstance(m, AIMessage):
            assert not m.invalid_tool_calls, m.invalid_tool_calls
    for call in calls:
        assert call["name"] in MEMORY_TOOLS, call
        try:
            MEMORY_TOOLS[call["name"]].args.model_validate(call["args"])
        except ValidationError as err:  # pragma: no cover - the assertion message
            pytest.fail(f"malformed arguments for {call['name']}: {err}")

    recalled = open_memory(tmp_path, "default").recall.get([str(m.id) for m in queue])
    assert {r.message_id for r in recalled} == {str(m.id) for m in queue}
