"""User tools run the way LangGraph's ToolNode runs them, inside the MemGPT loop.

Scripted model, real SQLite memory in a temp folder, LangGraph's own in-memory store and
checkpointer: injected state, store, tool call id and runtime are filled; artifacts are
kept; a returned Command updates the state; async-only tools run in sync and async graphs;
what the loop knows about a tool is declared beside it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config, get_stream_writer
from langgraph.prebuilt import InjectedState, InjectedStore, ToolRuntime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt

from langgraph_memgpt import Context, build_graph, declare_tool
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.sqlite import open_memory
from langgraph_memgpt.tools.run import MEMORY_TOOLS, ToolFacts, facts_of
from langgraph_memgpt.turn.main_context import is_search_call, to_recall


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def run(
    tmp_path: Path,
    script: list[Any],
    tools: list[Any],
    *,
    store: BaseStore | None = None,
    text: str = "go",
) -> tuple[dict[str, Any], ScriptedChatModel]:
    model = ScriptedChatModel.from_steps(script)
    graph = build_graph(model=model, tools=tools).compile(checkpointer=InMemorySaver(), store=store)
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")
    out = graph.invoke(
        {"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t"}}, context=ctx
    )
    return out, model


def results(out: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_a_tool_gets_the_queue_the_store_its_call_id_and_the_runtime(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    @tool
    def remember_city(
        city: str,
        state: Annotated[dict[str, Any], InjectedState],
        store: Annotated[BaseStore, InjectedStore()],
        call_id: Annotated[str, InjectedToolCallId],
        runtime: ToolRuntime[Context],
    ) -> str:
        """Remember the user's city."""
        seen["queue"] = [m.content for m in state["messages"] if isinstance(m, HumanMessage)]
        seen["call_id"] = call_id
        seen["runtime_call_id"] = runtime.tool_call_id
        seen["agent_id"] = runtime.context.agent_id
        store.put(("cities",), "ada", {"city": city})
        return f"saved {city}"

    store = InMemoryStore()
    out, _ = run(
        tmp_path,
        [
            {"content": "", "tool_calls": [{**call("remember_city", city="Lyon"), "id": "c1"}]},
            step(call("send_message", message="noted")),
        ],
        [remember_city],
        store=store,
        text="I live in Lyon",
    )
    assert seen["queue"][-1] == "I live in Lyon"
    assert seen["call_id"] == seen["runtime_call_id"] == "c1"
    assert seen["agent_id"] == "ada"
    item = store.get(("cities",), "ada")
    assert item is not None and item.value == {"city": "Lyon"}
    assert json.loads(results(out)[0].content) == {"status": "OK", "message": "saved Lyon"}


def test_a_tools_artifact_stays_on_its_result(tmp_path: Path) -> None:
    @tool(response_format="content_and_artifact")
    def lookup(code: str) -> tuple[str, dict[str, Any]]:
        """Look up a flight."""
        return f"{code} leaves at 9:40", {"code": code, "gate": "B12"}

    out, _ = run(
        tmp_path,
        [step(call("lookup", code="AF12")), step(call("send_message", message="9:40"))],
        [lookup],
    )
    first = results(out)[0]
    assert first.artifact == {"code": "AF12", "gate": "B12"}
    assert json.loads(first.content)["message"] == "AF12 leaves at 9:40"


