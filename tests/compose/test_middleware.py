"""`MemGPTMiddleware`: MemGPT's memory in a LangChain ``create_agent`` agent.

Run on both backends (the stores are the graph's): core edits, recall across threads,
archival search, eviction behind a summary in a small window, write-ahead of every message,
the agent id from ``context=``, and the five-node graph and a middleware agent reading each
other's memory.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    HumanInTheLoopMiddleware,
    ModelFallbackMiddleware,
    ModelRetryMiddleware,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.compose.middleware import MemGPTMiddleware
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.nodes.summarize_evict import SUMMARY_TAG
from langgraph_memgpt.prompts import CONTEXT_OVERFLOW_REPLY, SUMMARIZER_INSTRUCTIONS
from langgraph_memgpt.stores import open_memory
from langgraph_memgpt.stores.base import MemoryBackend
from langgraph_memgpt.turn.tokens import TokenCounter
from tests.docs.test_docs import FENCE

CTX = Context(embedding_model="none")


@dataclass
class UserCtx:
    """An application's own run context: the middleware reads its ``agent_id``."""

    agent_id: str


def calls(*pairs: tuple[str, dict[str, Any]], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": [{"name": n, "args": a} for n, a in pairs]}


def results(out: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(str(m.content)) for m in out["messages"] if isinstance(m, ToolMessage)]


def system_text(prompt: list[Any]) -> str:
    first = prompt[0]
    assert isinstance(first, SystemMessage)
    return first.text


class MwAgent:
    """A ``create_agent`` agent with the middleware, a scripted model and a saver."""

    def __init__(
        self,
        backend: MemoryBackend,
        script: list[Any],
        *,
        summaries: list[str] | None = None,
        tools: list[Any] | None = None,
        middleware: list[Any] | None = None,
        **settings: Any,
    ) -> None:
        self.model = ScriptedChatModel.from_steps(script)
        self.summarizer = ScriptedChatModel.from_steps(summaries or [])
        self.memgpt = MemGPTMiddleware(
            backend=backend,
            context=Context(embedding_model="none", **settings),
            summary_model=self.summarizer,
        )
        self.agent = create_agent(
            self.model,
            tools or [],
            system_prompt="You are Pip, a terse helper.",
            middleware=[self.memgpt, *(middleware or [])],
            context_schema=UserCtx,
            checkpointer=InMemorySaver(),
        )

    def say(self, text: str, thread: str = "t1", agent_id: str = "bo") -> dict[str, Any]:
        out: dict[str, Any] = self.agent.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": thread}},
            context=UserCtx(agent_id),
        )
        return out

    def state(self, thread: str = "t1") -> dict[str, Any]:
        values: dict[str, Any] = self.agent.get_state(
            {"configurable": {"thread_id": thread}}
        ).values
        return values


def test_core_recall_and_archival_across_threads_for_the_context_s_agent(
    memory_backend: MemoryBackend,
) -> None:
    mw = MwAgent(
        memory_backend,
        [
            calls(
                ("core_memory_append", {"label": "human", "content": "Keeps three beehives."}),
                ("archival_memory_insert", {"content": "Bo's hives stand by the orchard."}),
            ),
            "Bees! Noted.",
            calls(("conversation_search", {"query": "bees"})),
            calls(("archival_memory_search", {"query": "hives orchard"})),
            "You keep bees; the hives stand by the orchard.",
        ],
    )
    first = mw.say("I keep bees, by the way.", thread="t1")
    assert [r["status"] for r in results(first)] == ["OK", "OK"]
    assert first["messages"][-1].content == "Bees! Noted."
    bo = memory_backend.open("bo")
    assert bo.core.get("human").value == "Keeps three beehives."
    assert not memory_backend.open("default").core.blocks()  # context= chose bo
    journal = bo.recall.get([str(m.id) for m in first["messages"] if isinstance(m, ToolMessage)])
    assert [r.turn for r in journal] == [1, 1]  # each memory call journalled, in its turn

    second = mw.say("What do you know about my bees?", thread="t2")
    found = [r["message"] for r in results(second)]
    assert "I keep bees, by the way." in found[0]  # the first thread, from recall
    assert "orchard" in found[1]  # the passage, from archival
    # Core memory is in the system prompt of the new thread, after the agent's own prompt,
    # in the prefix-cache layout (the unchanging head is its own text block).
    prompt = mw.model.calls[2]
    assert "Keeps three beehives." in system_text(prompt)
    head = prompt[0].content[0]["text"]
    assert "You are Pip, a terse helper." in head and "Keeps three beehives." not in head
    assert mw.state("t2")["agent_id"] == "bo"


