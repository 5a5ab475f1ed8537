"""The MemGPT loop, driven by a scripted chat model over real stores.

Every test runs on both backends (the ``backend_kind`` parameter): the embedded SQLite +
FAISS one in a temp folder, and Postgres on a real server, both with the real MiniLM.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

SNAPSHOT = Path(__file__).parents[1] / "snapshots" / "graph.mmd"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


class Agent:
    """A compiled graph with a scripted model, an in-memory saver and the test's backend."""

    backend: ClassVar[MemoryBackend | None] = None

    def __init__(
        self,
        data_dir: Path,
        script: list[Any],
        summaries: list[str] | None = None,
        tools: tuple[Any, ...] = (),
        **ctx: Any,
    ) -> None:
        self.model = ScriptedChatModel.from_steps(script)
        self.summarizer = ScriptedChatModel.from_steps(summaries or [])
        self.graph = build_graph(
            model=self.model, summary_model=self.summarizer, tools=tools, memory=self.backend
        ).compile(checkpointer=InMemorySaver())
        self.ctx = Context(data_dir=str(data_dir), **ctx)
        self.config = {"configurable": {"thread_id": "t1"}}

    def say(self, text: str, thread: str | None = None) -> dict[str, Any]:
        if thread is not None:
            self.config = {"configurable": {"thread_id": thread}}
        return self.graph.invoke({"messages": [HumanMessage(text)]}, self.config, context=self.ctx)

    def state(self) -> dict[str, Any]:
        return self.graph.get_state(self.config).values

    @property
    def memory(self) -> Memory:
        assert self.backend is not None
        return self.backend.open(self.ctx.agent_id)


@pytest.fixture(autouse=True)
def _on_each_backend(make_backend: Any, embeddings: MiniLMEmbeddings) -> Iterator[None]:
    Agent.backend = make_backend(embeddings)
    yield
    Agent.backend = None


def tool_results(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]


def test_graph_draws_exactly_the_designed_edges() -> None:
    drawing = build_graph().compile().get_graph().draw_mermaid()
    for edge in [
        "__start__ --> open_turn",
        "open_turn --> check_pressure",
        "check_pressure -.-> think",
        "check_pressure -.-> summarize_evict",
        "check_pressure -.-> respond",
        "summarize_evict -.-> think",
        "summarize_evict -.-> respond",
        "think -.-> call_memory_tool",
        "think -.-> close_step",
        "think -.-> summarize_evict",
        "think -.-> respond",
        "call_memory_tool --> close_step",
        "close_step -.-> check_pressure",
        "close_step -.-> respond",
        "respond --> __end__",
    ]:
        assert edge in drawing, edge
    assert SNAPSHOT.read_text() == drawing, (
        "graph drawing changed: update tests/snapshots/graph.mmd"
    )


def test_send_message_becomes_the_last_ai_message(tmp_path: Path) -> None:
    agent = Agent(tmp_path, [step(call("send_message", message="Hello Ada!"), content="greet")])
    out = agent.say("hi, I'm Ada")
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and last.content == "Hello Ada!"
    assert tool_results(agent.state()) == [
        {"status": "OK", "message": "Sent message successfully."}
    ]


def test_plain_text_answer_ends_the_turn_without_tools(tmp_path: Path) -> None:
    agent = Agent(tmp_path, ["Just text."])
    out = agent.say("hello")
    assert out["messages"][-1].content == "Just text."
    assert agent.model.remaining == 0


def test_heartbeat_chains_a_search_then_a_reply(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("send_message", message="noted")),
            step(call("conversation_search", query="favourite colour", request_heartbeat=True)),
            step(call("send_message", message="You said teal.")),
        ],
    )
    agent.say("my favourite colour is teal")
    # In a new thread: a search skips the messages in view, so the statement must be
    # out of view to be found.
    out = agent.say("what is my favourite colour?", thread="t2")
    assert out["messages"][-1].content == "You said teal."
    search_result = tool_results(agent.state())[0]
    assert search_result["status"] == "OK" and "teal" in search_result["message"]


