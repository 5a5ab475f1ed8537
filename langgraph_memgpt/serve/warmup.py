"""A warm first reply: the model server reads the prompt's fixed part before the first user.

Every prompt starts with the same instructions and tools, then a new agent's core memory
(the same for every new agent). A server that keeps the prompt prefix it last read
(llama.cpp's ``cache_prompt``; the embedded model's one slot) re-reads only what changed
after it. Right after start nothing is cached, so a new user's first reply cost the whole
prefix (about 1,300 tokens on the embedded model, which two shared cores read slowly; the
figures: ``benchmarks/README.md``, ``first_reply.py``) on top of the turn. `warm_first_turn`
sends that prompt once at start, with a one-token answer, so the first user's turn costs
what later ones do.

``langgraph-memgpt serve`` calls it on the embedded model before starting the HTTP server.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool

from langgraph_memgpt import prompts
from langgraph_memgpt.context import Context
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.stores.blocks import HUMAN_DESCRIPTION, PERSONA_DESCRIPTION
from langgraph_memgpt.tools.run import tool_schemas
from langgraph_memgpt.turn.main_context import build_prompt, now_iso, stamped

PLACEHOLDER = "Hello!"
"""The user message of the warm-up prompt: only what comes before it is meant to be kept."""


def first_turn_prompt(ctx: Context | None = None) -> list[BaseMessage]:
    """The prompt of a new agent's first turn as ``think`` renders it, for one short message.

    Core memory is the new agent's (``ctx.persona`` / ``ctx.human`` in the default blocks);
    statistics say nothing is stored yet. Only the message and the time differ from a real
    first turn, and they come last.
    """
    ctx = ctx or Context()
    blocks = [
        {
            "label": label,
            "value": value,
            "description": description,
            "char_limit": ctx.core_block_limit,
            "read_only": False,
        }
        for label, value, description in (
            ("persona", ctx.persona, PERSONA_DESCRIPTION),
            ("human", ctx.human, HUMAN_DESCRIPTION),
        )
    ]
    statistics = prompts.render_memory_statistics(
        recall_outside_queue=0, archival_count=0, archival_tags=[], last_modified=now_iso()
    )
    memory = prompts.render_memory(prompts.render_core_blocks(blocks), statistics)
    system = f"{prompts.SYSTEM_INSTRUCTIONS}\n{memory}"
    return build_prompt(system, "", 0, [stamped(HumanMessage(PLACEHOLDER))])


def warm_first_turn(
    model: BaseChatModel, ctx: Context | None = None, user_tools: Sequence[BaseTool] = ()
) -> float:
    """Have ``model`` read a new agent's first prompt once, answering one token; seconds taken.

    The tools are bound as the agent binds them (compact schemas for a small model), so the
    text the server reads is the text of the agent's real calls.
    """
    schemas = tool_schemas(user_tools, compact=ModelTraits.of(model).compact_schemas)
    started = time.perf_counter()
    model.bind_tools(schemas).invoke(first_turn_prompt(ctx), max_tokens=1)
    return time.perf_counter() - started