def test_every_message_is_written_ahead_to_recall(memory_backend: MemoryBackend) -> None:
    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"Sunny in {city}."

    mw = MwAgent(
        memory_backend,
        [calls(("weather", {"city": "Oslo"})), "It is sunny in Oslo."],
        tools=[weather],
    )
    mw.say("Weather in Oslo?")
    queue = mw.state()["messages"]
    recalled = memory_backend.open("bo").recall.get([str(m.id) for m in queue])
    assert sorted(r.role for r in recalled) == ["assistant", "assistant", "tool", "user"]
    user = next(r for r in recalled if r.role == "user")
    assert user.text == "Weather in Oslo?" and {r.turn for r in recalled} == {1}
    # The model read the message with the time it was sent, as in the graph.
    assert str(mw.model.calls[0][-1].content).startswith("[")


def _long(i: int, words: int = 120) -> str:
    return f"message {i}: " + " ".join(f"word{i}_{j}" for j in range(words))


def test_eviction_behind_a_recursive_summary_in_a_small_window(
    memory_backend: MemoryBackend,
) -> None:
    n, window = 14, 6000  # MemGPT's instructions and tools take about 2900 tokens
    mw = MwAgent(
        memory_backend,
        [f"reply {i}" for i in range(n)],
        summaries=[f"I talked with the user (summary {i})." for i in range(n)],
        context_window=window,
        warning_fraction=0.7,
        flush_fraction=0.9,
    )
    for i in range(n):
        mw.say(_long(i))
    state = mw.state()
    assert state["summary"].startswith("I talked with the user")
    assert state["evicted_count"] > 0
    assert any("Previous summary:\nI talked" in c[1].content for c in mw.summarizer.calls)
    bo = memory_backend.open("bo")
    page = bo.archival.search("talked with the user", tags=[SUMMARY_TAG])
    assert page.total >= 1 and page.hits[0].item.thread_id == "t1"
    assert bo.recall.search("word0_5", mode="fts").total >= 1  # evicted, still verbatim
    # The memory-pressure warning reached the model before an eviction.
    assert any("Memory pressure" in str(m.content) for c in mw.model.calls for m in c)
    # The summary note follows the system message; every prompt fit the window.
    assert "I talked with the user" in str(mw.model.calls[-1][1].content)
    counter = TokenCounter()
    schemas = [convert_to_openai_tool(t) for t in mw.memgpt.tools]
    for prompt in mw.model.calls:
        assert counter.messages(prompt) + counter.tools(schemas) <= window


def test_a_message_too_large_for_the_window_is_cut_in_the_queue_kept_whole_in_recall(
    memory_backend: MemoryBackend,
) -> None:
    mw = MwAgent(memory_backend, ["Got it."], context_window=6000)
    huge = _long(0, words=2000)
    mw.say(huge)
    kept = mw.state()["messages"][0]
    assert len(str(kept.content)) < len(huge) // 2
    assert memory_backend.open("bo").recall.get([str(kept.id)])[0].text == huge
    schemas = [convert_to_openai_tool(t) for t in mw.memgpt.tools]
    assert TokenCounter().messages(mw.model.calls[0]) + TokenCounter().tools(schemas) <= 6000


def test_a_window_the_instructions_alone_overfill_ends_the_turn_honestly(
    memory_backend: MemoryBackend,
) -> None:
    mw = MwAgent(memory_backend, [], context_window=1024)  # the model is never called
    out = mw.say("hello")
    assert out["messages"][-1].content == CONTEXT_OVERFLOW_REPLY
    assert memory_backend.open("bo").recall.count() == 2  # both written ahead


