"""A value the host changed is corrected where core memory quotes it (the small model's wrapper)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.events import EVENT_NAME
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel
from langgraph_memgpt.small_model.event_notes import (
    changed_values,
    correct_event_values,
    corrected_line,
)
from langgraph_memgpt.stores.sqlite import open_memory

SHELL_EVENT = ".profile was modified. Changed lines:\n- SHELL=/bin/zsh\n+ SHELL=/usr/bin/fish"


def prompt(human: str, event: str) -> list[Any]:
    system = SystemMessage(
        f"<core_memory>\n<human>\n<description>x</description>\n{human}\n</human>"
    )
    return [system, HumanMessage(event, name=EVENT_NAME)]


def test_the_changed_value_is_the_run_of_words_that_differs() -> None:
    assert changed_values(SHELL_EVENT) == [("zsh", "fish", "SHELL=/bin/zsh")]
    timezone = '- timezone = "Europe/Berlin"\n+ timezone = "America/Toronto"'
    assert changed_values(timezone)[0][:2] == ("Europe/Berlin", "America/Toronto")
    assert changed_values("- list: eggs, rice\n+ list: eggs, rice, lemons") == []


def test_only_a_line_quoting_the_value_under_its_key_is_corrected() -> None:
    lines = ["Name: Iris", "Uses zsh as her login shell."]
    assert corrected_line(lines, "zsh", "fish", "SHELL=/bin/zsh") == (
        "Uses zsh as her login shell.",
        "Uses fish as her login shell.",
    )
    assert corrected_line(["Thinks it is true."], "true", "false", "debug: true") is None
    two = ["Uses zsh at work.", "Uses zsh shell at home."]
    assert corrected_line(two + ["shell: zsh"], "zsh", "fish", "SHELL=/bin/zsh") is None


def test_a_refused_copy_of_the_file_line_gives_way_to_the_correction() -> None:
    copied = AIMessage(
        "",
        tool_calls=[
            {
                "name": "core_memory_replace",
                "args": {"label": "human", "old_content": "SHELL=/bin/zsh", "new_content": "x"},
                "id": "c1",
            }
        ],
    )
    fixed = correct_event_values(copied, prompt("Uses zsh as her login shell.", SHELL_EVENT))
    assert [c["args"] for c in fixed.tool_calls] == [
        {
            "label": "human",
            "old_content": "Uses zsh as her login shell.",
            "new_content": "Uses fish as her login shell.",
        }
    ]
    user_turn = [prompt("Uses zsh.", SHELL_EVENT)[0], HumanMessage("I switched to fish")]
    assert correct_event_values(copied, user_turn) is copied  # only a turn events opened


def test_the_embedded_models_event_turn_ends_with_the_new_value_in_human(tmp_path: Path) -> None:
    wrong = [
        {
            "name": "core_memory_replace",
            "arguments": {"label": "human", "old_content": "SHELL=/bin/zsh", "new_content": "f"},
        }
    ]
    model = LocalToolCallingChatModel(
        inner=ScriptedChatModel.from_steps([json.dumps(wrong)]),
        reply_tool="send_message",
        companions=("core_memory_append", "core_memory_replace"),
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    human = "Name: Iris\nUses zsh as her login shell."
    ctx = Context(data_dir=str(tmp_path), agent_id="iris", embedding_model="none", human=human)
    out = graph.invoke(
        {"events": [{"source": "watcher", "text": SHELL_EVENT}]},
        {"configurable": {"thread_id": "w"}},
        context=ctx,
    )
    core = open_memory(tmp_path, "iris").core.get("human")
    assert core is not None and core.value == "Name: Iris\nUses fish as her login shell."
    assert out["event_outcome"]["replied"] is False
