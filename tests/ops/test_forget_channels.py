"""One eraser: after a forget or a retention purge, no checkpoint channel, row or file holds it.

The turns here put a passage's words where the loop keeps them besides ``messages``:
a passage saved and a reply sent in one step (the step's calls stay in ``repeat_key``), a
passage saved in answer to a system event (its arguments stay in ``event_outcome``), a
search that showed it (a tool result in recall and in the queue). Then ``forget
--passage`` or a retention rule forgets it, and every channel of every checkpoint, its
pending writes, every Postgres table, every file of the data directory and the export are
searched for the words. Both backends.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import pytest
from checkpointers import Place, channels_holding, open_saver
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.prebuilt import InjectedStore

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.ops.forget import forget_passage
from langgraph_memgpt.ops.retention import apply_retention, rule
from langgraph_memgpt.ops.transfer import export_agent
from tests.ops.test_forget_gone import leaks

ONE_STEP_WORD = "okapi6620"
EVENT_WORD = "narwhal4471"
KEPT_WORD = "capybara2093"


def call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": cid}


class Threads:
    """Ada's threads on one place, run through the real graph with a scripted model."""

    def __init__(self, place: Place) -> None:
        self.place = place
        self.saver, self._close = open_saver(place.threads)
        self.backend = place.backend()
        self.ctx = Context(data_dir=str(place.data_dir), embedding_model="none", agent_id="ada")

    def graph(self, steps: list[dict[str, Any]]) -> Any:
        model = ScriptedChatModel.from_steps(steps)
        return build_graph(model=model, memory=self.backend).compile(checkpointer=self.saver)

    def run(self, thread: str, payload: dict[str, Any], steps: list[dict[str, Any]]) -> Any:
        config: Any = {"configurable": {"thread_id": thread}}
        return self.graph(steps).invoke(payload, config, context=self.ctx)

    def close(self) -> None:
        self._close()
        if self.backend is not None:
            self.backend.close()


@pytest.fixture
def threads(place: Place) -> Any:
    t = Threads(place)
    # A passage saved and the reply sent in one step: the calls stay in repeat_key.
    t.run(
        "t1",
        {"messages": [HumanMessage("Please keep my passport number safe.", id="u1")]},
        [
            {
                "content": "",
                "tool_calls": [
                    call(
                        "archival_memory_insert",
                        "c1",
                        content=f"Ada's passport number is {ONE_STEP_WORD}.",
                        tags=["ephemeral"],
                    ),
                    call("send_message", "c2", message="Noted."),
                ],
            }
        ],
    )
    # A system event answered by saving a passage: its arguments stay in event_outcome.
    out = t.run(
        "tw",
        {"events": [{"source": "watcher", "text": "vault.yaml was modified."}]},
        [
            {
                "content": "",
                "tool_calls": [
                    call(
                        "archival_memory_insert",
                        "c3",
                        content=f"The vault code is now {EVENT_WORD}.",
                        tags=["ephemeral"],
                    )
                ],
            }
        ],
    )
    assert EVENT_WORD in repr(out["event_outcome"])
    # A note that stays, and a search in another thread whose result shows both passages.
    memory = place.open("ada")
    memory.archival.insert(f"Ada likes {KEPT_WORD} videos.", tags=["keep"])
    t.run(
        "t2",
        {"messages": [HumanMessage("What did I ask you to keep?", id="u2")]},
        [
            {
                "content": "",
                "tool_calls": [
                    call(
                        "archival_memory_search",
                        "c4",
                        query="passport vault",
                        request_heartbeat=True,
                    )
                ],
            },
            {"content": "", "tool_calls": [call("send_message", "c5", message="Your passport.")]},
        ],
    )
    yield t
    t.close()


def latest_channels_holding(saver: Any, thread: str, word: str) -> list[str]:
    config: Any = {"configurable": {"thread_id": thread}}
    values = saver.get_tuple(config).checkpoint["channel_values"]
    return sorted(ch for ch, value in values.items() if word in repr(value))


