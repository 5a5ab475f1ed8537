"""Runtime configuration of the MemGPT agent.

Every policy number of the loop (window size, pressure fractions, step caps, page sizes)
lives here, so the nodes hold no literal thresholds and Studio can show them as a form.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Literal


def _default_data_dir() -> str:
    # Relative on purpose: the server builds a Context on its event loop, where
    # os.getcwd() counts as blocking I/O (BlockingError under `langgraph dev`); the
    # stores resolve the path later, in the nodes' worker threads.
    return os.environ.get("MEMGPT_DATA_DIR") or ".memgpt"


@dataclass(kw_only=True)
class Context:
    """Configuration read by every node through ``Runtime[Context]``."""

    agent_id: str = field(
        default="default",
        metadata={
            "description": "The agent whose long-term memory (core, recall, archival) this "
            "run reads and writes. Threads of the same agent share it; agents never see "
            "each other's memory."
        },
    )
    model: str = field(
        default="auto",
        metadata={
            "description": "Chat model: 'auto' (OPENAI_API_KEY / OPENAI_BASE_URL if set, "
            "else the embedded local llama.cpp model), 'openai:<name>', 'local', or "
            "'scripted:<path.json>' (a replayed script, for tests). A model passed to "
            "build_graph() wins over this field."
        },
    )
    context_window: int = field(
        default=8192,
        metadata={"description": "Tokens the model's prompt may hold (main context size)."},
    )
    warning_fraction: float = field(
        default=0.70,
        metadata={
            "description": "Fraction of the window at which the agent is warned, once per "
            "cycle, to save what matters to core or archival memory."
        },
    )
    flush_fraction: float = field(
        default=1.0,
        metadata={
            "description": "Fraction of the window at which the oldest messages are "
            "summarized and evicted from the queue."
        },
    )
    evict_fraction: float = field(
        default=0.5,
        metadata={
            "description": "Fraction of the window the prompt is brought down to by an eviction."
        },
    )
    summary_fraction: float = field(
        default=0.10,
        metadata={"description": "Most of the window the recursive summary may take."},
    )
    max_message_fraction: float = field(
        default=0.25,
        metadata={
            "description": "Most of the window one message may take in the queue; a longer "
            "message is cut there and kept whole in recall memory."
        },
    )
    max_steps: int = field(
        default=50,
        metadata={"description": "Most model calls in one user turn before the turn is ended."},
    )
    max_repeated_calls: int = field(
        default=3,
        metadata={
            "description": "An identical tool call repeated this many times in a row ends the turn."
        },
    )
    max_context_retries: int = field(
        default=3,
        metadata={
            "description": "Summarize-and-retry attempts after a provider 'context length "
            "exceeded' error."
        },
    )
    search_page_size: int = field(
        default=5,
        metadata={"description": "Results per page of the memory search tools."},
    )
    result_char_limit: int = field(
        default=3000,
        metadata={
            "description": "Most characters one tool result may put into the queue; longer "
            "results are cut with a note, so a page can never overflow the window."
        },
    )
    core_block_limit: int = field(
        default=2000,
        metadata={"description": "Character limit of the default core memory blocks."},
    )
    prompt_layout: Literal["cached", "legacy"] = field(
        default="cached",
        metadata={
            "description": "'cached': instructions and tools first, core memory after them, "
            "and the system prompt re-rendered only between turns, so prefix caches hold. "
            "'legacy': the earlier layout (core memory inside the instructions, tools after "
            "it), kept as the turn benchmark's baseline."
        },
    )
    data_dir: str = field(
        default_factory=_default_data_dir,
        metadata={
            "description": "Folder of the memory database (SQLite) and FAISS caches. "
            "Defaults to $MEMGPT_DATA_DIR or ./.memgpt."
        },
    )
    embedding_model: str = field(
        default="minilm",
        metadata={
            "description": "Embeddings: 'minilm' (embedded all-MiniLM-L6-v2 int8 ONNX, "
            "offline), 'openai:<model>' (needs OPENAI_API_KEY), or 'none' (search by "
            "words only)."
        },
    )
    persona: str = field(
        default="",
        metadata={"description": "Initial text of the 'persona' core block for a new agent."},
    )
    human: str = field(
        default="",
        metadata={"description": "Initial text of the 'human' core block for a new agent."},
    )

    @classmethod
    def from_any(cls, value: Context | dict[str, Any] | None) -> Context:
        """Return a Context from a Context, a (possibly partial) dict, or None (defaults)."""
        if isinstance(value, Context):
            return value
        if not value:
            return cls()
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(
                f"Unknown context field(s) {unknown}; valid fields are {sorted(known)}."
            )
        return cls(**value)
