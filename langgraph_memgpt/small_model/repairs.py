"""The small model's step, repaired: what the embedded model gets wrong, put right in order.

`StepRepairs` is the `llm.toolcalls.StepRepair` the small-model policy hands the model with
each call (`small_model.policy.RepairSteps`): the model parses its step, then applies it, so
an ``invoke`` and a stream's last chunk return the same repaired step, and the raw text it
streams is voiced as the repaired reply will be (`small_model.voiced_stream`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_memgpt.small_model.auto_save import add_missing_notes
from langgraph_memgpt.small_model.core_gate import (
    drop_restated_notes,
    drop_ungrounded_notes,
)
from langgraph_memgpt.small_model.event_notes import correct_event_values
from langgraph_memgpt.small_model.voice import repair_reply, reply_voice
from langgraph_memgpt.small_model.voiced_stream import VoicedRaw


@dataclass(frozen=True)
class StepRepairs:
    """The repairs of one model's steps (its reply tool and the tools that come with it)."""

    reply_tool: str
    companions: tuple[str, ...] = ()

    def step(self, message: AIMessage, prompt: Sequence[BaseMessage]) -> AIMessage:
        """``message``, the parsed step, repaired for ``prompt`` (what the model read)."""
        # The small model says the user's facts back as its own ("I'm allergic to
        # hazelnuts"): said to the user instead (see `voice`)...
        message = repair_reply(message, prompt, self.reply_tool)
        # ...saves small talk as facts about the user (see `core_gate`)...
        message = drop_ungrounded_notes(message, prompt, self.companions)
        # ...leaves facts the user stated unsaved (see `auto_save`)...
        message = add_missing_notes(message, prompt, self.reply_tool, self.companions)
        # ...notes again, in other words, a fact the user says they told before (`core_gate`)...
        message = drop_restated_notes(message, prompt, self.companions)
        # ...and copies a changed setting's file line as the text to replace (`event_notes`).
        return correct_event_values(message, prompt)

    def raw(self, prompt: Sequence[BaseMessage]) -> VoicedRaw | None:
        """The raw stream's voice repair for ``prompt`` (None: streamed as written)."""
        voice = reply_voice(prompt)
        return VoicedRaw(voice, self.reply_tool) if voice is not None else None
