"""Shared core blocks: one block in several agents' core memory (as Letta's ``block_ids``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.stores.types import BlockEditError


@pytest.fixture
def team(memory_backend: MemoryBackend) -> MemoryBackend:
    """Agent 'team' owns a 'project' block; 'ada' and 'bob' attach it; 'eve' does not."""
    owner = memory_backend.open("team").core
    owner.ensure_defaults()
    owner.create("project", "Launch on May 5.", "The team's shared plan.", 500)
    for name in ("ada", "bob", "eve"):
        memory_backend.open(name).core.ensure_defaults()
    for name in ("ada", "bob"):
        memory_backend.open(name).core.attach("project", "team")
    return memory_backend


def labels(backend: MemoryBackend, agent: str) -> list[str]:
    return [b.label for b in backend.open(agent).core.blocks()]


def test_an_attached_block_is_in_each_agents_core_memory_after_its_own(team: MemoryBackend) -> None:
    assert labels(team, "ada") == ["persona", "human", "project"]
    assert labels(team, "bob") == ["persona", "human", "project"]
    assert labels(team, "eve") == ["persona", "human"]  # isolation unchanged


def test_an_edit_by_one_agent_is_what_the_others_read(team: MemoryBackend) -> None:
    team.open("ada").core.append("project", "Venue: Lisbon.", actor="agent:t1")
    expected = "Launch on May 5.\nVenue: Lisbon."
    assert team.open("bob").core.get("project").value == expected
    assert team.open("team").core.get("project").value == expected
    history = team.open("bob").core.history("project")
    assert [(h["op"], h["actor"]) for h in history] == [
        ("create", "system"),
        ("append", "agent:t1"),
    ]
    # Another agent's edit of a shared block counts as an edit from elsewhere for bob.
    assert team.open("bob").core.latest_change_id("agent:bob-thread") == history[-1]["id"]
    assert team.open("ada").core.last_modified() == team.open("bob").core.last_modified()


def test_only_the_attached_block_is_shared(team: MemoryBackend) -> None:
    team.open("ada").core.append("human", "Likes tea.", actor="agent:t1")
    assert "Likes tea." not in team.open("bob").core.get("human").value
    assert "Likes tea." not in team.open("team").core.get("human").value
    with pytest.raises(BlockEditError):
        team.open("eve").core.get("project")


def test_a_read_only_shared_block_refuses_every_agent(memory_backend: MemoryBackend) -> None:
    memory_backend.open("ops").core.create("rules", "Be kind.", "Operator rules.", 200, True)
    memory_backend.open("ada").core.ensure_defaults()
    memory_backend.open("ada").core.attach("rules", "ops")
    with pytest.raises(BlockEditError, match="read-only"):
        memory_backend.open("ada").core.append("rules", "Be rude.", actor="agent:t1")
    assert memory_backend.open("ops").core.get("rules").value == "Be kind."


def test_attach_is_refused_clearly_and_detach_hides_the_block(team: MemoryBackend) -> None:
    with pytest.raises(BlockEditError, match="has no block 'budget'"):
        team.open("eve").core.attach("budget", "team")
    with pytest.raises(BlockEditError, match="has its own block 'human'"):
        team.open("eve").core.attach("human", "team")
    team.open("ada").core.attach("project", "team")  # again: nothing changes
    assert labels(team, "ada").count("project") == 1
    team.open("ada").core.detach("project")
    assert labels(team, "ada") == ["persona", "human"]
    assert team.open("team").core.get("project").value == "Launch on May 5."


def test_forgetting_the_owner_removes_the_block_from_every_agent(team: MemoryBackend) -> None:
    team.open("team").core.delete_all()
    assert labels(team, "ada") == ["persona", "human"]


def say(graph: Any, agent: str, thread: str, text: str, data_dir: Path) -> None:
    # The memory is the backend the graph was built with; data_dir holds the thread locks.
    graph.invoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context=Context(agent_id=agent, data_dir=str(data_dir)),
    )


def test_through_the_loop_an_edit_by_one_agent_is_in_the_others_next_prompt(
    team: MemoryBackend, tmp_path: Path
) -> None:
    step = {
        "content": "",
        "tool_calls": [
            {
                "name": "core_memory_append",
                "args": {"label": "project", "content": "Venue: Lisbon."},
            },
            {"name": "send_message", "args": {"message": "Noted."}},
        ],
    }
    reply = {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "Ok."}}]}
    model = ScriptedChatModel.from_steps([reply, step, reply])
    graph = build_graph(model=model, memory=team).compile(checkpointer=InMemorySaver())
    say(graph, "bob", "bob-1", "Hi", tmp_path)
    say(graph, "ada", "ada-1", "The launch venue is Lisbon.", tmp_path)
    say(graph, "bob", "bob-1", "Where do we launch?", tmp_path)
    first, last = (str(model.calls[i][0].content) for i in (0, 2))
    assert "Venue: Lisbon." not in first
    assert "Venue: Lisbon." in last
