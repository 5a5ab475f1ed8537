from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool

from langgraph_memgpt.llm.call_parse import PLAIN_REPLY_KEY, parse_tool_calls
from langgraph_memgpt.llm.call_schema import (
    build_tool_call_schema,
    response_format_for,
    select_tools,
)
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel
from langgraph_memgpt.turn.streaming import reply_so_far

NAMES = ["send_message", "core_memory_append"]


@tool
def send_message(message: str) -> str:
    """Send a message to the user."""
    return "sent"


@tool
def core_memory_append(label: str, content: str) -> str:
    """Append to a core memory block."""
    return "ok"


def only_call(text: str, names: list[str] | None = NAMES) -> tuple[str, dict[str, Any]]:
    parsed = parse_tool_calls(text, names)
    assert len(parsed.tool_calls) == 1, parsed
    call = parsed.tool_calls[0]
    assert call["id"] and call["type"] == "tool_call"
    return call["name"], call["args"]


# --- parser: shapes that are tool calls ---------------------------------------------------


def test_bare_json_object_becomes_a_tool_call() -> None:
    text = '{"name": "send_message", "arguments": {"message": "Paris."}}'
    assert only_call(text) == ("send_message", {"message": "Paris."})


def test_pretty_printed_json_with_surrounding_whitespace() -> None:
    text = '\n  {\n  "name": "send_message",\n  "arguments": {\n    "message": "hi"\n  }\n}\n'
    assert only_call(text) == ("send_message", {"message": "hi"})


def test_fenced_json_block_becomes_a_tool_call() -> None:
    text = '```json\n{"name": "send_message", "arguments": {"message": "hi"}}\n```'
    parsed = parse_tool_calls(text, NAMES)
    assert parsed.content == ""
    assert [c["name"] for c in parsed.tool_calls] == ["send_message"]


def test_fence_without_language_tag() -> None:
    text = '```\n{"name": "send_message", "arguments": {"message": "hi"}}\n```'
    assert only_call(text)[0] == "send_message"


def test_qwen_tool_call_tags_keep_the_monologue_as_content() -> None:
    text = (
        "The user told me their name; I should save it.\n"
        '<tool_call>\n{"name": "core_memory_append", "arguments": '
        '{"label": "human", "content": "Name: Dana"}}\n</tool_call>'
    )
    parsed = parse_tool_calls(text, NAMES)
    assert parsed.content == "The user told me their name; I should save it."
    assert parsed.tool_calls[0]["args"] == {"label": "human", "content": "Name: Dana"}


def test_several_tags_give_several_calls_in_order() -> None:
    text = (
        '<tool_call>{"name": "core_memory_append", "arguments": {"label": "human", '
        '"content": "likes tea"}}</tool_call>\n'
        '<tool_call>{"name": "send_message", "arguments": {"message": "Noted!"}}</tool_call>'
    )
    parsed = parse_tool_calls(text, NAMES)
    assert [c["name"] for c in parsed.tool_calls] == ["core_memory_append", "send_message"]
    assert len({c["id"] for c in parsed.tool_calls}) == 2


def test_unclosed_final_tag_is_still_read() -> None:
    text = '<tool_call>\n{"name": "send_message", "arguments": {"message": "hi"}}'
    assert only_call(text)[0] == "send_message"


def test_json_list_of_calls() -> None:
    text = json.dumps(
        [
            {"name": "core_memory_append", "arguments": {"label": "human", "content": "x"}},
            {"name": "send_message", "arguments": {"message": "ok"}},
        ]
    )
    parsed = parse_tool_calls(text, NAMES)
    assert [c["name"] for c in parsed.tool_calls] == ["core_memory_append", "send_message"]


def test_arguments_given_as_a_json_string() -> None:
    text = json.dumps({"name": "send_message", "arguments": json.dumps({"message": "hi"})})
    assert only_call(text) == ("send_message", {"message": "hi"})


def test_openai_function_shape_and_parameters_key() -> None:
    openai_shape = json.dumps(
        {"type": "function", "function": {"name": "send_message", "arguments": '{"message": "a"}'}}
    )
    params_key = json.dumps({"name": "send_message", "parameters": {"message": "b"}})
    assert only_call(openai_shape) == ("send_message", {"message": "a"})
    assert only_call(params_key) == ("send_message", {"message": "b"})