def test_the_graph_and_a_middleware_agent_read_each_other_s_memory(
    memory_backend: MemoryBackend,
) -> None:
    graph_model = ScriptedChatModel.from_steps(
        [
            calls(
                ("core_memory_append", {"label": "human", "content": "Rides a red Bianchi."}),
                ("send_message", {"message": "Nice bike!"}),
            ),
            calls(("archival_memory_search", {"query": "Oslo flat"})),
            calls(("send_message", {"message": "Your flat is in Oslo."})),
        ]
    )
    graph = build_graph(model=graph_model, memory=memory_backend).compile(
        checkpointer=InMemorySaver()
    )
    bo = Context(embedding_model="none", agent_id="bo")
    graph.invoke(
        {"messages": [HumanMessage("I ride a red Bianchi.")]},
        {"configurable": {"thread_id": "g1"}},
        context=bo,
    )
    mw = MwAgent(
        memory_backend,
        [
            calls(("conversation_search", {"query": "Bianchi"})),
            calls(("archival_memory_insert", {"content": "Bo's flat is in Oslo."})),
            "Your bike is a red Bianchi; noted the flat.",
        ],
    )
    out = mw.say("What bike do I ride? Also: my flat is in Oslo.", thread="m1")
    assert "I ride a red Bianchi." in results(out)[0]["message"]  # the graph's thread
    assert "Rides a red Bianchi." in system_text(mw.model.calls[0])  # the graph's core edit

    back = graph.invoke(
        {"messages": [HumanMessage("Where is my flat?")]},
        {"configurable": {"thread_id": "g2"}},
        context=bo,
    )
    found = [json.loads(str(m.content)) for m in back["messages"] if isinstance(m, ToolMessage)]
    assert any("Oslo" in r["message"] for r in found)  # the middleware agent's insert


def test_a_thread_of_another_agent_is_refused(memory_backend: MemoryBackend) -> None:
    mw = MwAgent(memory_backend, ["hi"])
    mw.say("hello", agent_id="bo")
    with pytest.raises(ValueError, match="belongs to agent 'bo'"):
        mw.say("hello again", agent_id="al")


def test_async_runs_and_composes_with_retries_and_human_review(
    memory_backend: MemoryBackend,
) -> None:
    mw = MwAgent(
        memory_backend,
        [calls(("archival_memory_insert", {"content": "Bo's cat is Miso."})), "Saved."],
        middleware=[
            ModelRetryMiddleware(max_retries=1),
            HumanInTheLoopMiddleware(interrupt_on={"archival_memory_insert": True}),
        ],
    )
    config: Any = {"configurable": {"thread_id": "h1"}}

    async def run() -> dict[str, Any]:
        await mw.agent.ainvoke(
            {"messages": [HumanMessage("My cat is Miso.")]}, config, context=UserCtx("bo")
        )
        assert not memory_backend.open("bo").archival.count()  # waiting for review
        out: dict[str, Any] = await mw.agent.ainvoke(
            Command(resume={"decisions": [{"type": "approve"}]}), config, context=UserCtx("bo")
        )
        return out

    out = asyncio.run(run())
    assert out["messages"][-1].content == "Saved."
    bo = memory_backend.open("bo")
    assert bo.archival.count() == 1
    recalled = bo.recall.get([str(m.id) for m in out["messages"]])
    assert len(recalled) == len(out["messages"])


# -- the docs example, run as written with ChatOpenAI replaced by a scripted model --------

DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "library" / "middleware.md"


class FakeChatOpenAI(ScriptedChatModel):
    """The script for the agent's steps; an eviction summary whenever one is asked for."""

    summaries: int = 0

    def _next_reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        if messages and str(messages[0].content).startswith(SUMMARIZER_INSTRUCTIONS[:60]):
            self.summaries += 1
            return AIMessage(f"I talked with Bo about bees (summary {self.summaries}).")
        return super()._next_reply(messages, kwargs)


