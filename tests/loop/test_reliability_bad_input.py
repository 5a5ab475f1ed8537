"""Bad input, from the model or from users: a clear result or a clear error, never a crash.

From the model: any tool name, any arguments, any JSON (valid or not), lone surrogates
included. ``call_memory_tool`` never raises, every call gets a readable
``{"status": "Failed", "message": "Error executing function NAME: ..."}`` (or a real
result), and the step cap always ends the turn.

From users: empty messages, messages larger than the whole window, control characters,
lone surrogates, very long tags, any search query or date text. Each is kept in recall
(surrogates become U+FFFD), every prompt stays within the window, and the conversation
goes on.

Every test runs on both backends: the embedded SQLite one and Postgres (memory through
`PostgresBackend`, threads through ``PostgresSaver`` where a test keeps a thread), on the
session's server. The property tests draw fewer examples on Postgres (`examples`): each
example is a round trip to a server, and the inputs that matter are the same.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from checkpointers import Place, is_postgres, open_saver, place_for
from conftest import BACKENDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.sqlite import AgentMemory, close_all
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes
from langgraph_memgpt.stores.text import valid_text
from langgraph_memgpt.tools.run import MEMORY_TOOLS, Provenance, execute_tool_call, tool_schemas
from langgraph_memgpt.turn.tokens import TokenCounter

# Any code point, lone surrogates and control characters included, plus the characters
# that mean something to SQL, FTS5, LIKE, JSON and shells.
NASTY = list("\"'*()-^:;%_\\/\x00\x07\x1b\x7f\ud800\udfff\u202e\ufeff") + [
    " NEAR ",
    " AND ",
    " OR ",
    " NOT ",
    "'; DROP TABLE recall; --",
]
CHARS = st.characters(exclude_categories=())
TEXT = st.lists(st.one_of(CHARS, st.sampled_from(NASTY)), max_size=40).map("".join)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
TOOL_NAMES = [*MEMORY_TOOLS, "weather"]
NAME = st.one_of(st.sampled_from(TOOL_NAMES), TEXT)


@st.composite
def tool_args(draw: st.DrawFn, name: str) -> Any:
    """Arguments for ``name``: its own parameters with values of any type, plus junk."""
    if name not in MEMORY_TOOLS and name != "weather":
        return draw(st.dictionaries(TEXT, JSON, max_size=3))
    fields = ["city"] if name == "weather" else list(MEMORY_TOOLS[name].args.model_fields)
    args = draw(st.fixed_dictionaries({}, optional={f: JSON for f in fields}))
    # Plausible values too, so calls also get past validation into the stores.
    plausible = {
        "query": TEXT,
        "about": TEXT,
        "content": TEXT,
        "message": TEXT,
        "label": st.sampled_from(["human", "persona", "nope", ""]) | TEXT,
        "old_content": TEXT,
        "new_content": TEXT,
        "tags": st.lists(TEXT, max_size=3),
        "start_date": st.sampled_from(["", "2020-01-01", "2999-12-31", "yesterday"]) | TEXT,
        "end_date": st.sampled_from(["", "2020-01-01", "2999-12-31"]) | TEXT,
        "page": st.integers(-2, 5),
        "roles": st.lists(st.sampled_from(["user", "assistant", "tool", "x"]), max_size=2),
        "request_heartbeat": st.booleans(),
        "tag_match": st.sampled_from(["any", "all", "some"]),
        "city": TEXT,
        "section": st.sampled_from(["", "Likes", "nope"]) | st.none() | TEXT,
        "replaces": st.integers(-2, 6) | st.none(),
    }
    for field_name in fields:
        if draw(st.booleans()):
            args[field_name] = draw(plausible[field_name])
    args.update(draw(st.dictionaries(TEXT, JSON, max_size=1)))
    return args


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(NAME)
    args = draw(st.one_of(tool_args(name), JSON)) if draw(st.booleans()) else draw(tool_args(name))
    return name, args


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


POSTGRES_EXAMPLES = 0.1
"""Share of a property test's examples drawn on Postgres (at least 5): each is a round trip
to a server, and the suite's time is budgeted."""


def examples(kind: str, n: int, **extra: Any) -> Callable[[Any], Any]:
    """Hypothesis settings for ``n`` examples on SQLite (fewer on Postgres)."""
    count = n if kind == "sqlite" else max(5, int(n * POSTGRES_EXAMPLES))
    return settings(
        max_examples=count,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        **extra,
    )