def test_a_call_id_written_by_the_model_is_kept() -> None:
    text = json.dumps({"name": "send_message", "arguments": {"message": "x"}, "id": "call_abc"})
    assert parse_tool_calls(text, NAMES).tool_calls[0]["id"] == "call_abc"


def test_any_name_is_accepted_when_no_tool_list_is_given() -> None:
    text = json.dumps({"name": "whatever", "arguments": {}})
    assert only_call(text, names=None) == ("whatever", {})


# --- parser: things that stay text --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The capital of France is Paris.",
        "",
        '{"name": "send_message", "arguments": {"message": "unterminated}',
        '{"name": "send_message", "arguments": {"message": "hi"}',
        '<tool_call>{"name": "send_message", "arguments": </tool_call>',
        "```json\n{not json}\n```",
        '{"name": "send_message"}',
        '{"name": "send_message", "arguments": ["hi"]}',
        '{"name": "send_message", "arguments": "not json"}',
        '{"name": "", "arguments": {}}',
        '{"name": 3, "arguments": {}}',
        '{"name": "Paris", "population": 2100000}',
        '{"name": "send_message", "arguments": {}, "confidence": 0.9}',
        '{"name": "send_message", "arguments": {}, "parameters": {}}',
        "[]",
        '["send_message"]',
        "42",
    ],
)
def test_malformed_or_non_call_text_stays_text(text: str) -> None:
    parsed = parse_tool_calls(text, NAMES)
    assert parsed.tool_calls == []
    assert parsed.content == text


def test_a_call_to_a_tool_that_was_not_offered_stays_text() -> None:
    text = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    assert parse_tool_calls(text, NAMES).tool_calls == []


def test_one_bad_element_in_a_list_rejects_the_whole_list() -> None:
    text = json.dumps(
        [{"name": "send_message", "arguments": {"message": "a"}}, {"name": "nope", "arguments": {}}]
    )
    assert parse_tool_calls(text, NAMES).tool_calls == []


def test_a_fenced_code_example_next_to_a_call_stays_in_the_content() -> None:
    text = (
        'Here is the config:\n```json\n{"debug": true}\n```\n'
        '```json\n{"name": "send_message", "arguments": {"message": "done"}}\n```'
    )
    parsed = parse_tool_calls(text, NAMES)
    assert [c["name"] for c in parsed.tool_calls] == ["send_message"]
    assert '{"debug": true}' in parsed.content


# --- schema builder -----------------------------------------------------------------------


def openai_tools() -> list[dict[str, Any]]:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return [convert_to_openai_tool(send_message), convert_to_openai_tool(core_memory_append)]


def test_schema_pins_each_name_to_its_own_arguments() -> None:
    schema = build_tool_call_schema(openai_tools())

    options = schema["anyOf"]
    assert [o["properties"]["name"] for o in options] == [
        {"const": "send_message"},
        {"const": "core_memory_append"},
    ]
    assert options[0]["properties"]["arguments"]["required"] == ["message"]
    assert sorted(options[1]["properties"]["arguments"]["required"]) == ["content", "label"]
    assert all(o["required"] == ["name", "arguments"] for o in options)
    assert all(o["additionalProperties"] is False for o in options)


def test_single_tool_schema_needs_no_anyof() -> None:
    schema = build_tool_call_schema(openai_tools()[:1])
    assert "anyOf" not in schema
    assert schema["properties"]["name"] == {"const": "send_message"}


def test_plain_reply_option_is_added_on_request() -> None:
    schema = build_tool_call_schema(openai_tools(), allow_plain_reply=True)
    assert schema["anyOf"][-1]["required"] == [PLAIN_REPLY_KEY]


def test_no_tools_and_no_plain_reply_is_an_error() -> None:
    with pytest.raises(ValueError):
        build_tool_call_schema([])


def test_defs_are_hoisted_to_the_root() -> None:
    tool_dict = {
        "type": "function",
        "function": {
            "name": "tag",
            "parameters": {
                "type": "object",
                "properties": {"t": {"$ref": "#/$defs/Tag"}},
                "$defs": {"Tag": {"type": "string"}},
            },
        },
    }
    schema = build_tool_call_schema([tool_dict])
    assert schema["$defs"] == {"Tag": {"type": "string"}}
    assert "$defs" not in schema["properties"]["arguments"]


