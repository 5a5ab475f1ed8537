"""What a LangGraph developer found trying the package (issue 43's defects, issue 44's refused
input), each as the check that found it: scripted chat models, real SQLite memory in a temp
folder, LangGraph's own checkpointers.
"""

from __future__ import annotations

import asyncio
import json
import operator
from pathlib import Path
from typing import Annotated, Any, NotRequired

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.events import EventError
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.sqlite import close_all, open_memory


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

    from langgraph_memgpt.compose.middleware import MemGPTMiddleware

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


def test_a_malformed_event_is_refused_and_the_thread_stays_readable(tmp_path: Path) -> None:
    """Issue 44 item 8: nothing of a refused ``events`` input is kept, not even as a
    pending write LangGraph would apply again at every read of the thread."""
    saver = InMemorySaver()
    model = ScriptedChatModel.from_steps(["Hello again."])
    graph = build_graph(model=model).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t1"}}
    ctx = Context(data_dir=str(tmp_path), embedding_model="none")
    with pytest.raises(EventError, match=r"^events\[0\]\.text:"):
        graph.invoke({"events": [{"source": "watcher"}]}, config, context=ctx)
    assert graph.get_state(config).values == {}  # readable, and nothing kept
    assert list(saver.list(config)) == []
    out = graph.invoke({"messages": [HumanMessage("hi")]}, config, context=ctx)
    assert out["messages"][-1].content == "Hello again."


def test_a_malformed_event_after_a_turn_leaves_the_thread_as_it_was(tmp_path: Path) -> None:
    model = ScriptedChatModel.from_steps(["First.", "Second."])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    ctx = Context(data_dir=str(tmp_path), embedding_model="none")
    graph.invoke({"messages": [HumanMessage("one")]}, config, context=ctx)
    before = graph.get_state(config)
    with pytest.raises(EventError):
        graph.invoke(
            {"messages": [HumanMessage("two")], "events": [{"text": "x"}]}, config, context=ctx
        )
    after = graph.get_state(config)
    assert after.config == before.config and after.values == before.values
    assert "two" not in recalled(tmp_path, "default")


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_refused_agent_leaves_nothing_the_threads_agent_records(
    tmp_path: Path, mode: str
) -> None:
    """Issue 44 item 5: agent b refused on agent a's thread; a's next run neither records
    b's words as a's nor shows them to a's model."""
    model = ScriptedChatModel.from_steps(["Hi, I'm a.", "Still a."])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}

    def run(text: str, agent: str) -> dict[str, Any]:
        ctx = Context(data_dir=str(tmp_path), embedding_model="none", agent_id=agent)
        given = {"messages": [HumanMessage(text)]}
        if mode == "ainvoke":
            return asyncio.run(graph.ainvoke(given, config, context=ctx))
        return graph.invoke(given, config, context=ctx)

    run("hello", "a")
    with pytest.raises(ValueError, match="this thread belongs to agent 'a', not 'b'"):
        run("my salary is 91,400 a year", "b")
    out = run("what did I say?", "a")
    assert not any("91,400" in str(m.content) for m in out["messages"])
    assert not any("91,400" in str(m.content) for m in model.calls[-1])
    assert not any("91,400" in text for text in recalled(tmp_path, "a"))
    assert not any("91,400" in text for text in recalled(tmp_path, "b"))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_refused_agent_leaves_nothing_the_middleware_agent_records(
    tmp_path: Path, mode: str
) -> None:
    """The same through ``create_agent`` + `MemGPTMiddleware`: the refused input is taken
    out of the thread as it is refused."""
    from langchain.agents import create_agent

    from langgraph_memgpt.compose.middleware import MemGPTMiddleware

    model = ScriptedChatModel.from_steps(["Hi, I'm a.", "Still a."])
    agent = create_agent(
        model,
        [],
        middleware=[
            MemGPTMiddleware(context=Context(data_dir=str(tmp_path), embedding_model="none"))
        ],
        checkpointer=InMemorySaver(),
    )

    def run(text: str, agent_id: str) -> dict[str, Any]:
        config: Any = {"configurable": {"thread_id": "t1", "agent_id": agent_id}}
        given = {"messages": [HumanMessage(text)]}
        if mode == "ainvoke":
            return asyncio.run(agent.ainvoke(given, config))
        return agent.invoke(given, config)

    run("hello", "a")
    with pytest.raises(ValueError, match="this thread belongs to agent 'a', not 'b'"):
        run("my salary is 91,400 a year", "b")
    out = run("what did I say?", "a")
    assert not any("91,400" in str(m.content) for m in out["messages"])
    assert not any("91,400" in str(m.content) for m in model.calls[-1])
    assert not any("91,400" in text for text in recalled(tmp_path, "a"))
    assert not any("91,400" in text for text in recalled(tmp_path, "b"))
    assert [str(m.content) for m in out["messages"]][-2:] == ["what did I say?", "Still a."]


