"""summarize_evict: move the oldest messages out of the queue behind a recursive summary.

The evicted messages are already verbatim in recall memory (write-ahead), so eviction only
shortens the prompt. The cut never separates an AI tool call from its results, never leaves
a tool message first, and never touches the user's newest message. The new summary folds in
the previous one, is written in the agent's first person, and is also kept in archival
memory (once per eviction: a replay finds it). If nothing can be evicted, or even the
deepest cut cannot make the prompt fit the window, the turn ends with an honest reply
instead of looping or paying for a useless summary.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.runtime import Runtime, get_runtime

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.state import State
from langgraph_memgpt.stores.base import Memory
from langgraph_memgpt.turn.main_context import (
    build_prompt,
    context_of,
    current_system,
    latest_user_index,
    prompt_tokens,
    summary_token_budget,
    thread_of,
)
from langgraph_memgpt.turn.streaming import ainvoke_privately, hide, invoke_privately
from langgraph_memgpt.turn.tokens import TokenCounter, content_text

TRANSCRIPT_LINE_CHARS = 600
"""Longest excerpt of one evicted message shown to the summarizer."""
SUMMARY_TAG = "summary"
"""The archival tag of every eviction summary."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
COPY_NGRAM = 6
"""Word n-gram length used to tell a copied reply from a written one."""
COPY_FRACTION = 0.6
"""A reply whose n-grams are at least this much verbatim from its prompt is a copy."""


def choose_cut(queue: Sequence[AnyMessage], cost_after: Callable[[int], int], target: int) -> int:
    """Smallest valid cut index whose remaining prompt fits ``target`` (0: nothing to evict).

    A cut ``c`` evicts ``queue[:c]``. It is valid when ``queue[c]`` is not a tool result
    (so no call is split from its results and no tool message leads the queue) and it
    keeps the user's newest message. When no valid cut reaches the target, the deepest
    valid one is returned.
    """
    newest_user = latest_user_index(queue)
    limit = newest_user if newest_user is not None else len(queue)
    best = 0
    for cut in range(1, limit + 1):
        if cut < len(queue) and isinstance(queue[cut], ToolMessage):
            continue
        best = cut
        if cost_after(cut) <= target:
            return cut
    return best


def transcript(messages: Sequence[AnyMessage]) -> str:
    """Evicted messages as compact lines for the summarizer."""
    lines = []
    for message in messages:
        text = " ".join(content_text(message).split())
        if isinstance(message, AIMessage):
            calls = "; ".join(
                f"{c['name']}({json.dumps(c['args'], ensure_ascii=False)})"
                for c in message.tool_calls
            )
            text = f"{text} [calls: {calls}]" if calls else text
            role = "me"
        elif isinstance(message, ToolMessage):
            role = f"tool {message.name or ''}".strip()
        elif isinstance(message, HumanMessage):
            role = "system" if message.name else "user"
        else:
            role = "system"
        if len(text) > TRANSCRIPT_LINE_CHARS:
            text = text[:TRANSCRIPT_LINE_CHARS] + "…"
        lines.append(f"{role}: {text}")
    return "\n".join(lines)


def remembered(memory: Memory, messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages recall still holds, in order.

    Every queue message is recorded before it is checkpointed, so one missing from recall
    was forgotten (the ``forget`` tool deletes messages that may still be in view): the
    summary must not restate it, or it would be searchable again in archival memory.
    """
    ids = [str(m.id) for m in messages if m.id]
    kept = {m.message_id for m in memory.recall.get(ids)} if ids else set()
    return [m for m in messages if str(m.id) in kept]


def summary_word_limit(summary_budget: int) -> int:
    """Words the summarizer is asked for: 70% of the summary's token budget, at least 20."""
    return max(20, int(summary_budget * 0.7))


def summary_request(
    previous_summary: str, transcript_text: str, max_words: int
) -> list[AnyMessage]:
    """The summarizer's prompt: the instructions, then the previous summary and the messages."""
    return [
        SystemMessage(prompts.SUMMARIZER_INSTRUCTIONS.format(max_words=max_words)),
        HumanMessage(prompts.summarizer_prompt(previous_summary, transcript_text, max_words)),
    ]


def summary_call_kwargs(model: BaseChatModel, budget: int) -> dict[str, Any]:
    """Keyword arguments of the summarizer call.

    The reply is capped at the summary budget; the embedded model also gets a repetition
    penalty (`ModelTraits.summary_sampling`; its tool calls, constrained JSON, never come
    through here).
    """
    return {"max_tokens": budget, **ModelTraits.of(model).summary_sampling}


def drop_repeated_sentences(text: str) -> str:
    """``text`` without the sentences it already said (a small model loops on a few of them)."""
    seen: set[str] = set()
    paragraphs = []
    for paragraph in text.split("\n"):
        kept = []
        for sentence in _SENTENCE_END.split(paragraph):
            key = " ".join(sentence.lower().split())
            if key and key in seen:
                continue
            seen.add(key)
            kept.append(sentence)
        paragraphs.append(" ".join(kept))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(paragraphs)).strip()


