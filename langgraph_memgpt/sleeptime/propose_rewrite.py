"""propose_rewrite: ask the chat model for line edits of the core blocks and facts to archive.

The blocks are read here, and the values the model saw are kept in the state:
``apply_rewrite`` writes a block only if it still holds exactly that value. An answer
that is not the JSON asked for leaves no proposal (`sleeptime.graph.after_proposal` ends
the run) with memory unchanged, the reason logged and kept in ``problems``; the watermark
stays, so the next run reads the messages again.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.llm.call_schema import response_format_for
from langgraph_memgpt.sleeptime.proposal import (
    INSTRUCTIONS,
    MalformedAnswerError,
    answer_schema,
    parse_proposal,
    render_request,
)
from langgraph_memgpt.sleeptime.state import SleepState
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.turn.main_context import context_of

log = logging.getLogger(__name__)


def answer_text(content: str | list[str | dict[str, Any]]) -> str:
    """The text of a chat model's answer (providers may send a list of parts)."""
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else str(p.get("text", "")) for p in content]
    return "".join(parts)


def make_propose_rewrite(deps: Deps) -> Any:
    """Build the node with the graph's dependencies."""

    def propose_rewrite(state: SleepState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Call the model once; keep the checked proposal, or None and the reason."""
        ctx = context_of(runtime)
        memory = deps.memory(ctx)
        blocks = memory.core.blocks()
        request = [
            SystemMessage(INSTRUCTIONS),
            HumanMessage(render_request(blocks, state.get("transcript", []))),
        ]
        model = deps.chat_model(ctx)
        options: dict[str, Any] = {}
        if ModelTraits.of(model).answers_to_schema:
            # The embedded 1.5B model often wraps JSON in prose: llama.cpp's grammar
            # sampler keeps it to the object asked for (the checks still apply).
            schema = response_format_for(answer_schema(blocks))
            options["extra_body"] = {"response_format": schema}
        answer = model.invoke(request, **options)
        seen = {b.label: b.value for b in blocks}
        try:
            proposal = parse_proposal(answer_text(answer.content), {b.label: b for b in blocks})
        except MalformedAnswerError as exc:
            reason = f"memory left unchanged: {exc}"
            log.warning("sleep-time consolidation of agent %s: %s", memory.agent_id, reason)
            return {"blocks": seen, "proposal": None, "problems": [reason]}
        for problem in proposal.problems:
            log.warning("sleep-time consolidation of agent %s: %s", memory.agent_id, problem)
        return {"blocks": seen, "proposal": proposal.as_state(), "problems": proposal.problems}

    return propose_rewrite
