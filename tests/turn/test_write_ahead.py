"""Write-ahead happens in one place: the wrapper the graph's assembly puts around every node."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from langgraph_memgpt import Context, State, build_graph
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.sqlite import open_memory
from langgraph_memgpt.turn.write_ahead import RECORD_FIRST, WriteAhead

NODES = Path(__file__).resolve().parents[2] / "langgraph_memgpt" / "nodes"


def test_no_node_module_writes_to_recall_itself() -> None:
    for path in sorted(NODES.glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        assert "record" not in imported, path.name
        calls = {
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
        }
        assert "record" not in calls, path.name


def test_what_a_wrapped_node_adds_is_in_recall_before_the_checkpoint(tmp_path: Path) -> None:
    """A node of one's own, wrapped as the graph's are: its messages reach recall, a whole
    copy listed first wins over the cut copy the queue keeps, and an interrupt right after
    the node finds recall already holding them."""

    def speak(state: State, config: RunnableConfig) -> dict[str, Any]:
        whole = AIMessage("The whole of a long thought.", id="a1")
        cut = AIMessage("The whole…", id="a1")
        note = AIMessage("A second message.", id="a2")
        return {"messages": [cut, note], "turn": 7, RECORD_FIRST: [(3, [whole])]}

    builder = StateGraph(State, context_schema=Context)
    builder.add_node("speak", WriteAhead(Deps()).node(speak, "speak"))
    builder.add_node("after", lambda state: {})
    builder.add_edge(START, "speak")
    builder.add_edge("speak", "after")
    builder.add_edge("after", END)
    graph = builder.compile(checkpointer=InMemorySaver(), interrupt_after=["speak"])
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")
    config: Any = {"configurable": {"thread_id": "t"}}

    graph.invoke({"messages": [HumanMessage("hi", id="u1")]}, config, context=ctx)

    assert graph.get_state(config).next == ("after",)
    assert RECORD_FIRST not in graph.get_state(config).values
    stored = {r.message_id: r for r in open_memory(str(tmp_path), "ada").recall.get(["a1", "a2"])}
    assert stored["a1"].text == "The whole of a long thought."
    assert stored["a1"].turn == 3
    assert stored["a2"].text == "A second message."
    assert stored["a2"].turn == 7


def test_a_model_message_cut_in_the_queue_is_whole_in_recall(tmp_path: Path) -> None:
    long = "tea " * 3000
    model = ScriptedChatModel.from_steps(
        [
            {
                "content": "",
                "tool_calls": [{"name": "archival_memory_insert", "args": {"content": long}}],
            },
            {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Ok."}}]},
        ]
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("Remember this.")]}, config, context=ctx)
    step = next(
        m
        for m in graph.get_state(config).values["messages"]
        if isinstance(m, AIMessage) and m.tool_calls
    )
    assert len(step.tool_calls[0]["args"]["content"]) < len(long)
    [stored] = open_memory(str(tmp_path), "ada").recall.get([str(step.id)])
    assert stored.tool_calls[0]["args"]["content"] == long
