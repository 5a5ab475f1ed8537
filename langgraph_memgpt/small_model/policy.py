"""The small-model policies: the wrappers a small model's steps run through.

`small_model_policies` gives, for a model's traits, the stack `langgraph_memgpt.turn.policies`
runs around each of its steps (outermost first):

- `NarrowSteps` (``narrows_steps``): a question about the user may search or reply but not
  edit (a small model asked about the user saves a copy of what it already holds while
  answering); a turn opened by events alone may only correct core memory or file the event
  (`EVENT_TOOLS`). Only the grammar narrows, never the prompt, so the prefix cache holds.
- `RepairSteps` (``repairs_steps``): the model repairs the step it parsed with
  `small_model.repairs.StepRepairs` (voice, core gate, auto-save, event values).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from langgraph_memgpt.small_model.auto_search import asks_memory_question
from langgraph_memgpt.small_model.repairs import StepRepairs
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.tools.run import MEMORY_TOOLS
from langgraph_memgpt.turn.main_context import awaits_reply
from langgraph_memgpt.turn.policies import ModelCall, ModelPolicy, T

EVENT_TOOLS = ("core_memory_replace", "archival_memory_insert")
"""What a small model may call in a turn only events opened: correct the line of core memory
the event changed, or keep the event in archival. Offered appends too, it wrote a file's new
content ("groceries: eggs, rice, lemons") into ``human`` as a fact about the user."""


def non_editing(names: Sequence[str]) -> list[str]:
    """The tools of ``names`` that do not edit memory (searches, the reply, user tools)."""
    return [n for n in names if n not in MEMORY_TOOLS or not MEMORY_TOOLS[n].edits]


def for_events(names: Sequence[str]) -> list[str]:
    """The tools of ``names`` a small model may call answering events (`EVENT_TOOLS`)."""
    return [n for n in names if n in EVENT_TOOLS]


class NarrowSteps:
    """Narrow the tools a small model may call in a step (see the module)."""

    def narrowed(self, call: ModelCall) -> ModelCall:
        """``call`` with ``step_tools`` when its step may call fewer tools than are bound."""
        if not awaits_reply(call.queue):
            # Events alone, nobody waiting: a small model answers the host with a chat
            # reply (held back, and again) instead of correcting what the event changed.
            return call.with_options(step_tools=for_events(call.tools))
        if asks_memory_question(call.queue):
            # A small model asked about the user tends to save something while answering
            # (a copy of what it already holds): this step may search or reply, not edit.
            return call.with_options(step_tools=non_editing(call.tools))
        return call

    def wrap_model_call(self, call: ModelCall, handler: Callable[[ModelCall], T]) -> T:
        """The step with its tools narrowed."""
        return handler(self.narrowed(call))

    async def awrap_model_call(
        self, call: ModelCall, handler: Callable[[ModelCall], Awaitable[T]]
    ) -> T:
        """`wrap_model_call` for async runs."""
        return await handler(self.narrowed(call))


class RepairSteps:
    """Have the model repair the step it parsed (`small_model.repairs.StepRepairs`)."""

    def __init__(self, repairs: StepRepairs) -> None:
        self.repairs = repairs

    def wrap_model_call(self, call: ModelCall, handler: Callable[[ModelCall], T]) -> T:
        """The step, repaired by the model as it parses it (and as it streams it)."""
        return handler(call.with_options(repair=self.repairs))

    async def awrap_model_call(
        self, call: ModelCall, handler: Callable[[ModelCall], Awaitable[T]]
    ) -> T:
        """`wrap_model_call` for async runs."""
        return await handler(call.with_options(repair=self.repairs))


def small_model_policies(traits: ModelTraits) -> tuple[ModelPolicy, ...]:
    """The small-model policies ``traits`` ask for, outermost first."""
    stack: list[ModelPolicy] = []
    if traits.narrows_steps:
        stack.append(NarrowSteps())
    if traits.repairs_steps and traits.reply_tool is not None:
        stack.append(RepairSteps(StepRepairs(traits.reply_tool, traits.companions)))
    return tuple(stack)
