"""check_pressure's token count agrees with the embedded model's own count."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai.chat_models.base import _convert_message_to_dict

from langgraph_memgpt.stores.sqlite import AgentMemory
from langgraph_memgpt.tools.run import tool_schemas
from langgraph_memgpt.turn.main_context import build_prompt, render_system
from langgraph_memgpt.turn.tokens import TokenCounter


@pytest.mark.local_llm
def test_prompt_count_is_within_5_percent_of_the_local_models_count(tmp_path: Path) -> None:
    from langgraph_memgpt.llm.local_server import get_local_server

    server = get_local_server(show_progress=False)
    memory = AgentMemory.open(tmp_path, "agent", None)
    memory.core.ensure_defaults("I am Sam, a patient assistant.", "")
    system_prompt, _ = render_system(memory, 0)
    queue = [
        HumanMessage("Hi, I'm Ada and I love teal and hiking in the Alps.", id="1"),
        AIMessage(
            "She introduced herself.",
            id="2",
            tool_calls=[
                {
                    "name": "core_memory_append",
                    "id": "c1",
                    "args": {"label": "human", "content": "Name: Ada. Loves teal, hiking."},
                }
            ],
        ),
        ToolMessage(
            json.dumps({"status": "OK", "message": "Appended."}), tool_call_id="c1", id="3"
        ),
        HumanMessage("What do you remember about me from last spring?", id="4"),
    ]
    prompt = build_prompt(system_prompt, "I talked with Ada about a trip to Rome.", 3, queue)
    schemas = tool_schemas()
    counter = TokenCounter()
    ours = counter.messages(prompt) + counter.tools(schemas)
    body = {
        "model": "local",
        "messages": [_convert_message_to_dict(m) for m in prompt],
        "tools": schemas,
    }
    # The server's own chat template and tokenizer, as a completion's `prompt_tokens`
    # counts them (2,864 both ways for this prompt), without evaluating the prompt: that
    # took 30-95 s on two cores, the suite's slowest test.
    root = server.base_url.removesuffix("/v1")
    text = httpx.post(f"{root}/apply-template", json=body, timeout=600).json()["prompt"]
    tokens = httpx.post(
        f"{root}/tokenize", json={"content": text, "add_special": True}, timeout=600
    ).json()["tokens"]
    model_count = len(tokens)
    assert abs(ours - model_count) <= 0.05 * model_count, (ours, model_count)
