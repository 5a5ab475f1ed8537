"""Needle benchmark: is the one message that states a fact found first?

Seeded facts (codes, invented names, numbers, invented places) are placed once each into an
ordinary two-person conversation written for this benchmark, in two variants: as a short
message of their own, and wrapped in a long message (about 100-150 words of everyday
talk). Each fact is then looked up twice: by a few topic words ("storage locker code") and
by its exact identifier ("ZX4417"). Both variants are searched in recall memory (every
message a recall message) and in archival memory (every message a passage), in ``hybrid``
and ``fts`` mode in the same run; the figures are hit@1 and hit@5 (the fact's message first,
or on the first page of five), and the ratio hybrid / fts.

"Asked again": afterwards a later thread asks about every identifier in short questions
("what was ZX4417 again?", three rounds, two phrasings). The questions hold the identifier
too, and short messages win BM25's length normalisation; the statement must still come
first when the identifier is looked up.

    python benchmarks/needle.py [--facts 24] [--filler 400] [--seed 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import print_header

from langgraph_memgpt.stores.embeddings import get_embeddings
from langgraph_memgpt.stores.sqlite.archival import NewPassage, SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.types import RecallMessage

AGENT = "needle"
SPEAKERS = ("Maren", "Tobias")
MODES = ("hybrid", "fts")

# Everyday talk, written for this benchmark. None of it names a fact's topic words.
FILLER = [
    "I finally got the tomatoes to ripen on the balcony, it only took all summer.",
    "The train was late again this morning, so I read half a novel on the platform.",
    "We should try that noodle place near the river, everyone keeps talking about it.",
    "My sister called, she is thinking about moving closer to the coast next year.",
    "Honestly the weekend went by too fast, I barely unpacked the groceries.",
    "I started running again, just short loops around the park before work.",
    "The neighbours are renovating, there has been drilling since eight every day.",
    "Did you see the sunset yesterday? The whole sky turned orange for a minute.",
    "I baked bread for the first time and it came out flat but tasty.",
    "Work has been calm this week, which feels suspicious after last month.",
    "The cat knocked a plant off the shelf and then looked at me like it was my fault.",
    "I am trying to drink less coffee, so far it is not going well.",
    "We watched an old film last night, the kind with long shots of empty roads.",
    "My knee still hurts a little after the hike, nothing serious though.",
    "The library near me reopened with a new reading room, very quiet and bright.",
    "I keep meaning to call my grandmother more often, she loves hearing about the kids.",
    "It rained the whole afternoon so we stayed in and played cards.",
    "I tried painting again, mostly landscapes, mostly badly, but it is relaxing.",
    "The market had the first strawberries of the season, I bought far too many.",
    "Our team lunch turned into a two hour conversation about music from the nineties.",
    "I have been sleeping better since I stopped looking at my phone in bed.",
    "My brother is learning the guitar and sends me recordings every evening.",
    "The bus driver this morning was singing the whole route, it made my day.",
    "I rearranged the living room and now the sofa faces the window.",
    "We are planning a small dinner for friends, nothing fancy, maybe soup and salad.",
    "I found an old photo album in a box, full of pictures from school trips.",
    "The heating made strange noises all night but it seems fine now.",
    "I signed up for a pottery evening class, the first lesson is next week.",
    "The kids built a fort out of blankets and refused to leave it for dinner.",
    "I walked home through the old town, the streets were almost empty.",
    "My friend recommended a podcast about history, I listened to three episodes in a row.",
    "The shop on the corner closed, I will miss their lemon cake.",
    "We finally fixed the squeaky door, it took one drop of oil.",
    "I want to take a proper holiday this year, somewhere with mountains.",
    "The snow melted overnight and the garden is all mud now.",
    "I met an old colleague at the station, we talked until both our trains left.",
    "Cooking for one is harder than it sounds, I always make too much.",
    "The concert was loud and crowded and completely worth it.",
    "I am reading a long book about sailors, it is slow but beautiful.",
    "We spent Sunday cleaning out the garage and found three broken bicycles.",
]
# Ordinary talk that shares a fact's topic words without stating it: what a lookup by
# topic words must see past.
NEAR_MISSES = [
    "The storage room in the basement is full of boxes nobody has opened in years.",
    "The cabin has no proper heating, so bring warm socks.",
    "I bought a new bike lock because the old one rusted shut.",
    "The dentist waiting room had magazines from three years ago.",
    "Parking near the office is impossible after nine.",
    "We watched the boats come into the harbour at dusk.",
    "I went to the gym twice this week, my legs are complaining.",
    "Our landlord finally answered about the leaking window.",
    "Comparing insurance offers is the most boring thing I have done all year.",
    "The wedding was lovely, the speeches went on a bit long.",
    "My flight was delayed by two hours but I slept most of it.",
    "The plumber said the pipes are older than the house itself.",
    "I keep my passport in a box under the bed.",
    "We talked about going on a retreat somewhere quiet next spring.",
    "I returned my library books three weeks late, the fine was tiny.",
    "The tailor on our street also repairs shoes.",
    "The smoke alarm went off when I burned the toast.",
    "The summer house needs a new coat of paint.",
    "I had my flu vaccination at the pharmacy, it took five minutes.",
    "Tax season is coming and I have not even sorted my receipts.",
    "The router blinks red every evening and then recovers on its own.",
    "We visited a vineyard and came back with far too much wine.",
    "I locked myself out last winter and waited an hour in the cold.",
    "The theatre downstairs is showing a comedy this month.",
]
REPLIES = [
    "That sounds lovely.",
    "Oh no, I hope it gets better soon.",
    "Ha, that is so typical.",
    "Tell me more about it when we meet.",
    "I know exactly what you mean.",
    "Same here, honestly.",
    "That is a good idea, let us do it.",
    "Wow, I did not expect that.",
]

# (topic words to look it up by, statement with {x} for the identifier, kind of identifier)
FACTS = [
    ("storage locker code", "the code for the storage locker is {x}", "code"),
    ("wifi password at the cabin", "the wifi password at the cabin is {x}", "code"),
    ("bike lock combination", "my bike lock combination is {x}", "number"),
    ("dentist name", "my new dentist is called Dr {x}", "name"),
    ("parking permit number", "the parking permit number is {x}", "number"),
    ("village where the boat is moored", "the boat is moored in a village called {x}", "place"),
    ("gym membership id", "my gym membership id is {x}", "code"),
    ("landlord surname", "the landlord's surname is {x}", "name"),
    ("insurance policy number", "the insurance policy number is {x}", "number"),
    ("town of the wedding venue", "the wedding venue is in a town called {x}", "place"),
    ("flight booking reference", "the flight booking reference is {x}", "code"),
    ("plumber name", "the plumber who fixed the boiler is {x}", "name"),
    ("safe deposit box number", "the safe deposit box number is {x}", "number"),
    ("island of the retreat", "the retreat is on an island called {x}", "place"),
    ("library card pin", "my library card pin is {x}", "number"),
    ("tailor name", "the tailor who shortened the coat is {x}", "name"),
    ("alarm disarm code", "the alarm disarm code is {x}", "code"),
    ("hamlet of the summer house", "the summer house is in a hamlet called {x}", "place"),
    ("vaccination batch number", "the vaccination batch number was {x}", "number"),
    ("accountant name", "our accountant is {x}", "name"),
    ("router admin password", "the router admin password is {x}", "code"),
    ("valley of the vineyard", "the vineyard is in a valley called {x}", "place"),
    ("locksmith name", "the locksmith we trust is {x}", "name"),
    ("seat number at the theatre", "our seat number at the theatre is {x}", "number"),
]
_SYLLABLES = ["ka", "lo", "ve", "tri", "mon", "sa", "dre", "qui", "bel", "orn", "zu", "fen"]


@dataclass(frozen=True)
class Fact:
    """One seeded fact: how it is stated and how it is looked up."""

    topic: str
    statement: str
    identifier: str


def _identifier(kind: str, rng: random.Random) -> str:
    if kind == "code":
        return "".join(rng.choices(string.ascii_uppercase, k=2)) + str(rng.randint(1000, 9999))
    if kind == "number":
        return str(rng.randint(100000, 999999))
    word = "".join(rng.choices(_SYLLABLES, k=3))
    return word.capitalize()


def make_facts(n: int, rng: random.Random) -> list[Fact]:
    """``n`` facts (cycling through the templates, each with a fresh identifier)."""
    out = []
    for i in range(n):
        topic, template, kind = FACTS[i % len(FACTS)]
        x = _identifier(kind, rng)
        out.append(Fact(topic, template.format(x=x), x))
    return out


def _long(statement: str, rng: random.Random) -> str:
    """The statement wrapped in about 100-150 words of everyday talk, in the middle."""
    talk = FILLER + NEAR_MISSES
    before = rng.sample(talk, 4)
    after = rng.sample([s for s in talk if s not in before], 4)
    text = " ".join([*before, f"Oh, and before I forget, {statement}.", *after])
    while len(text.split()) > 150:
        after = after[:-1]
        text = " ".join([*before, f"Oh, and before I forget, {statement}.", *after])
    return text


def conversation(
    facts: Sequence[Fact], filler: int, *, long: bool, seed: int
) -> tuple[list[RecallMessage], dict[int, int]]:
    """Messages (sessions of 20, a day apart) and, per fact, the index of its message."""
    rng = random.Random(seed)
    texts: list[str] = []
    for i in range(filler):
        if i % 2 == 1 and rng.random() < 0.4:
            texts.append(rng.choice(REPLIES))
        else:
            pool = NEAR_MISSES if rng.random() < 0.2 else FILLER
            texts.append(" ".join(rng.sample(pool, rng.randint(1, 2))))
    slots = sorted(rng.sample(range(1, filler), len(facts)))
    where: dict[int, int] = {}
    for offset, (slot, index) in enumerate(zip(slots, range(len(facts)), strict=True)):
        statement = facts[index].statement
        text = _long(statement, rng) if long else f"By the way, {statement}."
        texts.insert(slot + offset, text)
    for index, fact in enumerate(facts):
        where[index] = next(i for i, t in enumerate(texts) if fact.statement in t)
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    messages = [
        RecallMessage(
            agent_id=AGENT,
            thread_id=f"session-{i // 20}",
            message_id=f"m{i}",
            role="user" if i % 2 == 0 else "assistant",
            text=text,
            created_at=(start + timedelta(days=i // 20, minutes=i % 20)).isoformat(),
            turn=i % 20,
            name=SPEAKERS[i % 2],
        )
        for i, text in enumerate(texts)
    ]
    return messages, where


def asked_again(facts: Sequence[Fact], after: str, rounds: int = 3) -> list[RecallMessage]:
    """A later thread asking about every identifier, ``rounds`` times, in two phrasings."""
    phrasings = ("what was {x} again?", "can you remind me what {x} is?")
    start = datetime.fromisoformat(after) + timedelta(days=30)
    out = []
    for r in range(rounds):
        for i, fact in enumerate(facts):
            n = len(out)
            out.append(
                RecallMessage(
                    agent_id=AGENT,
                    thread_id="asking-again",
                    message_id=f"q{n}",
                    role="user",
                    text=phrasings[(r + i) % 2].format(x=fact.identifier),
                    created_at=(start + timedelta(minutes=n)).isoformat(),
                    turn=n,
                    name=SPEAKERS[0],
                )
            )
    return out


def _rank(ids: Sequence[str], wanted: str) -> int | None:
    return ids.index(wanted) if wanted in ids else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build both variants in recall and archival, look every fact up, tally hits."""
    rng = random.Random(args.seed)
    facts = make_facts(args.facts, rng)
    embeddings = get_embeddings(args.embedding_model)
    tally: dict[str, dict[str, list[int | None]]] = {}

    def record(kind: str, mode: str, rank: int | None) -> None:
        tally.setdefault(kind, {}).setdefault(mode, []).append(rank)

    with tempfile.TemporaryDirectory() as tmp:
        for variant in ("short", "long"):
            messages, where = conversation(
                facts, args.filler, long=variant == "long", seed=args.seed
            )
            folder = Path(tmp) / variant
            db = open_db(folder / "memory.sqlite")
            recall = SqliteRecallMemory(db, AGENT, embeddings, folder / "faiss")
            recall.add_many(messages)
            archival = SqliteArchivalMemory(db, AGENT, embeddings, folder / "faiss")
            passages = archival.insert_many([NewPassage(m.text) for m in messages])
            passage_of = {i: p.id for i, p in enumerate(passages)}
            for i, fact in enumerate(facts):
                for lookup, query in (("topic", fact.topic), ("exact", fact.identifier)):
                    for mode in MODES:
                        page = recall.search(query, mode=mode, page_size=5)
                        ids = [h.item.message_id for h in page.hits]
                        record(f"recall/{variant}/{lookup}", mode, _rank(ids, f"m{where[i]}"))
                        apage = archival.search(query, mode=mode, page_size=5)
                        pids = [str(h.item.id) for h in apage.hits]
                        wanted = str(passage_of[where[i]])
                        record(f"archival/{variant}/{lookup}", mode, _rank(pids, wanted))
            recall.add_many(asked_again(facts, messages[-1].created_at))
            for i, fact in enumerate(facts):
                for mode in MODES:
                    page = recall.search(fact.identifier, mode=mode, page_size=5)
                    ids = [h.item.message_id for h in page.hits]
                    record(f"recall/{variant}/asked-again", mode, _rank(ids, f"m{where[i]}"))
            recall.close()
            archival.close()
            db.conn.close()

    kinds: dict[str, Any] = {}
    for kind, by_mode in tally.items():
        kinds[kind] = {}
        for mode, ranks in by_mode.items():
            kinds[kind][mode] = {
                "hit@1": sum(r == 0 for r in ranks) / len(ranks),
                "hit@5": sum(r is not None for r in ranks) / len(ranks),
                "n": len(ranks),
            }
        fts1 = kinds[kind]["fts"]["hit@1"]
        kinds[kind]["hybrid/fts hit@1"] = (
            round(kinds[kind]["hybrid"]["hit@1"] / fts1, 3) if fts1 else None
        )
    return {
        "facts": args.facts,
        "filler_messages": args.filler,
        "seed": args.seed,
        "embedding_model": args.embedding_model,
        "kinds": kinds,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run, print a table (or ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=24, help="seeded facts (default 24)")
    parser.add_argument("--filler", type=int, default=400, help="filler messages (default 400)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embedding-model", default="minilm")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.facts < 1 or args.filler < args.facts:
        parser.error("need --facts >= 1 and --filler >= --facts")
    report = run(args)
    if args.json:
        print(json.dumps({"command": " ".join(sys.argv), **report}, indent=2))
        return 0
    print_header("needle: one stated fact among ordinary talk")
    print(f"# {args.facts} facts in {args.filler} filler messages, seed {args.seed}")
    print(f"{'kind':30} {'hybrid @1':>9} {'@5':>6} {'fts @1':>8} {'@5':>6} {'ratio':>6}")
    for kind, figures in report["kinds"].items():
        h, f = figures["hybrid"], figures["fts"]
        ratio = figures["hybrid/fts hit@1"]
        print(
            f"{kind:30} {h['hit@1']:9.3f} {h['hit@5']:6.3f} {f['hit@1']:8.3f} {f['hit@5']:6.3f} "
            f"{ratio if ratio is not None else '-':>6}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