def test_no_heartbeat_yields_to_respond_once_the_user_has_a_reply(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(
                call("send_message", message="Hi Ada"),
                call("core_memory_append", label="human", content="Name: Ada"),
            ),
        ],
    )
    out = agent.say("I'm Ada")
    assert agent.model.remaining == 0
    assert out["messages"][-1].content == "Hi Ada"
    assert "Name: Ada" in agent.memory.core.get("human").value
    assert agent.state()["core_blocks"][1]["value"] == "Name: Ada", "Studio mirror is current"


def test_a_turn_never_ends_on_a_silent_memory_edit(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("core_memory_append", label="human", content="Name: Ada")),
            step(call("send_message", message="Nice to meet you, Ada.")),
        ],
    )
    out = agent.say("I'm Ada")
    assert out["messages"][-1].content == "Nice to meet you, Ada."
    nudges = [m for m in agent.state()["messages"] if m.name == "system_alert"]
    assert len(nudges) == 1 and "not replied to the user yet" in nudges[0].content


def _system_text(message: Any) -> str:
    content = message.content
    return content if isinstance(content, str) else "\n".join(b["text"] for b in content)


def test_system_prompt_is_rerendered_between_turns_only_for_edits_from_elsewhere(
    tmp_path: Path,
) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("conversation_search", query="x")),
            step(call("core_memory_append", label="human", content="Likes tea")),
            step(call("send_message", message="ok")),
            step(call("send_message", message="ok again")),
            step(call("send_message", message="and again")),
        ],
    )
    agent.say("remember I like tea")
    agent.say("thanks")
    memory = agent.memory
    memory.core.append("human", "Lives in Bergen.", actor="user")  # an edit from outside
    agent.say("bye")
    systems = [_system_text(c[0]) for c in agent.model.calls]
    assert all(isinstance(c[0], SystemMessage) for c in agent.model.calls)
    assert systems[0] == systems[1] == systems[2], "within a turn the prefix must not change"
    assert systems[3] == systems[2], "the thread's own edit is in its queue: no re-render"
    assert "Likes tea" not in systems[3]
    assert "Lives in Bergen." in systems[4], "an edit from elsewhere is shown next turn"
    assert "Likes tea" in systems[4] and 'current="26"' in systems[4]
    assert "<memory_statistics>" in systems[0]
    assert agent.state()["core_blocks"][1]["value"] == "Likes tea\nLives in Bergen."


def test_the_legacy_layout_rerenders_the_system_prompt_within_the_turn(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("core_memory_append", label="human", content="Likes tea")),
            step(call("send_message", message="ok")),
        ],
        prompt_layout="legacy",
    )
    agent.say("remember I like tea")
    first, second = (c[0].content for c in agent.model.calls)
    assert isinstance(first, str) and "Likes tea" not in first and "Likes tea" in second


def test_the_unchanging_instructions_come_first_and_alone_in_their_block(
    tmp_path: Path,
) -> None:
    from langgraph_memgpt.prompts import SYSTEM_INSTRUCTIONS

    agent = Agent(tmp_path, [step(call("send_message", message="hi"))], human="Works as a potter.")
    agent.say("hello")
    blocks = agent.model.calls[0][0].content
    assert isinstance(blocks, list) and blocks[0]["text"] == SYSTEM_INSTRUCTIONS
    assert "Works as a potter." in blocks[1]["text"]
    assert "Works as a potter." not in blocks[0]["text"]


