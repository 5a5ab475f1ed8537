"""Texts and message lists several store tests build their corpora from."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_memgpt.stores.types import RecallMessage

TALK = [
    "I finally got the tomatoes to ripen on the balcony, it only took all summer.",
    "The train was late again this morning, so I read half a novel on the platform.",
    "We should try that noodle place near the river, everyone keeps talking about it.",
    "My sister called, she is thinking about moving closer to the coast next year.",
    "Honestly the weekend went by too fast, I barely unpacked the groceries.",
    "I started running again, just short loops around the park before work.",
    "The neighbours are renovating, there has been drilling since eight every day.",
    "I baked bread for the first time and it came out flat but tasty.",
]
"""Everyday talk that names no fact a test looks up (the needle benchmark has its own)."""


def one_thread(agent: str, texts: Sequence[str]) -> list[RecallMessage]:
    """``texts`` as one thread of ``agent``, ids ``m00``.., user and assistant in turn."""
    return [
        RecallMessage(
            agent_id=agent,
            thread_id="t1",
            message_id=f"m{i:02d}",
            role="user" if i % 2 == 0 else "assistant",
            text=text,
            created_at=f"2026-03-01T10:{i:02d}:00+00:00",
        )
        for i, text in enumerate(texts)
    ]
