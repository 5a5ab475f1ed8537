"""System events as a run's input: into the queue and recall, memory edited, no reply sent.

Driven in-process by the scripted model over real stores (both backends); the same through
``langgraph_sdk`` against a real ``langgraph dev`` is in ``test_events_server.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.events import EventError, check_events
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.turn.main_context import REPLY_FLAG

CONFIG_CHANGED = {
    "source": "watcher",
    "time": "2026-12-02T09:30:00Z",
    "text": "config.yaml changed: output_format: json -> output_format: parquet",
}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def step(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


class Agent:
    """A compiled graph with a scripted model, an in-memory saver and the test's backend."""

    backend: ClassVar[MemoryBackend | None] = None

    def __init__(self, data_dir: Path, script: list[Any]) -> None:
        self.model = ScriptedChatModel.from_steps(script)
        self.graph = build_graph(model=self.model, memory=self.backend).compile(
            checkpointer=InMemorySaver()
        )
        self.ctx = Context(data_dir=str(data_dir))
        self.config = {"configurable": {"thread_id": "t1"}}

    def run(self, **input: Any) -> dict[str, Any]:
        return self.graph.invoke(input, self.config, context=self.ctx)

    def state(self) -> dict[str, Any]:
        return self.graph.get_state(self.config).values

    @property
    def memory(self) -> Memory:
        assert self.backend is not None
        return self.backend.open(self.ctx.agent_id)


@pytest.fixture(autouse=True)
def _on_each_backend(make_backend: Any) -> Iterator[None]:
    Agent.backend = make_backend()
    yield
    Agent.backend = None


def replies(messages: list[Any]) -> list[AIMessage]:
    """The AI messages a user would be shown: the reply copies ``respond`` adds."""
    return [m for m in messages if isinstance(m, AIMessage) and m.additional_kwargs.get(REPLY_FLAG)]


def test_an_event_only_run_edits_core_memory_and_sends_no_reply(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("send_message", message="Noted: you like JSON.")),
            step(
                call("core_memory_append", label="human", content="Preferred output: Parquet"),
                content="The config changed; the user's format is now Parquet.",
            ),
        ],
    )
    agent.run(messages=[HumanMessage("I export everything as JSON, see config.yaml")])
    before = len(replies(agent.state()["messages"]))

    out = agent.run(events=[CONFIG_CHANGED])

    assert "Preferred output: Parquet" in agent.memory.core.get("human").value
    assert len(replies(agent.state()["messages"])) == before  # nothing sent
    assert not isinstance(out["messages"][-1], AIMessage) or out["messages"][-1].tool_calls
    outcome = out["event_outcome"]
    assert outcome["replied"] is False
    assert outcome["edits"] == [
        {
            "tool": "core_memory_append",
            "args": {"label": "human", "content": "Preferred output: Parquet"},
            "ok": True,
        }
    ]
    assert agent.model.remaining == 0  # not nagged into another step for a reply
    assert agent.state()["events"] == []  # consumed: the next run does not see them again


def test_the_model_reads_an_event_as_the_hosts_not_the_users(tmp_path: Path) -> None:
    agent = Agent(tmp_path, [step(call("core_memory_append", label="human", content="x"))])
    agent.run(events=[CONFIG_CHANGED])

    prompt = agent.model.calls[0]
    assert isinstance(prompt[0], SystemMessage)
    shown = prompt[-1]
    assert isinstance(shown, HumanMessage)
    text = str(shown.content)
    assert text.startswith("[System event from watcher, 2026-12-02 09:30 UTC.")
    assert "not the user" in text and "do not call send_message" in text
    assert text.endswith(CONFIG_CHANGED["text"])


def test_an_event_is_in_recall_under_its_own_role(tmp_path: Path) -> None:
    agent = Agent(tmp_path, [step(call("core_memory_append", label="human", content="x"))])
    agent.run(events=[{**CONFIG_CHANGED, "id": "evt-1"}])

    (stored,) = agent.memory.recall.get(["event:evt-1"])  # the events' own namespace
    assert stored.role == "event"
    assert stored.text == CONFIG_CHANGED["text"]
    found = agent.memory.recall.search("parquet output format", roles=["event"])
    assert [h.item.message_id for h in found.hits] == ["event:evt-1"]
    assert agent.memory.recall.search("parquet output format", roles=["user"]).hits == []


def test_the_model_finds_an_event_by_filtering_conversation_search_to_events(
    tmp_path: Path,
) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("core_memory_append", label="human", content="x")),
            step(call("conversation_search", query="output format", roles=["event"])),
            step(call("send_message", message="It changed to Parquet.")),
        ],
    )
    agent.run(events=[{**CONFIG_CHANGED, "id": "evt-1"}])
    agent.config = {"configurable": {"thread_id": "t2"}}  # the event is out of view there
    agent.run(messages=[HumanMessage("What did the host tell you about the output format?")])

    result = agent.model.calls[2][-1]
    assert "event:" in str(result.content) and "output_format: parquet" in str(result.content)
    assert "No match with the filters" not in str(result.content)


