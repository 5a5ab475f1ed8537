"""Nothing streams that the loop does not send.

A client streaming a run (``stream_mode="messages"``, the SDK's ``messages-tuple``, or
``astream_events(version="v2")``) is shown the reply the loop sends, under one message id,
as it is written; never a reply the loop holds back, the inner monologue, tool-call JSON,
tool results or an eviction summary. ``langgraph dev`` + ``langgraph_sdk``:
``test_server.py::test_a_reply_held_back_beside_a_search_never_reaches_an_sdk_client``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel
from langgraph_memgpt.turn.streaming import REPLY_TAG

MONOLOGUE = "PRIVATE: the user asks about their bike; I should look it up."


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def ctx_for(tmp_path: Path, **settings: Any) -> Context:
    return Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none", **settings)


def scripted(steps: list[Any], piece: int = 4) -> ScriptedChatModel:
    model = ScriptedChatModel.from_steps(steps)
    model.stream_piece = piece
    return model


def stream(
    graph: Any, payload: dict[str, Any], ctx: Context, mode: str = "sync", thread: str = "t"
) -> tuple[list[tuple[BaseMessage, dict[str, Any]]], dict[str, Any]]:
    """What a ``messages`` client gets from one run, and the run's output."""
    config = {"configurable": {"thread_id": thread}}
    if mode == "sync":
        items = list(graph.stream(payload, config, context=ctx, stream_mode="messages"))
    else:

        async def collect() -> list[Any]:
            return [
                item
                async for item in graph.astream(
                    payload, config, context=ctx, stream_mode="messages"
                )
            ]

        items = asyncio.run(collect())
    return items, graph.get_state(config).values


def shown(items: list[tuple[BaseMessage, dict[str, Any]]]) -> list[tuple[str, str]]:
    """The AI messages a chat UI shows, merging chunks by message id as ``useStream`` does."""
    texts: dict[str, str] = {}
    for message, _ in items:
        if not isinstance(message, AIMessage | AIMessageChunk):
            continue
        key = str(message.id)
        text = str(message.content) if isinstance(message.content, str) else message.text
        if isinstance(message, AIMessageChunk):
            texts[key] = texts.get(key, "") + text
        else:
            texts[key] = text
    return list(texts.items())


def everything(items: list[tuple[BaseMessage, dict[str, Any]]]) -> str:
    """All a client was sent, joined (a text split over chunks still reads whole)."""
    return "".join(
        m.content if isinstance(m.content, str) else json.dumps(m.content) for m, _ in items
    )


BIKE = "What colour is my bike?"
GUESS = "Your bike is red."
ANSWER = "I found nothing about a bike in my memory; what colour is it?"


