"""The small model's help lives in one package, and a hosted model's turn never runs it.

- `llm/` imports nothing above it (the chat models know nothing of the agent: the repairs
  and the tool list are given to them);
- no module outside `small_model/` (and `llm/`, where the embedded model is defined) names
  the embedded model's class or probes what a model declares about itself: they ask the
  traits (`small_model.traits.ModelTraits`), read in one place;
- a hosted-style model's turn (graph and ``create_agent`` middleware) never enters the
  package beyond its traits, while a small model's turn does, through the policy stack,
  in the same order in both faces.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.deps import policies_for
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel
from langgraph_memgpt.small_model.policy import NarrowSteps, RepairSteps
from langgraph_memgpt.small_model.traits import HOSTED, MODEL_ATTRIBUTES, ModelTraits
from langgraph_memgpt.turn.policies import ModelCall, call_model

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "langgraph_memgpt"
SMALL_MODEL = PACKAGE / "small_model"
LLM = PACKAGE / "llm"


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports, at the top or inside a function, absolute."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.append(f"{base}.{node.module}" if node.module else base)
            else:
                found.append(str(node.module))
    return found


def _package_imports(path: Path) -> set[str]:
    return {name for name in _imports(path) if name.split(".")[0] == "langgraph_memgpt"}


def _leaves() -> set[str]:
    """Modules of the package that import nothing of it (below everything, ``osutil``)."""
    return {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in PACKAGE.rglob("*.py")
        if path.stem != "__init__" and not _package_imports(path)
    }


def test_llm_imports_nothing_above_it() -> None:
    modules = sorted(LLM.glob("*.py"))
    assert len(modules) > 5
    leaves = _leaves()
    assert "langgraph_memgpt.osutil" in leaves and "langgraph_memgpt.tools.run" not in leaves
    above = {
        f"{path.name}: {name}"
        for path in modules
        for name in _package_imports(path)
        if not name.startswith("langgraph_memgpt.llm.")
        and name not in {"langgraph_memgpt.llm", *leaves}
    }
    assert not above, f"llm/ imports modules above it: {sorted(above)}"


def _outside_the_small_model_package() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if SMALL_MODEL not in path.parents and LLM not in path.parents:
            yield path


def test_no_module_outside_the_small_model_package_branches_on_the_small_model() -> None:
    """Not the embedded model's class, nor a probe of an attribute a model declares.

    (A plain ``model.compact_tools`` on a ``BaseChatModel`` is refused by ``mypy --strict``;
    a probe has to be ``getattr`` / ``hasattr`` with the name.)
    """
    found = []
    for path in _outside_the_small_model_package():
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(PACKAGE)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "LocalToolCallingChatModel":
                found.append(f"{where}:{node.lineno} names LocalToolCallingChatModel")
            if isinstance(node, ast.alias) and node.name == "LocalToolCallingChatModel":
                found.append(f"{where} imports LocalToolCallingChatModel")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "hasattr"}
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in MODEL_ATTRIBUTES
            ):
                found.append(f"{where}:{node.lineno} probes {node.args[1].value!r}")
    assert len(list(_outside_the_small_model_package())) > 50
    assert not found, found


def test_a_hosted_model_declares_nothing_and_gets_no_policy() -> None:
    hosted = ScriptedChatModel.from_steps(["hi"])
    assert ModelTraits.of(hosted) == HOSTED
    assert ModelTraits.of(hosted.bind_tools([])) == HOSTED
    assert not HOSTED.small and policies_for(HOSTED) == ()
    assert HOSTED.summary_sampling == {} and not HOSTED.answers_to_schema
    assert not HOSTED.searches_first(Context(auto_search="auto"))
    assert HOSTED.searches_first(Context(auto_search="on"))  # asked for: any model

    small = ModelTraits.of(
        LocalToolCallingChatModel(
            inner=hosted, reply_tool="send_message", companions=("core_memory_append",)
        )
    )
    assert small.compact_schemas and small.narrows_steps and small.repairs_steps
    assert small.reply_last and small.llama_cpp and small.summary_sampling
    assert [type(p) for p in policies_for(small)] == [NarrowSteps, RepairSteps]


# -- a turn, watched: which functions of the package run ---------------------------------

ENTERED: list[str] = []


def _package_modules() -> list[ModuleType]:
    """Every module of the package but its traits (which every model's turn reads)."""
    names = sorted(
        f"langgraph_memgpt.small_model.{path.stem}"
        for path in SMALL_MODEL.glob("*.py")
        if path.stem not in {"__init__", "traits"}
    )
    return [importlib.import_module(name) for name in names]


def _functions(module: ModuleType) -> Iterator[tuple[str, Any]]:
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value):
            yield f"{module.__name__}.{name}", value
        elif inspect.isclass(value):
            for attr, member in vars(value).items():
                if inspect.isfunction(member):
                    yield f"{module.__name__}.{name}.{attr}", member


