"""The turn behaves like LangGraph's own agents: interrupts replay nothing, routing is visible,
the reply streams, async runs use the model's async API, and the doors ``create_agent`` has."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.turn.streaming import REPLY_TAG, partial_json_string


def call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        found["id"] = call_id
    return found


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


@tool
def ask_human(question: str) -> str:
    """Ask the person at the keyboard."""
    return str(interrupt({"question": question}))


def ctx_for(tmp_path: Path) -> Context:
    return Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")


EDITS = step(
    call(
        "core_memory_replace",
        label="human",
        old_content="Name: Ada",
        new_content="Name: Ada Lovelace",
    ),
    call("core_memory_append", label="human", content="Lives in Paris."),
    call("ask_human", question="Which city?"),
)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_interrupt_beside_memory_edits_applies_each_edit_once(
    tmp_path: Path, memory_backend: MemoryBackend, mode: str
) -> None:
    memory = memory_backend.open("ada")
    memory.core.ensure_defaults(persona="I am helpful.", human="Name: Ada", char_limit=2000)
    model = ScriptedChatModel.from_steps([EDITS, step(call("send_message", message="Noted."))])
    graph = build_graph(model=model, tools=[ask_human], memory=memory_backend).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}
    ctx = ctx_for(tmp_path)

    def go(payload: Any) -> dict[str, Any]:
        if mode == "sync":
            return graph.invoke(payload, config, context=ctx)
        return asyncio.run(graph.ainvoke(payload, config, context=ctx))

    first = go({"messages": [HumanMessage("I'm Ada Lovelace, I live in Paris.")]})
    assert "__interrupt__" in first
    out = go(Command(resume="Paris"))
    assert out["messages"][-1].content == "Noted."
    human = memory_backend.open("ada").core.get("human").value
    assert human.count("Lovelace") == 1 and human.count("Lives in Paris.") == 1
    prompt = model.calls[-1]
    results = {m.name: json.loads(str(m.content)) for m in prompt if isinstance(m, ToolMessage)}
    assert results["core_memory_replace"]["status"] == "OK"
    assert results["core_memory_append"]["status"] == "OK"
    assert "Paris" in results["ask_human"]["message"]
    history = memory_backend.open("ada").core.history("human")
    assert sorted(h["op"] for h in history if h["actor"].startswith("agent:")) == [
        "append",
        "replace",
    ]


def test_interrupt_before_the_tool_step_then_editing_the_call_resumes(tmp_path: Path) -> None:
    model = ScriptedChatModel.from_steps(
        [
            step(call("archival_memory_insert", content="Locker code 1234")),
            step(call("send_message", message="Saved.")),
        ]
    )
    graph = build_graph(model=model).compile(
        checkpointer=InMemorySaver(), interrupt_before=["call_memory_tool"]
    )
    config = {"configurable": {"thread_id": "t"}}
    ctx = ctx_for(tmp_path)
    graph.invoke({"messages": [HumanMessage("My locker code is 4711.")]}, config, context=ctx)
    snapshot = graph.get_state(config)
    assert snapshot.next == ("call_memory_tool",)
    pending = snapshot.values["messages"][-1]
    edited = pending.model_copy(
        update={"tool_calls": [{**pending.tool_calls[0], "args": {"content": "Locker code 4711"}}]}
    )
    graph.update_state(config, {"messages": [edited]})
    assert graph.get_state(config).next == ("call_memory_tool",)
    out = graph.invoke(None, config, context=ctx)
    while "__interrupt__" in out or graph.get_state(config).next:
        out = graph.invoke(None, config, context=ctx)
    assert out["messages"][-1].content == "Saved."
    from langgraph_memgpt.stores import open_memory

    texts = [p.text for p in open_memory(tmp_path, "ada").archival.recent(10)]
    assert texts == ["Locker code 4711"]


def test_call_ids_reused_every_turn_keep_every_insert(tmp_path: Path) -> None:
    """Some OpenAI-compatible servers number calls per response: id "0" every turn."""
    turns = [
        [
            step(call("archival_memory_insert", "0", content=f"Fact number {n}")),
            step(call("send_message", "0", message=f"Saved {n}.")),
        ]
        for n in range(3)
    ]
    model = ScriptedChatModel.from_steps([s for pair in turns for s in pair])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    for n in range(3):
        out = graph.invoke(
            {"messages": [HumanMessage(f"Remember fact {n}")]}, config, context=ctx_for(tmp_path)
        )
        assert out["messages"][-1].content == f"Saved {n}."
    from langgraph_memgpt.stores import open_memory

    texts = sorted(p.text for p in open_memory(tmp_path, "ada").archival.recent(10))
    assert texts == ["Fact number 0", "Fact number 1", "Fact number 2"]


class AsyncOnly(ScriptedChatModel):
    """A model whose sync path raises: an async run must never touch it."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("sync path used")

    def _stream(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("sync path used")

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        return ScriptedChatModel._generate(self, messages, stop, None, **kwargs)

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        reply = self._next_reply(messages, kwargs)
        chunks = [
            tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            for i, c in enumerate(reply.tool_calls)
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(content=reply.content, id=reply.id, tool_call_chunks=chunks)
        )


def test_ainvoke_uses_only_the_models_async_api(tmp_path: Path) -> None:
    model = AsyncOnly.from_steps([step(call("send_message", message="Hello from async."))])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    out = asyncio.run(
        graph.ainvoke(
            {"messages": [HumanMessage("hi")]},
            {"configurable": {"thread_id": "t"}},
            context=ctx_for(tmp_path),
        )
    )
    assert out["messages"][-1].content == "Hello from async."


REPLY = "Paris is the capital of France, and it is lovely in spring."


def test_the_reply_streams_in_pieces_and_the_monologue_stays_out(tmp_path: Path) -> None:
    model = ScriptedChatModel.from_steps(
        [step(call("send_message", message=REPLY), content="User asks about Paris; answer.")]
    )
    model.stream_piece = 8
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    chunks: list[str] = []
    custom: list[dict[str, Any]] = []
    for mode, item in graph.stream(
        {"messages": [HumanMessage("Tell me about Paris")]},
        {"configurable": {"thread_id": "t"}},
        context=ctx_for(tmp_path),
        stream_mode=["messages", "custom"],
    ):
        if mode == "messages":
            message, meta = item
            text = str(message.content)
            assert "User asks" not in text and '"status"' not in text
            if REPLY_TAG in (meta.get("tags") or []):
                chunks.append(text)
        else:
            custom.append(item)
    assert len(chunks) >= 3
    assert "".join(chunks) == REPLY
    assert "".join(c["delta"] for c in custom if c.get("memgpt") == "reply") == REPLY
    assert "".join(c["delta"] for c in custom if c.get("memgpt") == "monologue").startswith("User")


def test_partial_json_reads_a_string_as_far_as_it_is_written() -> None:
    assert partial_json_string('{"message": "Hel') == "Hel"
    assert partial_json_string('{"message": "a\\nb\\u00e9') == "a\nbé"
    assert partial_json_string('{"name": "x", "arguments": {"mess') is None
    text = '[{"name": "core_memory_append"}, {"name": "send_message", "arguments": {"message": "Hi'
    assert partial_json_string(text, after='"send_message"') == "Hi"


class Tracked(State):
    """A user's own state key, set by a tool."""

    ticket: str


def test_doors_plain_functions_system_prompt_and_own_state_keys(tmp_path: Path) -> None:
    def open_ticket(title: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Open a support ticket."""
        done = ToolMessage("opened", tool_call_id=tool_call_id)
        return Command(update={"ticket": f"T-1 {title}", "messages": [done]})

    model = ScriptedChatModel.from_steps(
        [
            step(call("open_ticket", title="printer")),
            step(call("send_message", message="Ticket opened.")),
        ]
    )
    graph = build_graph(
        model=model,
        tools=[open_ticket],
        system_prompt="Always sign as Concierge.",
        state_schema=Tracked,
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke(
        {"messages": [HumanMessage("my printer is broken")]}, config, context=ctx_for(tmp_path)
    )
    assert graph.get_state(config).values["ticket"] == "T-1 printer"
    # The Command's result is in the queue under the id recall holds it by (one record).
    from langgraph_memgpt.stores import open_memory

    queue = graph.get_state(config).values["messages"]
    result = next(m for m in queue if isinstance(m, ToolMessage) and m.name == "open_ticket")
    stored = open_memory(tmp_path, "ada", embedding_model="none").recall.get([str(result.id)])
    assert [m.text for m in stored] == [result.content]
    system = model.calls[0][0]
    text = json.dumps(system.content)
    assert "Always sign as Concierge." in text
    assert text.index("Always sign as Concierge.") < text.index("<memory") or "<memory" not in text


def test_a_model_string_without_its_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        build_graph(model="openai:gpt-4o-mini")


def test_handle_tool_errors_false_lets_a_tool_error_raise(tmp_path: Path) -> None:
    @tool
    def broken(x: str) -> str:
        """Always fails."""
        raise KeyError("boom")

    model = ScriptedChatModel.from_steps([step(call("broken", x="1"))])
    graph = build_graph(model=model, tools=[broken], handle_tool_errors=False).compile()
    with pytest.raises(KeyError):
        graph.invoke({"messages": [HumanMessage("go")]}, context=ctx_for(tmp_path))


def test_a_tool_error_is_logged_with_its_traceback_and_read_by_the_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    def broken(x: str) -> str:
        """Always fails."""
        raise KeyError("boom")

    model = ScriptedChatModel.from_steps(
        [step(call("broken", x="1")), step(call("send_message", message="Sorry."))]
    )
    graph = build_graph(model=model, tools=[broken]).compile()
    out = graph.invoke({"messages": [HumanMessage("go")]}, context=ctx_for(tmp_path))
    assert out["messages"][-1].content == "Sorry."
    result = next(m for m in model.calls[1] if isinstance(m, ToolMessage))
    assert json.loads(str(result.content))["status"] == "Failed" and "boom" in str(result.content)
    assert any(r.exc_info for r in caplog.records)


def test_the_agent_id_comes_from_the_run_context_for_memory_tools(tmp_path: Path) -> None:
    from langgraph_memgpt import memory_tools
    from langgraph_memgpt.compose.tools import MemoryAccess

    access = MemoryAccess(context=Context(data_dir=str(tmp_path), embedding_model="none"))
    assert access.context_for({}, {"agent_id": "bob"}).agent_id == "bob"
    assert access.context_for({"configurable": {"agent_id": "carl"}}).agent_id == "carl"
    assert memory_tools(context=Context(data_dir=str(tmp_path)))  # builds


def test_the_step_cap_still_ends_a_looping_turn(tmp_path: Path) -> None:
    loop = step(call("conversation_search", query="x"))
    model = ScriptedChatModel.from_steps([loop] * 3)
    graph = build_graph(model=model).compile()
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none", max_steps=3)
    out = graph.invoke({"messages": [HumanMessage("go")]}, context=ctx)
    assert isinstance(out["messages"][-1], AIMessage)
    assert model.remaining == 0


def test_the_compiled_graph_is_langgraphs_own_and_still_one_run_per_thread(
    tmp_path: Path,
) -> None:
    """No subclass swapped in: the thread claim rides on the graph's own callbacks, and a
    caller's callbacks are merged with it, not put in its place."""
    from concurrent.futures import ThreadPoolExecutor

    from langchain_core.callbacks import BaseCallbackHandler
    from langgraph.graph.state import CompiledStateGraph
    from thread_runner import SlowModel, reply

    class Starts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.graph_runs = 0

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            self.graph_runs += kwargs.get("parent_run_id") is None

    graph = build_graph(model=SlowModel.from_steps([reply("first"), reply("second")])).compile(
        checkpointer=InMemorySaver()
    )
    assert type(graph) is CompiledStateGraph
    seen = Starts()
    config: Any = {"configurable": {"thread_id": "shared"}, "callbacks": [seen]}
    ctx = Context(data_dir=str(tmp_path), embedding_model="none")
    with ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(graph.invoke, {"messages": [HumanMessage(t)]}, config, context=ctx)
            for t in ("from A", "from B")
        ]
        for run in runs:
            run.result()
    messages = graph.get_state(config).values["messages"]
    assert sorted(str(m.content) for m in messages if isinstance(m, HumanMessage)) == [
        "from A",
        "from B",
    ]
    replies = [str(m.content) for m in messages if isinstance(m, AIMessage) and m.content]
    assert replies == ["first", "second"]
    assert seen.graph_runs == 2  # the caller's handler saw both runs