class Ticketed(State):
    """A caller's state: the ticket a support run is about, and what its tools noted."""

    ticket: NotRequired[str]
    notes: NotRequired[Annotated[list[str], operator.add]]


def test_a_state_schemas_own_keys_are_run_input_and_output(tmp_path: Path) -> None:
    @tool
    def note(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Note something about the ticket."""
        result = ToolMessage("noted", tool_call_id=tool_call_id)
        return Command(update={"notes": [text], "messages": [result]})

    model = ScriptedChatModel.from_steps(
        [step(call("note", text="printer jams")), step(call("send_message", message="On it."))]
    )
    graph = build_graph(model=model, tools=[note], state_schema=Ticketed).compile(
        checkpointer=InMemorySaver()
    )
    out = graph.invoke(
        {"messages": [HumanMessage("my printer jams")], "ticket": "T-42", "notes": ["opened"]},
        {"configurable": {"thread_id": "t1"}},
        context=Context(data_dir=str(tmp_path), embedding_model="none"),
    )
    assert out["ticket"] == "T-42"
    assert out["notes"] == ["opened", "printer jams"]
    assert out["messages"][-1].content == "On it."
    assert "summary" not in out  # the loop's own bookkeeping stays private


@tool
def lookup(key: str) -> str:
    """Look a key up in the order book."""
    if key == "missing":
        raise KeyError(key)
    raise ValueError(f"bad key {key!r}")


def _lookup_run(tmp_path: Path, key: str, setting: Any) -> dict[str, Any]:
    model = ScriptedChatModel.from_steps(
        [step(call("lookup", key=key)), step(call("send_message", message="Done."))]
    )
    graph = build_graph(model=model, tools=[lookup], handle_tool_errors=setting).compile(
        checkpointer=InMemorySaver()
    )
    return graph.invoke(
        {"messages": [HumanMessage("look it up")]},
        {"configurable": {"thread_id": "t1"}},
        context=Context(data_dir=str(tmp_path), embedding_model="none"),
    )


def _tool_results(out: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(str(m.content)) for m in out["messages"] if isinstance(m, ToolMessage)]


def test_handle_tool_errors_catches_only_the_exception_types_it_names(tmp_path: Path) -> None:
    """As ToolNode's: ``(KeyError,)`` turns a KeyError into the model's error result and
    lets a ValueError end the run."""
    out = _lookup_run(tmp_path, "missing", (KeyError,))
    assert _tool_results(out)[0]["status"] == "Failed"
    assert "KeyError" in _tool_results(out)[0]["message"]
    with pytest.raises(ValueError, match="bad key 'x'"):
        _lookup_run(tmp_path / "2", "x", (KeyError,))


def test_a_handler_typed_for_key_errors_handles_only_them(tmp_path: Path) -> None:
    def missing_key(error: KeyError) -> str:
        return f"no such key: {error}"

    out = _lookup_run(tmp_path, "missing", missing_key)
    assert _tool_results(out)[0]["message"].endswith("no such key: 'missing'")
    with pytest.raises(ValueError, match="bad key"):
        _lookup_run(tmp_path / "2", "x", missing_key)


def test_handle_tool_errors_false_raises_and_true_or_the_default_handles(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        _lookup_run(tmp_path, "missing", False)
    assert _tool_results(_lookup_run(tmp_path / "2", "x", True))[0]["status"] == "Failed"
    # The default: the model reads ``ExcType: message``.
    model = ScriptedChatModel.from_steps(
        [step(call("lookup", key="x")), step(call("send_message", message="Done."))]
    )
    graph = build_graph(model=model, tools=[lookup]).compile(checkpointer=InMemorySaver())
    done = graph.invoke(
        {"messages": [HumanMessage("look it up")]},
        {"configurable": {"thread_id": "t1"}},
        context=Context(data_dir=str(tmp_path / "3"), embedding_model="none"),
    )
    assert "ValueError: bad key 'x'" in _tool_results(done)[0]["message"]


def test_a_type_checker_catches_a_misspelled_or_mistyped_context_field(tmp_path: Path) -> None:
    """Context's signature is pydantic's (each field, typed): mypy and IDEs see it."""
    from mypy import api

    snippet = tmp_path / "uses_context.py"
    snippet.write_text(
        "from langgraph_memgpt import Context\n"
        'Context(agent_id="ada", context_window=4096)\n'
        'Context(agent="ada")\n'
        'Context(context_window="big")\n'
    )
    out, _, status = api.run(
        ["--strict", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(snippet)]
    )
    assert status == 1, out
    errors = [line.split(": error: ")[1] for line in out.splitlines() if ": error: " in line]
    lines = sorted(int(line.split(":")[1]) for line in out.splitlines() if ": error: " in line)
    assert lines == [3, 4], out
    assert any('Unexpected keyword argument "agent"' in e for e in errors), out


def test_an_openai_model_without_a_key_names_the_key_not_a_connection_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_memgpt.llm.factory import clear_model_cache

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    clear_model_cache()
    graph = build_graph().compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), embedding_model="none", model="openai:gpt-4o-mini")
    with pytest.raises(ValueError, match=r"'openai:gpt-4o-mini' needs OPENAI_API_KEY"):
        graph.invoke(
            {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "t1"}}, context=ctx
        )
    assert "hi" in recalled(tmp_path, "default")  # the user's message is kept all the same


class AsyncOnlySummarizer(ScriptedChatModel):
    """A summarizer whose sync API fails: an async run must call ``ainvoke``."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the summarizer's sync API was called in an async run")

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        return ScriptedChatModel._generate(self, messages, stop, None, **kwargs)