def test_an_event_never_stands_for_nor_overwrites_a_users_message_with_its_id(
    tmp_path: Path,
) -> None:
    """A host numbering its events 1, 2, ... and a user's message "1": both kept, apart."""
    agent = Agent(
        tmp_path,
        [
            step(call("send_message", message="Hello Ada.")),
            "Noted.",
            "Noted again.",
            "Noted once more.",
        ],
    )
    agent.run(messages=[HumanMessage("My locker code is 2468.", id="1")])
    # In view: the event with the user's message id reaches the queue and recall.
    agent.run(events=[{**CONFIG_CHANGED, "id": "1"}])
    queue = agent.state()["messages"]
    assert [m.id for m in queue if isinstance(m, HumanMessage)] == ["1", "event:1"]
    # Out of view (evicted from the queue, kept in recall): the same, and the user's row stays.
    agent.graph.update_state(agent.config, {"messages": [RemoveMessage(id="1")]})
    agent.run(events=[{"source": "watcher", "text": "notes.md changed", "id": "1"}])
    (users,) = agent.memory.recall.get(["1"])
    assert (users.role, users.text) == ("user", "My locker code is 2468.")
    (event,) = agent.memory.recall.get(["event:1"])
    assert event.role == "event"


def test_a_client_message_in_the_events_namespace_is_refused_and_never_rewrites_an_event(
    tmp_path: Path,
) -> None:
    """Event 7, evicted, stays in recall as ``event:7``; a user's message named ``event:7``
    (as an object or as a dict, with events or without) is refused naming the id before
    anything is kept, so it can neither take the event's row nor an event take its own."""
    agent = Agent(tmp_path, ["Noted.", "Noted.", step(call("send_message", message="Hello."))])
    agent.run(events=[{**CONFIG_CHANGED, "id": "7"}])
    agent.run(events=[{"source": "deploy", "text": "deploy 9 finished", "id": "9"}])
    agent.graph.update_state(agent.config, {"messages": [RemoveMessage(id="event:7")]})
    before = agent.graph.get_state(agent.config)

    forged = [
        {"messages": [HumanMessage("My salary is 91,400.", id="event:7")]},
        {"messages": [{"role": "user", "content": "My salary is 91,400.", "id": "event:7"}]},
        {
            "messages": [HumanMessage("plain words", id="event:8")],
            "events": [{**CONFIG_CHANGED, "id": "8"}],
        },
    ]
    for payload in forged:
        with pytest.raises(EventError, match=r"messages\[0\]\.id: 'event:[78]' is in the events"):
            agent.run(**payload)

    after = agent.graph.get_state(agent.config)
    assert after.config == before.config and after.values == before.values  # nothing kept
    (event,) = agent.memory.recall.get(["event:7"])
    assert event.role == "event" and event.text == CONFIG_CHANGED["text"]
    assert agent.memory.recall.get(["event:8"]) == []
    # The thread goes on; an event's own message handed back (a parent graph's queue) is fine.
    queue = agent.state()["messages"]
    assert "event:9" in [m.id for m in queue]
    agent.run(messages=[*queue, HumanMessage("hi", id="u1")])
    assert agent.memory.recall.get(["u1"])[0].text == "hi"


def test_a_client_state_write_in_the_events_namespace_is_refused_by_the_served_graph(
    tmp_path: Path,
) -> None:
    """The served graph's clients write ``messages`` only, and none with an event's id."""
    from starlette.exceptions import HTTPException

    from langgraph_memgpt.serve.server import client_facing

    agent = Agent(tmp_path, ["Noted.", step(call("send_message", message="Hello."))])
    agent.run(events=[{**CONFIG_CHANGED, "id": "7"}])
    agent.run(messages=[HumanMessage("hi", id="u1")])
    served = client_facing(agent.graph)
    forged = {"messages": [HumanMessage("My salary is 91,400.", id="event:7")]}
    with pytest.raises(HTTPException, match="events' namespace") as refused:
        served.update_state(agent.config, forged)
    assert refused.value.status_code == 403
    served.update_state(agent.config, {"messages": [HumanMessage("fine", id="u2")]})
    served.update_state(agent.config, {"messages": [RemoveMessage(id="event:7")]})  # no id taken
    assert "event:7" not in [m.id for m in agent.state()["messages"]]