def test_a_returned_command_updates_the_state_instead_of_being_dumped(tmp_path: Path) -> None:
    @tool
    def set_mood(mood: str, call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Record the user's mood."""
        return Command(update={"messages": [ToolMessage(f"mood is {mood}", tool_call_id=call_id)]})

    out, _ = run(
        tmp_path,
        [step(call("set_mood", mood="calm")), step(call("send_message", message="ok"))],
        [set_mood],
    )
    first = results(out)[0]
    assert json.loads(first.content) == {"status": "OK", "message": "mood is calm"}
    assert "Command" not in first.content


def test_a_command_setting_keys_the_agent_lacks_is_a_readable_error(tmp_path: Path) -> None:
    @tool
    def bad(call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Sets a key this graph does not have."""
        return Command(update={"nope": 1, "messages": [ToolMessage("x", tool_call_id=call_id)]})

    out, _ = run(tmp_path, [step(call("bad")), step(call("send_message", message="ok"))], [bad])
    result = json.loads(results(out)[0].content)
    assert result["status"] == "Failed"
    assert "['nope']" in result["message"] and "Command.PARENT" in result["message"]


def test_a_handoff_without_a_parent_graph_is_a_readable_error(tmp_path: Path) -> None:
    @tool
    def transfer_to_bob(call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Hand the user to Bob."""
        return Command(graph=Command.PARENT, goto="bob", update={"messages": []})

    out, _ = run(
        tmp_path,
        [step(call("transfer_to_bob")), step(call("send_message", message="I stay"))],
        [transfer_to_bob],
    )
    result = json.loads(results(out)[0].content)
    assert result["status"] == "Failed"
    assert "runs on its own" in result["message"]
    assert out["messages"][-1].content == "I stay"


@tool
async def shout(text: str) -> str:
    """Upper-case a text (async only, like every MCP tool)."""
    shout_loops.append(asyncio.get_running_loop())
    return text.upper()


shout_loops: list[asyncio.AbstractEventLoop] = []


def test_an_async_only_tool_runs_in_a_sync_graph(tmp_path: Path) -> None:
    out, _ = run(
        tmp_path,
        [step(call("shout", text="hi")), step(call("send_message", message="HI"))],
        [shout],
    )
    assert json.loads(results(out)[0].content) == {"status": "OK", "message": "HI"}


@tool
async def ask_approval(what: str) -> str:
    """Ask a person before doing ``what`` (async only; uses LangGraph's run context)."""
    answer = interrupt(f"may I {what}?")
    get_stream_writer()({"asked": what})
    return f"{get_config()['configurable']['thread_id']}: {answer}"


def test_an_async_only_tool_reaches_langgraphs_run_context_in_a_sync_graph(
    tmp_path: Path,
) -> None:
    model = ScriptedChatModel.from_steps(
        [step(call("ask_approval", what="delete")), step(call("send_message", message="ok"))]
    )
    graph = build_graph(model=model, tools=[ask_approval]).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")
    config = {"configurable": {"thread_id": "t-approve"}}
    out = graph.invoke({"messages": [HumanMessage("go")]}, config, context=ctx)
    assert [i.value for i in out["__interrupt__"]] == ["may I delete?"]
    custom = [
        chunk
        for mode, chunk in graph.stream(
            Command(resume="yes"), config, context=ctx, stream_mode=["custom", "values"]
        )
        if mode == "custom" and "asked" in chunk
    ]
    assert custom == [{"asked": "delete"}]
    done = graph.get_state(config).values
    assert json.loads(results(done)[0].content) == {"status": "OK", "message": "t-approve: yes"}


def test_an_async_graph_awaits_tools_on_its_own_event_loop(tmp_path: Path) -> None:
    model = ScriptedChatModel.from_steps(
        [step(call("shout", text="hey")), step(call("send_message", message="HEY"))]
    )
    graph = build_graph(model=model, tools=[shout]).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")

    async def main() -> tuple[dict[str, Any], asyncio.AbstractEventLoop]:
        out = await graph.ainvoke(
            {"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}}, context=ctx
        )
        return out, asyncio.get_running_loop()

    shout_loops.clear()
    out, loop = asyncio.run(main())
    assert shout_loops == [loop]
    assert json.loads(results(out)[0].content)["message"] == "HEY"
    assert out["messages"][-1].content == "HEY"


def test_a_user_tools_result_is_read_before_the_turn_ends_by_default(tmp_path: Path) -> None:
    @tool
    def log_visit(page: str) -> str:
        """Log a page visit."""
        return "logged"

    out, model = run(
        tmp_path,
        [
            step(call("log_visit", page="home"), call("send_message", message="hi")),
            AIMessage("(read the log result)"),
        ],
        [log_visit],
    )
    assert len(model.calls) == 2, "an undeclared tool's result may matter: think again"


def test_a_tool_declared_not_to_need_reading_costs_no_extra_step(tmp_path: Path) -> None:
    @tool
    def log_visit(page: str) -> str:
        """Log a page visit."""
        return "logged"

    declare_tool(log_visit, must_read=False)
    out, model = run(
        tmp_path,
        [step(call("log_visit", page="home"), call("send_message", message="hi"))],
        [log_visit],
    )
    assert len(model.calls) == 1
    assert out["messages"][-1].content == "hi"


def test_a_reply_beside_a_tool_declared_as_a_search_waits_for_its_result(
    tmp_path: Path,
) -> None:
    @tool
    def search_wiki(query: str) -> str:
        """Search the wiki."""
        return "Lyon is in France"

    declare_tool(search_wiki, reads=True)
    out, model = run(
        tmp_path,
        [
            step(call("search_wiki", query="Lyon"), call("send_message", message="no idea")),
            step(call("send_message", message="France")),
        ],
        [search_wiki],
    )
    held = json.loads(results(out)[1].content)
    assert held["status"] == "Failed", "a reply written before the search result was read"
    assert out["messages"][-1].content == "France"
    assert facts_of("search_wiki", {"search_wiki": search_wiki}).reads


def test_what_the_loop_knows_about_a_tool_is_declared_once_beside_it() -> None:
    assert facts_of("send_message").replies
    assert facts_of("conversation_search") == ToolFacts(reads=True, must_read=True)
    assert facts_of("core_memory_append") == ToolFacts(edits=True, must_read=False)
    assert facts_of("some_user_tool") == ToolFacts(), "unknown tools: result must be read"
    searches = {name for name, t in MEMORY_TOOLS.items() if t.reads}
    for name in MEMORY_TOOLS:
        message = AIMessage(content="", tool_calls=[{"name": name, "args": {}, "id": "c1"}])
        assert is_search_call(message) == (name in searches), name
        # A search call is recorded as never to be found by a later search.
        searchable = to_recall(message, "a", "t", 0).searchable
        assert (searchable is False) == (name in searches), name


def test_the_handoff_tools_own_metadata_is_kept_when_declared() -> None:
    from langgraph_swarm import create_handoff_tool

    handoff = create_handoff_tool(agent_name="bob")
    declare_tool(handoff, must_read=False)
    assert handoff.metadata is not None
    assert handoff.metadata["__handoff_destination"] == "bob"
    assert facts_of(handoff.name, {handoff.name: handoff}).must_read is False


def test_memory_of_a_user_tool_call_is_written_to_recall(tmp_path: Path) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    out, _ = run(
        tmp_path, [step(call("add", a=1, b=2)), step(call("send_message", message="3"))], [add]
    )
    memory = open_memory(str(tmp_path), "ada", embedding_model="none")
    stored = memory.recall.get([str(results(out)[0].id)])
    assert stored and stored[0].role == "tool" and "3" in stored[0].text


def test_user_tools_in_an_async_graph_never_block_the_event_loop(tmp_path: Path) -> None:
    from blockbuster import blockbuster_ctx

    @tool
    def note(text: str) -> str:
        """A sync tool: LangGraph runs it in a worker thread under ainvoke."""
        return f"noted {text}"

    model = ScriptedChatModel.from_steps(
        [
            step(
                call("note", text="a"),
                call("shout", text="b"),
                call("core_memory_append", label="human", content="Likes tea"),
            ),
            step(call("send_message", message="done")),
        ]
    )
    graph = build_graph(model=model, tools=[note, shout]).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")

    async def main() -> dict[str, Any]:
        with blockbuster_ctx():
            return await graph.ainvoke(
                {"messages": [HumanMessage("go")]},
                {"configurable": {"thread_id": "t"}},
                context=ctx,
            )

    out = asyncio.run(main())
    contents = [json.loads(str(m.content))["message"] for m in results(out)]
    assert contents[:2] == ["noted a", "B"]
    assert out["messages"][-1].content == "done"