def test_every_user_message_reaches_the_model_with_the_time_it_was_sent(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [step(call("send_message", message="hi")), step(call("send_message", message="yes"))],
    )
    agent.say("hello")
    agent.say("what year is it?")
    prompt = agent.model.calls[1]
    users = [m.content for m in prompt if isinstance(m, HumanMessage)]
    assert len(users) == 2
    for text in users:
        assert re.match(r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\] ", text), text
    stored = [m for m in agent.state()["messages"] if isinstance(m, HumanMessage)]
    assert stored[0].content == "hello", "the queue keeps the user's words unchanged"
    first_then = agent.model.calls[0][1].content
    assert first_then == users[0], "a message's time is fixed once: the prefix cache holds"


def test_a_memory_edit_and_the_reply_in_one_step_take_one_model_call(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(
                call("core_memory_append", label="human", content="Name: Ada."),
                call("send_message", message="Nice to meet you, Ada!"),
            )
        ],
    )
    out = agent.say("Hi, I'm Ada")
    assert out["messages"][-1].content == "Nice to meet you, Ada!"
    assert len(agent.model.calls) == 1
    assert agent.memory.core.get("human").value == "Name: Ada."


def test_a_search_is_read_before_the_turn_ends_even_without_a_heartbeat(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("conversation_search", query="colour")),
            step(call("send_message", message="Teal.")),
        ],
    )
    out = agent.say("What colour do I love?")
    assert out["messages"][-1].content == "Teal."
    assert len(agent.model.calls) == 2


def test_a_reply_written_beside_a_search_waits_until_the_results_are_read(
    tmp_path: Path,
) -> None:
    agent = Agent(
        tmp_path,
        [
            step(
                call("conversation_search", query="colour"),
                call("send_message", message="I don't know."),
            ),
            step(call("send_message", message="Teal.")),
        ],
    )
    out = agent.say("What colour do I love?")
    assert out["messages"][-1].content == "Teal.", "only the informed answer reaches the user"
    held = [r for r in tool_results(agent.state()) if r["status"] == "Failed"]
    assert len(held) == 1 and "Not sent" in held[0]["message"]


def test_an_echo_of_the_users_message_is_not_sent_as_the_reply(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("send_message", message="Good morning! The weather is lovely today.")),
            step(call("send_message", message="Good morning! Enjoy the sunshine.")),
        ],
    )
    out = agent.say("Good morning! The weather is lovely today.")
    assert out["messages"][-1].content == "Good morning! Enjoy the sunshine."
    held = [r for r in tool_results(agent.state()) if r["status"] == "Failed"]
    assert len(held) == 1 and "copied the user's message" in held[0]["message"]


def test_an_echo_is_held_back_only_once_a_turn(tmp_path: Path) -> None:
    echo = "Good morning! The weather is lovely today."
    agent = Agent(
        tmp_path,
        [step(call("send_message", message=echo)), step(call("send_message", message=echo + " "))],
    )
    out = agent.say(echo)
    assert out["messages"][-1].content == echo + " ", "a second echo is sent, not looped on"
    assert len(agent.model.calls) == 2


def test_a_short_greeting_may_be_returned_as_it_is(tmp_path: Path) -> None:
    agent = Agent(tmp_path, [step(call("send_message", message="Hi!"))])
    assert agent.say("Hi!")["messages"][-1].content == "Hi!"


def test_a_failed_edit_beside_a_sent_reply_ends_the_turn(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(
                call("core_memory_append", label="nope", content="x"),
                call("send_message", message="Got it."),
            )
        ],
    )
    out = agent.say("hello")
    assert out["messages"][-1].content == "Got it."
    assert len(agent.model.calls) == 1
    assert tool_results(agent.state())[0]["status"] == "Failed"


@pytest.mark.parametrize(
    ("bad_call", "expected"),
    [
        (call("no_such_tool", x=1), "no tool named 'no_such_tool'"),
        (call("core_memory_append", label="human"), "content: Field required"),
        (call("archival_memory_search", query="x", page="first"), "page:"),
        (
            call("core_memory_replace", label="human", old_content="absent", new_content="x"),
            "absent",
        ),
        (call("conversation_search", query="x", start_date="last tuesday"), "start_date"),
    ],
)
def test_a_bad_tool_call_becomes_a_readable_error_and_the_loop_goes_on(
    tmp_path: Path, bad_call: dict[str, Any], expected: str
) -> None:
    agent = Agent(tmp_path, [step(bad_call), step(call("send_message", message="recovered"))])
    out = agent.say("go")
    assert out["messages"][-1].content == "recovered"
    error = tool_results(agent.state())[0]
    assert error["status"] == "Failed"
    assert error["message"].startswith(f"Error executing function {bad_call['name']}:")
    assert expected in error["message"]