@contextmanager
def package_entry_points_raise() -> Iterator[list[str]]:
    """Every function of the package (traits aside) records its call and raises."""
    here = __name__
    saved: list[tuple[Any, Any]] = []
    ENTERED.clear()
    for module in _package_modules():
        for qualname, function in _functions(module):
            if function.__code__.co_freevars:
                continue
            source = (
                "def entered(*args, **kwargs):\n"
                "    import sys\n"
                f"    sys.modules[{here!r}].ENTERED.append({qualname!r})\n"
                f"    raise AssertionError('entered ' + {qualname!r})\n"
            )
            scope: dict[str, Any] = {}
            exec(source, scope)  # noqa: S102 - a test's stand-in, written above
            saved.append((function, function.__code__))
            function.__code__ = scope["entered"].__code__
    assert len(saved) > 30, "the package's functions were found"
    try:
        yield ENTERED
    finally:
        for function, code in saved:
            function.__code__ = code


def _reply(text: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}


def _graph_turns(model: Any, tmp_path: Path) -> list[dict[str, Any]]:
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")
    config = {"configurable": {"thread_id": "t"}}
    outs = []
    for said in ("Hi, I'm Ada. I love the colour teal.", "What is my favourite colour?"):
        outs.append(graph.invoke({"messages": [HumanMessage(said)]}, config, context=ctx))
    event = {"source": "watcher", "text": "settings.toml changed: theme = dark"}
    outs.append(graph.invoke({"events": [event]}, config, context=ctx))
    return outs


def test_a_hosted_models_turns_never_enter_the_small_model_package(tmp_path: Path) -> None:
    model = ScriptedChatModel.from_steps(
        [_reply("Hi Ada! I love the colour teal too."), _reply("Teal.")] + [_reply("Noted.")] * 2
    )
    with package_entry_points_raise() as entered:
        outs = _graph_turns(model, tmp_path)
    assert outs[1]["messages"][-1].content == "Teal."
    assert entered == []
    assert all(
        "step_tools" not in kwargs and "repair" not in kwargs for kwargs in model.call_kwargs
    )


def test_a_small_models_turn_does_enter_it(tmp_path: Path) -> None:
    """The watch works: the embedded model's step runs the package's policies."""
    step = json.dumps([{"name": "send_message", "arguments": {"message": "Hi Ada!"}}])
    model = LocalToolCallingChatModel(
        inner=ScriptedChatModel.from_steps([step]), reply_tool="send_message"
    )
    with package_entry_points_raise() as entered, pytest.raises(AssertionError):
        _graph_turns(model, tmp_path)
    assert entered


def test_a_hosted_models_middleware_turn_never_enters_the_small_model_package(
    tmp_path: Path,
) -> None:
    create_agent = pytest.importorskip("langchain.agents").create_agent
    from langgraph_memgpt.compose.middleware import MemGPTMiddleware

    model = ScriptedChatModel.from_steps(["Hi Ada!", "Teal, I think."])
    agent = create_agent(
        model,
        [],
        middleware=[
            MemGPTMiddleware("ada", context=Context(data_dir=str(tmp_path), embedding_model="none"))
        ],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}
    with package_entry_points_raise() as entered:
        for said in ("Hi, I'm Ada. I love the colour teal.", "What is my favourite colour?"):
            out = agent.invoke({"messages": [HumanMessage(said)]}, config)
    assert out["messages"][-1].content == "Teal, I think."
    assert entered == []


# -- one stack, first = outermost, in both faces -----------------------------------------