def test_the_docs_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import langchain_openai

    long_turns = 4
    script = [
        calls(
            ("core_memory_append", {"label": "human", "content": "Keeps three beehives."}),
            ("archival_memory_insert", {"content": "Bo's hives stand by the orchard."}),
        ),
        "Three hives, lovely!",
        calls(("conversation_search", {"query": "beehives"})),
        calls(("archival_memory_search", {"query": "hives orchard"})),
        "Three, by the orchard.",
        *[f"reply {i}" for i in range(long_turns)],
    ]
    made: list[FakeChatOpenAI] = []

    def chat_openai(**_: Any) -> FakeChatOpenAI:
        made.append(FakeChatOpenAI.from_steps(script if not made else []))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(langchain_openai, "ChatOpenAI", chat_openai)
    monkeypatch.chdir(tmp_path)
    code = FENCE.search(DOCS_PAGE.read_text())
    assert code is not None
    namespace: dict[str, Any] = {"__name__": "docs"}
    compiled = compile(code.group("code"), str(DOCS_PAGE), "exec", dont_inherit=True)
    exec(compiled, namespace)  # noqa: S102

    assert capsys.readouterr().out.splitlines() == [
        "Three hives, lovely!",
        "Three, by the orchard.",
    ]
    model = made[0]
    found = [
        json.loads(str(m.content))["message"] for m in model.calls[3] if isinstance(m, ToolMessage)
    ]
    assert "I keep three beehives." in found[0]  # thread t2 found t1's message in recall
    bo = open_memory(str(tmp_path / "memory"), "bo")  # the agent named by context=
    assert bo.core.get("human").value == "Keeps three beehives."
    assert "Keeps three beehives." in system_text(model.calls[2])
    assert bo.archival.search("orchard").total == 1

    # Long messages in the 8,000-token window: evicted behind a recursive summary.
    agent, config = namespace["agent"], {"configurable": {"thread_id": "t1"}}
    for i in range(long_turns):
        text = _long(i, words=400)
        agent.invoke({"messages": [("user", text)]}, config, context=namespace["UserCtx"]("bo"))
    state = agent.get_state(config).values
    assert model.summaries >= 1 and state["evicted_count"] > 0
    assert state["summary"].startswith("I talked with Bo about bees")
    assert bo.archival.search("talked with Bo", tags=[SUMMARY_TAG]).total >= 1
    assert bo.recall.search("word0_5", mode="fts").total >= 1  # evicted, still in recall
    assert not any(m.content == _long(0, words=400) for m in state["messages"])


class DownModel(ScriptedChatModel):
    """A provider that is down: every call fails."""

    def _next_reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        raise ConnectionError("provider down")


def test_a_fallback_model_inside_gets_the_memgpt_prompt_and_its_reply_is_recorded(
    memory_backend: MemoryBackend,
) -> None:
    fallback = ScriptedChatModel.from_steps(["Hi from the fallback."])
    memgpt = MemGPTMiddleware(backend=memory_backend, context=CTX)
    agent = create_agent(
        DownModel.from_steps([]),
        [],
        middleware=[memgpt, ModelFallbackMiddleware(fallback)],
        checkpointer=InMemorySaver(),
    )
    out = agent.invoke(
        {"messages": [HumanMessage("hello")]},
        {"configurable": {"thread_id": "f1", "agent_id": "bo"}},  # the agent from config
    )
    assert out["messages"][-1].content == "Hi from the fallback."
    assert "<core_memory>" in system_text(fallback.calls[0])
    recalled = memory_backend.open("bo").recall.get([str(m.id) for m in out["messages"]])
    assert [r.role for r in recalled] == ["user", "assistant"]


def test_a_step_s_memory_calls_land_in_the_order_the_model_wrote_them(
    memory_backend: MemoryBackend,
) -> None:
    lines = [f"Line {i}." for i in range(6)]
    mw = MwAgent(
        memory_backend,
        [
            calls(*[("core_memory_append", {"label": "human", "content": x}) for x in lines]),
            "Noted.",
        ],
    )
    mw.say("Six facts.")
    assert memory_backend.open("bo").core.get("human").value == "\n".join(lines)


class TooLong(ScriptedChatModel):
    """A provider that refuses the next ``fail_times`` prompts as too long."""

    fail_times: int = 0

    def _next_reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        if self.fail_times:
            self.fail_times -= 1
            raise ValueError("This model's maximum context length is 3500 tokens")
        return super()._next_reply(messages, kwargs)


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_a_context_length_error_evicts_and_retries_as_the_graph_does(
    memory_backend: MemoryBackend, run: str
) -> None:
    mw = MwAgent(memory_backend, [], summaries=["I greeted the user."] * 9)
    model = mw.model = TooLong.from_steps(["first", "after retry"])
    mw.agent = create_agent(
        model,
        [],
        middleware=[mw.memgpt],
        context_schema=UserCtx,
        checkpointer=InMemorySaver(),
    )
    mw.say("hello")
    model.fail_times = 1
    if run == "invoke":
        out = mw.say("again")
    else:
        out = asyncio.run(
            mw.agent.ainvoke(
                {"messages": [HumanMessage("again")]},
                {"configurable": {"thread_id": "t1"}},
                context=UserCtx("bo"),
            )
        )
    assert out["messages"][-1].content == "after retry"
    state = mw.state()
    assert state["summary"] == "I greeted the user." and state["evicted_count"] > 0
    model.fail_times = 9  # more than max_context_retries: the honest reply
    assert mw.say("once more")["messages"][-1].content == CONTEXT_OVERFLOW_REPLY