def test_invalid_json_from_the_model_gets_an_error_result(tmp_path: Path) -> None:
    broken = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": "send_message",
                "args": "{not json",
                "id": "c1",
                "error": "bad",
                "type": "invalid_tool_call",
            }
        ],
    )
    agent = Agent(tmp_path, [broken, step(call("send_message", message="fixed"))])
    out = agent.say("go")
    assert out["messages"][-1].content == "fixed"
    result = [m for m in agent.state()["messages"] if isinstance(m, ToolMessage)][0]
    assert result.tool_call_id == "c1"
    assert "not valid JSON" in json.loads(result.content)["message"]


def test_a_tool_that_raises_becomes_an_error_result(tmp_path: Path) -> None:
    @tool
    def explode(x: int) -> str:
        """Always fails."""
        raise RuntimeError("boom")

    agent = Agent(
        tmp_path,
        [step(call("explode", x=1)), step(call("send_message", message="ok"))],
        tools=(explode,),
    )
    agent.say("go")
    assert "RuntimeError: boom" in tool_results(agent.state())[0]["message"]


def test_user_tools_run_in_call_memory_tool(tmp_path: Path) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    agent = Agent(
        tmp_path,
        [step(call("add", a=2, b=3)), step(call("send_message", message="5"))],
        tools=(add,),
    )
    agent.say("2+3?")
    assert tool_results(agent.state())[0] == {"status": "OK", "message": "5"}
    assert any(t["function"]["name"] == "add" for t in agent.model.call_kwargs[0]["tools"])


def test_step_cap_ends_the_turn_with_an_honest_reply(tmp_path: Path) -> None:
    loop = [
        step(call("conversation_search", query=f"q{i}", request_heartbeat=True)) for i in range(3)
    ]
    agent = Agent(tmp_path, loop, max_steps=3)
    out = agent.say("go")
    assert "stopped working on this after 3 steps" in out["messages"][-1].content
    assert agent.model.remaining == 0


def test_the_same_call_three_times_in_a_row_trips_the_breaker(tmp_path: Path) -> None:
    same = step(call("conversation_search", query="same", request_heartbeat=True))
    agent = Agent(tmp_path, [same, same, same, step(call("send_message", message="never"))])
    out = agent.say("go")
    assert "repeating the same action (conversation_search)" in out["messages"][-1].content
    assert agent.model.remaining == 1


def test_every_message_entering_the_queue_is_written_to_recall(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("archival_memory_insert", content="Ada likes tea", request_heartbeat=True)),
            step(call("send_message", message="saved")),
        ],
    )
    agent.say("remember: tea")
    queue_ids = {m.id for m in agent.state()["messages"]}
    recalled = agent.memory.recall.get(list(queue_ids))
    assert {m.message_id for m in recalled} == queue_ids
    assert sorted(m.role for m in recalled) == [
        "assistant",
        "assistant",
        "assistant",
        "tool",
        "tool",
        "user",
    ]


def test_pressure_warning_is_sent_once_per_cycle(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path, ["a", "b", "c"], context_window=3000, warning_fraction=0.05, flush_fraction=1.0
    )
    for text in ("one", "two", "three"):
        agent.say(text)
    alerts = [m for m in agent.state()["messages"] if m.name == "system_alert"]
    assert len(alerts) == 1 and "Memory pressure" in alerts[0].content


def _long(i: int) -> str:
    return f"message {i}: " + " ".join(f"word{i}_{j}" for j in range(120))


