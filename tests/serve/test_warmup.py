"""The warm-up at start reads exactly the prefix a new agent's first turn sends."""

from __future__ import annotations

import os
from pathlib import Path

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel
from langgraph_memgpt.serve.warmup import warm_first_turn


def _system_text(inner: ScriptedChatModel, call: int) -> str:
    return str(inner.calls[call][0].content)


def test_the_warm_up_prompt_is_the_first_turns_prompt_up_to_the_memory_statistics(
    tmp_path: Path,
) -> None:
    inner = ScriptedChatModel.from_steps(
        ["[", '[{"name": "send_message", "arguments": {"message": "Hi Ada!"}}]']
    )
    model = LocalToolCallingChatModel(
        inner=inner, reply_tool="send_message", companions=("core_memory_append",)
    )
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", human="New user.")

    warm_first_turn(model, ctx)
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    graph.invoke(
        {"messages": [HumanMessage("Hi, I'm Ada.")]},
        {"configurable": {"thread_id": "t"}},
        context=ctx,
    )

    warm, real = _system_text(inner, 0), _system_text(inner, 1)
    shared = len(os.path.commonprefix([warm, real]))
    assert "# Tools" in warm[:shared]  # the tools the model reads are in the warm prefix
    assert real.index("<memory_statistics>") <= shared  # ...and the whole core memory
    assert inner.call_kwargs[0]["max_tokens"] == 1  # nothing generated beyond one token
