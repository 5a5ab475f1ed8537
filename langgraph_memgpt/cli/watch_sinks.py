"""Where the watcher's events go: a run on a LangGraph server, or the graph in this process.

`ServerSink` posts each batch as a run to a ``langgraph dev`` server (or a deployment) with
``langgraph_sdk``; `LocalSink` runs the graph here on the agent's data directory. Both use
the agent's own watcher thread (`watch_thread`), so events stay out of the user's
conversations while what they change in memory is the agent's.
"""

from __future__ import annotations

import logging
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from langgraph_memgpt.context import Context

log = logging.getLogger(__name__)


class Sink(Protocol):
    """Where a batch of events goes: a run of the agent."""

    def __call__(self, events: list[dict[str, str]]) -> None:
        """Deliver ``events`` as one run; raise if they did not arrive."""


def watch_thread(agent_id: str) -> str:
    """The watcher's own thread of an agent: a UUID (servers want one), the same every time.

    Its events stay out of the user's conversations; what they change in memory (core,
    archival) is the agent's, seen from every thread.
    """
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"langgraph-memgpt:watch:{agent_id}"))


@dataclass
class ServerSink:
    """Posts each batch as a run on a LangGraph server (``langgraph dev``, a deployment)."""

    url: str
    agent_id: str
    thread_id: str
    graph_id: str = "memgpt"
    api_key: str | None = None

    def __post_init__(self) -> None:
        from langgraph_sdk import get_sync_client

        self.client = get_sync_client(url=self.url, api_key=self.api_key)
        self.client.threads.create(thread_id=self.thread_id, if_exists="do_nothing")

    def __call__(self, events: list[dict[str, str]]) -> None:
        """One run with the events; waits for it (the next batch follows it)."""
        payload: Any = {"events": events}
        output = self.client.runs.wait(
            self.thread_id,
            self.graph_id,
            input=payload,
            context={"agent_id": self.agent_id},
            multitask_strategy="enqueue",
        )
        report(output)


@dataclass
class LocalSink:
    """Runs the graph in this process on the agent's memory and checkpoints (``--data-dir``)."""

    ctx: Context
    thread_id: str
    database_url: str = ""
    _stack: ExitStack = field(default_factory=ExitStack)

    def __post_init__(self) -> None:
        from langgraph_memgpt.checkpoints import open_checkpointer
        from langgraph_memgpt.graph import build_graph
        from langgraph_memgpt.stores.backends import open_backend

        data_dir = Path(self.ctx.data_dir).expanduser()
        backend = open_backend(
            data_dir,
            database_url=self.database_url,
            embedding_model=self.ctx.embedding_model,
            core_block_limit=self.ctx.core_block_limit,
        )
        self._stack.callback(backend.close)
        backend.open(self.ctx.agent_id).core.ensure_defaults(
            persona=self.ctx.persona, human=self.ctx.human, char_limit=self.ctx.core_block_limit
        )
        saver = self._stack.enter_context(open_checkpointer(data_dir, self.database_url))
        if self.database_url:
            saver.setup()
        self.graph = build_graph(memory=backend).compile(checkpointer=saver)

    def __call__(self, events: list[dict[str, str]]) -> None:
        """One run of the graph with the events."""
        config: Any = {"configurable": {"thread_id": self.thread_id}}
        payload: Any = {"events": events}
        report(self.graph.invoke(payload, config, context=self.ctx))

    def close(self) -> None:
        """Close the checkpointer and the memory."""
        self._stack.close()


def report(output: Any) -> None:
    """Log what a run did with the events (the memory edits of its ``event_outcome``)."""
    outcome = output.get("event_outcome") if isinstance(output, dict) else None
    if not isinstance(outcome, dict):
        log.info("events delivered")
        return
    edits = outcome.get("edits") or []
    log.info(
        "%d event(s) delivered; memory edits: %s",
        len(outcome.get("events") or []),
        "; ".join(f"{e.get('tool')} {e.get('args')}" for e in edits) or "none",
    )