def test_events_beside_a_user_message_still_get_the_user_a_reply(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("core_memory_append", label="human", content="Format: Parquet")),
            step(call("send_message", message="Parquet it is.")),
        ],
    )
    out = agent.run(messages=[HumanMessage("what format do I use now?")], events=[CONFIG_CHANGED])
    assert out["messages"][-1].content == "Parquet it is."
    assert "event_outcome" not in out or out["event_outcome"] is None


def test_a_reply_to_an_event_is_held_back_so_the_model_may_edit_memory(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("send_message", message="Got it, Parquet from now on!")),
            step(call("core_memory_append", label="human", content="Output format: Parquet")),
        ],
    )
    out = agent.run(events=[CONFIG_CHANGED])

    held = agent.model.calls[1][-1]
    assert "Not sent" in str(held.content) and "core_memory_replace" in str(held.content)
    assert replies(agent.state()["messages"]) == []
    assert out["event_outcome"]["replied"] is False
    assert [e["args"]["content"] for e in out["event_outcome"]["edits"]] == [
        "Output format: Parquet"
    ]
    assert "Output format: Parquet" in agent.memory.core.get("human").value


def test_an_event_turn_sends_nothing_even_when_the_model_insists(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("send_message", message="Your config now says Parquet.")),
            step(call("send_message", message="Really: Parquet.")),
        ],
    )
    out = agent.run(events=[CONFIG_CHANGED])

    assert agent.model.remaining == 0  # the second reply ended the turn
    assert replies(agent.state()["messages"]) == []
    assert out["event_outcome"]["replied"] is False


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"time": "2026-12-02T09:30:00Z", "text": "x"}, "events[0].source"),
        ({"source": "  ", "text": "x"}, "events[0].source"),
        ({"source": "watcher"}, "events[0].text"),
        ({"source": "watcher", "text": "x", "time": "yesterday"}, "events[0].time"),
        ({"source": "watcher", "text": "x", "time": 5}, "events[0].time"),
        ({"source": "watcher", "text": "x", "colour": "red"}, "events[0].colour"),
        ("config changed", "events[0]"),
    ],
)
def test_a_malformed_event_is_refused_naming_the_field(
    tmp_path: Path, event: Any, field: str
) -> None:
    agent = Agent(tmp_path, [])
    with pytest.raises(EventError, match="^" + re.escape(field) + ":"):
        agent.run(events=[event])
    assert agent.model.calls == []  # refused before any node ran
    assert agent.memory.recall.count() == 0


def test_events_must_be_a_list() -> None:
    with pytest.raises(EventError, match=r"^events: must be a list"):
        check_events({"source": "watcher", "text": "x"})


def test_an_event_without_a_time_gets_its_arrival_time() -> None:
    (event,) = check_events([{"source": "watcher", "text": "x"}])
    assert event["time"].endswith("+00:00") and event["id"]


def test_a_plain_answer_to_an_event_is_not_a_reply_and_is_not_nagged(tmp_path: Path) -> None:
    agent = Agent(tmp_path, ["Noted, nothing to change."])
    out = agent.run(events=[CONFIG_CHANGED])
    assert out["event_outcome"] == {
        "events": [agent.state()["messages"][0].id],
        "edits": [],
        "replied": False,
        "stop_reason": "",
    }
    assert replies(agent.state()["messages"]) == []
    assert agent.model.remaining == 0


def test_a_user_turn_after_an_event_turn_clears_its_outcome(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [
            step(call("core_memory_append", label="human", content="Format: Parquet")),
            step(call("send_message", message="Parquet.")),
        ],
    )
    assert agent.run(events=[CONFIG_CHANGED])["event_outcome"]["edits"]
    out = agent.run(messages=[HumanMessage("which format?")])
    assert out["messages"][-1].content == "Parquet."
    assert out["event_outcome"] is None


class _SmallScriptedModel(ScriptedChatModel):
    """A scripted model that declares itself small, as the embedded one does."""

    compact_tools: bool = True
    accepts_step_tools: bool = True


def test_a_small_model_answering_events_alone_may_only_correct_core_or_file_the_event(
    tmp_path: Path,
) -> None:
    agent = Agent(tmp_path, [])
    agent.model = _SmallScriptedModel.from_steps(
        [
            step(call("archival_memory_insert", content="config.yaml now says Parquet")),
            step(call("send_message", message="Parquet it is.")),
        ]
    )
    agent.graph = build_graph(model=agent.model, memory=agent.backend).compile(
        checkpointer=InMemorySaver()
    )
    agent.run(events=[CONFIG_CHANGED])
    allowed = set(agent.model.call_kwargs[0]["step_tools"])
    assert allowed == {"core_memory_replace", "archival_memory_insert"}

    agent.run(messages=[HumanMessage("Thanks, sounds good.")])  # a user waits: any tool
    assert "step_tools" not in agent.model.call_kwargs[1]