def test_the_words_are_in_repeat_key_and_event_outcome_before(threads: Threads) -> None:
    assert "repeat_key" in latest_channels_holding(threads.saver, "t1", ONE_STEP_WORD)
    assert "event_outcome" in latest_channels_holding(threads.saver, "tw", EVENT_WORD)
    assert "messages" in latest_channels_holding(threads.saver, "t2", EVENT_WORD)
    for word in (ONE_STEP_WORD, EVENT_WORD):
        assert leaks(threads.place, word), word


def passage_with(place: Place, word: str) -> int:
    (found,) = [p.id for p, _ in place.open("ada").archival.list_passages() if word in p.text]
    return found


def assert_gone(threads: Threads, word: str, tmp_path: Path) -> None:
    assert channels_holding(threads.saver, word) == []
    assert leaks(threads.place, word) == []
    export_agent(threads.place.open("ada"), tmp_path / "ada.jsonl")
    assert word not in (tmp_path / "ada.jsonl").read_text()


@pytest.mark.parametrize("word", [ONE_STEP_WORD, EVENT_WORD])
def test_forget_passage_leaves_no_channel_row_or_file_holding_it(
    threads: Threads, tmp_path: Path, word: str
) -> None:
    passage = passage_with(threads.place, word)
    if threads.place.kind == "sqlite":
        args = ["forget", "--agent", "ada", "--passage", str(passage)]
        data = ["--data-dir", str(threads.place.data_dir), "--embedding-model", "none"]
        assert main([*args, *data]) == 0
    else:
        forget_passage(threads.place.open("ada"), passage, actor="user", checkpointer=threads.saver)

    assert_gone(threads, word, tmp_path)
    assert leaks(threads.place, KEPT_WORD)  # what was not forgotten stays
    # Both threads go on.
    reply = {"content": "", "tool_calls": [call("send_message", "c9", message="Yes.")]}
    threads.run("t1", {"messages": [HumanMessage("Still there?", id="u3")]}, [reply])
    threads.run("tw", {"messages": [HumanMessage("Still there?", id="u4")]}, [reply])


def test_a_retention_purge_forgets_as_forget_does(threads: Threads, tmp_path: Path) -> None:
    memory = threads.place.open("ada")
    memory.archival.set_retention_rule(rule("ephemeral", "1h"))
    later = datetime.now(UTC) + timedelta(days=1)

    report = apply_retention(memory, now=later, checkpointer=threads.saver)

    assert report.count == 2 and report.copies >= 2
    assert sorted(report.threads) == ["t1", "t2", "tw"]
    for word in (ONE_STEP_WORD, EVENT_WORD):
        assert_gone(threads, word, tmp_path)
    assert leaks(threads.place, KEPT_WORD)
    reply = {"content": "", "tool_calls": [call("send_message", "c9", message="Yes.")]}
    threads.run("t1", {"messages": [HumanMessage("Still there?", id="u3")]}, [reply])


def test_the_retention_command_forgets_in_the_threads_too(threads: Threads, tmp_path: Path) -> None:
    """``retention apply`` on a data directory or a database, where a stopped ``serve`` left
    its own copy of the threads (``.langgraph_api``, in the data directory on both)."""
    import pickle

    from langgraph_memgpt.ops.dev_state import STATE_FILE

    memory = threads.place.open("ada")
    memory.archival.set_retention_rule(rule("ephemeral", "1s"))
    saved = threads.place.data_dir / STATE_FILE
    saved.parent.mkdir(parents=True, exist_ok=True)
    values = [threads.saver.get_tuple({"configurable": {"thread_id": t}}) for t in ("t1", "tw")]
    copy = [
        {"thread_id": t, "values": v.checkpoint["channel_values"]}
        for t, v in zip(("t1", "tw"), values, strict=True)
    ]
    # A tool result's artifact in the copy holds it too (redacted by the checkpoints' rule).
    quoted = f"Ada's passport number is {ONE_STEP_WORD}."
    found = ToolMessage("found it", tool_call_id="c4", artifact={"passage": quoted})
    copy.append({"thread_id": "t2", "values": {"messages": [found]}})
    saved.write_bytes(pickle.dumps({"runs": [], "threads": copy}))
    where = ["--data-dir", str(threads.place.data_dir)]
    if threads.place.kind == "postgres":
        where += ["--database-url", threads.place.url]
    time.sleep(1.1)  # the rule's age passes (nothing is timed: it only has to be over)
    threads.place.close()

    assert main(["retention", "apply", "--agent", "ada", *where]) == 0

    for word in (ONE_STEP_WORD, EVENT_WORD):
        assert_gone(threads, word, tmp_path)
        assert word.encode() not in saved.read_bytes()
    assert leaks(threads.place, KEPT_WORD)