@pytest.fixture(scope="module", params=BACKENDS)
def module_place(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Place:
    """One folder or database per module and backend (property tests' examples share it)."""
    opened = place_for(
        str(request.param), tmp_path_factory.mktemp("fuzz"), request, "module_postgres_url"
    )
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def memory(module_place: Place) -> Iterator[Memory]:
    """One agent's memory with a block set and a passage saved, for the tool and search fuzz."""
    if module_place.kind == "sqlite":
        # Its own connection (not the process-wide one close_all() closes between tests).
        opened: Any = AgentMemory.open(module_place.data_dir, "fuzz", None)
        backend = None
    else:
        backend = module_place.backend()
        assert backend is not None
        opened = backend.open("fuzz")
    opened.core.ensure_defaults(persona="I am a test agent.", human="Name: Ada")
    opened.archival.insert("Ada likes green tea", tags=["drinks"])
    yield opened
    if backend is None:
        opened.close()
    else:
        backend.close()


def assert_readable(content: str, name: str) -> dict[str, Any]:
    """A tool result the model can read: JSON, a status, and Letta's error wording."""
    content.encode("utf-8")  # no lone surrogate: every provider can send it
    result = json.loads(content)
    assert set(result) == {"status", "message"}
    assert result["status"] in ("OK", "Failed")
    if result["status"] == "Failed":
        assert result["message"].startswith(f"Error executing function {valid_text(name)}: ")
    return result


# -- from the model ----------------------------------------------------------------------


def test_any_tool_call_gets_a_readable_result_and_never_raises(
    memory: Memory, module_place: Place
) -> None:
    ctx = Context(data_dir=str(module_place.data_dir), agent_id="fuzz", embedding_model="none")

    @examples(module_place.kind, 300)
    @given(call=tool_calls())
    def check(call: tuple[str, Any]) -> None:
        name, args = call
        outcome = execute_tool_call(
            name,
            args,
            memory=memory,
            ctx=ctx,
            where=Provenance(thread_id="t", turn=1),
            user_tools={"weather": weather},
        )
        result = assert_readable(outcome.content, name)
        assert outcome.ok == (result["status"] == "OK")
        if not outcome.ok:
            assert outcome.heartbeat, "a failure must give the model another step to fix it"
        if name not in TOOL_NAMES or not isinstance(args, dict):
            assert not outcome.ok
        # One result can never flood the window (the JSON wrapper and escapes aside).
        assert len(json.loads(outcome.content)["message"]) <= ctx.result_char_limit

    check()


@st.composite
def model_steps(draw: st.DrawFn) -> list[AIMessage]:
    """What a confused model might say on each step: any calls, broken JSON, any text."""
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        calls = [
            {"name": name, "args": args if isinstance(args, dict) else {"value": args}, "id": None}
            for name, args in draw(st.lists(tool_calls(), min_size=1, max_size=3))
        ]
        invalid = [
            {
                "name": draw(st.none() | NAME),
                "args": draw(st.none() | TEXT | JSON.map(json.dumps)),
                "id": f"bad_{uuid.uuid4().hex[:8]}",
                "error": draw(st.none() | TEXT),
                "type": "invalid_tool_call",
            }
            for _ in range(draw(st.integers(0, 1)))
        ]
        steps.append(AIMessage(content=draw(TEXT), tool_calls=calls, invalid_tool_calls=invalid))
    return steps


def run_turn(
    place: Place,
    steps: list[AIMessage],
    max_steps: int,
    embedding_model: str,
    backend: MemoryBackend | None = None,
) -> tuple[ScriptedChatModel, list[Any]]:
    """One turn on a fresh thread; ``backend`` (Postgres) defaults to the place's own."""
    model = ScriptedChatModel(script=steps)
    memory = backend or place.backend(embedding_model)
    graph = build_graph(
        model=model, summary_model=ScriptedChatModel(script=[]), tools=[weather], memory=memory
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        data_dir=str(place.data_dir),
        max_steps=max_steps,
        embedding_model=embedding_model,
        agent_id=f"default-{embedding_model}",  # one embedding model per agent
    )
    try:
        out = graph.invoke({"messages": [HumanMessage("go")]}, config, context=ctx)
    finally:
        if memory is not None and backend is None:
            memory.close()
    return model, out["messages"]


def assert_turn_well_formed(queue: list[Any], model: ScriptedChatModel, max_steps: int) -> None:
    assert isinstance(queue[-1], AIMessage), "the turn must end with a reply"
    assert len(model.calls) <= max_steps
    calls: dict[str, str] = {}
    for message in queue:
        if isinstance(message, AIMessage):
            calls.update({str(c["id"]): c["name"] for c in message.tool_calls})
            calls.update(
                {
                    str(c.get("id")): str(c.get("name") or "unknown")
                    for c in message.invalid_tool_calls
                }
            )
    results = [m for m in queue if isinstance(m, ToolMessage)]
    assert sorted(m.tool_call_id for m in results) == sorted(calls), "one result per call"
    for message in results:
        assert_readable(str(message.content), calls[message.tool_call_id])
    for prompt in model.calls:  # what a provider would have been sent
        for message in prompt:
            json.dumps(message.model_dump(), ensure_ascii=False, default=str).encode("utf-8")


def _model_fuzz(place: Place, n: int, embedding_model: str) -> None:
    backend = place.backend(embedding_model)  # one for every example

    @examples(place.kind, n)
    @given(steps=model_steps())
    def check(steps: list[AIMessage]) -> None:
        # The script holds exactly max_steps replies: one model call too many would raise.
        model, queue = run_turn(place, steps, len(steps), embedding_model, backend)
        assert_turn_well_formed(queue, model, len(steps))

    try:
        check()
    finally:
        if backend is not None:
            backend.close()
        close_all()


def test_any_model_output_never_crashes_the_loop_and_the_step_cap_ends_the_turn(
    module_place: Place,
) -> None:
    _model_fuzz(module_place, 150, "none")


def test_any_model_output_with_real_embeddings(module_place: Place) -> None:
    _model_fuzz(module_place, 20, "minilm")


def test_a_model_that_never_stops_calling_tools_is_stopped_by_the_step_cap(place: Place) -> None:
    steps = [
        AIMessage("", tool_calls=[{"name": "no_such_tool", "args": {"i": i}, "id": f"c{i}"}])
        for i in range(5)
    ]
    model, queue = run_turn(place, steps, max_steps=5, embedding_model="none")
    assert "stopped working on this after 5 steps" in queue[-1].content
    assert model.remaining == 0
    assert_turn_well_formed(queue, model, 5)


def test_an_integer_too_big_for_the_checkpoint_is_a_readable_error_not_a_crash(
    place: Place,
) -> None:
    # json.loads of a model's "page": 1000000000000000000000000000000 gives a Python int
    # that msgpack (the checkpointer's format) cannot hold: the step would fail to save.
    huge = AIMessage(
        "",
        tool_calls=[
            {"name": "archival_memory_search", "args": {"query": "x", "page": 10**30}, "id": "c1"},
            {
                "name": "archival_memory_insert",
                "args": {"content": "ok", "extra": -(2**70)},
                "id": "c2",
            },
        ],
    )
    model, queue = run_turn(place, [huge], max_steps=1, embedding_model="none")
    assert_turn_well_formed(queue, model, 1)
    results = {m.tool_call_id: json.loads(m.content) for m in queue if isinstance(m, ToolMessage)}
    assert results["c1"]["status"] == "Failed" and "page" in results["c1"]["message"]
    assert results["c2"]["status"] == "OK"


# -- from users --------------------------------------------------------------------------


def stored(place: Place, text: str) -> str:
    """What recall keeps of ``text``: all of it; on Postgres, whose text type cannot hold
    NUL (U+0000), each NUL becomes U+FFFD (the queue keeps the text as sent)."""
    return text.replace("\x00", "\ufffd") if place.url else text


class Chat:
    """One thread on a checkpointer (SQLite file or Postgres), a model that always says "ok"."""

    def __init__(
        self,
        place: Place,
        window: int = 8192,
        replies: int = 10,
        agent_id: str = "default",
        shared: tuple[Any, Any] | None = None,
    ) -> None:
        """``shared``: a (saver, backend) pair to use instead of opening its own."""
        self.place = place
        self.agent_id = agent_id
        self.model = ScriptedChatModel.from_steps(
            [
                {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "ok"}}]}
                for _ in range(replies)
            ]
        )
        self.summarizer = ScriptedChatModel.from_steps([f"summary {i}" for i in range(replies)])
        if shared is None:
            saver, self._close_saver = open_saver(place.threads)
            self.backend = place.backend()
            self._owned = True
        else:
            (saver, self.backend), self._owned = shared, False
        self.graph = build_graph(
            model=self.model, summary_model=self.summarizer, memory=self.backend
        ).compile(checkpointer=saver)
        self.config = {"configurable": {"thread_id": f"t-{agent_id}"}}
        self.ctx = Context(
            data_dir=str(place.data_dir / "data"),
            context_window=window,
            embedding_model="none",
            agent_id=agent_id,
        )
        self.counter = TokenCounter()
        Chat.opened.append(self)

    opened: list[Chat] = []  # closed after each test

    def say(self, text: str) -> str:
        out = self.graph.invoke({"messages": [HumanMessage(text)]}, self.config, context=self.ctx)
        return str(out["messages"][-1].content)

    def state(self) -> dict[str, Any]:
        return self.graph.get_state(self.config).values

    @property
    def memory(self) -> Memory:
        if self.backend is not None:
            return self.backend.open(self.agent_id)
        return Place("sqlite", Path(self.ctx.data_dir)).open(self.agent_id)

    def user_messages_in_recall(self) -> list[str]:
        """The user's messages as recall stored them, in the order they were recorded."""
        stored = self.memory.recall.list_messages(limit=10_000)
        return [m.text for _, m in stored if m.role == "user"]

    def assert_prompts_fit(self) -> None:
        schemas = tool_schemas()
        for prompt in self.model.calls:
            used = self.counter.messages(prompt) + self.counter.tools(schemas)
            assert used <= self.ctx.context_window, used
            for message in prompt:
                str(message.content).encode("utf-8")

    def close(self) -> None:
        if self in Chat.opened:
            Chat.opened.remove(self)
            if self._owned:
                self._close_saver()
                if self.backend is not None:
                    self.backend.close()