class Recording:
    """A policy that records when it is entered and left, and adds an option."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def wrap_model_call(self, call: ModelCall, handler: Callable[[ModelCall], Any]) -> Any:
        self.log.append(f"enter {self.name}")
        out = handler(call.with_options(**{self.name: len(self.log)}))
        self.log.append(f"leave {self.name}")
        return out

    async def awrap_model_call(self, call: ModelCall, handler: Any) -> Any:
        return self.wrap_model_call(call, handler)


def test_the_stack_runs_first_policy_outermost() -> None:
    log: list[str] = []
    stack = (Recording("outer", log), Recording("inner", log))
    call = ModelCall([HumanMessage("hi")], ("send_message",))

    def model(step: ModelCall) -> AIMessage:
        log.append(f"model {dict(step.options)}")
        return AIMessage("done")

    assert call_model(stack, call, model).content == "done"
    assert log == [
        "enter outer",
        "enter inner",
        "model {'outer': 1, 'inner': 2}",
        "leave inner",
        "leave outer",
    ]


def _schema_names(inner: ScriptedChatModel, call: int) -> set[str]:
    """The tool names the embedded model's grammar let it call in its ``call``-th call."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            name = node.get("properties", {}).get("name", {})
            if isinstance(name, dict) and "const" in name:
                names.add(name["const"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(inner.call_kwargs[call]["extra_body"]["response_format"])
    return names


def test_the_middleware_runs_the_small_models_policies_as_the_graph_does(
    tmp_path: Path,
) -> None:
    """A question about the user: the step may search or reply, not edit (both faces)."""
    create_agent = pytest.importorskip("langchain.agents").create_agent
    from langgraph_memgpt.compose.middleware import MemGPTMiddleware

    answer = json.dumps([{"name": "conversation_search", "arguments": {"query": "colour"}}])
    inner = ScriptedChatModel.from_steps([answer, '"Teal."'])
    model = LocalToolCallingChatModel(
        inner=inner,
        reply_tool="send_message",
        companions=("core_memory_append",),
        allow_plain_reply=True,
    )
    memgpt = MemGPTMiddleware(
        "ada", context=Context(data_dir=str(tmp_path), embedding_model="none")
    )
    agent = create_agent(model, [], middleware=[memgpt], checkpointer=InMemorySaver())
    agent.invoke(
        {"messages": [HumanMessage("What is my favourite colour?")]},
        {"configurable": {"thread_id": "t"}},
    )
    first = _schema_names(inner, 0)
    assert "conversation_search" in first and "core_memory_append" not in first
    assert "repair" not in inner.call_kwargs[0], "the model applied it, never sent it on"


def test_the_memory_page_reads_the_served_models_traits_without_starting_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gauge counts the schemas the served model binds: compact for the embedded one."""
    from langgraph_memgpt.serve.settings import ServerSettings
    from langgraph_memgpt.serve.web.app import Agents

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert Agents(ServerSettings(model="local")).compact_tools()
    assert Agents(ServerSettings(model="auto")).compact_tools()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert not Agents(ServerSettings(model="auto")).compact_tools()
    assert not Agents(ServerSettings(model="openai:gpt-4o-mini")).compact_tools()


def test_async_runs_go_through_the_same_policies_in_both_faces(tmp_path: Path) -> None:
    """``ainvoke``: a question about the user may search or reply, not edit, graph and agent."""
    import asyncio

    create_agent = pytest.importorskip("langchain.agents").create_agent
    from langgraph_memgpt.compose.middleware import MemGPTMiddleware

    step = json.dumps([{"name": "send_message", "arguments": {"message": "Teal."}}])

    def small(*script: str) -> tuple[ScriptedChatModel, LocalToolCallingChatModel]:
        inner = ScriptedChatModel.from_steps(list(script))
        return inner, LocalToolCallingChatModel(
            inner=inner, reply_tool="send_message", companions=("core_memory_append",)
        )

    question = {"messages": [HumanMessage("What is my favourite colour?")]}
    config = {"configurable": {"thread_id": "t"}}
    ctx = Context(data_dir=str(tmp_path), agent_id="ada", embedding_model="none")

    graph_inner, graph_model = small(step)
    graph = build_graph(model=graph_model).compile(checkpointer=InMemorySaver())
    out = asyncio.run(graph.ainvoke(question, config, context=ctx))
    assert out["messages"][-1].content == "Teal."
    assert "core_memory_append" not in _schema_names(graph_inner, 0)

    agent_inner, agent_model = small('"Teal."')
    agent_model.allow_plain_reply = True
    agent = create_agent(
        agent_model,
        [],
        middleware=[MemGPTMiddleware("ada", context=ctx)],
        checkpointer=InMemorySaver(),
    )
    asyncio.run(agent.ainvoke(question, config))
    names = _schema_names(agent_inner, 0)
    assert "conversation_search" in names and "core_memory_append" not in names
