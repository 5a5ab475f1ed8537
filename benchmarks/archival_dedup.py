"""False merges of the near-duplicate rule: every dev turn inserted as a passage.

Each conversation of a LoCoMo-schema file (LoCoMo dev, BEAM dev) becomes one agent of a
fresh SQLite data folder; every turn (its text) is inserted as an archival passage, in order,
with duplicates merged (``NewPassage(merge_duplicates=True)``, the rule of
``stores.duplicates``: by fact key, and by the nearest passages when there are vectors).
Conversation turns are different messages: any merge is either an exact repeat in the data
(a true duplicate) or a false merge. The run prints, per conversation and in all:

- the baseline: turns whose exact text an earlier turn of the conversation already had;
- the store's merges, split into exact repeats and the others, each other one listed
  (new turn, the stored passage it was merged into) so a person can judge it;
- the rule's margin, words only: every turn checked against *every* earlier turn of its
  conversation (not only the candidates a store looks up), at the shipped share of words
  (``SAME_FACT_SHARE``) and at lower ones, so the figure shows how far the threshold sits
  from the first false merges; and every turn of the whole file against every earlier one
  (all conversations as one agent: more pairs, other speakers' turns).

    python benchmarks/archival_dedup.py --data ../shared/bench/locomo-dev.json [--embeddings minilm]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _common import print_header
from bench.locomo import load_locomo

from langgraph_memgpt.stores import duplicates
from langgraph_memgpt.stores.embeddings import get_embeddings
from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import open_db

SHARES = (duplicates.SAME_FACT_SHARE, 0.4, 0.3)


def _clip(text: str, n: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def rule_margin(turns: list[str], share: float) -> list[tuple[str, str]]:
    """Every turn against every earlier one, words only, at ``share``: the pairs merged."""
    merged: list[tuple[str, str]] = []
    words = [duplicates.fact_words(t) for t in turns]
    plain = [duplicates.normalised(t) for t in turns]
    for n, text in enumerate(turns):
        for m in range(n):
            same = plain[n] == plain[m] or (
                len(words[n]) >= duplicates.MIN_FACT_WORDS
                and words[n] <= words[m]
                and len(words[n]) >= share * len(words[m])
            )
            if same:
                merged.append((text, turns[m]))
                break
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a LoCoMo-schema JSON file")
    parser.add_argument("--embeddings", default="none", help="none (words only) or minilm")
    args = parser.parse_args(argv)
    print_header(f"archival near-duplicates: {args.data} ({args.embeddings})")
    conversations = load_locomo(args.data)
    embeddings = get_embeddings(args.embeddings)
    totals = {"turns": 0, "exact": 0, "merged": 0, "repeats": 0, "others": 0}
    margins: dict[float, list[str]] = {share: [] for share in SHARES}
    listed: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        db = open_db(Path(folder) / "memory.sqlite")
        for conv in conversations:
            turns = [t.text for s in conv.sessions for t in s.turns]
            archive = SqliteArchivalMemory(db, conv.sample_id, embeddings, Path(folder) / "faiss")
            saved = archive.insert_many(
                [
                    NewPassage(t.text, thread_id=s.key, turn=i, merge_duplicates=True)
                    for s in conv.sessions
                    for i, t in enumerate(s.turns, start=1)
                ]
            )
            exact = len(turns) - len(set(turns))
            merged = [(t, p) for t, p in zip(turns, saved, strict=True) if p.duplicate]
            repeats = sum(1 for t, p in merged if t == p.text)
            others = [(t, p.text) for t, p in merged if t != p.text]
            for share in SHARES:
                margins[share] += [
                    f"    {conv.sample_id}: {_clip(new, 90)!r} -> {_clip(old, 90)!r}"
                    for new, old in rule_margin(turns, share)
                    if new != old
                ]
            print(
                f"{conv.sample_id:<14} turns {len(turns):5}  exact-text baseline {exact:3}  "
                f"merged {len(merged):3} (exact repeats {repeats}, others {len(others)})"
            )
            for new, stored in others:
                listed.append(f"  {conv.sample_id}: {_clip(new)!r}\n      -> {_clip(stored)!r}")
            for key, value in (
                ("turns", len(turns)),
                ("exact", exact),
                ("merged", len(merged)),
                ("repeats", repeats),
                ("others", len(others)),
            ):
                totals[key] += value
            archive.close()
        db.conn.close()
    print(
        f"{'all':<14} turns {totals['turns']:5}  exact-text baseline {totals['exact']:3}  "
        f"merged {totals['merged']:3} (exact repeats {totals['repeats']}, "
        f"others {totals['others']})   {time.perf_counter() - started:.1f} s"
    )
    print("merges other than exact repeats (judge each: same fact, or a false merge?):")
    print("\n".join(listed) if listed else "  none")
    every = [t.text for conv in conversations for s in conv.sessions for t in s.turns]
    across = [pair for pair in rule_margin(every, duplicates.SAME_FACT_SHARE) if pair[0] != pair[1]]
    print(
        f"the whole file as one agent ({len(every)} turns), the rule against every earlier "
        f"turn at the shipped share: {len(across)} merges other than exact repeats"
    )
    for new, old in across:
        print(f"    {_clip(new, 90)!r} -> {_clip(old, 90)!r}")
    print("the rule against every earlier turn, words only (merges other than exact repeats):")
    for share in SHARES:
        shipped = " (shipped)" if share == duplicates.SAME_FACT_SHARE else ""
        print(f"  share of words >= {share:.2f}{shipped}: {len(margins[share])}")
        for line in margins[share]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
