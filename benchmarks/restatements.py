"""Can meaning tell a fact said again in other words from a different fact? (issue 46)

A ``human`` line that repeats a held fact in other words ("Has been vegan for ten years."
beside "Doesn't eat any animal products at all.") shares no word with it, so the word rule
(``core_gate.held_already``, ``stores.duplicates``) cannot catch it. This prints, for
restatements from the scenario files and for pairs of *different* facts of one person, the
word rule's verdict (the baseline), the cosine of the embedded model (MiniLM) and the
verdict of the shipped rule (``small_model.same_fact``: the cosine with guards on names,
numbers, relatives, changes and negations), then the range of each: a cosine threshold
alone could merge restatements only if every restatement sat above every pair of
different facts.

With ``--recorded``, it also takes every pair of lines of one agent's ``human`` block in
the recorded ``local_turns`` runs (``benchmarks/results/local_turns-*.json``) and lists the
pairs the shipped rule takes for one fact, so a person can judge each.

    python benchmarks/restatements.py [--recorded]
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from _common import print_header

from langgraph_memgpt.small_model.core_gate import held_already
from langgraph_memgpt.small_model.same_fact import same_fact
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

RESTATED = [
    # (said again, the line held), from turn_scenarios_fresh.json and _third.json tune halves
    ("I don't eat any animal products at all.", "Has been vegan for ten years."),
    ("I spend my days getting injured athletes back on their feet.", "Is a physiotherapist."),
    ("I grew up in Uzbekistan.", "From Samarkand originally."),
    ("Fish and seafood are fine for me, just no chicken, beef or pork.", "Is pescatarian."),
    ("Climbing is my thing, two evenings a week.", "Goes climbing twice a week."),
    ("I spend my days looking after people's teeth.", "Is a dentist."),
    ("I don't eat meat or fish.", "Is vegetarian."),
    ("I do electrical work for a living.", "Works as an electrician."),
]
DIFFERENT = [
    # (new fact, a different fact of the same person)
    ("Lives in York.", "Lives in Leeds."),
    ("Sister Anna lives in Leeds.", "Sister Priya lives in Leeds."),
    ("Works as a nurse.", "Works as a pharmacist."),
    ("Dislikes jazz.", "Likes jazz."),
    ("Has a peanut allergy.", "Has asthma and carries an inhaler."),
    ("Daughter Ada starts school in September.", "Son Kwame starts university in September."),
    ("Goran is from Zagreb.", "Name is Goran."),
    ("Brother Omar lives in Cairo.", "Older sister Farida lives with the user."),
    ("Is allergic to shellfish.", "Allergic to penicillin."),
]


RESULTS = Path(__file__).parent / "results"


def recorded_pairs() -> set[tuple[str, str, str]]:
    """(agent, line, later line) of every recorded run's final ``human`` blocks."""
    pairs: set[tuple[str, str, str]] = set()
    for path in sorted(RESULTS.glob("local_turns-*.json")):
        run = json.loads(path.read_text())
        for layout in (run.get("layouts") or {}).values():
            for agent, memory in (layout.get("memory") or {}).items():
                human = (memory.get("blocks") or {}).get("human") or ""
                lines = [line.strip() for line in human.splitlines() if line.strip()]
                pairs.update((agent, a, b) for a, b in itertools.combinations(lines, 2))
    return pairs


def main() -> None:
    """Print each pair's word verdict and cosine, then the two ranges."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recorded", action="store_true", help="also the recorded runs' lines")
    args = parser.parse_args()
    print_header("restatements: words and meaning (benchmarks/restatements.py)")
    model = MiniLMEmbeddings()
    ranges: dict[str, list[float]] = {}
    caught: dict[str, int] = {}
    merged: dict[str, int] = {}
    for kind, pairs in (("restated", RESTATED), ("different", DIFFERENT)):
        print(f"\n{kind}: cosine  words-say-same  same_fact  new | held")
        for new, held in pairs:
            vectors = model.embed_array([new, held])
            cosine = float(vectors[0] @ vectors[1])
            same = held_already(new, [held]) is not None
            rule = same_fact(new, [held]) is not None
            ranges.setdefault(kind, []).append(cosine)
            caught[kind] = caught.get(kind, 0) + same
            merged[kind] = merged.get(kind, 0) + rule
            print(
                f"  {cosine:6.3f}  {'yes' if same else 'no ':3s}  {'yes' if rule else 'no ':3s}"
                f"  {new} | {held}"
            )
    low, high = min(ranges["restated"]), max(ranges["different"])
    print(
        f"\nwords (baseline) call {caught['restated']}/{len(RESTATED)} restatements the same "
        f"and {caught['different']}/{len(DIFFERENT)} different facts the same"
    )
    print(
        f"same_fact merges {merged['restated']}/{len(RESTATED)} restatements and "
        f"{merged['different']}/{len(DIFFERENT)} different facts"
    )
    print(
        f"meaning: restatements {low:.3f}..{max(ranges['restated']):.3f}, different facts "
        f"{min(ranges['different']):.3f}..{high:.3f}: "
        + ("a threshold separates them" if low > high else "no threshold separates them")
    )
    if args.recorded:
        pairs = recorded_pairs()
        merged = sorted({(a, b) for _, a, b in pairs if same_fact(b, [a]) or same_fact(a, [b])})
        print(
            f"\nrecorded human blocks: {len(pairs)} pairs of one agent's lines, "
            f"{len(merged)} taken by same_fact for one fact:"
        )
        for a, b in merged:
            print(f"  {a} | {b}")


if __name__ == "__main__":
    main()
