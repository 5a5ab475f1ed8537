"""What a chat model needs from the loop, read once from the model: `ModelTraits`.

A model says what it is through attributes it declares (`MODEL_ATTRIBUTES`; the embedded
model, `llm.toolcalls.LocalToolCallingChatModel`, declares them all). `ModelTraits.of` is
the one place that reads them; the rest of the package asks the traits (the tool schemas
to bind, the policies around a step, whether the loop searches first, the summarizer's
sampling), never the model's class. A hosted model declares nothing: its traits enable
none of the small-model help, and its turns never run it (`langgraph_memgpt.deps.policies_for`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from langgraph_memgpt.context import Context

MODEL_ATTRIBUTES = (
    "compact_tools",
    "accepts_step_tools",
    "accepts_step_repair",
    "reply_tool",
    "companions",
    "reply_last",
    "llama_cpp",
)
"""The attributes a model may declare about itself; only `ModelTraits.of` reads them."""

LLAMA_CPP_SUMMARY_SAMPLING: Mapping[str, Any] = MappingProxyType(
    {"frequency_penalty": 0.5, "presence_penalty": 0.3}
)
"""Extra sampling for the embedded model's summaries (plain text, never tool calls), against
its loops; ``summarize_evict.drop_repeated_sentences`` removes the loops a penalty lets
through (llama.cpp applies it to the last 64 tokens only). Hosted models get no penalty."""


@dataclass(frozen=True)
class ModelTraits:
    """What one chat model needs from the loop (all off: a hosted model, `HOSTED`)."""

    compact_schemas: bool = False
    """Bind each memory tool's compact arguments only (``tools.tool_schemas(compact=True)``).
    A model that asks for them is small: ``Context.auto_search="auto"`` searches for it."""
    narrows_steps: bool = False
    """A step may narrow the tools the model can call (``step_tools=``; grammar only, the
    prompt unchanged): a question about the user may not edit, events alone may only
    correct core memory or file the event (`small_model.policy.NarrowSteps`)."""
    repairs_steps: bool = False
    """The model takes ``repair=`` (`llm.toolcalls.StepRepair`): its steps get the voice
    repair, the core gate, auto-save and the event-value fix (`small_model.repairs`)."""
    reply_tool: str | None = None
    """The tool its steps end with (the embedded model's grammar)."""
    companions: tuple[str, ...] = ()
    """Tools that may come with the reply in one step."""
    reply_last: bool = False
    """It writes its reply as its step's last call (the stream need not hold the reply)."""
    llama_cpp: bool = False
    """Served by llama.cpp: takes a JSON schema as ``extra_body.response_format`` and
    llama.cpp's repetition penalties."""

    @classmethod
    def of(cls, model: Any) -> ModelTraits:
        """The traits ``model`` declares (a binding's are its model's); none: `HOSTED`."""
        declared = {name: getattr(model, name, None) for name in MODEL_ATTRIBUTES}
        reply_tool = declared["reply_tool"] if isinstance(declared["reply_tool"], str) else None
        return cls(
            compact_schemas=declared["compact_tools"] is True,
            narrows_steps=declared["accepts_step_tools"] is True,
            repairs_steps=declared["accepts_step_repair"] is True and reply_tool is not None,
            reply_tool=reply_tool,
            companions=tuple(declared["companions"] or ()),
            reply_last=declared["reply_last"] is True,
            llama_cpp=declared["llama_cpp"] is True,
        )

    @property
    def small(self) -> bool:
        """Whether any small-model help applies (else no policy runs for the model)."""
        return self.compact_schemas or self.narrows_steps or self.repairs_steps

    def searches_first(self, ctx: Context) -> bool:
        """Whether the loop searches before a question turn's first step (`auto_search`).

        ``Context.auto_search``: ``auto`` for a small model (one that asks for compact
        schemas), ``on`` for any, ``off`` never.
        """
        if ctx.auto_search == "auto":
            return self.compact_schemas
        return ctx.auto_search == "on"

    @property
    def summary_sampling(self) -> Mapping[str, Any]:
        """Extra sampling options of the eviction summarizer's call (none for hosted models)."""
        return LLAMA_CPP_SUMMARY_SAMPLING if self.llama_cpp else {}

    @property
    def answers_to_schema(self) -> bool:
        """Whether an answer can be held to a JSON schema (llama.cpp's grammar sampler)."""
        return self.llama_cpp


HOSTED = ModelTraits()
"""A model that declares nothing: no small-model help at all."""