@pytest.fixture(autouse=True)
def _fresh_stores() -> Iterator[None]:
    yield
    for chat in list(Chat.opened):
        chat.close()
    close_all()
    forget_loaded_indexes()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t  ",
        "".join(chr(c) for c in range(32)) + "\x7f",
        "\x00",
        "emoji 😀 and a joiner 👩‍👩‍👧 and RTL \u202edlrow",
        "'; DROP TABLE recall; --",
    ],
    ids=["empty", "whitespace", "control characters", "NUL", "emoji and RTL", "SQL"],
)
def test_odd_user_messages_are_kept_verbatim_and_answered(place: Place, text: str) -> None:
    chat = Chat(place)
    assert chat.say(text) == "ok"
    assert chat.say("and now a normal message") == "ok"
    assert chat.user_messages_in_recall() == [stored(place, text), "and now a normal message"]
    assert chat.state()["messages"][0].content == text  # the queue holds it as sent
    chat.assert_prompts_fit()


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("\ud800", "\ufffd"),
        ("before \udfff after", "before \ufffd after"),
        ("pair \ud83d\ude00 joined", "pair 😀 joined"),
        ("\udc80\udc81 backwards \ude00\ud83d", "\ufffd\ufffd backwards \ufffd\ufffd"),
    ],
)
def test_lone_surrogates_become_replacement_characters_and_nothing_is_lost(
    place: Place, text: str, kept: str
) -> None:
    chat = Chat(place)
    assert chat.say(text) == "ok"
    assert chat.user_messages_in_recall() == [kept]
    # The queue and every prompt hold the cleaned text, so any provider can be sent it...
    assert chat.state()["messages"][0].content == kept
    chat.assert_prompts_fit()
    # ...and the thread goes on, from the checkpoint, in a fresh graph.
    chat.close()
    close_all()
    again = Chat(place)
    assert again.say("still there?") == "ok"
    assert again.user_messages_in_recall() == [kept, "still there?"]
    again.close()


