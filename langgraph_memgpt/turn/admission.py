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
another agent's run on a thread is refused (`ownership.refuse_another_agent`). Nothing of a
refused input is kept. The nodes keep their own checks (a subgraph run, a resume).

Reading the checkpoint for its owner would read the whole queue a second time each run
(LangGraph reads it next). So the owner a check read is kept with the id of the thread's
newest checkpoint as the run that was admitted left it (`Admission.settle`, called at the
run's end with the thread still held); the next run of the thread asks the saver only for
that id (`threads.latest_checkpoint_id`, one indexed lookup) and reads the checkpoint
again only when anything wrote to the thread since: another process's run, an
``update_state``, a thread deleted and started again by another agent.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import is_dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from pydantic import BaseModel

from langgraph_memgpt.context import Context
from langgraph_memgpt.events import EventError, check_events, message_id_refusal
from langgraph_memgpt.ownership import refuse_another_agent
from langgraph_memgpt.turn.threads import RunStart, alatest_checkpoint_id, latest_checkpoint_id
from langgraph_memgpt.turn.write_ahead import MemorySource

Settle = Callable[[], None]
"""Called at the end of an admitted run that ended well, with its thread still held."""
ASettle = Callable[[], Awaitable[None]]


class Admission:
    """The input checks of one compiled graph's runs (sync and async)."""

    def __init__(self, deps: MemorySource) -> None:
        self.deps = deps
        # saver -> (thread, namespace) -> (newest checkpoint id, owner) as last known.
        self._owners: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], tuple[str, str]]]
        self._owners = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()

    def check(self, inputs: Any, run: RunStart) -> Settle | None:
        """Refuse ``inputs`` (raising) before the run keeps anything of it.

        Returns what to call when the run has ended well (`settle`), if anything.
        """
        saver = self._saver(inputs, run)
        if saver is None:
            return None
        key = _thread_key(run)
        owner = (
            None if _addressed(run) else self._known(saver, key, latest_checkpoint_id(saver, *key))
        )
        if owner is None:
            owner = _owner(saver.get_tuple(_thread_config(run)))
        self._refuse_another(owner, run)
        if not owner:
            return None
        return lambda: self.settle(saver, key, owner, latest_checkpoint_id(saver, *key))

    async def acheck(self, inputs: Any, run: RunStart) -> ASettle | None:
        """`check` with the checkpointer's async API."""
        saver = self._saver(inputs, run)
        if saver is None:
            return None
        key = _thread_key(run)
        latest = None if _addressed(run) else await alatest_checkpoint_id(saver, *key)
        owner = self._known(saver, key, latest)
        if owner is None:
            owner = _owner(await saver.aget_tuple(_thread_config(run)))
        self._refuse_another(owner, run)
        if not owner:
            return None

        async def asettle() -> None:
            self.settle(saver, key, owner, await alatest_checkpoint_id(saver, *key))

        return asettle

    def settle(self, saver: Any, key: tuple[str, str], owner: str, latest: str | None) -> None:
        """Keep ``owner`` for the thread as long as its newest checkpoint is ``latest``."""
        if not latest:
            return
        try:
            with self._guard:
                self._owners.setdefault(saver, {})[key] = (latest, owner)
        except TypeError:  # a saver that cannot be weakly referenced: read it each time
            return

    def _known(self, saver: Any, key: tuple[str, str], latest: str | None) -> str | None:
        """The owner kept for the thread, if nothing wrote to it since (None: read it)."""
        if not latest:
            return None
        try:
            with self._guard:
                kept = self._owners.get(saver, {}).get(key)
        except TypeError:
            return None
        return kept[1] if kept is not None and kept[0] == latest else None

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

    def _refuse_another(self, owner: str, run: RunStart) -> None:
        if not owner:
            return
        try:
            ctx = Context.for_run(_coerced(run.context_schema, run.context), run.config)
        except Exception:  # noqa: BLE001 - a bad context is the first node's error to give
            return
        refuse_another_agent(owner, self.deps.agent_of(ctx))


def _owner(saved: CheckpointTuple | None) -> str:
    owner = saved.checkpoint["channel_values"].get("agent_id") if saved else None
    return str(owner) if owner else ""


def _addressed(run: RunStart) -> bool:
    """A run from a checkpoint it names (time travel): its owner is read from that one."""
    return bool((run.config.get("configurable") or {}).get("checkpoint_id"))


def _thread_key(run: RunStart) -> tuple[str, str]:
    configurable = run.config.get("configurable") or {}
    return str(run.thread_id), str(configurable.get("checkpoint_ns") or "")


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