@pytest.mark.parametrize("order", ["search, then reply", "reply, then search"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_reply_held_back_beside_a_search_never_reaches_the_client(
    tmp_path: Path, order: str, mode: str
) -> None:
    calls = [call("conversation_search", query="bike"), call("send_message", message=GUESS)]
    if order == "reply, then search":
        calls.reverse()
    model = scripted([step(*calls, content=MONOLOGUE), step(call("send_message", message=ANSWER))])
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    items, state = stream(graph, {"messages": [HumanMessage(BIKE)]}, ctx_for(tmp_path), mode)
    assert state["messages"][-1].content == ANSWER
    assert GUESS not in everything(items), "the held-back reply reached the client"
    assert shown(items) == [(state["messages"][-1].id, ANSWER)]


def test_an_echo_of_the_users_words_never_reaches_the_client(tmp_path: Path) -> None:
    said = "I love the colour teal very much."
    model = scripted(
        [
            step(call("send_message", message=said)),
            step(call("send_message", message="I love the colour teal too!")),
        ]
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    items, state = stream(graph, {"messages": [HumanMessage(said)]}, ctx_for(tmp_path))
    assert state["messages"][-1].content == "I love the colour teal too!"
    assert shown(items) == [(state["messages"][-1].id, "I love the colour teal too!")]


EVENT = {
    "source": "deploy",
    "time": "2026-12-02T09:30:00Z",
    "text": "The deploy key was rotated; the old key no longer works.",
}


@pytest.mark.parametrize(
    "script",
    [
        [
            step(call("send_message", message="Thanks for telling me about the deploy key!")),
            step(call("send_message", message="Noted the rotation.")),
        ],
        ["Noted: the deploy key was rotated."],
    ],
    ids=["send_message twice", "a plain answer"],
)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_in_a_turn_opened_by_events_alone_no_reply_streams(
    tmp_path: Path, script: list[Any], mode: str
) -> None:
    graph = build_graph(model=scripted(script)).compile(checkpointer=InMemorySaver())
    items, state = stream(graph, {"events": [EVENT]}, ctx_for(tmp_path), mode)
    assert state["event_outcome"]["replied"] is False
    assert shown(items) == [], f"client saw {shown(items)}"


def test_the_reply_is_one_message_id_without_an_empty_chunk(tmp_path: Path) -> None:
    reply = "Hello Ada, it is lovely to meet you. Tell me about your day!"
    model = scripted(
        [
            step(
                call("core_memory_append", label="human", content="Name: Ada"),
                call("send_message", message=reply),
                content=MONOLOGUE,
            )
        ]
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    items, state = stream(graph, {"messages": [HumanMessage("hi, I'm Ada")]}, ctx_for(tmp_path))
    chunks = [m for m, _ in items if isinstance(m, AIMessage | AIMessageChunk)]
    assert len(chunks) >= 3, "the reply streams in pieces"
    assert {m.id for m in chunks} == {state["messages"][-1].id}
    assert all(m.content for m in chunks), "an empty chunk (a second message in useStream)"
    assert "".join(str(m.content) for m in chunks) == reply
    assert all(REPLY_TAG in meta["tags"] for m, meta in items if m in chunks)
    assert "PRIVATE" not in everything(items) and '"status"' not in everything(items)


def test_two_send_message_calls_in_one_step_show_the_reply_once(tmp_path: Path) -> None:
    model = scripted(
        [
            step(
                call("send_message", message="First part."),
                call("send_message", message="Second part."),
            )
        ]
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    items, state = stream(graph, {"messages": [HumanMessage("hi")]}, ctx_for(tmp_path))
    assert state["messages"][-1].content == "First part.\n\nSecond part."
    assert shown(items) == [(state["messages"][-1].id, "First part.\n\nSecond part.")]


def test_a_reply_across_two_steps_is_one_message(tmp_path: Path) -> None:
    model = scripted(
        [
            step(
                call(
                    "core_memory_append",
                    label="human",
                    content="Has a cat.",
                    request_heartbeat=True,
                ),
                call("send_message", message="Noted your cat."),
            ),
            step(call("send_message", message="What is its name?")),
        ]
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    items, state = stream(graph, {"messages": [HumanMessage("I have a cat")]}, ctx_for(tmp_path))
    whole = "Noted your cat.\n\nWhat is its name?"
    assert state["messages"][-1].content == whole
    assert shown(items) == [(state["messages"][-1].id, whole)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_turn_stopped_after_its_reply_was_sent_keeps_it_and_shows_one_message(
    tmp_path: Path, mode: str
) -> None:
    from langgraph_memgpt import prompts

    model = scripted(
        [
            step(
                call(
                    "core_memory_append",
                    label="human",
                    content="Likes teal.",
                    request_heartbeat=True,
                ),
                call("send_message", message="Teal is lovely!"),
            )
        ]
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    ctx = ctx_for(tmp_path, max_steps=1)
    items, state = stream(graph, {"messages": [HumanMessage("I like teal")]}, ctx, mode)
    whole = "Teal is lovely!\n\n" + prompts.STEP_CAP_REPLY.format(steps=1)
    assert state["messages"][-1].content == whole
    assert shown(items) == [(state["messages"][-1].id, whole)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_plain_answer_streams_token_by_token(tmp_path: Path, mode: str) -> None:
    answer = "Paris is the capital of France, and it is lovely in spring."
    graph = build_graph(model=scripted([answer])).compile(checkpointer=InMemorySaver())
    items, state = stream(graph, {"messages": [HumanMessage("Paris?")]}, ctx_for(tmp_path), mode)
    chunks = [m for m, _ in items if isinstance(m, AIMessageChunk)]
    assert len(chunks) >= 3, f"the answer arrived whole: {everything(items)}"
    assert "".join(str(m.content) for m in chunks) == answer
    assert shown(items) == [(state["messages"][-1].id, answer)]


def test_text_beside_a_tool_call_is_never_streamed_as_an_answer(tmp_path: Path) -> None:
    """Text comes before the calls on most providers: it is held until the message ends."""
    model = scripted(
        [step(call("send_message", message="Here you are."), content=MONOLOGUE)], piece=3
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    items, _ = stream(graph, {"messages": [HumanMessage("hi")]}, ctx_for(tmp_path))
    assert "PRIVATE" not in everything(items)
    assert [text for _, text in shown(items)] == ["Here you are."]


def test_astream_events_shows_the_reply_under_its_tag_and_not_the_monologue(
    tmp_path: Path,
) -> None:
    reply = "Paris is the capital of France, and it is lovely in spring."
    model = scripted(
        [
            step(
                call("core_memory_append", label="human", content="Likes Paris."),
                call("send_message", message=reply),
                content=MONOLOGUE,
            )
        ]
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())

    async def events() -> list[dict[str, Any]]:
        return [
            e
            async for e in graph.astream_events(
                {"messages": [HumanMessage("Tell me about Paris")]},
                {"configurable": {"thread_id": "t"}},
                context=ctx_for(tmp_path),
                version="v2",
            )
        ]

    tokens = [e for e in asyncio.run(events()) if e["event"] == "on_chat_model_stream"]
    assert len(tokens) >= 3, "the reply streams in pieces"
    assert all(REPLY_TAG in e["tags"] for e in tokens)
    assert "".join(str(e["data"]["chunk"].content) for e in tokens) == reply
    seen = json.dumps([e["data"]["chunk"].model_dump() for e in tokens], default=str)
    assert "PRIVATE" not in seen and "core_memory_append" not in seen


def _evicting_turns(n: int) -> list[str]:
    return [f"message {i}: " + " ".join(f"word{i}_{j}" for j in range(120)) for i in range(n)]


@pytest.mark.parametrize("mode", ["sync", "async", "astream_events"])
def test_an_eviction_summary_never_reaches_a_stream(tmp_path: Path, mode: str) -> None:
    turns = _evicting_turns(10)
    model = scripted([step(call("send_message", message=f"reply {i}")) for i in range(10)])
    summarizer = scripted([f"SUMMARY {i}: I talked with the user." for i in range(10)], 5)
    graph = build_graph(model=model, summary_model=summarizer).compile(checkpointer=InMemorySaver())
    ctx = ctx_for(tmp_path, context_window=4000, flush_fraction=0.8)
    for number, text in enumerate(turns):
        payload = {"messages": [HumanMessage(text)]}
        if mode == "astream_events":
            tokens = [
                str(e["data"]["chunk"].content)
                for e in asyncio.run(events_of(graph, payload, ctx))
                if e["event"] == "on_chat_model_stream"
            ]
            assert "".join(tokens) == f"reply {number}", "more than the reply streamed"
        else:
            items, _ = stream(graph, payload, ctx, mode)
            assert "SUMMARY" not in everything(items), "an eviction summary streamed"
    state = graph.get_state({"configurable": {"thread_id": "t"}}).values
    assert summarizer.calls and state["summary"].startswith("SUMMARY")


async def events_of(graph: Any, payload: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
    """Every ``astream_events`` v2 event of one run."""
    return [
        event
        async for event in graph.astream_events(
            payload, {"configurable": {"thread_id": "t"}}, context=ctx, version="v2"
        )
    ]


def test_an_eviction_summary_in_the_middleware_never_reaches_the_messages_stream(
    tmp_path: Path,
) -> None:
    from langchain.agents import create_agent

    from langgraph_memgpt.compose.middleware import MemGPTMiddleware

    turns = _evicting_turns(14)
    model = scripted([f"reply {i}" for i in range(14)])
    summarizer = scripted([f"SUMMARY {i}: I talked with the user." for i in range(14)], 5)
    memgpt = MemGPTMiddleware(
        "bo",
        context=Context(
            data_dir=str(tmp_path),
            embedding_model="none",
            context_window=6000,
            flush_fraction=0.9,
        ),
        summary_model=summarizer,
    )
    agent = create_agent(model, [], middleware=[memgpt], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    streamed = []
    for text in turns:
        items = list(
            agent.stream({"messages": [HumanMessage(text)]}, config, stream_mode="messages")
        )
        streamed.append([text for _, text in shown(items)])
    assert summarizer.calls, "no eviction happened"
    assert agent.get_state(config).values["summary"].startswith("SUMMARY")
    assert not [s for s in streamed if "SUMMARY" in json.dumps(s)], "a summary streamed"
    assert streamed[-1] == ["reply 13"]  # the agent's own answers still stream


def _parent(tmp_path: Path, reply: str) -> Any:
    model = scripted(
        [
            step(
                call("core_memory_append", label="human", content="Likes Paris."),
                call("send_message", message=reply),
                content=MONOLOGUE,
            )
        ]
    )
    memgpt = build_graph(model=model).compile(name="memgpt")
    parent = StateGraph(MessagesState)
    parent.add_node("memgpt", memgpt)
    parent.add_edge(START, "memgpt")
    parent.add_edge("memgpt", END)
    return parent.compile(checkpointer=InMemorySaver())


def test_a_parent_graph_streaming_messages_sees_the_reply_and_nothing_private(
    tmp_path: Path,
) -> None:
    reply = "Paris is the capital of France, and it is lovely in spring."
    parent = _parent(tmp_path, reply)
    config = {"configurable": {"thread_id": "p"}}
    items = list(
        parent.stream(
            {"messages": [HumanMessage("Tell me about Paris")]},
            config,
            context=ctx_for(tmp_path),
            stream_mode="messages",
        )
    )
    assert "PRIVATE" not in everything(items), "the monologue reached the parent's client"
    assert '"status"' not in everything(items), "a tool result reached the parent's client"
    assert "core_memory_append" not in json.dumps(
        [getattr(m, "tool_calls", []) for m, _ in items]
    ), "tool-call JSON reached the parent's client"
    last = parent.get_state(config).values["messages"][-1]
    assert shown(items) == [(last.id, reply)]


def test_a_parent_graph_streaming_subgraphs_sees_the_reply_chunks_only(tmp_path: Path) -> None:
    reply = "Paris is the capital of France, and it is lovely in spring."
    parent = _parent(tmp_path, reply)
    items = [
        item
        for _, item in parent.stream(
            {"messages": [HumanMessage("Tell me about Paris")]},
            {"configurable": {"thread_id": "p"}},
            context=ctx_for(tmp_path),
            stream_mode="messages",
            subgraphs=True,
        )
    ]
    assert "PRIVATE" not in everything(items) and '"status"' not in everything(items)
    assert [text for _, text in shown(items)] == [reply]
    assert len([m for m, _ in items if isinstance(m, AIMessageChunk)]) >= 3


class Gated(ScriptedChatModel):
    """The embedded server's stand-in: it writes its last piece only once a client has seen
    the reply (or after a deadlock breaker), recording which it was."""

    seen: Any = None
    waited: list[bool] = []

    def _stream(self, *args: Any, **kwargs: Any) -> Any:
        chunks = list(super()._stream(*args, **kwargs))
        for index, chunk in enumerate(chunks):
            if index == len(chunks) - 1:
                self.waited.append(self.seen.wait(30))
            yield chunk


def test_the_embedded_models_reply_reaches_the_client_while_it_is_still_writing(
    tmp_path: Path,
) -> None:
    """Its grammar writes the reply last: every rule is decided as the reply is written, so
    the reply is not held until the model has finished (the first chunk comes no later)."""
    reply = "Good morning to you too! The sun is out and it is a fine day."
    steps = [
        json.dumps(
            [
                {"name": "core_memory_append", "arguments": {"label": "human", "content": "x"}},
                {"name": "send_message", "arguments": {"message": reply}},
            ]
        )
    ]
    inner = Gated.from_steps(steps)
    inner.stream_piece, inner.seen, inner.waited = 6, threading.Event(), []
    model = LocalToolCallingChatModel(
        inner=inner, reply_tool="send_message", companions=("core_memory_append",)
    )
    graph = build_graph(model=model).compile()
    texts = []
    for message, _ in graph.stream(
        {"messages": [HumanMessage("Good morning!")]},
        context=ctx_for(tmp_path),
        stream_mode="messages",
    ):
        if isinstance(message, AIMessageChunk) and message.content:
            texts.append(str(message.content))
            inner.seen.set()
    assert inner.waited == [True], "the reply was held until the model had finished"
    assert "".join(texts) == reply and len(texts) >= 3


class InvokeOnly(BaseChatModel):
    """A chat model that cannot stream (``_generate`` only), as many hand-written fakes are."""

    replies: list[AIMessage]

    @property
    def _llm_type(self) -> str:
        return "invoke-only"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=self.replies.pop(0))])


def test_a_model_that_cannot_stream_keeps_its_calls_and_only_the_reply_streams(
    tmp_path: Path,
) -> None:
    steps = [
        AIMessage(
            MONOLOGUE,
            tool_calls=[{"name": "send_message", "args": {"message": "Hi there!"}, "id": "c1"}],
        )
    ]
    graph = build_graph(model=InvokeOnly(replies=steps)).compile(checkpointer=InMemorySaver())
    items, state = stream(graph, {"messages": [HumanMessage("hi")]}, ctx_for(tmp_path))
    assert state["messages"][-1].content == "Hi there!"
    assert shown(items) == [(state["messages"][-1].id, "Hi there!")]
    assert "PRIVATE" not in everything(items)


ECHOED = "I love the colour teal very much."
TEXTS = st.sampled_from(["Teal is lovely!", GUESS, ECHOED, "Let me check.", "Noted."])
CALLS = st.one_of(
    TEXTS.map(lambda text: call("send_message", message=text)),
    st.just(call("conversation_search", query="teal")),
    st.just(
        call("core_memory_append", label="human", content="Likes teal.", request_heartbeat=True)
    ),
)
STEPS = st.builds(
    lambda calls, monologue: step(*calls, content=monologue),
    st.lists(CALLS, min_size=1, max_size=3),
    st.sampled_from(["", MONOLOGUE]),
)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_whatever_the_model_writes_a_client_sees_exactly_what_the_loop_sends(
    tmp_path: Path, mode: str
) -> None:
    """Replies in any order beside searches, edits, echoes, in several steps, in pieces of
    any size, in user turns and event turns: the client's messages are the turn's reply
    (one message, its final id and text) or, in an event turn, nothing."""

    @settings(
        max_examples=40 if mode == "sync" else 15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(
        steps=st.lists(STEPS, min_size=1, max_size=4),
        piece=st.integers(1, 9),
        events=st.booleans(),
    )
    def check(steps: list[dict[str, Any]], piece: int, events: bool) -> None:
        graph = build_graph(model=scripted(steps, piece)).compile(checkpointer=InMemorySaver())
        ctx = ctx_for(tmp_path, max_steps=len(steps))
        payload = {"events": [EVENT]} if events else {"messages": [HumanMessage(ECHOED)]}
        items, state = stream(graph, payload, ctx, mode, thread=str(uuid.uuid4()))
        assert "PRIVATE" not in everything(items)
        assert '"status"' not in everything(items)
        if events:
            assert shown(items) == []
        else:
            last = state["messages"][-1]
            assert isinstance(last, AIMessage) and not last.tool_calls
            assert shown(items) == [(last.id, last.content)]

    check()


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_model_called_privately_inside_a_node_reaches_no_stream(how: str) -> None:
    """What summarize_evict (and the middleware's eviction) use for the summarizer."""
    from langgraph_memgpt.turn.streaming import ainvoke_privately, invoke_privately

    model = scripted(["SECRET summary text."], 3)

    async def node(state: MessagesState) -> dict[str, Any]:
        if how == "invoke":
            answer = await asyncio.to_thread(invoke_privately, model.bind(), "hi")
        else:
            answer = await ainvoke_privately(model.bind(), "hi")
        assert answer.content == "SECRET summary text."
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("summarize", node)
    builder.add_edge(START, "summarize")
    graph = builder.compile()

    async def run() -> tuple[list[Any], list[Any]]:
        events = [e async for e in graph.astream_events({"messages": []}, version="v2")]
        model.calls.clear()
        items = [i async for i in graph.astream({"messages": []}, stream_mode="messages")]
        return events, items

    events, items = asyncio.run(run())
    assert not [e for e in events if e["event"].startswith("on_chat_model")]
    assert items == []
