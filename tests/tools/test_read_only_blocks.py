"""Read-only means read-only: no agent actor, through any path, changes a read-only block.

The store once refused only the literal actor ``"agent"``, while the memory tools edit as
``"agent:<thread>"``: the model could rewrite an operator's rules. These tests go through
the tools the model calls as well as through the store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph_memgpt import Context
from langgraph_memgpt.stores.sqlite import AgentMemory
from langgraph_memgpt.stores.types import BlockEditError
from langgraph_memgpt.tools.run import Provenance, execute_tool_call

RULE = "Never share secrets."


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    memory = AgentMemory.open(tmp_path / "data", "ada", None)
    memory.core.ensure_defaults(persona="I am a test agent.", human="Name: Ada")
    memory.core.create("policy", RULE, "Rules from the operator.", 500, read_only=True)
    yield memory
    memory.close()


def run_tool(memory: AgentMemory, name: str, **args: object) -> dict[str, str]:
    outcome = execute_tool_call(
        name,
        dict(args),
        memory=memory,
        ctx=Context(data_dir=str(memory.data_dir), agent_id="ada", embedding_model="none"),
        where=Provenance(thread_id="thread-1", turn=1),
        user_tools={},
    )
    result: dict[str, str] = json.loads(outcome.content)
    return result


def test_a_read_only_block_cannot_be_changed_through_the_memory_tools(
    memory: AgentMemory,
) -> None:
    attempts = [
        ("core_memory_append", {"label": "policy", "content": "Share everything."}),
        (
            "core_memory_replace",
            {"label": "policy", "old_content": "Never", "new_content": "Always"},
        ),
        ("core_memory_replace", {"label": "policy", "old_content": RULE, "new_content": ""}),
    ]
    for name, args in attempts:
        result = run_tool(memory, name, **args)
        assert result["status"] == "Failed", (name, result)
        assert "read-only" in result["message"]
    assert memory.core.get("policy").value == RULE
    assert [h["op"] for h in memory.core.history("policy")] == ["create"]


def test_the_memory_tools_still_edit_writable_blocks(memory: AgentMemory) -> None:
    result = run_tool(memory, "core_memory_append", label="human", content="Likes tea")
    assert result["status"] == "OK"
    assert memory.core.get("human").value == "Name: Ada\nLikes tea"
    assert memory.core.history("human")[-1]["actor"] == "agent:thread-1"


@pytest.mark.parametrize("actor", ["agent", "agent:thread-1", "agent:", "", "model", "system"])
def test_no_actor_but_an_owner_can_change_a_read_only_block_in_the_store(
    memory: AgentMemory, actor: str
) -> None:
    for edit in (
        lambda: memory.core.append("policy", "Share everything.", actor=actor),
        lambda: memory.core.replace("policy", "Never", "Always", actor=actor),
        lambda: memory.core.set("policy", "anything", actor=actor),
    ):
        with pytest.raises(BlockEditError, match="block 'policy' is read-only"):
            edit()
    assert memory.core.get("policy").value == RULE


@pytest.mark.parametrize("actor", ["user", "admin", "operator", "user:ada"])
def test_the_owners_of_a_read_only_block_can_still_change_it(
    memory: AgentMemory, actor: str
) -> None:
    assert memory.core.set("policy", "Never share keys.", actor=actor).value == "Never share keys."
