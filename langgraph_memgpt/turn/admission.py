"""A run's input is checked before LangGraph keeps any of it.

LangGraph writes a run's input into the thread's checkpoint before any node runs: a check
made in a node (or in a channel's reducer, whose refused input LangGraph keeps as a
pending write and applies again at every read) comes after the input is kept. A refused
input then stays in the thread: ``get_state`` raises until the next good run, or the next
run of the thread's own agent takes the refused agent's message for its own and records it.

So the compiled graph checks each run's input as the run starts (`Admission`, called by the
thread guard of `langgraph_memgpt.turn.threads` with the thread held, before LangGraph reads the
checkpoint): malformed ``events`` are refused naming the field (`events.check_events`), a
message whose id is in the events' namespace too (`events.message_id_refusal`), and
another agent's run on a thread is refused (`deps.refuse_another_agent`). Nothing of a
refused input is kept. The nodes keep their own checks (a subgraph run, a resume).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import is_dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from pydantic import BaseModel

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps, refuse_another_agent
from langgraph_memgpt.events import EventError, check_events, message_id_refusal
from langgraph_memgpt.turn.threads import RunStart


class Admission:
    """The input checks of one compiled graph's runs (sync and async)."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def check(self, inputs: Any, run: RunStart) -> None:
        """Refuse ``inputs`` (raising) before the run keeps anything of it."""
        saver = self._saver(inputs, run)
        if saver is not None:
            self._owned(saver.get_tuple(_thread_config(run)), run)

    async def acheck(self, inputs: Any, run: RunStart) -> None:
        """`check` with the checkpointer's async API."""
        saver = self._saver(inputs, run)
        if saver is not None:
            self._owned(await saver.aget_tuple(_thread_config(run)), run)

    def _saver(self, inputs: Any, run: RunStart) -> BaseCheckpointSaver[Any] | None:
        """Check the events; the checkpointer to read the thread's owner from, if any."""
        if not isinstance(inputs, Mapping):  # a resume (Command), or no input
            return None
        if inputs.get("events") is not None:
            check_events(inputs["events"])
        if (why := message_id_refusal(inputs.get("messages") or [])) is not None:
            raise EventError(why)
        saver = run.checkpointer
        if run.nested or run.thread_id is None or not isinstance(saver, BaseCheckpointSaver):
            return None
        return saver

    def _owned(self, saved: CheckpointTuple | None, run: RunStart) -> None:
        owner = saved.checkpoint["channel_values"].get("agent_id") if saved else None
        if not owner:
            return
        try:
            ctx = Context.for_run(_coerced(run.context_schema, run.context), run.config)
        except Exception:  # noqa: BLE001 - a bad context is the first node's error to give
            return
        refuse_another_agent(str(owner), self.deps.agent_of(ctx))


def _thread_config(run: RunStart) -> Any:
    configurable = run.config.get("configurable") or {}
    keys = ("thread_id", "checkpoint_ns", "checkpoint_id")
    return {"configurable": {k: configurable[k] for k in keys if k in configurable}}


def _coerced(schema: Any, context: Any) -> Any:
    """``context`` as LangGraph gives it to the nodes: a dict made into the schema."""
    if isinstance(context, dict) and isinstance(schema, type):
        if issubclass(schema, BaseModel) or is_dataclass(schema):
            return schema(**context)
    return context
