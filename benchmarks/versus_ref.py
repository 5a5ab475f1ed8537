"""Per-turn time of this checkout against an earlier commit, in one run (``per_turn.py``).

A change to the loop must not make turns slower; "slower than what" is an earlier commit
measured in the same run, on the same machine, at the same moment. This script checks
that commit out into a temporary git worktree and runs each tree's own
``benchmarks/per_turn.py`` (SQLite, one store size) in turn, ``--rounds`` times
(ref, this, ref, this, ...), so a slow spell of a shared machine lands on both. Each
``per_turn.py`` process also times the plain LangGraph agent beside its own agent, which
gives a second, machine-speed-free comparison: MemGPT / plain agent in each tree.

Both trees run on this virtual environment (``PYTHONPATH`` names the tree): the ref must
import with today's dependencies.

Run: ``.venv/bin/python benchmarks/versus_ref.py --ref 7f44ca1 [--rounds 3] [--turns 30]
[--size 1000] [--embeddings none minilm]``
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import load_average, print_header, table

REPO = Path(__file__).resolve().parent.parent
_P50 = re.compile(r"^\s+(\w+)\s+(\w+)\s+p50: .*?N=[\d,]+ ([\d.]+) (ms|s)\b")
_BASE = re.compile(r"^baseline \(beside (\w+)\), (\w+)\s{2,}(.*)$")


def _ms(value: str, unit: str) -> float:
    return float(value) * (1000.0 if unit == "s" else 1.0)


def _first_time_ms(cells: str) -> float:
    """The first "12.3 ms" / "1.2 s" cell of a table row's rest (the p50 column)."""
    match = re.search(r"([\d.]+) (ms|s)\b", cells)
    if match is None:
        raise ValueError(f"no time in {cells!r}")
    return _ms(match[1], match[2])


def run_tree(tree: Path, args: argparse.Namespace) -> dict[tuple[str, str], tuple[float, float]]:
    """One ``per_turn.py`` run of ``tree``: (embedding, shape) -> (MemGPT p50, plain p50)."""
    command = [
        sys.executable,
        str(tree / "benchmarks" / "per_turn.py"),
        "--sizes",
        str(args.size),
        "--turns",
        str(args.turns),
        "--warmup",
        str(args.warmup),
        "--embeddings",
        *args.embeddings,
    ]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        command, cwd=tree, env=env, capture_output=True, text=True, check=True
    ).stdout
    ours: dict[tuple[str, str], float] = {}
    plain: dict[tuple[str, str], float] = {}
    for line in out.splitlines():
        if match := _P50.match(line):
            ours[(match[1], match[2])] = _ms(match[3], match[4])
        elif match := _BASE.match(line):
            plain[(match[1], match[2])] = _first_time_ms(match[3])  # N is "-", cold blank
    return {key: (ours[key], plain[key]) for key in ours}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument(
        "--embeddings", nargs="+", default=["none", "minilm"], choices=["none", "minilm"]
    )
    args = parser.parse_args()
    print_header(f"versus_ref: per-turn p50, this checkout vs {args.ref} (SQLite, N={args.size})")
    with tempfile.TemporaryDirectory(prefix="memgpt-ref-") as tmp:
        ref_tree = Path(tmp) / "ref"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(ref_tree), args.ref],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        try:
            runs: dict[str, list[dict[tuple[str, str], tuple[float, float]]]] = {
                "ref": [],
                "this": [],
            }
            for i in range(args.rounds):
                for name, tree in (("ref", ref_tree), ("this", REPO)):
                    runs[name].append(run_tree(tree, args))
                    print(f"  round {i + 1} {name}: load {load_average()}", flush=True)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(ref_tree)], cwd=REPO, check=False
            )
    rows: list[list[object]] = []
    for key in sorted(runs["this"][0]):
        ref_p50 = statistics.median(r[key][0] for r in runs["ref"])
        this_p50 = statistics.median(r[key][0] for r in runs["this"])
        ref_rel = statistics.median(r[key][0] / r[key][1] for r in runs["ref"])
        this_rel = statistics.median(r[key][0] / r[key][1] for r in runs["this"])
        rows.append(
            [
                f"{key[0]}, {key[1]}",
                f"{ref_p50:.1f} ms",
                f"{this_p50:.1f} ms",
                f"{this_p50 / ref_p50:.2f}x",
                f"{ref_rel:.2f}x",
                f"{this_rel:.2f}x",
                f"{this_rel / ref_rel:.2f}x",
            ]
        )
    print()
    print(
        table(
            rows,
            [
                "embeddings, turn",
                f"{args.ref} p50",
                "this p50",
                "this / ref",
                "ref / plain agent",
                "this / plain agent",
                "relative",
            ],
        )
    )
    print(
        f"\nmedians over {args.rounds} rounds of {args.turns} turns; load avg at end "
        f"{load_average()}"
    )


if __name__ == "__main__":
    main()