def test_any_user_text_is_kept_and_answered(module_place: Place) -> None:
    saver, close_saver = open_saver(module_place.threads)
    backend = module_place.backend()

    @examples(module_place.kind, 40)
    @given(text=TEXT)
    def check(text: str) -> None:
        # A new agent (and thread) per example: its recall holds this text only.
        agent = f"any-text-{uuid.uuid4().hex[:8]}"
        chat = Chat(module_place, agent_id=agent, shared=(saver, backend))
        try:
            assert chat.say(text) == "ok"
            assert chat.user_messages_in_recall() == [stored(module_place, valid_text(text))]
            chat.assert_prompts_fit()
        finally:
            chat.close()
            close_all()

    try:
        check()
    finally:
        close_saver()
        if backend is not None:
            backend.close()


def _huge(kind: str) -> str:
    rng = random.Random(7)
    if kind == "words":
        return " ".join(f"word{i}" for i in range(20_000))
    if kind == "one long token":
        return "x" * 200_000
    if kind == "CJK":
        return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(30_000))
    # Dense first (astral characters cost several tokens each), cheap words after: a cut
    # at the average density would still be too long.
    return "".join(chr(rng.randint(0x10000, 0x1FFFF)) for _ in range(5_000)) + " a" * 40_000


@pytest.mark.parametrize("kind", ["words", "one long token", "CJK", "dense head"])
def test_a_message_larger_than_the_whole_window_is_kept_whole_and_the_queue_fits(
    place: Place, kind: str
) -> None:
    text = _huge(kind)
    chat = Chat(place, window=3500)
    assert chat.counter.text(text) > 3 * 3500
    assert chat.say(text) == "ok", "the model must see the (cut) message, not an overflow"
    assert chat.say("did you get it?") == "ok"
    assert chat.say("and again?") == "ok"
    assert chat.user_messages_in_recall()[0] == text
    chat.assert_prompts_fit()


