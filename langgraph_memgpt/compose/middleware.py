"""MemGPT's memory for any LangChain agent: `MemGPTMiddleware` for ``create_agent``.

``create_agent(model, tools, middleware=[MemGPTMiddleware(...)])`` runs the graph's turn,
from the same code: the hooks are thin adapters over the turn core (`langgraph_memgpt.turn.core`),
as the graph's nodes are (nothing here re-implements the loop):

- the system prompt: MemGPT's instructions, the agent's own ``system_prompt``, then core
  memory and the statistics (`main_context.current_system`, the prefix-cache layout of
  `main_context.system_message`), and the recursive summary of what was evicted;
- the memory tools (`memory_tools.make_memory_tools` over `MemoryAccess.bind`: the tool
  objects the graph's ``ToolNode`` runs, journalled so a replayed call runs once);
- write-ahead: every message goes into recall memory before its step is checkpointed
  (user messages as the turn opens, the model's in ``wrap_model_call``, tool results in
  ``wrap_tool_call``), through the graph's one writer (`write_ahead.write`);
- the turn's rules: opening it (`turn.open_turn`: stamping, cutting, a killed run's
  catch-up), the memory-pressure warning and summarize-evict (`turn.measure`,
  `nodes.summarize_evict.evict`: the evicted messages stay verbatim in recall, the new
  summary folds in the previous one and is kept in archival memory), the step cap
  (`turn.step_cap`, ``Context.max_steps``), the repeated-call breaker and heartbeats
  (`turn.close`, ``Context.max_repeated_calls``: a ``send_message`` reply with nothing to
  read ends the run with that reply), and the overflow retry (`turn.after_overflow`).

The agent whose memory it is: the ``agent_id`` given here, else the run context's
``agent_id`` (``create_agent(..., context_schema=...)``, ``invoke(..., context=...)``), else
``configurable["agent_id"]``, else the settings' (`MemoryAccess.context_for`). A thread
belongs to the agent that first ran it, as in the graph.

The hooks split as the graph's nodes do: ``before_model`` is ``open_turn``, ``close_step``
and ``check_pressure`` (open the turn; mid-turn close the step, ending the run with the
reply when the turn is over or capped; measure, warn, ask for an eviction);
``wrap_model_call`` is ``summarize_evict`` and ``think``'s prompt (it knows the model, the
agent's system prompt and every tool schema, so it measures the prompt it sends exactly and
evicts if that is over the flush limit). The state keys are the graph's
(`langgraph_memgpt.state.State`) and private to the agent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, NotRequired, cast

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
    )
    from langchain.agents.middleware.types import (
        ExtendedModelResponse,
        PrivateStateAttr,
        hook_config,
    )
except ImportError as exc:  # pragma: no cover - the compose extra is missing
    raise ImportError(
        "MemGPTMiddleware needs LangChain 1.x: pip install 'langgraph-memgpt[compose]'"
    ) from exc
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, RemoveMessage, ToolMessage
from langchain_core.messages import convert_to_messages as to_messages
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from langgraph_memgpt.compose.tools import MemoryAccess
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps, policies_for
from langgraph_memgpt.llm.errors import is_context_overflow
from langgraph_memgpt.nodes.summarize_evict import evict
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.tools.memory_tools import (
    DEFAULT_TOOLS,
    CallOrder,
    thread_of_config,
)
from langgraph_memgpt.turn import core as turn
from langgraph_memgpt.turn.main_context import REPLY_FLAG, valid_message
from langgraph_memgpt.turn.policies import ModelPolicy, aagent_model_call, agent_model_call
from langgraph_memgpt.turn.write_ahead import RECORD_FIRST, write

PLAIN_REPLIES = (
    "In this agent you answer the user in plain text: there is no `send_message` tool, "
    "and the text of your last message (with no tool call) is your reply."
)
"""Said first among the agent's instructions: MemGPT's own speak of ``send_message``."""


class MemGPTState(AgentState[Any]):
    """The agent's state: its messages, plus the graph's bookkeeping (private to the agent)."""

    agent_id: NotRequired[Annotated[str, PrivateStateAttr]]
    summary: NotRequired[Annotated[str, PrivateStateAttr]]
    evicted_count: NotRequired[Annotated[int, PrivateStateAttr]]
    core_blocks: NotRequired[Annotated[list[dict[str, Any]], PrivateStateAttr]]
    system_prompt: NotRequired[Annotated[str, PrivateStateAttr]]
    system_key: NotRequired[Annotated[str, PrivateStateAttr]]
    turn: NotRequired[Annotated[int, PrivateStateAttr]]
    turn_user_id: NotRequired[Annotated[str, PrivateStateAttr]]
    alerted: NotRequired[Annotated[bool, PrivateStateAttr]]
    force_evict: NotRequired[Annotated[bool, PrivateStateAttr]]
    steps: NotRequired[Annotated[int, PrivateStateAttr]]
    repeat_key: NotRequired[Annotated[str, PrivateStateAttr]]
    repeat_count: NotRequired[Annotated[int, PrivateStateAttr]]
    context_retries: NotRequired[Annotated[int, PrivateStateAttr]]
    stop_reason: NotRequired[Annotated[str, PrivateStateAttr]]
    turn_over: NotRequired[Annotated[bool, PrivateStateAttr]]
    step_closed: NotRequired[Annotated[str, PrivateStateAttr]]


@dataclass
class _Seen:
    """What the agent's last model call sent besides MemGPT's part (for ``before_model``)."""

    instructions: str = ""
    schemas: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Where:
    """A hook's run: the settings, the agent's memory, the thread."""

    ctx: Context
    memory: Memory
    thread_id: str

    def system(
        self, view: State, instructions: str, *, mid_turn: bool
    ) -> tuple[str, dict[str, Any]]:
        """`turn.system` for the queue in ``view``."""
        return turn.system(
            view,
            self.memory,
            self.ctx,
            thread_id=self.thread_id,
            instructions=instructions,
            mid_turn=mid_turn,
        )


@dataclass
class _Step:
    """One model call as planned: the request to send, or the reply that ends the turn."""

    request: ModelRequest[Any]
    where: _Where
    turn: int
    update: dict[str, Any]
    reply: str | None = None
    retries: int = 0
    """Evictions forced by the provider's context-length errors in this step."""
    steps: int = 0
    """Model calls of the turn before this one (`turn.step_cap`)."""