def test_eviction_summarizes_and_keeps_the_prompt_under_the_window(tmp_path: Path) -> None:
    n = 12
    agent = Agent(
        tmp_path,
        [step(call("send_message", message=f"reply {i}")) for i in range(n)],
        summaries=[f"I talked with the user (summary {i})." for i in range(n)],
        context_window=4000,
    )
    for i in range(n):
        agent.say(_long(i))
    state = agent.state()
    assert state["summary"].startswith("I talked with the user")
    assert state["evicted_count"] > 0
    # The summary folds the previous one in: the summarizer saw it.
    assert any("Previous summary:\nI talked" in c[1].content for c in agent.summarizer.calls)
    # The summary call is capped at the summary budget (10% of the window), not the model cap.
    assert agent.summarizer.call_kwargs
    assert all(kw.get("max_tokens") == 400 for kw in agent.summarizer.call_kwargs)
    # The summary is in archival memory, with provenance.
    page = agent.memory.archival.search("talked with the user", tags=["summary"])
    assert page.total >= 1 and page.hits[0].item.thread_id == "t1"
    # Evicted messages are still verbatim in recall.
    assert agent.memory.recall.search("word0_5", mode="fts").total >= 1
    # The queue never starts with a tool result, and the newest user message is present.
    first = state["messages"][0]
    assert not isinstance(first, ToolMessage)
    assert any(isinstance(m, HumanMessage) and m.content == _long(n - 1) for m in state["messages"])
    # Every prompt the model saw fit the window.
    from langgraph_memgpt.tools.run import tool_schemas
    from langgraph_memgpt.turn.tokens import TokenCounter

    counter = TokenCounter()
    for prompt in agent.model.calls:
        assert counter.messages(prompt) + counter.tools(tool_schemas()) <= 4000


def test_a_message_the_forget_tool_deleted_in_view_is_left_out_of_its_eviction_summary(
    tmp_path: Path,
) -> None:
    """Forgotten while still in the queue, then evicted: the summarizer never reads it.

    The summary is archived (searchable), so restating the message would bring back what
    the user asked to forget.
    """
    secret = "My door code is 4471 at Larkspur Lane."
    n = 5
    agent = Agent(
        tmp_path,
        [
            step(call("forget", about="Larkspur door code", request_heartbeat=True)),
            step(call("send_message", message="Forgotten.")),
            *[step(call("send_message", message=f"reply {i}")) for i in range(1, n)],
        ],
        summaries=[f"I talked with the user (summary {i})." for i in range(n)],
        context_window=4000,
    )
    agent.say(secret)
    forgot = [r for r in tool_results(agent.state()) if "Forgot" in r["message"]]
    assert forgot and "stay in view" in forgot[0]["message"], tool_results(agent.state())
    assert secret in [m.content for m in agent.state()["messages"]]  # still in view
    for i in range(1, n):
        agent.say(_long(i))

    state = agent.state()
    assert secret not in [m.content for m in state["messages"]], "the secret was never evicted"
    transcripts = [str(call_messages[1].content) for call_messages in agent.summarizer.calls]
    # The eviction that took the first turn out of view: it holds the forget call itself.
    [first] = [t for t in transcripts if "forget(" in t]
    assert "Forgotten." in first and "message 1:" in first  # the rest of it is summarized
    assert not [t for t in transcripts if "4471" in t or "Larkspur Lane" in t]
    assert agent.memory.recall.search("4471 Larkspur", mode="fts").total == 0