def test_response_format_wraps_the_schema() -> None:
    fmt = response_format_for({"type": "object"})
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == {"type": "object"}


def test_schema_compiles_to_a_llama_cpp_grammar() -> None:
    xllamacpp = pytest.importorskip("xllamacpp")
    grammar = xllamacpp.json_schema_to_grammar(build_tool_call_schema(openai_tools()))
    assert grammar


@pytest.mark.parametrize(
    ("choice", "names", "required"),
    [
        (None, NAMES, False),
        ("auto", NAMES, False),
        ("any", NAMES, True),
        ("required", NAMES, True),
        ("none", [], False),
        ("send_message", ["send_message"], True),
        ({"type": "function", "function": {"name": "core_memory_append"}}, NAMES[1:], True),
    ],
)
def test_tool_choice_selects_the_allowed_tools(
    choice: Any, names: list[str], required: bool
) -> None:
    allowed, must = select_tools(openai_tools(), choice)
    assert [t["function"]["name"] for t in allowed] == names
    assert must is required


def test_tool_choice_naming_an_unbound_tool_is_an_error() -> None:
    with pytest.raises(ValueError, match="get_weather"):
        select_tools(openai_tools(), "get_weather")


# --- the wrapper, over a scripted inner model ----------------------------------------------


def test_wrapper_constrains_the_request_and_returns_real_tool_calls() -> None:
    inner = ScriptedChatModel.from_steps(
        ['{"name": "send_message", "arguments": {"message": "Paris."}}']
    )
    model = LocalToolCallingChatModel(inner=inner).bind_tools([send_message, core_memory_append])

    reply = model.invoke("What is the capital of France?")

    assert isinstance(reply, AIMessage)
    assert reply.content == ""
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("send_message", {"message": "Paris."})
    ]
    sent = inner.call_kwargs[0]
    assert [t["function"]["name"] for t in sent["tools"]] == NAMES
    assert "tool_choice" not in sent
    schema = sent["extra_body"]["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "array" and schema["maxItems"] == 3
    assert [o["properties"]["name"]["const"] for o in schema["items"]["anyOf"]] == NAMES


def test_the_wrapper_takes_an_edit_and_the_reply_from_one_generation() -> None:
    calls = [
        {"name": "core_memory_append", "arguments": {"label": "human", "content": "Name: Ada."}},
        {"name": "send_message", "arguments": {"message": "Hi Ada!"}},
    ]
    inner = ScriptedChatModel.from_steps([json.dumps(calls)])
    model = LocalToolCallingChatModel(inner=inner).bind_tools([send_message, core_memory_append])

    reply = model.invoke("I'm Ada")

    assert [c["name"] for c in reply.tool_calls] == ["core_memory_append", "send_message"]


def test_a_list_schema_compiles_to_a_llama_cpp_grammar() -> None:
    xllamacpp = pytest.importorskip("xllamacpp")
    assert xllamacpp.json_schema_to_grammar(build_tool_call_schema(openai_tools(), max_calls=3))


def test_tools_are_written_between_the_instructions_and_the_memory_blocks() -> None:
    inner = ScriptedChatModel.from_steps(
        ['[{"name": "send_message", "arguments": {"message": "x"}}]']
    )
    model = LocalToolCallingChatModel(inner=inner).bind_tools([send_message, core_memory_append])
    system = SystemMessage(
        content=[{"type": "text", "text": "INSTRUCTIONS"}, {"type": "text", "text": "CORE"}]
    )

    model.invoke([system, HumanMessage("hi")])

    sent_system = inner.calls[0][0]
    assert isinstance(sent_system.content, str)
    text = sent_system.content
    assert text.index("INSTRUCTIONS") < text.index("- send_message(message: string)")
    assert text.index("- core_memory_append(") < text.index("CORE")
    assert "tools" not in inner.call_kwargs[0], "the chat template must not append them again"


def test_a_one_string_system_message_keeps_the_tools_in_the_request() -> None:
    inner = ScriptedChatModel.from_steps(
        ['[{"name": "send_message", "arguments": {"message": "x"}}]']
    )
    model = LocalToolCallingChatModel(inner=inner).bind_tools([send_message])

    model.invoke([SystemMessage("INSTRUCTIONS CORE"), HumanMessage("hi")])

    assert inner.calls[0][0].content == "INSTRUCTIONS CORE"
    assert [t["function"]["name"] for t in inner.call_kwargs[0]["tools"]] == ["send_message"]


def merged_stream(model: Any, prompt: Any) -> tuple[list[Any], Any, list[str]]:
    """The model's stream, its chunks merged as a UI merges them, and the reply seen after each."""
    chunks = list(model.stream(prompt))
    merged = chunks[0]
    seen: list[str] = []
    for chunk in chunks[1:]:
        merged = merged + chunk
        seen.append(reply_so_far(merged) or "")
    return chunks, merged, seen


def test_wrapper_streaming_keeps_the_parsed_tool_calls() -> None:
    inner = ScriptedChatModel.from_steps(
        ['{"name": "send_message", "arguments": {"message": "x"}}']
    )
    model = LocalToolCallingChatModel(inner=inner).bind_tools([send_message])

    _, merged, _ = merged_stream(model, "hi")
    assert merged.tool_calls[0]["name"] == "send_message"


def test_wrapper_without_tools_sends_a_plain_request() -> None:
    inner = ScriptedChatModel.from_steps(["A short summary."])
    model = LocalToolCallingChatModel(inner=inner)

    reply = model.invoke("Summarize.")

    assert reply.content == "A short summary."
    assert "extra_body" not in inner.call_kwargs[0]
    assert "tools" not in inner.call_kwargs[0]


def test_wrapper_tool_choice_none_leaves_output_unconstrained_and_unparsed() -> None:
    text = '{"name": "send_message", "arguments": {"message": "x"}}'
    inner = ScriptedChatModel.from_steps([text])
    model = LocalToolCallingChatModel(inner=inner).bind_tools([send_message], tool_choice="none")

    reply = model.invoke("hi")

    assert reply.tool_calls == []
    assert reply.content == text
    assert "extra_body" not in inner.call_kwargs[0]


def test_wrapper_plain_reply_option_becomes_plain_content() -> None:
    inner = ScriptedChatModel.from_steps([json.dumps({PLAIN_REPLY_KEY: "Just text."})])
    model = LocalToolCallingChatModel(inner=inner, allow_plain_reply=True).bind_tools(
        [send_message]
    )

    reply = model.invoke("hi")

    assert reply.content == "Just text."
    assert reply.tool_calls == []


RUNAWAY = (
    '[{"name": "core_memory_append", "arguments": {"label": "human", "content": '
    '"Switched jobs to midwife."}}, {"name": "send_message", "arguments": {"message": "'
    + "I'm glad to hear that! "
    * 40
)
"""A step the model began as calls and broke off (a repeated sentence ran out its tokens)."""


def test_a_step_that_breaks_off_keeps_its_whole_calls_and_makes_the_rest_an_invalid_call() -> None:
    inner = ScriptedChatModel.from_steps([RUNAWAY])
    reply = (
        LocalToolCallingChatModel(inner=inner)
        .bind_tools([send_message, core_memory_append])
        .invoke("I'm a midwife now.")
    )

    assert reply.content == ""
    assert [c["name"] for c in reply.tool_calls] == ["core_memory_append"]
    assert [c["name"] for c in reply.invalid_tool_calls] == ["send_message"]
    assert len(str(reply.invalid_tool_calls[0]["args"])) <= 300


def _one_turn(inner: BaseChatModel, tmp_path: Any, said: str, streamed: bool = False) -> Any:
    """One turn of the agent graph on the small model's wrapper around ``inner``: the
    thread's messages after it (invoked, or streamed as a UI would read it)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from langgraph_memgpt import Context, build_graph

    model = LocalToolCallingChatModel(
        inner=inner, reply_tool="send_message", companions=("core_memory_append",)
    )
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), agent_id="hana", embedding_model="none")
    given = {"messages": [HumanMessage(said)]}
    config: Any = {"configurable": {"thread_id": "t"}}
    if not streamed:
        return graph.invoke(given, config, context=ctx)["messages"]
    for _ in graph.stream(given, config, context=ctx, stream_mode="messages"):
        pass
    return graph.get_state(config).values["messages"]


def test_a_broken_off_step_never_reaches_the_user_and_the_model_tries_again(tmp_path: Any) -> None:
    retry = json.dumps([{"name": "send_message", "arguments": {"message": "Congratulations!"}}])
    messages = _one_turn(
        ScriptedChatModel.from_steps([RUNAWAY, retry]),
        tmp_path,
        "Actually, I switched jobs: I'm a midwife now.",
    )

    assert messages[-1].content == "Congratulations!"
    assert not any('"name"' in str(m.content) for m in messages if m.type == "ai")
    errors = [m for m in messages if m.type == "tool" and "cut off" in str(m.content)]
    assert len(errors) == 1


SERVER_BROKE_OFF = (
    "Error code: 500 - Failed to parse tool call arguments as JSON: "
    "[json.exception.parse_error.101] parse error at line 1, column 40: syntax error while "
    "parsing value - invalid string: missing closing quote; last read: "
    "'\"I need to get to work on time, so I ha'"
)


class _LikeLlamaServer(BaseChatModel):
    """Answers in turn with ``steps`` (an error to raise, or the text the model wrote), and
    reads every prompt as llama.cpp does: a tool call in it with no name, or arguments that
    are not JSON, fails the whole request with a 500."""

    steps: list[Any]
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "like-llama-server"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        from langchain_openai.chat_models.base import _convert_message_to_dict

        for sent in map(_convert_message_to_dict, messages):
            for call in sent.get("tool_calls") or []:
                if not isinstance(call["function"]["name"], str):
                    raise RuntimeError("Error code: 500 - Failed to parse messages: type must be "
                                       "string, but is null")  # fmt: skip
                json.loads(call["function"]["arguments"])  # the server's 500 on broken JSON
        step = self.steps[self.calls]
        self.calls += 1
        if isinstance(step, Exception):
            raise step
        return ChatResult(generations=[ChatGeneration(message=AIMessage(step))])

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:  # fmt: skip
        result = self._generate(messages, stop, run_manager, **kwargs)
        text = str(result.generations[0].message.content)
        yield ChatGenerationChunk(message=AIMessageChunk(content=text))


RETRY = json.dumps([{"name": "send_message", "arguments": {"message": "Sounds like a busy day!"}}])


@pytest.mark.parametrize("streamed", [False, True], ids=["invoked", "streamed"])
def test_a_call_the_server_refused_as_cut_short_is_a_tool_error_and_the_turn_goes_on(
    tmp_path: Any, streamed: bool
) -> None:
    """llama.cpp answers a call cut short by the reply cap with a 500 ("Failed to parse
    tool call arguments as JSON") when it parses the calls itself: that is a malformed call
    from the model, so the model is told, as for any call that does not parse, and tries
    again; the run does not fail."""
    inner = _LikeLlamaServer(steps=[RuntimeError(SERVER_BROKE_OFF), RETRY])
    messages = _one_turn(inner, tmp_path, "Long day at work today.", streamed=streamed)

    assert messages[-1].content == "Sounds like a busy day!"
    errors = [m for m in messages if m.type == "tool" and "not valid JSON" in str(m.content)]
    assert len(errors) == 1
    assert "I need to get to work" in str(errors[0].content)  # what the server read of it


def test_a_broken_off_call_goes_back_to_the_server_as_a_call_it_can_read(tmp_path: Any) -> None:
    """The invalid call a runaway step leaves in the queue is sent in later prompts with a
    name and JSON arguments: as the model wrote it, llama.cpp refuses the whole prompt."""
    inner = _LikeLlamaServer(steps=[RUNAWAY, RETRY])
    messages = _one_turn(inner, tmp_path, "Actually, I switched jobs: I'm a midwife now.")

    assert messages[-1].content == "Sounds like a busy day!"


def test_wrapper_keeps_tool_calls_the_server_already_parsed() -> None:
    inner = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "y"}}]}]
    )
    reply = LocalToolCallingChatModel(inner=inner).bind_tools([send_message]).invoke("hi")
    assert reply.tool_calls[0]["args"] == {"message": "y"}


class _Overflowing(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "overflowing"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        raise RuntimeError(
            "Error code: 400 - {'error': {'code': 400, 'message': 'request (9000 tokens) "
            "exceeds the available context size (8192 tokens), try increasing it', "
            "'type': 'exceed_context_size_error'}}"
        )


def test_llama_cpp_context_overflow_becomes_context_overflow_error() -> None:
    model = LocalToolCallingChatModel(inner=_Overflowing()).bind_tools([send_message])

    with pytest.raises(ContextOverflowError, match="exceeds the available context size"):
        model.invoke("hi")


def test_one_step_can_narrow_the_callable_tools_without_changing_the_prompt() -> None:
    reply = '[{"name": "send_message", "arguments": {"message": "x"}}]'
    inner = ScriptedChatModel.from_steps([reply, reply])
    model = LocalToolCallingChatModel(
        inner=inner,
        reply_tool="send_message",
        companions=("core_memory_append",),
    ).bind_tools([send_message, core_memory_append])
    system = SystemMessage(
        content=[{"type": "text", "text": "INSTRUCTIONS"}, {"type": "text", "text": "CORE"}]
    )

    model.invoke([system, HumanMessage("hi")])
    model.invoke([system, HumanMessage("hi")], step_tools=["send_message"])

    def shapes(call: int) -> list[list[str]]:
        schema = inner.call_kwargs[call]["extra_body"]["response_format"]["json_schema"]["schema"]
        options = schema.get("anyOf", [schema])
        return [
            [
                item.get("properties", {}).get("name", {}).get("const", "any")
                for item in o["prefixItems"]
            ]
            for o in options
        ]

    assert ["core_memory_append", "send_message"] in shapes(0)
    assert shapes(1) == [["send_message"]]
    assert inner.calls[0] == inner.calls[1], "the prompt (and so the prefix cache) is the same"
    assert "step_tools" not in inner.call_kwargs[1]


def test_the_wrapper_streams_the_raw_text_then_the_same_calls_as_invoke() -> None:
    calls = [
        {"name": "core_memory_append", "arguments": {"label": "human", "content": "Name: Ada."}},
        {"name": "send_message", "arguments": {"message": "Hello Ada, lovely to meet you!"}},
    ]
    inner = ScriptedChatModel.from_steps([json.dumps(calls)])
    inner.stream_piece = 7
    model = LocalToolCallingChatModel(inner=inner).bind_tools([send_message, core_memory_append])

    chunks, merged, seen = merged_stream(model, "I'm Ada")
    assert len(chunks) > 5, "the text arrives in pieces, not at the end"
    assert [c["name"] for c in merged.tool_calls] == ["core_memory_append", "send_message"]
    growing = [s for s in seen if s]
    assert growing[-1] == "Hello Ada, lovely to meet you!" and len(set(growing)) >= 3


class Shouting:
    """A caller's repair (`StepRepair`): the reply in capitals, in the step and as it streams."""

    def step(self, message: AIMessage, prompt: Sequence[BaseMessage]) -> AIMessage:
        calls = [
            {**c, "args": {**c["args"], "message": str(c["args"]["message"]).upper()}}
            for c in message.tool_calls
        ]
        return message.model_copy(update={"tool_calls": calls})

    def raw(self, prompt: Sequence[BaseMessage]) -> Any:
        return Upper()


class Upper:
    """The raw JSON with everything after the reply's opening quote in capitals."""

    marker = '"message": "'

    def __init__(self) -> None:
        self.raw, self.sent = "", 0

    def add(self, piece: str) -> str:
        self.raw += piece
        at = self.raw.find(self.marker)
        cut = len(self.raw) if at < 0 else at + len(self.marker)
        view = self.raw[:cut] + self.raw[cut:].upper()
        out, self.sent = view[self.sent :], len(view)
        return out

    def end(self) -> str:
        return ""


def test_the_wrapper_returns_the_step_as_parsed_and_applies_only_a_repair_it_is_given() -> None:
    raw = json.dumps([{"name": "send_message", "arguments": {"message": "i love teal."}}])
    inner = ScriptedChatModel.from_steps([raw, raw, raw])
    inner.stream_piece = 6
    model = LocalToolCallingChatModel(inner=inner, reply_tool="send_message").bind_tools(
        [send_message]
    )
    said = [HumanMessage("I love teal.")]
    assert model.invoke(said).tool_calls[0]["args"]["message"] == "i love teal."

    assert model.invoke(said, repair=Shouting()).tool_calls[0]["args"]["message"] == "I LOVE TEAL."
    _, merged, seen = merged_stream(model.bind(repair=Shouting()), said)
    assert merged.tool_calls[0]["args"]["message"] == "I LOVE TEAL."
    assert [s for s in seen if s][-1] == "I LOVE TEAL.", "the raw stream is repaired as it goes"
    assert all("repair" not in kwargs for kwargs in inner.call_kwargs), "never sent on"
