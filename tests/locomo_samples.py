"""Tiny LoCoMo-shaped files for the benchmark tests (the real data never enters the repo)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def turn(speaker: str, dia: str, text: str, **extra: Any) -> dict[str, Any]:
    """One dialogue turn as the LoCoMo file writes it."""
    return {"speaker": speaker, "dia_id": dia, "text": text, **extra}


def ann_and_bob(sample_id: str, qa: list[dict[str, Any]], **sessions: Any) -> dict[str, Any]:
    """A sample of Ann and Bob's conversation holding exactly the given ``session_N`` keys."""
    return {
        "sample_id": sample_id,
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bob", **sessions},
        "qa": qa,
    }


def sample(sample_id: str, qa: list[dict[str, Any]], **more_conversation: Any) -> dict[str, Any]:
    """Ann and Bob's two sessions (a puppy, pottery), plus any further ``session_N`` keys."""
    return ann_and_bob(
        sample_id,
        qa,
        session_1_date_time="1:56 pm on 8 May, 2023",
        session_1=[
            turn("Ann", "D1:1", "I adopted a puppy last week."),
            turn("Bob", "D1:2", "What is the puppy's name?"),
            turn("Ann", "D1:3", "Biscuit! Here he is.", blip_caption="a photo of a dog"),
        ],
        session_2_date_time="7:55 pm on 9 June, 2023",
        session_2=[
            turn("Bob", "D2:1", "I started pottery classes on Monday."),
            turn("Ann", "D2:2", "Pottery sounds relaxing, enjoy the clay."),
        ],
        **more_conversation,
    )


def write_locomo(tmp_path: Path, samples: list[dict[str, Any]]) -> Path:
    """Write ``samples`` as a LoCoMo JSON file and return its path."""
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path
