"""Per-conversation and leave-one-out figures for the hybrid ranking's levers on LoCoMo.

A ranking lever is kept only if it holds on each dev conversation on its own, not only on
their sum. For each setting of the levers (``stores.ranking.SIMILARITY_FLOOR``,
``RARE_MATCHES``, ``RARE_SHARE``) this scores hybrid recall search per conversation; then,
leaving each conversation out in turn, it picks the setting best on the other two and
scores it on the one left out. A leave-one-out figure far below the all-in one means the
lever was fitted to the data, not found in it.

Run (the memory is ingested once into --data-dir and reused):

    python benchmarks/locomo_loo.py /work/shared/bench/locomo-dev.json --data-dir /tmp/locomo
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.locomo import load_locomo, recall_messages
from bench.metrics import MetricAccumulator

from langgraph_memgpt.stores import ranking
from langgraph_memgpt.stores.embeddings import get_embeddings
from langgraph_memgpt.stores.sqlite import recall as recall_module
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory

K = 10
LEGACY = "legacy"  # min-max on every signal, no exact-match lift: the ranking before


def _setting(floor: float | str, rare: int, share: float) -> None:
    """Set the levers for the searches that follow (``floor`` "legacy" restores min-max)."""
    if floor == LEGACY:
        ranking.SIMILARITY_FLOOR = 0.0
        ranking.similarity_normalize = _minmax_similarity  # type: ignore[assignment]
    else:
        assert isinstance(floor, float)
        ranking.SIMILARITY_FLOOR = floor
        ranking.similarity_normalize = _SIMILARITY
    ranking.RARE_MATCHES = rare
    ranking.RARE_SHARE = share
    recall_module.RARE_MATCHES = rare  # type: ignore[attr-defined]


_SIMILARITY = ranking.similarity_normalize


def _minmax_similarity(scores: Any, floor: float | None = None) -> dict[Any, float]:
    return ranking.minmax_normalize(scores)


def main(argv: Sequence[str] | None = None) -> int:
    """Score every setting per conversation, then leave-one-out; print a table or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="LoCoMo JSON file")
    parser.add_argument("--data-dir", type=Path, required=True, help="memory stores (reused)")
    parser.add_argument("--floors", default="legacy,0.0,0.1,0.2,0.3")
    parser.add_argument("--rare", default="0,3,8,20")
    parser.add_argument("--shares", default="0.5")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    floors: list[float | str] = [
        f if f == LEGACY else float(f) for f in args.floors.split(",") if f
    ]
    rares = [int(r) for r in args.rare.split(",") if r]
    embeddings = get_embeddings("minilm")
    conversations = load_locomo(args.data)
    shares = [float(x) for x in args.shares.split(",") if x]
    settings = list(itertools.product(floors, rares, shares))
    # figures[setting][conversation] = (recall_any@K, recall_all@K, questions)
    figures: dict[str, dict[str, tuple[float, float, int]]] = {}
    for conv in conversations:
        folder = args.data_dir / conv.sample_id
        db = open_db(folder / "memory.sqlite")
        recall = SqliteRecallMemory(db, conv.sample_id, embeddings, folder / "faiss")
        recall.add_many(recall_messages(conv, conv.sample_id))
        prefix = f"{conv.sample_id}:"
        for floor, rare, share in settings:
            _setting(floor, rare, share)
            acc = MetricAccumulator((K,))
            for q in conv.questions:
                page = recall.search(q.question, mode="hybrid", page_size=K)
                ranked = [h.item.message_id.removeprefix(prefix) for h in page.hits]
                acc.add(q.category, ranked, q.evidence)
            overall = acc.overall()
            figures.setdefault(f"floor={floor} rare={rare} share={share}", {})[conv.sample_id] = (
                overall[f"recall_any@{K}"],
                overall[f"recall_all@{K}"],
                acc.count,
            )
        recall.close()
        db.conn.close()

    def pooled(per_conv: dict[str, tuple[float, float, int]], keep: Sequence[str]) -> tuple:
        n = sum(per_conv[c][2] for c in keep)
        return (
            sum(per_conv[c][0] * per_conv[c][2] for c in keep) / n,
            sum(per_conv[c][1] * per_conv[c][2] for c in keep) / n,
        )

    ids = [c.sample_id for c in conversations]
    loo: dict[str, Any] = {}
    for left_out in ids:
        rest = [c for c in ids if c != left_out]
        best = max(figures, key=lambda s: sum(pooled(figures[s], rest)))
        loo[left_out] = {"chosen": best, "scored": figures[best][left_out][:2]}
    result = {
        "k": K,
        "per_setting": {
            s: {**{c: v[:2] for c, v in per.items()}, "all": pooled(per, ids)}
            for s, per in figures.items()
        },
        "leave_one_out": loo,
        "leave_one_out_pooled": (
            sum(loo[c]["scored"][0] * figures[loo[c]["chosen"]][c][2] for c in ids)
            / sum(figures[next(iter(figures))][c][2] for c in ids),
            sum(loo[c]["scored"][1] * figures[loo[c]["chosen"]][c][2] for c in ids)
            / sum(figures[next(iter(figures))][c][2] for c in ids),
        ),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"hybrid recall_any@{K} / recall_all@{K} per conversation")
    for s, per in result["per_setting"].items():
        cells = "  ".join(f"{c} {a:.3f}/{b:.3f}" for c, (a, b) in per.items())
        print(f"{s:34} {cells}")
    for c, chosen in loo.items():
        a, b = chosen["scored"]
        print(f"leave out {c}: tuned on the others -> {chosen['chosen']}; {c} {a:.3f}/{b:.3f}")
    a, b = result["leave_one_out_pooled"]
    print(f"leave-one-out pooled: {a:.3f}/{b:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