def test_eviction_never_splits_a_tool_call_from_its_result() -> None:
    from langgraph_memgpt.nodes.summarize_evict import choose_cut

    queue = [
        HumanMessage("u1", id="1"),
        AIMessage("", id="2", tool_calls=[{"name": "send_message", "args": {}, "id": "c"}]),
        ToolMessage("ok", tool_call_id="c", id="3"),
        ToolMessage("ok", tool_call_id="d", id="4"),
        HumanMessage("u2", id="5"),
    ]

    def fits_from(k: int):  # noqa: ANN202
        return lambda c: 0 if c >= k else 10**9

    cuts = [choose_cut(queue, fits_from(k), 0) for k in range(1, 6)]
    assert all(c not in (2, 3) for c in cuts), cuts
    # The newest user message (index 4) is never evicted.
    assert choose_cut(queue, lambda c: 10**9, 0) == 4


def test_a_context_length_error_triggers_summarize_and_retry(tmp_path: Path) -> None:
    class TooLong(ScriptedChatModel):
        fail_times: int = 0

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
            if self.fail_times:
                self.fail_times -= 1
                raise ValueError("This model's maximum context length is 3500 tokens")
            return super()._generate(messages, stop, run_manager, **kwargs)

    agent = Agent(tmp_path, [], summaries=["I greeted the user."])
    agent.model = TooLong.from_steps(["first", "after retry"])
    agent.graph = build_graph(
        model=agent.model, summary_model=agent.summarizer, memory=agent.backend
    ).compile(checkpointer=InMemorySaver())
    agent.say("hello")
    agent.model.fail_times = 1
    out = agent.say("again")
    assert out["messages"][-1].content == "after retry"
    assert agent.state()["summary"] == "I greeted the user."


def test_a_message_larger_than_the_window_is_cut_in_the_queue_and_kept_whole_in_recall(
    tmp_path: Path,
) -> None:
    huge = "lorem ipsum dolor " * 3000  # ~9k tokens
    agent = Agent(tmp_path, [step(call("send_message", message="got it"))], context_window=3500)
    out = agent.say(huge)
    assert out["messages"][-1].content == "got it"
    queued = [m for m in agent.state()["messages"] if isinstance(m, HumanMessage)][0]
    assert len(queued.content) < len(huge) and "kept verbatim in recall memory" in queued.content
    assert agent.memory.recall.get([queued.id])[0].text == huge


def test_a_sent_reply_is_not_found_twice_by_conversation_search(tmp_path: Path) -> None:
    agent = Agent(tmp_path, [step(call("send_message", message="Teal suits you, Ada."))])
    out = agent.say("what colour should I paint my boat?")
    copy_id = out["messages"][-1].id
    assert agent.memory.recall.get([copy_id]), "the reply copy is still kept in recall"
    found = [h.item.message_id for h in agent.memory.recall.search("teal suits", mode="fts").hits]
    assert found and copy_id not in found


def test_a_prompt_over_the_window_is_never_sent_and_a_futile_eviction_is_not_summarized(
    tmp_path: Path,
) -> None:
    """A window smaller than the instructions and tools: every turn ends honestly."""
    from langgraph_memgpt import prompts
    from langgraph_memgpt.deps import Deps
    from langgraph_memgpt.turn.main_context import prompt_tokens

    agent = Agent(
        tmp_path,
        [step(call("send_message", message=f"reply {i}")) for i in range(5)],
        summaries=[f"summary {i}" for i in range(5)],
        context_window=1024,
    )
    for i in range(4):
        out = agent.say(f"message number {i}, about the weather and the garden")
        assert out["messages"][-1].content == prompts.CONTEXT_OVERFLOW_REPLY
    counter, schemas = Deps().counter, Deps().schemas
    sent = [prompt_tokens(counter, prompt, schemas) for prompt in agent.model.calls]
    assert all(tokens <= 1024 for tokens in sent), sent
    assert agent.model.calls == [], "the model was called with a prompt over the window"
    assert agent.summarizer.calls == [], "the summarizer ran for an eviction that cannot fit"
    # The queue stays bounded all the same: what cannot fit leaves it (recall keeps it all).
    assert len(agent.state()["messages"]) <= 3
    users = [m.text for m in agent.memory.recall.latest(20) if m.role == "user"]
    assert len(users) == 4