def _ngrams(text: str) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + COPY_NGRAM]) for i in range(len(words) - COPY_NGRAM + 1)}


def copied_fraction(reply: str, *sources: str) -> float:
    """Share of ``reply``'s word n-grams found verbatim in ``sources`` (0 for short replies)."""
    grams = _ngrams(reply)
    if not grams:
        return 0.0
    seen: set[tuple[str, ...]] = set()
    for source in sources:
        seen |= _ngrams(source)
    return len(grams & seen) / len(grams)


def ask_summarizer(
    model: BaseChatModel,
    request: list[AnyMessage],
    kwargs: dict[str, Any],
    loop: asyncio.AbstractEventLoop | None = None,
) -> str:
    """The summarizer's reply text, written privately: ``invoke``, or with ``loop`` async.

    No stream sees a summary's tokens (``streaming.invoke_privately`` /
    ``ainvoke_privately``).

    ``loop``: the event loop of an async run (``ainvoke`` / ``astream``) that called this
    from a worker thread (store I/O stays off the loop): the call is ``model.ainvoke`` on
    that loop, in this thread's context (the run's config, callbacks and tags), and this
    thread waits for it, as a sync run waits for ``invoke``.
    """
    if loop is None:
        return content_text(invoke_privately(model, request, **kwargs))
    context = contextvars.copy_context()
    answer: concurrent.futures.Future[BaseMessage] = concurrent.futures.Future()

    def start() -> None:
        task = loop.create_task(ainvoke_privately(model, request, **kwargs), context=context)

        def settle(done: asyncio.Task[BaseMessage]) -> None:
            if done.cancelled():
                answer.cancel()
            elif (error := done.exception()) is not None:
                answer.set_exception(error)
            else:
                answer.set_result(done.result())

        task.add_done_callback(settle)

    loop.call_soon_threadsafe(start)
    return content_text(answer.result())


def write_summary(
    model: BaseChatModel,
    previous_summary: str,
    transcript_text: str,
    budget: int,
    counter: TokenCounter,
    loop: asyncio.AbstractEventLoop | None = None,
) -> str:
    """The next recursive summary, at most ``budget`` tokens ('' if the model wrote nothing).

    ``loop``: an async run's event loop: the model's async API is called on it
    (`ask_summarizer`).

    Sentences the reply repeats are dropped. A reply that mostly copies its prompt (the
    previous summary, the messages) is not a summary: then the previous summary, clipped to
    half the budget, is kept and a summary of just the new messages, written in the other
    half, is appended.
    """
    max_words = summary_word_limit(budget)
    request = summary_request(previous_summary, transcript_text, max_words)
    # Privately (no stream sees a summary's tokens, ask_summarizer), also when the
    # middleware's model node writes it.
    reply = ask_summarizer(model, request, summary_call_kwargs(model, budget), loop)
    reply = drop_repeated_sentences(reply)
    if copied_fraction(reply, previous_summary, transcript_text) >= COPY_FRACTION:
        half = budget // 2
        request = summary_request("", transcript_text, summary_word_limit(half))
        fresh = ask_summarizer(model, request, summary_call_kwargs(model, half), loop)
        fresh = drop_repeated_sentences(fresh)
        kept = clip_tokens(previous_summary.strip(), half, counter)
        reply = "\n\n".join(part for part in (kept, clip_tokens(fresh, half, counter)) if part)
    return clip_tokens(reply, budget, counter) if reply else ""


def clip_tokens(text: str, budget: int, counter: TokenCounter) -> str:
    """``text`` cut (with an ellipsis) to about ``budget`` tokens."""
    tokens = counter.text(text)
    if tokens <= budget:
        return text
    return text[: max(0, int(len(text) * budget / tokens) - 1)] + "…"