def test_a_huge_message_still_reaches_the_model_when_core_memory_fills_most_of_the_window(
    place: Place,
) -> None:
    # A quarter of the window is more than the room full core blocks and tools leave: the
    # message is cut to that room (and the time it was sent), not to a fixed fraction, so
    # it never ends the turn with "please send a shorter message".
    chat = Chat(place, window=4000)
    assert chat.say("hello") == "ok"  # the agent's blocks exist from its first turn
    chat.memory.core.append("human", "Ada keeps bees and writes long letters. " * 40)
    chat.memory.core.append("persona", "I answer in full sentences and keep notes. " * 20)
    text = _huge("words")
    assert chat.say(text) == "ok", "the model must see the (cut) message, not an overflow"
    assert chat.say("x" * 200_000) == "ok"
    assert chat.user_messages_in_recall()[1] == text
    chat.assert_prompts_fit()


def test_a_very_long_tag_is_a_clear_error_and_never_bricks_the_agent(place: Place) -> None:
    insert = {
        "content": "",
        "tool_calls": [
            {
                "name": "archival_memory_insert",
                "args": {"content": "Ada likes tea", "tags": ["t" * 5_000, "drinks"]},
            }
        ],
    }
    model = ScriptedChatModel.from_steps([insert, "I will use a shorter tag."])
    backend = place.backend()
    graph = build_graph(model=model, memory=backend).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(place.data_dir), embedding_model="none")
    config = {"configurable": {"thread_id": "a"}}
    graph.invoke({"messages": [HumanMessage("save it")]}, config, context=ctx)
    result = json.loads(model.calls[1][-1].content)
    assert result["status"] == "Failed" and "at most 100" in result["message"]
    # Tags stored anyway (before tags were bounded, or straight into the database) cannot
    # flood the system prompt either: a new thread still gets an answer.
    memory = place.open()
    passage = memory.archival.insert("a passage", tags=[f"tag{i}" for i in range(500)])
    _store_tag_unchecked(place, passage.id, "a" + "y" * 50_000)
    fresh = ScriptedChatModel.from_steps(["hello"])
    graph = build_graph(model=fresh, memory=backend).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "b"}}
    out = graph.invoke({"messages": [HumanMessage("hi")]}, config, context=ctx)
    assert out["messages"][-1].content == "hello"
    system = fresh.calls[0][0].text
    assert "y" * 100 not in system and "(+481 more)" in system
    if backend is not None:
        backend.close()


def _store_tag_unchecked(place: Place, passage_id: int, tag: str) -> None:
    """Add a tag to agent "default"'s passage straight in the database, past every check."""
    if place.url:
        import psycopg

        with psycopg.connect(place.url) as conn:
            conn.execute(
                "UPDATE memgpt_archival SET tags = tags || %s::text WHERE id = %s",
                (tag, passage_id),
            )
        return
    memory: Any = place.open()
    with memory.db.conn:
        memory.db.conn.execute(
            "INSERT INTO archival_tags (passage_id, agent_id, tag) VALUES (?, 'default', ?)",
            (passage_id, tag),
        )


