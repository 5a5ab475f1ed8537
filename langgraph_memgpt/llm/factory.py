"""Turn a model spec from ``Context.model`` into a chat model, once per process.

Specs: ``auto`` (a configured OpenAI-compatible endpoint if there is one, else the
embedded model), ``openai:<name>``, ``local``, ``scripted:<path.json>``. Resolved models
are cached per spec, because every think step asks for its model and the local one owns a
server process, and a ChatOpenAI holds HTTP connection pools worth reusing.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_core.language_models import BaseChatModel

if TYPE_CHECKING:
    from langgraph_memgpt.llm.local_server import LocalServer

OPENAI_MODEL_ENV = "MEMGPT_OPENAI_MODEL"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
LOCAL_MAX_TOKENS = 512
"""Step cap for the local model: a runaway string inside the JSON grammar stops here.

The longest whole step in 1,920 recorded turns (`benchmarks/results/local_turns-*`) wrote
731 characters of call arguments, under 300 tokens. A runaway writes to the cap, and at
1024 one took 60-130 s before the loop could ask again (an edit turn of 536 s, four calls,
on the eighth scenario set). The summarizer sets its own budget."""
LOCAL_TEMPERATURE = 0.2
"""Low but not greedy: greedy decoding makes the small model loop on identical calls."""
SPEC_CHOICES = ("auto", "openai:<name>", "local", "scripted:<path.json>")

_cache: dict[tuple[str, StepShape], BaseChatModel] = {}
_lock = threading.Lock()


def hosted_endpoint_configured() -> bool:
    """Whether the environment points at a hosted or self-run OpenAI-compatible endpoint."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


@dataclass(frozen=True)
class StepShape:
    """How the agent's steps are shaped around its tools (the embedded model's grammar).

    Given by the caller, who knows the agent's tools (`langgraph_memgpt.models`): this
    package imports nothing above it.
    """

    reply_tool: str | None = None
    """The tool that replies: a step's last call (see `llm.call_schema`)."""
    companions: tuple[str, ...] = ()
    """Tools that may come before the reply in one step (edits); others stand alone."""


def resolve_model(spec: str, shape: StepShape = StepShape()) -> BaseChatModel:
    """Return the chat model named by ``spec`` (cached per spec for this process).

    ``shape``: how the embedded model shapes its steps (the embedded model is cached per
    spec and shape; the others ignore it).

    Raises:
        ValueError: ``spec`` is none of the choices, or an OpenAI model without
            OPENAI_API_KEY / OPENAI_BASE_URL.
        langgraph_memgpt.llm.local_server.LocalModelError: the local model cannot run.
    """
    spec = spec.strip()
    key = (spec, shape if names_embedded_model(spec) else StepShape())
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        model = _build(spec, shape)
        _cache[key] = model
        return model


def names_embedded_model(spec: str) -> bool:
    """Whether ``spec`` resolves to the embedded llama.cpp model in this environment.

    The one rule for "will a run use the embedded model": ``local``, or ``auto`` with no
    OPENAI_API_KEY / OPENAI_BASE_URL. `resolve_model` builds by it, and ``serve`` starts
    (and warms) the embedded model only when it holds for the served model.
    """
    spec = spec.strip()
    return spec == "local" or (spec == "auto" and not hosted_endpoint_configured())


def declared_by(spec: str) -> BaseChatModel | None:
    """The model ``spec`` names, unstarted: what it declares about itself, without a server.

    The embedded model's declarations (``compact_tools`` and the rest, read through
    ``small_model.traits.ModelTraits``) without starting llama.cpp; None for a model that
    declares nothing (hosted, scripted) or a spec that names none.
    """
    if names_embedded_model(spec):
        from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel

        return LocalToolCallingChatModel.model_construct()
    return None


def clear_model_cache() -> None:
    """Forget resolved models (tests that change the environment call this)."""
    with _lock:
        _cache.clear()


def _build(spec: str, shape: StepShape) -> BaseChatModel:
    if names_embedded_model(spec):
        return local_model(shape=shape)
    if spec == "auto":
        return openai_model(os.environ.get(OPENAI_MODEL_ENV) or DEFAULT_OPENAI_MODEL)
    kind, sep, arg = spec.partition(":")
    if sep and arg.strip():
        if kind == "openai":
            return openai_model(arg.strip())
        if kind == "scripted":
            from langgraph_memgpt.llm.scripted import ScriptedChatModel

            return ScriptedChatModel.from_file(arg.strip())
    raise ValueError(f"unknown model spec {spec!r}; choose one of: {', '.join(SPEC_CHOICES)}")


def require_openai_endpoint(spec: str) -> None:
    """Refuse an OpenAI model ``spec`` when the environment names no endpoint to call.

    Without OPENAI_API_KEY or OPENAI_BASE_URL the client would call api.openai.com with no
    key and fail at the first turn with "Connection error" (offline) or a 401.

    Raises:
        ValueError: naming the variables to set.
    """
    if not hosted_endpoint_configured():
        raise ValueError(
            f"model {spec!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for an "
            "OpenAI-compatible server) in the environment"
        )


def openai_model(name: str) -> BaseChatModel:
    """A ChatOpenAI for ``name``; it reads OPENAI_API_KEY / OPENAI_BASE_URL itself.

    Raises:
        ValueError: neither variable is set (`require_openai_endpoint`).
    """
    from langchain_openai import ChatOpenAI

    require_openai_endpoint(f"openai:{name}")
    if not os.environ.get("OPENAI_API_KEY"):
        # A self-hosted OPENAI_BASE_URL usually needs no key, but the client insists on one.
        return ChatOpenAI(model=name, api_key="not-needed")  # type: ignore[arg-type]
    return ChatOpenAI(model=name)


def local_model(*, show_progress: bool = True, shape: StepShape = StepShape()) -> BaseChatModel:
    """The embedded llama.cpp model behind `LocalToolCallingChatModel` (starts the server).

    ``shape``: the agent's reply tool and the tools that may come with it in one step
    (`langgraph_memgpt.models.local_model` passes the memory tools').
    """
    from langgraph_memgpt.llm.local_server import get_local_server
    from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel

    server = get_local_server(show_progress=show_progress)

    def reconnect() -> BaseChatModel:
        return _local_chat_openai(get_local_server(refresh=True, show_progress=show_progress))

    return LocalToolCallingChatModel(
        inner=_local_chat_openai(server),
        reconnect=reconnect,
        reply_tool=shape.reply_tool,
        companions=shape.companions,
    )


def _local_chat_openai(server: LocalServer) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    from langgraph_memgpt.llm.local_server import MODEL_ALIAS

    return ChatOpenAI(
        model=MODEL_ALIAS,
        base_url=server.base_url,
        api_key="local",  # type: ignore[arg-type]
        temperature=LOCAL_TEMPERATURE,
        max_tokens=LOCAL_MAX_TOKENS,  # type: ignore[call-arg]
        max_retries=1,
        stream_usage=True,
    )