class MemGPTMiddleware(AgentMiddleware[MemGPTState, Any, Any]):
    """MemGPT's memory tiers for a ``create_agent`` agent (see the module docstring).

    Args:
        agent_id: Whose memory, always; None: resolved per run from the context.
        backend: Where memory lives (`SqliteBackend`, `PostgresBackend`); None: the
            embedded SQLite + FAISS backend in ``context.data_dir``.
        context: The settings (window, eviction fractions, data dir, embeddings...).
        summary_model: The model that writes eviction summaries; None: the agent's.
        tools: Which memory tools to add (default: all but ``send_message``).
    """

    state_schema = MemGPTState

    def __init__(
        self,
        agent_id: str | None = None,
        *,
        backend: MemoryBackend | None = None,
        context: Context | None = None,
        summary_model: BaseChatModel | None = None,
        tools: Sequence[str] = DEFAULT_TOOLS,
    ) -> None:
        super().__init__()
        self.access = MemoryAccess(agent_id, backend=backend, context=context)
        self.summary_model = summary_model
        self.deps = Deps(backend=backend)
        self.tools: list[BaseTool] = self.access.tools(tools)
        self._order = CallOrder(self.access.bind)
        # Until the first model call shows the agent's prompt and tools: its own tools.
        self._seen = _Seen(schemas=[convert_to_openai_tool(t) for t in self.tools])

    # -- where ------------------------------------------------------------------------

    def _open(self, state: Any, run_context: Any) -> _Where:
        """The run's settings, the agent's memory (the thread's owner checked), the thread."""
        config = get_config()
        ctx = self.access.context_for(config, run_context)
        memory = self.deps.memory(ctx, cast(State, state))
        return _Where(ctx, memory, thread_of_config(config))

    # -- before_agent: a refused run keeps nothing --------------------------------------

    def before_agent(self, state: MemGPTState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Take another agent's input out of this thread, which ``before_model`` refuses.

        LangGraph has kept the run's input before any hook runs; left there, the thread's
        own agent would take it for a message of its own at its next run and record it.
        The messages its agent never recorded leave the thread (`ownership.refuse_another_agent`
        is the rule); the run then fails in ``before_model``, naming the thread's agent.
        """
        owner = state.get("agent_id")
        config = get_config()
        ctx = self.access.context_for(config, runtime.context)
        if not owner or owner == ctx.agent_id:
            return None
        thread_id = thread_of_config(config)
        queue = list(state["messages"])
        memory = self.deps.memory(
            Context(**{**ctx.fields(), "agent_id": owner}), cast(State, state)
        )
        recorded = {
            r.message_id
            for r in memory.recall.get([str(m.id) for m in queue if m.id])
            if r.thread_id == thread_id
        }
        refused = [m for m in queue if str(m.id) not in recorded]
        return {"messages": [RemoveMessage(id=str(m.id)) for m in refused]} if refused else None

    async def abefore_agent(
        self, state: MemGPTState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """`before_agent`, store I/O in a worker thread."""
        return await asyncio.to_thread(self.before_agent, state, runtime)

    # -- before_model: open_turn, close_step, check_pressure ---------------------------

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: MemGPTState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """The turn core between model calls (`langgraph_memgpt.turn.core`, as the graph's nodes).

        Open the turn (write-ahead, stamping, cutting); mid-turn, close the finished tool
        step (the repeat breaker, heartbeats: a reply sent with nothing to read ends the
        turn) and stop at the step cap, ending the run with the reply; then refresh the
        system prompt, warn or ask to evict.
        """
        where = self._open(state, runtime.context)
        ctx, memory, thread_id = where.ctx, where.memory, where.thread_id
        update: dict[str, Any] = {} if state.get("agent_id") else {"agent_id": memory.agent_id}
        instructions = self._instructions(self._seen.instructions)
        opened, queue = turn.open_turn(
            cast(State, state),
            memory,
            ctx,
            thread_id=thread_id,
            counter=self.deps.counter,
            schemas=self._seen.schemas,
            instructions=instructions,
        )
        new_turn = bool(opened)
        update.update(opened)
        settled = {k: v for k, v in opened.items() if k not in ("messages", RECORD_FIRST)}
        view = cast(State, {**state, **update, **settled, "messages": queue})
        if not new_turn:
            # Write-ahead of what came since the model's last message (recorded as it was
            # written): tool results (recorded as they ran; twice adds nothing), a
            # person's answers to a review.
            last = max((i for i, m in enumerate(queue) if isinstance(m, AIMessage)), default=-1)
            update[RECORD_FIRST] = [(view.get("turn", 0), queue[last + 1 :])]
            closed = turn.close(view, memory, ctx, marked_only=False, note=False) or {}
            update.update(closed)
            view = cast(State, {**view, **closed})
            stop = turn.step_cap(view, ctx) if not closed.get("turn_over") else None
            if closed.get("turn_over") or stop is not None:
                return self._end(where, view, update, stop or closed.get("stop_reason", ""))
        system_prompt, system_update = where.system(view, instructions, mid_turn=not new_turn)
        update.update(system_update)
        measured = turn.measure(
            view, system_prompt, queue, ctx, self.deps.counter, self._seen.schemas
        )
        alert = measured.pop("messages", [])
        update.update(measured)
        if alert:
            update["messages"] = [*update.get("messages", []), *alert]
        update = write(memory, thread_id, view.get("turn", 0), update)
        return update or None

    def _end(
        self, where: _Where, view: State, update: dict[str, Any], stop_reason: str
    ) -> dict[str, Any]:
        """End the run with the turn's reply (as ``respond``): what was sent, then the stop."""
        text = turn.reply_text(view, stop_reason)
        if text:
            flags = {} if stop_reason else {REPLY_FLAG: True}
            reply = AIMessage(text, id=str(uuid.uuid4()), additional_kwargs=flags)
            update["messages"] = [*update.get("messages", []), reply]
        update.update(stop_reason="", turn_over=True, jump_to="end")
        return cast(
            dict[str, Any], write(where.memory, where.thread_id, view.get("turn", 0), update)
        )

    async def abefore_model(
        self, state: MemGPTState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """`before_model`, store I/O in a worker thread."""
        return await asyncio.to_thread(self.before_model, state, runtime)

    # -- wrap_model_call: summarize_evict, then the prompt -------------------------------

    def _instructions(self, agent_prompt: str) -> str:
        return f"{PLAIN_REPLIES}\n\n{agent_prompt}".strip()

    def _plan(
        self, request: ModelRequest[Any], loop: asyncio.AbstractEventLoop | None = None
    ) -> _Step:
        """The prompt to send: evicted first if the exact prompt is over the flush limit.

        ``loop``: an async run's event loop; the summary is written with the summarizer's
        async API on it (`summarize_evict.ask_summarizer`).
        """
        state: dict[str, Any] = dict(request.state)
        where = self._open(state, request.runtime.context)
        ctx, memory, thread_id = where.ctx, where.memory, where.thread_id
        agent_prompt = request.system_prompt or ""
        schemas = [
            dict(t) if isinstance(t, dict) else convert_to_openai_tool(t) for t in request.tools
        ]
        self._seen = _Seen(agent_prompt, schemas)
        instructions = self._instructions(agent_prompt)
        view = cast(State, {**state, "messages": list(request.messages)})
        model = self.summary_model or request.model
        planned = turn.plan(
            view,
            memory,
            ctx,
            render=lambda seen, mid_turn: where.system(seen, instructions, mid_turn=mid_turn),
            evict=evict,
            counter=self.deps.counter,
            schemas=schemas,
            summarizer=lambda: model,
            thread_id=thread_id,
            loop=loop,
        )
        prompt = planned.prompt
        sent = request.override(
            system_message=cast(Any, prompt[0]), messages=cast(list[AnyMessage], prompt[1:])
        )
        number = int(state.get("turn", 0))
        steps = int(state.get("steps", 0))
        return _Step(sent, where, number, planned.update, planned.reply, steps=steps)

    def _taken(self, step: _Step, result: Any) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """The model's messages, written ahead to recall (with ids), and the state update."""
        if isinstance(result, ExtendedModelResponse):
            result = result.model_response
        response = result if isinstance(result, ModelResponse) else ModelResponse([result])
        ctx = step.where.ctx
        messages: list[BaseMessage] = []
        unanswered = False  # calls whose arguments did not parse, and nothing else to run
        for m in response.result:
            if not isinstance(m, AIMessage):
                messages.append(_with_id(valid_message(m)))
                continue
            # As ``think``: a call whose arguments did not parse gets its error result
            # after the message, and the model reads it at its next call.
            taken = turn.take(m, ctx, self.deps.counter, bound=False)
            messages += [taken.message, *taken.answers]
            unanswered = bool(taken.answers) and not taken.message.tool_calls
        write(step.where.memory, step.where.thread_id, step.turn, {"messages": messages})
        response = ModelResponse(messages, response.structured_response)
        update = {**step.update, "steps": step.steps + 1}
        if unanswered:
            update["jump_to"] = "model"  # create_agent would end the run: no call to run
        return ExtendedModelResponse(response, Command(update=update))

    def _stopped(self, step: _Step) -> ExtendedModelResponse[Any]:
        """The honest reply when no eviction can make the prompt fit (no model call)."""
        return cast(ExtendedModelResponse[Any], self._taken(step, AIMessage(str(step.reply))))

    def _retry(
        self,
        request: ModelRequest[Any],
        step: _Step,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> _Step:
        """After a provider's context-length error: evict (forced) and plan again.

        As ``think`` does, at most ``max_context_retries`` times a step; then the turn
        ends with the honest reply.
        """
        stop = turn.after_overflow(step.retries, step.where.ctx)
        if stop is not None:
            return dataclasses.replace(step, reply=stop)
        removed = list(step.update.get("messages", []))
        gone = {m.id for m in removed}
        kept = {k: v for k, v in step.update.items() if k != "messages"}
        again = self._plan(
            request.override(
                messages=[m for m in request.messages if m.id not in gone],
                state=cast(Any, {**request.state, **kept, "force_evict": True}),
            ),
            loop,
        )
        update = {**kept, **again.update}
        update["messages"] = [*removed, *again.update.get("messages", [])]
        return dataclasses.replace(again, update=update, retries=step.retries + 1, steps=step.steps)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """Send the MemGPT prompt (evicting first if needed); record the reply."""
        step = self._plan(request)
        while step.reply is None:
            try:
                return self._taken(
                    step, agent_model_call(_stack(step.request), step.request, handler)
                )
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                step = self._retry(request, step)
        return self._stopped(step)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """`wrap_model_call` with the model's async API; store I/O in a worker thread."""
        loop = asyncio.get_running_loop()
        step = await asyncio.to_thread(self._plan, request, loop)
        while step.reply is None:
            try:
                result = await aagent_model_call(_stack(step.request), step.request, handler)
            except Exception as exc:
                if not is_context_overflow(exc):
                    raise
                step = await asyncio.to_thread(self._retry, request, step, loop)
                continue
            return await asyncio.to_thread(self._taken, step, result)
        return await asyncio.to_thread(self._stopped, step)

    # -- wrap_tool_call: write-ahead of results -----------------------------------------

    def _recorded(self, request: ToolCallRequest, result: Any) -> Any:
        state = request.state if isinstance(request.state, dict) else {}
        where = self._open(state, request.runtime.context)
        number = int(state.get("turn", 0))
        if isinstance(result, ToolMessage):
            result = _with_id(result)
        elif isinstance(result, Command) and isinstance(result.update, dict):
            messages = [_with_id(m) for m in to_messages(result.update.get("messages", []))]
            if messages:
                result = dataclasses.replace(result, update={**result.update, "messages": messages})
        else:
            return result
        return write(where.memory, where.thread_id, number, result)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the call in the model's order; write its result ahead to recall."""
        try:
            self._order.wait(request)
            result = self._recorded(request, handler(request))
        finally:
            self._order.done(request)
        return cast(ToolMessage | Command[Any], result)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """`wrap_tool_call` for async runs."""
        try:
            await asyncio.to_thread(self._order.wait, request)
            result = await asyncio.to_thread(self._recorded, request, await handler(request))
        finally:
            self._order.done(request)
        return cast(ToolMessage | Command[Any], result)


def _with_id(message: BaseMessage) -> Any:
    """``message`` with an id (recall keys messages by it; the reducer would add one later)."""
    return message if message.id else message.model_copy(update={"id": str(uuid.uuid4())})


__all__ = ["MemGPTMiddleware", "MemGPTState"]


def _stack(request: ModelRequest[Any]) -> tuple[ModelPolicy, ...]:
    """The policies the request's model runs (its traits read once for the step)."""
    return policies_for(ModelTraits.of(request.model))