def test_any_search_text_is_a_result_or_a_clear_value_error(
    memory: Memory, module_place: Place
) -> None:
    @examples(module_place.kind, 150)
    @given(
        query=TEXT, start=st.none() | TEXT, end=st.none() | TEXT, tags=st.lists(TEXT, max_size=3)
    )
    def check(query: str, start: str | None, end: str | None, tags: list[str]) -> None:
        for search in (
            lambda: memory.recall.search(query, start_date=start, end_date=end),
            lambda: memory.recall.search(query, mode="fts"),
            lambda: memory.recall.search_date(start, end),
            lambda: memory.archival.search(query, tags=tags, start_date=start, end_date=end),
        ):
            try:
                page = search()
            except ValueError as err:  # a bad date: the message says which and how to fix it
                assert "date" in str(err)
            else:
                assert page.total >= len(page.hits)

    check()


def test_search_with_real_embeddings_survives_surrogates_and_fts_syntax(
    make_backend: Any, embeddings: Any
) -> None:
    memory = make_backend(embeddings).open("fuzz")
    memory.archival.insert("Ada likes green tea \ud800", tags=["drinks\udfff"])
    for query in ["\ud800", 'tea" OR 1=1 --', "NEAR(tea", "*", "(((", "\x00", ""]:
        memory.archival.search(query)
        memory.recall.search(query)
    page = memory.archival.search("green tea", tags=["drinks\ufffd"])
    assert [hit.item.text for hit in page.hits] == ["Ada likes green tea \ufffd"]


@pytest.mark.parametrize(("chars", "stored"), [(400_000, True), (2_000_000, False)])
def test_huge_tool_arguments_are_cut_in_the_queue_while_recall_and_archival_keep_what_ran(
    place: Place, chars: int, stored: bool
) -> None:
    content = ("Ada's notes, word for word. " * (chars // 28 + 1))[:chars]
    insert = {
        "content": "saving everything",
        "tool_calls": [{"name": "archival_memory_insert", "args": {"content": content}}],
    }
    model = ScriptedChatModel.from_steps([insert, "Saved.", "ok"])
    where = place.threads
    saver, close_saver = open_saver(where)
    backend = place.backend()
    graph = build_graph(model=model, memory=backend).compile(checkpointer=saver)
    ctx = Context(data_dir=str(place.data_dir), embedding_model="none", context_window=4096)
    config = {"configurable": {"thread_id": "a"}}
    graph.invoke({"messages": [HumanMessage("keep my notes")]}, config, context=ctx)
    graph.invoke({"messages": [HumanMessage("thanks")]}, config, context=ctx)

    # The queue (every checkpoint) holds a bounded copy of the call, with a note.
    biggest = _biggest_checkpoint(where)
    assert biggest < 100_000, f"a checkpoint of {biggest:,} bytes"
    [call_message] = [
        m for m in graph.get_state(config).values["messages"] if getattr(m, "tool_calls", None)
    ]
    queued = call_message.tool_calls[0]["args"]["content"]
    assert len(queued) < 20_000 and "the call ran with the whole text" in queued
    # Every prompt the model read fits the window.
    counter = TokenCounter()
    for prompt in model.calls:
        assert counter.messages(prompt) < 4096
    # What ran is what the model wrote: recall keeps the whole call, archival the passage.
    memory = place.open()
    [recorded] = memory.recall.get([str(call_message.id)])
    assert recorded.tool_calls[0]["args"]["content"] == content
    [result] = [json.loads(m.content) for m in model.calls[1] if isinstance(m, ToolMessage)]
    passages = memory.archival.search("", page_size=5).hits
    if stored:
        assert result["status"] == "OK"
        assert [p.item.text for p in passages] == [content]
    else:  # an absurd size: a readable refusal, nothing saved
        assert result["status"] == "Failed" and "at most 1,000,000" in result["message"]
        assert passages == []
    close_saver()
    if backend is not None:
        backend.close()


def _biggest_checkpoint(where: str) -> int:
    """Bytes of the largest stored checkpoint (Postgres: with its largest channel value)."""
    if is_postgres(where):
        import psycopg

        with psycopg.connect(where) as conn:
            row = conn.execute(
                "SELECT (SELECT max(octet_length(checkpoint::text)) FROM checkpoints), "
                "(SELECT coalesce(max(octet_length(blob)), 0) FROM checkpoint_blobs), "
                "(SELECT coalesce(max(octet_length(blob)), 0) FROM checkpoint_writes)"
            ).fetchone()
        assert row is not None
        return int(row[0]) + int(row[1]) + int(row[2])
    import sqlite3

    with sqlite3.connect(where) as conn:
        return int(conn.execute("SELECT max(length(checkpoint)) FROM checkpoints").fetchone()[0])