def evict(
    state: State,
    memory: Memory,
    ctx: Context,
    *,
    system_prompt: str,
    counter: TokenCounter,
    schemas: Sequence[dict[str, Any]],
    summarizer: Callable[[], BaseChatModel],
    thread_id: str,
    loop: asyncio.AbstractEventLoop | None = None,
) -> dict[str, Any]:
    """The state update evicting down to ``evict_fraction`` of the window behind a new summary.

    When nothing can make the prompt fit, it sets ``stop_reason`` (the turn ends with the
    honest reply). ``summarizer`` is asked for the model only when a summary is written;
    ``loop``, an async run's event loop, has it called through its async API.
    Shared by the ``summarize_evict`` node and
    `langgraph_memgpt.compose.middleware.MemGPTMiddleware`.
    """
    queue = list(state["messages"])
    summary = state.get("summary", "")
    evicted_count = state.get("evicted_count", 0)
    summary_budget = summary_token_budget(ctx)

    def cost_after(cut: int) -> int:
        rest = build_prompt(system_prompt, "", evicted_count, queue[cut:])
        return prompt_tokens(counter, rest, schemas) + summary_budget

    before = prompt_tokens(
        counter, build_prompt(system_prompt, summary, evicted_count, queue), schemas
    )
    cut = choose_cut(queue, cost_after, int(ctx.context_window * ctx.evict_fraction))
    if cut == 0:
        # Nothing may leave the queue: stop the turn rather than loop on eviction.
        return {"stop_reason": prompts.CONTEXT_OVERFLOW_REPLY, "force_evict": False}
    evicted = queue[:cut]
    if cost_after(cut) - summary_budget > ctx.context_window:
        # Even the deepest cut leaves a prompt over the window (the instructions and
        # tools alone fill it): no summary can make this turn fit, so none is paid for.
        # The messages still leave the queue (they are verbatim in recall memory), so
        # the checkpoint stays bounded, and the turn ends with the honest reply.
        return {
            "messages": [RemoveMessage(id=str(m.id)) for m in evicted],
            "evicted_count": evicted_count + len(evicted),
            "stop_reason": prompts.CONTEXT_OVERFLOW_REPLY,
            "force_evict": False,
            "alerted": False,
        }
    new_summary = write_summary(
        summarizer(),
        summary,
        transcript(remembered(memory, evicted)),
        summary_budget,
        counter,
        loop,
    )
    if not new_summary:
        # Nothing came back (a filtered or reasoning model's empty reply): keep the previous
        # summary and say, in the agent's voice, where the evicted messages went. The queue
        # still shrinks; the archive gets a passage with text.
        note = prompts.UNSUMMARIZED_NOTE.format(count=len(evicted))
        kept = clip_tokens(summary.strip(), summary_budget - counter.text(note), counter)
        new_summary = "\n\n".join(part for part in (kept, note) if part)
    after = cost_after(cut) - summary_budget + counter.text(new_summary)
    if after >= before:
        return {"stop_reason": prompts.CONTEXT_OVERFLOW_REPLY, "force_evict": False}
    # Keyed on the eviction (thread, where the evicted range starts): a replayed
    # eviction (the run killed after the summary was archived, then resumed or sent a
    # new message) finds its passage and keeps its text, so the archive never holds two
    # summaries of one eviction. A replay that evicts further (a message arrived since)
    # keeps the first text; the extra messages stay verbatim in recall memory.
    key = f"summary:{thread_id}:{evicted_count}:{evicted[0].id}"
    archived = memory.archival.insert(
        new_summary,
        tags=[SUMMARY_TAG],
        thread_id=thread_id,
        turn=state.get("turn", 0),
        key=key,
        merge_duplicates=False,  # the record of this eviction, even if worded as another
    )
    return {
        "messages": [RemoveMessage(id=str(m.id)) for m in evicted],
        "summary": archived.text,
        "evicted_count": evicted_count + len(evicted),
        "alerted": False,
        "force_evict": False,
    }


def make_summarize_evict(deps: Deps) -> RunnableLambda[State, dict[str, Any]]:
    """Build the node with the graph's dependencies: a sync and an async implementation."""

    def run(
        state: State, config: RunnableConfig, loop: asyncio.AbstractEventLoop | None
    ) -> dict[str, Any]:
        runtime: Runtime[Context] = get_runtime(Context)
        ctx = context_of(runtime)
        memory = deps.memory(ctx, state)
        system_prompt, _ = current_system(
            state,
            memory,
            len(state["messages"]),
            ctx,
            mid_turn=False,
            thread_id=thread_of(runtime),
            instructions=deps.instructions,
        )
        update = evict(
            state,
            memory,
            ctx,
            system_prompt=system_prompt,
            counter=deps.counter,
            schemas=deps.schemas,
            summarizer=lambda: deps.summarizer(ctx),
            thread_id=thread_of(runtime),
            loop=loop,
        )
        hide(update.get("messages", []), config)
        return update

    def summarize_evict(state: State, config: RunnableConfig) -> dict[str, Any]:
        """Evict down to ``evict_fraction`` of the window behind a new recursive summary.

        When nothing can make the prompt fit, it sets ``stop_reason``: the turn ends with
        the honest reply (`routes.after_eviction`).
        """
        return run(state, config, None)

    async def asummarize_evict(state: State, config: RunnableConfig) -> dict[str, Any]:
        """`summarize_evict` with the summarizer's async API; store I/O in a worker thread."""
        return await asyncio.to_thread(run, state, config, asyncio.get_running_loop())

    return RunnableLambda(summarize_evict, afunc=asummarize_evict, name="summarize_evict")