def _long(i: int) -> str:
    return f"message {i}: " + " ".join(f"word{i}_{j}" for j in range(120))


SMALL_WINDOW = {"context_window": 6000, "warning_fraction": 0.7, "flush_fraction": 0.9}


def test_under_ainvoke_the_graphs_eviction_summary_uses_the_async_api(tmp_path: Path) -> None:
    turns = 14
    summarizer = AsyncOnlySummarizer.from_steps([f"I chatted (summary {i})." for i in range(turns)])
    graph = build_graph(
        model=ScriptedChatModel.from_steps([f"reply {i}" for i in range(turns)]),
        summary_model=summarizer,
    ).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), embedding_model="none", **SMALL_WINDOW)
    config = {"configurable": {"thread_id": "t1"}}

    async def talk() -> None:
        for i in range(turns):
            await graph.ainvoke({"messages": [HumanMessage(_long(i))]}, config, context=ctx)

    asyncio.run(talk())
    state = graph.get_state(config).values
    assert state["evicted_count"] > 0
    assert state["summary"].startswith("I chatted (summary")
    assert summarizer.calls  # every summary written through ainvoke


def test_under_ainvoke_the_middlewares_eviction_summary_uses_the_async_api(
    tmp_path: Path,
) -> None:
    from langchain.agents import create_agent

    from langgraph_memgpt.compose.middleware import MemGPTMiddleware

    turns = 14
    summarizer = AsyncOnlySummarizer.from_steps([f"I chatted (summary {i})." for i in range(turns)])
    settings = Context(data_dir=str(tmp_path), embedding_model="none", **SMALL_WINDOW)
    agent = create_agent(
        ScriptedChatModel.from_steps([f"reply {i}" for i in range(turns)]),
        [],
        middleware=[MemGPTMiddleware("bo", context=settings, summary_model=summarizer)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t1"}}

    async def talk() -> None:
        for i in range(turns):
            await agent.ainvoke({"messages": [HumanMessage(_long(i))]}, config)

    asyncio.run(talk())
    state = agent.get_state(config).values
    assert state["evicted_count"] > 0
    assert state["summary"].startswith("I chatted (summary")
    assert summarizer.calls


def test_an_empty_eviction_summary_never_fails_a_turn(tmp_path: Path) -> None:
    """Issue 44 item 9: a filtered or reasoning summarizer answers "" every time."""
    turns = 14
    graph = build_graph(
        model=ScriptedChatModel.from_steps([f"reply {i}" for i in range(turns)]),
        summary_model=ScriptedChatModel.from_steps([""] * (2 * turns)),
    ).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), embedding_model="none", **SMALL_WINDOW)
    config = {"configurable": {"thread_id": "t1"}}
    for i in range(turns):
        out = graph.invoke({"messages": [HumanMessage(_long(i))]}, config, context=ctx)
        assert out["messages"][-1].content == f"reply {i}"
    state = graph.get_state(config).values
    assert state["evicted_count"] > 0
    assert "conversation_search finds them" in state["summary"]
    memory = open_memory(tmp_path, "default", embedding_model="none")
    assert memory.recall.search("word0_5", mode="fts").total >= 1  # the words are kept
    assert any("without a summary" in p.text for p in memory.archival.recent(10))


