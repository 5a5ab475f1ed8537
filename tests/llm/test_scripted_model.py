from __future__ import annotations

import asyncio
import json
from functools import reduce
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.tools import tool

from langgraph_memgpt.llm.factory import SPEC_CHOICES, clear_model_cache, resolve_model
from langgraph_memgpt.llm.scripted import ScriptedChatModel, ScriptExhaustedError


@tool
def send_message(message: str) -> str:
    """Send a message to the user."""
    return "sent"


CALL = {
    "content": "the user greeted me",
    "tool_calls": [{"name": "send_message", "args": {"message": "hi!"}, "id": "call_1"}],
}


def test_replies_come_back_in_script_order() -> None:
    model = ScriptedChatModel.from_steps(["one", AIMessage(content="two"), {"content": "three"}])

    assert [model.invoke("x").content for _ in range(3)] == ["one", "two", "three"]


def test_scripted_tool_calls_are_real_tool_calls() -> None:
    model = ScriptedChatModel.from_steps([CALL])

    reply = model.invoke("hello")

    assert reply.content == "the user greeted me"
    assert reply.tool_calls == [
        {"name": "send_message", "args": {"message": "hi!"}, "id": "call_1", "type": "tool_call"}
    ]


def test_missing_call_ids_are_filled_in() -> None:
    model = ScriptedChatModel.from_steps([{"tool_calls": [{"name": "send_message", "args": {}}]}])

    (call,) = model.invoke("x").tool_calls

    assert call["id"] and call["id"].startswith("call_")


def test_running_out_of_script_raises_a_clear_error() -> None:
    model = ScriptedChatModel.from_steps(["only"])
    model.invoke("first")

    with pytest.raises(ScriptExhaustedError, match="called 2 times but its script has 1"):
        model.invoke("second")


def test_calls_record_the_messages_the_model_saw() -> None:
    model = ScriptedChatModel.from_steps(["a", "b"])
    model.invoke([HumanMessage("first question")])
    model.invoke([HumanMessage("second question")])

    assert [[m.content for m in call] for call in model.calls] == [
        ["first question"],
        ["second question"],
    ]
    assert model.remaining == 0


def test_bind_tools_records_the_tools_and_keeps_replying() -> None:
    model = ScriptedChatModel.from_steps([CALL])

    bound = model.bind_tools([send_message], tool_choice="any")
    reply = bound.invoke("hello")

    assert reply.tool_calls[0]["name"] == "send_message"
    assert [t["function"]["name"] for t in model.bound_tools] == ["send_message"]
    assert model.call_kwargs[0]["tool_choice"] == "any"
    assert model.call_kwargs[0]["tools"][0]["function"]["name"] == "send_message"


def test_streaming_keeps_tool_calls() -> None:
    model = ScriptedChatModel.from_steps([CALL])

    chunks = list(model.bind_tools([send_message]).stream("hello"))
    merged = reduce(lambda a, b: a + b, chunks)

    assert isinstance(merged, AIMessageChunk)
    assert merged.content == "the user greeted me"
    assert [(c["name"], c["args"], c["id"]) for c in merged.tool_calls] == [
        ("send_message", {"message": "hi!"}, "call_1")
    ]


def test_async_invoke_replays_too() -> None:
    model = ScriptedChatModel.from_steps([CALL])

    reply = asyncio.run(model.ainvoke("hello"))

    assert reply.tool_calls[0]["args"] == {"message": "hi!"}


def test_from_file_reads_a_json_list_or_a_script_object(tmp_path: Path) -> None:
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([CALL, "bye"]))
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"script": ["hello"]}))

    assert len(ScriptedChatModel.from_file(listed).script) == 2
    assert ScriptedChatModel.from_file(wrapped).invoke("x").content == "hello"


def test_from_file_rejects_other_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"replies": []}))

    with pytest.raises(ValueError, match="expected a JSON list"):
        ScriptedChatModel.from_file(bad)


def test_a_step_with_unknown_keys_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown keys"):
        ScriptedChatModel.from_steps([{"text": "typo"}])


# --- resolve_model -----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _fresh_model_cache() -> None:
    clear_model_cache()


def test_resolve_scripted_spec_loads_the_file_and_caches_it(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["hi"]))

    model = resolve_model(f"scripted:{script}")

    assert isinstance(model, ScriptedChatModel)
    assert resolve_model(f"scripted:{script}") is model


def test_resolve_openai_spec_builds_chat_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = resolve_model("openai:gpt-4.1-mini")

    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "gpt-4.1-mini"


def test_auto_prefers_a_configured_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_openai import ChatOpenAI

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMGPT_OPENAI_MODEL", "my-served-model")

    model = resolve_model("auto")

    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "my-served-model"


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "scripted:", "llama", ""])
def test_unknown_spec_lists_the_choices(spec: str) -> None:
    with pytest.raises(ValueError) as err:
        resolve_model(spec)

    for choice in SPEC_CHOICES:
        assert choice in str(err.value)
