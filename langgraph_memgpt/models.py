"""The chat model an agent calls, from a spec: `llm.factory` given the agent's step shape.

`llm` imports nothing above it, so the shape of the embedded model's steps (its reply tool,
and the tools that may come with the reply in one step) is read here, from the memory
tools' facts (`tools.MEMORY_TOOLS`), and passed down. Every caller that resolves a model
for an agent (the graph, ``chat``, ``serve``'s warm-up, the benchmarks) comes through here.
"""

from __future__ import annotations

import functools

from langchain_core.language_models import BaseChatModel

from langgraph_memgpt.llm import factory
from langgraph_memgpt.llm.factory import StepShape


@functools.cache
def step_shape() -> StepShape:
    """The memory tools' shape: ``send_message`` replies; edits come with it in one step.

    Searches (and the caller's tools) stand alone: their results must be read first.
    """
    from langgraph_memgpt.tools.run import MEMORY_TOOLS

    reply = next(t.name for t in MEMORY_TOOLS.values() if t.replies)
    companions = tuple(t.name for t in MEMORY_TOOLS.values() if t.edits)
    return StepShape(reply_tool=reply, companions=companions)


def resolve_model(spec: str) -> BaseChatModel:
    """The chat model ``spec`` names, shaped for the agent's tools (`llm.factory.resolve_model`).

    Raises:
        ValueError: ``spec`` is none of the choices, or an OpenAI model without
            OPENAI_API_KEY / OPENAI_BASE_URL.
        langgraph_memgpt.llm.local_server.LocalModelError: the local model cannot run.
    """
    return factory.resolve_model(spec, step_shape())


def local_model(*, show_progress: bool = True) -> BaseChatModel:
    """The embedded model, shaped for the agent's tools (`llm.factory.local_model`)."""
    return factory.local_model(show_progress=show_progress, shape=step_shape())