def test_replaying_a_thread_from_after_think_keeps_one_copy_of_the_reply(tmp_path: Path) -> None:
    """LangGraph's time travel: ``invoke(None, config_of_a_past_checkpoint)``."""
    model = ScriptedChatModel.from_steps([step(call("send_message", message="Teal it is."))])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    ctx = Context(data_dir=str(tmp_path), embedding_model="none")
    graph.invoke({"messages": [HumanMessage("I love teal")]}, config, context=ctx)
    after_think = next(
        s for s in graph.get_state_history(config) if s.next == ("call_memory_tool",)
    )
    replayed = graph.invoke(None, after_think.config, context=ctx)
    assert replayed["messages"][-1].content == "Teal it is."
    assert recalled(tmp_path, "default").count("Teal it is.") == 1


@pytest.mark.server
@pytest.mark.timeout(180)
def test_the_server_keeps_nothing_of_a_refused_run(tmp_path: Path) -> None:
    """Through ``langgraph dev`` and ``langgraph_sdk``: malformed events, or another agent
    on a thread, are refused and kept nowhere: a new thread stays empty, an older one as it
    was (after the server restarts too, when it records what threads hold), and neither
    agent's recall gets the refused words."""
    from langgraph_sdk import get_sync_client

    from tests.serve.test_server import DevServer

    script = tmp_path / "script.json"
    script.write_text(json.dumps([step(call("send_message", message="Noted."))] * 3))
    env = {"MEMGPT_MODEL": f"scripted:{script}", "MEMGPT_EMBEDDING_MODEL": "none"}
    server = DevServer(tmp_path, tmp_path / "data", env=env)
    for _ in server.running():
        client = get_sync_client(url=server.url)
        user = {"agent_id": "ada"}
        fresh = client.threads.create()["thread_id"]
        refused: Any = client.runs.wait(
            fresh,
            "memgpt",
            input={"events": [{"source": "watcher"}]},
            context=user,
            raise_error=False,
        )
        assert "events[0].text: must be a non-empty string" in json.dumps(refused), refused
        assert client.threads.get_state(fresh)["values"] in ({}, [], None), server.log()

        thread_id = client.threads.create()["thread_id"]
        client.runs.wait(thread_id, "memgpt", input={"messages": [("user", "hi")]}, context=user)
        before = client.threads.get_state(thread_id)
        refused = client.runs.wait(
            thread_id,
            "memgpt",
            input={"events": [{"source": "watcher", "text": "  "}]},
            context=user,
            raise_error=False,
        )
        assert "events[0].text: must be a non-empty string" in json.dumps(refused), refused
        refused = client.runs.wait(
            thread_id,
            "memgpt",
            input={"messages": [("user", "my salary is 91,400 a year")]},
            context={"agent_id": "bo"},
            raise_error=False,
        )
        assert "this thread belongs to agent 'ada'" in json.dumps(refused), refused
        server.stop()  # what the server kept of each thread, read back at its next start
        server.start()
        client = get_sync_client(url=server.url)
        assert client.threads.get_state(fresh)["values"] in ({}, [], None), server.log()
        after = client.threads.get_state(thread_id)
        assert after["values"] == before["values"]
        assert after["checkpoint"] == before["checkpoint"], server.log()
        out: Any = client.runs.wait(
            thread_id, "memgpt", input={"messages": [("user", "again")]}, context=user
        )
        said = [m["content"] for m in out["messages"] if m["type"] == "human"]
        assert said == ["hi", "again"]
        assert out["messages"][-1]["content"] == "Noted."
    close_all()
    for agent in ("ada", "bo"):
        assert not any("91,400" in text for text in recalled(tmp_path / "data", agent))
