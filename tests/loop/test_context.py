"""Context values are checked once, when a Context is made, with messages a user can act on.

Numbers sent as text (Studio and JSON clients do) are accepted when unambiguous; anything
else that would misbehave later (None, a window of "lots", a repeat breaker of 1 that ends
every turn, a zero block limit, an unknown field) is refused naming field, value and range.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.context import ContextError
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.serve.settings import (
    CLIENT_FIELDS,
    SERVER_FIELDS,
    ServerSettings,
    check_client_context,
    client_context_schema,
)
from langgraph_memgpt.stores.sqlite import close_all
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes


def test_numbers_as_text_are_accepted_when_unambiguous() -> None:
    ctx = Context.from_any(
        {
            "context_window": "4096",
            "warning_fraction": "0.7",
            "max_steps": " 12 ",
            "flush_fraction": 1,  # an int where a fraction goes
            "search_page_size": 7.0,  # a whole float where a whole number goes
        }
    )
    assert ctx.context_window == 4096 and isinstance(ctx.context_window, int)
    assert ctx.warning_fraction == 0.7 and isinstance(ctx.warning_fraction, float)
    assert ctx.max_steps == 12
    assert ctx.flush_fraction == 1.0 and isinstance(ctx.flush_fraction, float)
    assert ctx.search_page_size == 7 and isinstance(ctx.search_page_size, int)


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"context_window": "4096.5"}, "context_window='4096.5' is not allowed: use a whole"),
        ({"context_window": "lots"}, "context_window='lots'"),
        ({"context_window": 100}, "from 1024 to 10000000"),
        ({"context_window": True}, "context_window=True"),
        ({"context_window": None}, "context_window=None"),
        ({"warning_fraction": "70%"}, "warning_fraction='70%'"),
        ({"warning_fraction": 0}, "a number above 0 to 1"),
        ({"warning_fraction": float("nan")}, "warning_fraction=nan"),
        ({"flush_fraction": 1.5}, "flush_fraction=1.5"),
        ({"evict_fraction": 0.9, "flush_fraction": 0.8}, "must be below flush_fraction=0.8"),
        ({"model": None}, "model=None is not allowed: use a non-empty text"),
        ({"agent_id": None}, "agent_id=None"),
        ({"agent_id": "  "}, "agent_id='  '"),
        ({"agent_id": 7}, "agent_id=7"),
        (
            {"max_repeated_calls": 1},
            "max_repeated_calls=1 is not allowed: use a whole number from 2",
        ),
        ({"max_repeated_calls": 0}, "max_repeated_calls=0"),
        ({"max_steps": 0}, "max_steps=0"),
        ({"core_block_limit": 0}, "core_block_limit=0 is not allowed: use a whole number from 50"),
        ({"search_page_size": 2**61}, "search_page_size=2305843009213693952"),
        ({"result_char_limit": -1}, "result_char_limit=-1"),
        ({"max_context_retries": -1}, "max_context_retries=-1"),
        ({"embedding_model": ""}, "embedding_model=''"),
        ({"data_dir": ""}, "data_dir=''"),
        ({"persona": None}, "persona=None is not allowed: use a text"),
    ],
)
def test_a_bad_value_is_refused_naming_field_value_and_range(
    values: dict[str, Any], says: str
) -> None:
    with pytest.raises(ContextError) as refused:
        Context(**values)
    assert says in str(refused.value)
    # The same through from_any (what the nodes call on a run's context).
    with pytest.raises(ContextError, match="Invalid context"):
        Context.from_any(values)


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ContextError) as refused:
        Context(context_window="x", max_steps=0, core_block_limit=0)
    assert len(refused.value.problems) == 3


def test_an_unknown_field_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(ContextError) as refused:
        Context.from_any({"agentid": "ada"})
    message = str(refused.value)
    assert "unknown field(s) ['agentid']" in message and "'agent_id'" in message
    with pytest.raises(ContextError, match="mapping"):
        Context.from_any(["agent_id"])  # type: ignore[arg-type]


def test_the_fields_split_into_the_servers_and_a_clients() -> None:
    names = set(Context.model_fields)
    assert set(SERVER_FIELDS) | set(CLIENT_FIELDS) == names
    assert not set(SERVER_FIELDS) & set(CLIENT_FIELDS)
    assert set(SERVER_FIELDS) == {"data_dir", "model", "embedding_model"}


def test_a_client_context_carries_the_servers_settings_and_is_checked(tmp_path: Path) -> None:
    settings = ServerSettings(data_dir=str(tmp_path), model="scripted:/srv/s.json")
    schema = client_context_schema(settings)
    assert {f.name for f in fields(schema)} == set(CLIENT_FIELDS)  # type: ignore[arg-type]
    client = schema(agent_id="ada", context_window="2048")  # type: ignore[call-arg]
    ctx = Context.from_any(client)
    assert (ctx.agent_id, ctx.context_window) == ("ada", 2048)
    assert (ctx.data_dir, ctx.model, ctx.embedding_model) == (
        str(tmp_path),
        "scripted:/srv/s.json",
        "minilm",
    )
    with pytest.raises(TypeError):
        schema(data_dir="/elsewhere")  # type: ignore[call-arg]
    with pytest.raises(ContextError, match="max_repeated_calls=1"):
        schema(max_repeated_calls=1)  # type: ignore[call-arg]


@pytest.mark.parametrize("field", ["data_dir", "model", "embedding_model", "database_url"])
def test_a_client_setting_a_server_field_is_told_what_it_may_set(field: str) -> None:
    with pytest.raises(ContextError) as refused:
        check_client_context({"agent_id": "ada", field: "x"}, ServerSettings())
    message = str(refused.value)
    assert f"['{field}'] are set by the server" in message
    assert str(list(CLIENT_FIELDS)) in message


def test_a_client_context_allows_langgraphs_own_keys_and_nothing_else_unknown() -> None:
    check_client_context(None, ServerSettings())
    check_client_context({"agent_id": "ada", "thread_id": "t", "langgraph_x": 1}, ServerSettings())
    with pytest.raises(ContextError, match=r"unknown field\(s\) \['agentid'\]"):
        check_client_context({"agentid": "ada"}, ServerSettings())
    with pytest.raises(ContextError, match="context_window='big'"):
        check_client_context({"context_window": "big"}, ServerSettings())


def test_server_settings_come_from_the_environment() -> None:
    settings = ServerSettings.from_env(
        {"MEMGPT_DATA_DIR": "/srv/m", "MEMGPT_MODEL": "local", "MEMGPT_EMBEDDING_MODEL": "none"}
    )
    assert settings == ServerSettings(data_dir="/srv/m", model="local", embedding_model="none")
    assert ServerSettings.from_env({}) == ServerSettings()
    with pytest.raises(ContextError, match="MEMGPT_MODEL \\(model\\)='gpt'"):
        ServerSettings.from_env({"MEMGPT_MODEL": "gpt"})
    with pytest.raises(ContextError, match="MEMGPT_MODEL \\(model\\)='scripted:'"):
        ServerSettings.from_env({"MEMGPT_MODEL": "scripted:"})
    with pytest.raises(ContextError, match="MEMGPT_EMBEDDING_MODEL \\(embedding_model\\)='bert'"):
        ServerSettings.from_env({"MEMGPT_EMBEDDING_MODEL": "bert"})
    on_postgres = ServerSettings.from_env({"MEMGPT_DATABASE_URL": " postgresql://db/memgpt "})
    assert on_postgres.database_url == "postgresql://db/memgpt"
    with pytest.raises(ContextError, match=r"MEMGPT_DATABASE_URL \(database_url\)='...db/m'"):
        ServerSettings.from_env({"MEMGPT_DATABASE_URL": "mysql://root:pw@db/m"})


def test_a_library_caller_still_sets_everything_and_a_bad_dict_fails_the_run(
    tmp_path: Path,
) -> None:
    model = ScriptedChatModel.from_steps(
        [{"content": "", "tool_calls": [{"name": "send_message", "args": {"message": "hi"}}]}]
    )
    graph = build_graph(model=model).compile()
    try:
        out = graph.invoke(
            {"messages": [HumanMessage("hello")]},
            context={
                "data_dir": str(tmp_path / "mine"),
                "embedding_model": "none",
                "context_window": "4096",
            },
        )
        assert out["messages"][-1].content == "hi"
        assert (tmp_path / "mine" / "memory.sqlite").is_file()
        with pytest.raises(ContextError, match="max_repeated_calls=1"):
            graph.invoke(
                {"messages": [HumanMessage("hello")]},
                context={"data_dir": str(tmp_path / "mine"), "max_repeated_calls": 1},
            )
    finally:
        close_all()
        forget_loaded_indexes()


def test_an_unknown_key_in_process_is_a_context_error_naming_the_fields(tmp_path: Path) -> None:
    with pytest.raises(ContextError) as refused:
        Context(agentid="ada")  # type: ignore[call-arg]
    assert "unknown field(s) ['agentid']" in str(refused.value)
    assert str(sorted(Context.model_fields)) in str(refused.value)
    model = ScriptedChatModel.from_steps(["unused"])
    graph = build_graph(model=model).compile()
    with pytest.raises(ContextError, match=r"unknown field\(s\) \['agentid'\].*'agent_id'"):
        graph.invoke(
            {"messages": [HumanMessage("hello")]},
            context={"agentid": "ada", "data_dir": str(tmp_path)},
        )
    assert model.calls == []


def test_each_setting_is_declared_once_and_the_client_form_reads_that_declaration() -> None:
    schema = client_context_schema(ServerSettings())
    for f in fields(schema):  # type: ignore[arg-type]
        declared = Context.model_fields[f.name]
        assert f.metadata["description"] == declared.description, f.name
        assert f.default == declared.default, f.name
    for name, declared in Context.model_fields.items():
        assert declared.description, name
    # The range a refusal names is the declared one.
    with pytest.raises(ContextError, match="use a whole number from 1 to 100"):
        Context(search_page_size=101)
