"""Block quality before and after one sleep-time consolidation, on a scripted noisy agent.

The agent's memory is what the embedded model tends to leave after a few chatty turns:
``human`` holds verbatim chatter and duplicates, and a fact about the user sits in
``persona``. Recall holds the conversation since. One run of the ``memgpt_sleeptime``
graph with the chosen model, then, for the core blocks:

* facts kept: each known fact (a few words that must appear) found in core memory, or
  in core or archival memory;
* chatter dropped: chatter lines of the noisy blocks no longer in core memory, and
  lines holding no known fact (chatter the run itself may have added);
* duplicates: lines appearing more than once in a block;
* user facts left in ``persona``; characters per block; the run's problems and time.

Run (embedded model; ~1 model call, minutes on 2 shared cores):
``PYTHONPATH=. .venv/bin/python benchmarks/sleeptime_quality.py --model local``
The pipeline's ceiling, an ideal answer replayed:
``--model scripted:benchmarks/sleeptime_ideal_answer.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_header  # noqa: E402

from langgraph_memgpt.context import Context  # noqa: E402
from langgraph_memgpt.models import resolve_model  # noqa: E402
from langgraph_memgpt.sleeptime import build_sleeptime_graph  # noqa: E402
from langgraph_memgpt.stores.base import Memory  # noqa: E402
from langgraph_memgpt.stores.sqlite import SqliteBackend, close_all  # noqa: E402
from langgraph_memgpt.stores.types import RecallMessage  # noqa: E402

AGENT = "noisy"
PERSONA = (
    "I am Sam, a warm and curious companion.\n"
    "The user is allergic to peanuts.\n"
    "I am Sam, a warm and curious companion."
)
HUMAN = "\n".join(
    [
        "Name: Ana",
        "hi!!",
        "Ana works as a nurse in Porto",
        "thanks so much, you're the best",
        "Ana likes hiking in the mountains",
        "lol the weather is so nice today",
        "Ana works as a nurse in Porto",
        "ok cool",
        "Ana has a cat called Miso",
        "haha good morning",
    ]
)
CONVERSATION = [
    ("user", "good morning!! how are you today?"),
    ("assistant", "Morning Ana! I'm well, thanks. How are you?"),
    ("user", "great! I started a pottery class on Mondays, so fun"),
    ("assistant", "That sounds lovely. Pottery on Mondays, noted."),
    ("user", "haha yes. also my sister Lena is visiting from Berlin next week"),
    ("assistant", "How nice! I hope you have a great time with Lena."),
    ("user", "thanks! ok bye for now"),
]
FACTS = {
    "name Ana": ["ana"],
    "nurse": ["nurse"],
    "lives/works in Porto": ["porto"],
    "hiking": ["hik"],
    "cat Miso": ["miso"],
    "peanut allergy": ["peanut"],
    "pottery class": ["pottery"],
    "sister Lena": ["lena"],
}
"""Facts the memory should hold after the run, by the words that must appear."""
CHATTER = [
    "hi!!",
    "thanks so much, you're the best",
    "lol the weather is so nice today",
    "ok cool",
    "haha good morning",
]


def seed(memory: Memory) -> None:
    memory.core.ensure_defaults()
    memory.core.set("persona", PERSONA, actor="user")
    memory.core.set("human", HUMAN, actor="user")
    memory.recall.add(
        [
            RecallMessage(AGENT, "t1", f"m{i}", role, text, f"2026-11-30T09:{i:02d}:00+00:00")
            for i, (role, text) in enumerate(CONVERSATION)
        ]
    )


def quality(memory: Memory) -> dict[str, Any]:
    blocks = {b.label: b.value for b in memory.core.blocks()}
    core = "\n".join(blocks.values()).casefold()
    archived = " ".join(
        p.text for p in memory.archival.recent(memory.archival.count() or 1)
    ).casefold()
    in_core = [name for name, words in FACTS.items() if all(w in core for w in words)]
    anywhere = [
        name for name, words in FACTS.items() if all(w in core or w in archived for w in words)
    ]
    lines = [line.strip().casefold() for line in core.splitlines() if line.strip()]
    probes = [w for words in FACTS.values() for w in words] + ["sam", "companion"]
    noise = [line for line in lines if not any(w in line for w in probes)]
    return {
        "facts_in_core": f"{len(in_core)}/{len(FACTS)}",
        "facts_in_core_or_archival": f"{len(anywhere)}/{len(FACTS)}",
        "missing": sorted(set(FACTS) - set(anywhere)),
        "chatter_left": sum(1 for c in CHATTER if c.casefold() in lines),
        "lines_without_a_known_fact": len(noise),
        "duplicate_lines": len(lines) - len(set(lines)),
        "user_facts_in_persona": int("peanut" in blocks.get("persona", "").casefold()),
        "chars": {label: len(value) for label, value in blocks.items()},
        "archival_passages": memory.archival.count(),
        "blocks": blocks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local", help="model spec, as Context.model")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    print_header("sleep-time consolidation: block quality before/after one run")

    with tempfile.TemporaryDirectory() as tmp:
        backend = SqliteBackend(tmp, embedding_model="none")
        memory = backend.open(AGENT)
        seed(memory)
        before = quality(memory)
        graph = build_sleeptime_graph(model=resolve_model(args.model), memory=backend).compile()
        started = time.perf_counter()
        out = graph.invoke({}, context=Context(agent_id=AGENT, data_dir=tmp))
        seconds = time.perf_counter() - started
        after = quality(memory)
        close_all()

    result = {
        "model": args.model,
        "seconds": round(seconds, 1),
        "before": before,
        "after": after,
        "edits": out.get("edits"),
        "archived": out.get("archived"),
        "problems": out.get("problems"),
    }
    for key in (
        "facts_in_core",
        "facts_in_core_or_archival",
        "chatter_left",
        "lines_without_a_known_fact",
        "duplicate_lines",
    ):
        print(f"{key:28s} before {before[key]!s:>5}   after {after[key]!s:>5}")
    print(
        f"{'user_facts_in_persona':28s} before {before['user_facts_in_persona']!s:>5}   "
        f"after {after['user_facts_in_persona']!s:>5}"
    )
    print(f"{'chars per block':28s} before {before['chars']}   after {after['chars']}")
    print(f"missing after: {after['missing']}")
    print(f"edits: {out.get('edits')}")
    print(f"archived: {out.get('archived')}")
    print(f"problems: {out.get('problems')}")
    print(f"run time: {seconds:.1f} s (model load included)")
    print("blocks after:\n" + json.dumps(after["blocks"], indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