def test_a_sleeptime_run_on_the_threads_checkpointer_purges_them_too(
    threads: Threads, tmp_path: Path
) -> None:
    """The library consolidator compiled with the chat threads' checkpointer cleans them."""
    from langgraph_memgpt.sleeptime import build_sleeptime_graph

    memory = threads.place.open("ada")
    memory.archival.set_retention_rule(rule("ephemeral", "1s"))
    time.sleep(1.1)  # the rule's age passes (nothing is timed: it only has to be over)
    tidy = build_sleeptime_graph(
        model=ScriptedChatModel.from_steps(["nothing to tidy"]), memory=threads.backend
    ).compile(checkpointer=threads.saver)

    out = tidy.invoke({}, {"configurable": {"thread_id": "tidy"}}, context=threads.ctx)

    assert out["retention"]["count"] == 2
    for word in (ONE_STEP_WORD, EVENT_WORD):
        assert_gone(threads, word, tmp_path)
    assert leaks(threads.place, KEPT_WORD)


def test_no_eraser_can_be_called_without_naming_the_threads_checkpointer() -> None:
    """Every eraser takes ``checkpointer`` with no default: None must be said, not implied."""
    import inspect

    from langgraph_memgpt.ops import forget
    from langgraph_memgpt.serve.web import views

    erasers = [
        forget.forget_passage,
        forget.forget_passages,
        forget.forget_messages,
        forget.forget_thread,
        forget.forget_agent,
        apply_retention,
        views.forget_passage,
    ]
    for eraser in erasers:
        parameter = inspect.signature(eraser).parameters["checkpointer"]
        assert parameter.default is inspect.Parameter.empty, eraser.__qualname__


def test_a_store_delete_forgets_as_forget_does(threads: Threads, tmp_path: Path) -> None:
    """``MemGPTStore.delete`` (LangMem's delete, the ``BaseStore`` API) is the one eraser too:
    a passage and a message deleted through it leave no channel, row, file or export."""
    from langgraph_memgpt.compose.store import MemGPTStore, namespace, thread_namespace

    store = MemGPTStore(threads.backend, context=threads.ctx, threads=threads.saver)
    (found,) = [
        item
        for item in store.search(namespace("ada", "archival"), query="passport", limit=50)
        if ONE_STEP_WORD in item.value["content"]
    ]
    store.delete(found.namespace, found.key)
    store.delete(thread_namespace("ada", "t1"), "u1")  # "Please keep my passport number safe."

    assert_gone(threads, ONE_STEP_WORD, tmp_path)
    assert_gone(threads, "Please keep my passport number safe", tmp_path)
    assert leaks(threads.place, EVENT_WORD)  # what was not deleted stays
    reply = {"content": "", "tool_calls": [call("send_message", "c9", message="Yes.")]}
    threads.run("t1", {"messages": [HumanMessage("Still there?", id="u3")]}, [reply])


