"""What a LangGraph developer found trying the package (issue 43's defects, issue 44's refused
input), each as the check that found it: scripted chat models, real SQLite memory in a temp
folder, LangGraph's own checkpointers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.sqlite import open_memory


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def recalled(data_dir: Path, agent_id: str) -> list[str]:
    return [
        m.text for m in open_memory(data_dir, agent_id, embedding_model="none").recall.latest(50)
    ]


def test_configurable_agent_id_names_the_agent_as_on_every_surface(tmp_path: Path) -> None:
    """docs/library/tools.md: the run context's agent_id, else configurable["agent_id"]."""
    model = ScriptedChatModel.from_steps([step(call("send_message", message="Hi Ada."))])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    graph.invoke(
        {"messages": [HumanMessage("I'm Ada.")]},
        {"configurable": {"thread_id": "t1", "agent_id": "ada"}},
        context=Context(data_dir=str(tmp_path), embedding_model="none"),
    )
    assert "I'm Ada." in recalled(tmp_path, "ada")
    assert recalled(tmp_path, "default") == []
    state = graph.get_state({"configurable": {"thread_id": "t1"}}).values
    assert state["agent_id"] == "ada"


def test_a_context_naming_its_agent_wins_over_configurable(tmp_path: Path) -> None:
    model = ScriptedChatModel.from_steps(["Hi."])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    graph.invoke(
        {"messages": [HumanMessage("hello")]},
        {"configurable": {"thread_id": "t1", "agent_id": "ada"}},
        context=Context(data_dir=str(tmp_path), embedding_model="none", agent_id="bo"),
    )
    assert "hello" in recalled(tmp_path, "bo")
    assert recalled(tmp_path, "ada") == []


def test_the_middleware_takes_configurable_agent_id_under_a_context_without_one(
    tmp_path: Path,
) -> None:
    from langchain.agents import create_agent

    from langgraph_memgpt.middleware import MemGPTMiddleware

    settings = Context(data_dir=str(tmp_path), embedding_model="none")
    agent = create_agent(
        ScriptedChatModel.from_steps(["Hi Ada."]),
        [],
        middleware=[MemGPTMiddleware(context=settings)],
        context_schema=Context,
        checkpointer=InMemorySaver(),
    )
    agent.invoke(
        {"messages": [HumanMessage("I'm Ada.")]},
        {"configurable": {"thread_id": "t1", "agent_id": "ada"}},
        context=settings,
    )
    assert "I'm Ada." in recalled(tmp_path, "ada")
    assert recalled(tmp_path, "default") == []