def test_a_store_delete_inside_a_run_cleans_the_other_threads_and_the_run_goes_on(
    threads: Threads, tmp_path: Path
) -> None:
    """A tool deleting through the graph's store (LangMem's way) forgets in every other
    thread at once; the thread whose run it is in keeps its checkpoint for that run to
    write (no history is pruned under it), and a forget from outside afterwards cleans it."""
    from langgraph_memgpt.compose.store import MemGPTStore, namespace

    @tool
    def drop_passport(store: Annotated[Any, InjectedStore()]) -> str:
        """Delete the saved passport note."""
        for item in store.search(namespace("ada", "archival"), query="passport", limit=50):
            if ONE_STEP_WORD in item.value["content"]:
                store.delete(item.namespace, item.key)
        return "deleted"

    store = MemGPTStore(threads.backend, context=threads.ctx)  # threads: the run's own
    model = ScriptedChatModel.from_steps(
        [
            {"content": "", "tool_calls": [call("drop_passport", "c7", request_heartbeat=True)]},
            {"content": "", "tool_calls": [call("send_message", "c8", message="Done.")]},
        ]
    )
    graph = build_graph(model=model, memory=threads.backend, tools=[drop_passport]).compile(
        checkpointer=threads.saver, store=store
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    out = graph.invoke(
        {"messages": [HumanMessage("Drop my passport note.", id="u5")]}, config, context=threads.ctx
    )

    assert out["messages"][-1].content == "Done."
    # The other thread (t2, whose search result showed it) is clean at once; the running
    # thread's queue still quotes it (its run wrote it back), until evicted or forgotten
    # from outside (`forget --thread`): the documented limit of a delete made in a run.
    holding = channels_holding(threads.saver, ONE_STEP_WORD)
    assert holding and {h.split(":")[0] for h in holding} == {"t1"}
    assert not any(ONE_STEP_WORD in m.text for m in threads.place.open("ada").recall.latest(50))
    reply = {"content": "", "tool_calls": [call("send_message", "c9", message="Yes.")]}
    threads.run("t1", {"messages": [HumanMessage("Still there?", id="u6")]}, [reply])


def test_the_forget_tool_cleans_the_other_threads_checkpoints(
    threads: Threads, tmp_path: Path
) -> None:
    """The model's ``forget(about)`` goes through the one eraser: the passage and the
    search result quoting it leave every other thread's checkpoint at once."""
    out = threads.run(
        "t3",
        {"messages": [HumanMessage("Forget my passport number.", id="u7")]},
        [
            {
                "content": "",
                "tool_calls": [
                    call("forget", "c10", about=f"passport {ONE_STEP_WORD}", request_heartbeat=True)
                ],
            },
            {"content": "", "tool_calls": [call("send_message", "c11", message="Forgotten.")]},
        ],
    )

    assert out["messages"][-1].content == "Forgotten."
    assert passage_with_none(threads.place, ONE_STEP_WORD)
    holding = {h.split(":")[0] for h in channels_holding(threads.saver, ONE_STEP_WORD)}
    assert holding == {"t3"}  # only the thread whose run asked (its forget call names it)
    assert leaks(threads.place, EVENT_WORD)  # what was not forgotten stays


def passage_with_none(place: Place, word: str) -> bool:
    return not [p for p, _ in place.open("ada").archival.list_passages() if word in p.text]


def test_a_forget_waits_for_the_run_in_progress_on_a_thread_and_cleans_after_it(
    threads: Threads, tmp_path: Path
) -> None:
    """A run of t1 is thinking (its queue, in memory, quotes the passage) when the passage
    is forgotten: the forget holds the thread as a run does, so it cleans t1 after that
    run's last checkpoint instead of before it (which the run would write back)."""
    called, release = threading.Event(), threading.Event()

    class Held(ScriptedChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            called.set()
            release.wait(120)
            return super()._generate(*args, **kwargs)

    reply = {"content": "", "tool_calls": [call("send_message", "c12", message="Yes.")]}
    graph = build_graph(model=Held.from_steps([reply]), memory=threads.backend).compile(
        checkpointer=threads.saver
    )
    failures: list[BaseException] = []

    def run() -> None:
        try:
            config: Any = {"configurable": {"thread_id": "t1"}}
            message = HumanMessage("Anything else?", id="u8")
            graph.invoke({"messages": [message]}, config, context=threads.ctx)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    def forget() -> None:
        try:
            passage = passage_with(threads.place, ONE_STEP_WORD)
            forget_passage(
                threads.place.open("ada"), passage, actor="user", checkpointer=threads.saver
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    assert called.wait(60)
    forgetter = threading.Thread(target=forget)
    forgetter.start()
    forgetter.join(timeout=3)  # without the thread's claim it is done by now, too early
    release.set()
    runner.join(120)
    forgetter.join(120)

    assert not failures and not runner.is_alive() and not forgetter.is_alive(), failures
    assert channels_holding(threads.saver, ONE_STEP_WORD) == []
