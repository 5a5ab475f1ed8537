"""Ranking levers tried on LoCoMo recall search, per conversation, next to the ranking kept.

Hybrid recall search fuses six signals (``stores.ranking.fuse``). This replays every dev
question's signals (captured once from the real search, with the query vector and the
stored message vectors) through variations of the ranking, and prints recall_any@10 /
recall_all@10 per conversation for each. A lever is worth keeping only if it helps each
conversation on its own; the ``each`` column says whether it does (every conversation at
least as good on both figures, one better). Variations:

- ``weights a/b/c/d/e``: signal weights (message words, context words, message vector,
  context vector, named signals); the best of a 5x5x5x5x3 grid is listed;
- ``diversity``: a result next to (within ``r`` turns of) or in the same session as one
  ranked above it is discounted by ``lam`` per such result (MMR-like);
- ``spread``: the session diversity above, only for questions that ask across
  conversations (``mentions.asks_across_sessions``), as ``search.spread_sessions`` does;
- ``session prior``: one more signal, the similarity of the query to the mean vector of
  the message's session;
- ``feedback``: the query vector moved towards the mean of the first ``n`` results
  (Rocchio), the vector signals recomputed;
- ``context lo..hi``: the context vector as the mean over a different window;
- ``norm``: rank signals normalised by their maximum or z-score; CombMNZ (the fused score
  times the number of signals that matched, to a power);
- ``stop words``: NLTK's 179-word English list added to the query stop words (searched
  again, not replayed).

Baseline: the ranking as it is (``fuse`` on the captured signals), in the same run.

    python benchmarks/locomo_levers.py ../shared/bench/locomo-dev.json --data-dir /tmp/locomo
"""

from __future__ import annotations

import argparse
import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import print_header
from bench.locomo import load_locomo, recall_messages

from langgraph_memgpt.stores import ranking, words
from langgraph_memgpt.stores import search as search_module
from langgraph_memgpt.stores.embeddings import embed_query, get_embeddings
from langgraph_memgpt.stores.mentions import asks_across_sessions, topic_of
from langgraph_memgpt.stores.ranking import Signal, fuse
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory

K = 10
Record = dict[str, Any]
Ranker = Callable[[Record], list[int]]


def capture(data: Path, data_dir: Path) -> tuple[list[Record], dict[str, Record]]:
    """Every question's fuse() inputs, query vector and evidence; each conversation's rows."""
    embeddings = get_embeddings("minilm")
    seen: list[tuple[Sequence[Signal[int]], dict[str, Any]]] = []
    real = search_module.fuse

    def spy(signals: Sequence[Signal[int]], **kw: Any) -> list[tuple[int, float]]:
        seen.append((signals, kw))
        return real(signals, **kw)

    search_module.fuse = spy  # type: ignore[assignment]
    questions: list[Record] = []
    convs: dict[str, Record] = {}
    try:
        for conv in load_locomo(data):
            folder = data_dir / conv.sample_id
            db = open_db(folder / "memory.sqlite")
            recall = SqliteRecallMemory(db, conv.sample_id, embeddings, folder / "faiss")
            recall.add_many(recall_messages(conv, conv.sample_id))
            prefix = f"{conv.sample_id}:"
            rows = db.conn.execute(
                "SELECT id, message_id, thread_id, turn FROM recall WHERE agent_id = ?",
                (conv.sample_id,),
            ).fetchall()
            vectors = {
                str(key): {
                    int(r[0]): np.frombuffer(r[1], dtype=np.float32)
                    for r in db.conn.execute(
                        "SELECT item_id, embedding FROM vectors WHERE tier = 'recall' "
                        "AND agent_id = ? AND key = ?",
                        (conv.sample_id, key),
                    )
                }
                for key in ("turn", "context", "context_tail")
            }
            convs[conv.sample_id] = {
                "dia": {int(r[0]): str(r[1]).removeprefix(prefix) for r in rows},
                "place": {int(r[0]): (str(r[2]), int(r[3])) for r in rows},
                "vectors": vectors,
            }
            for q in conv.questions:
                seen.clear()
                recall.search(q.question, mode="hybrid", page_size=K)
                signals, kw = seen[-1]
                questions.append(
                    {
                        "conv": conv.sample_id,
                        "question": q.question,
                        "evidence": set(q.evidence),
                        "signals": list(signals),
                        "kw": kw,
                        "query": embed_query(
                            embeddings, topic_of(q.question, recall.participants())
                        ),
                    }
                )
            recall.close()
            db.conn.close()
    finally:
        search_module.fuse = real  # type: ignore[assignment]
    return questions, convs


def score(
    questions: list[Record], convs: dict[str, Record], ranker: Ranker
) -> dict[str, tuple[float, float]]:
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for q in questions:
        got = {convs[q["conv"]]["dia"][k] for k in ranker(q)[:K]}
        tally = per[q["conv"]]
        tally[0] += bool(q["evidence"] & got)
        tally[1] += q["evidence"] <= got
        tally[2] += 1
    out = {c: (t[0] / t[2], t[1] / t[2]) for c, t in sorted(per.items())}
    n = sum(t[2] for t in per.values())
    out["all"] = (sum(t[0] for t in per.values()) / n, sum(t[1] for t in per.values()) / n)
    return out


def ranked(q: Record, signals: Sequence[Signal[int]]) -> list[int]:
    return [key for key, _ in fuse(signals, **q["kw"])]


def baseline(q: Record) -> list[int]:
    return ranked(q, q["signals"])


def weighted(w: Sequence[float]) -> Ranker:
    def rank(q: Record) -> list[int]:
        signals = q["signals"]
        return ranked(q, [Signal(s.scores, s.kind, w[min(i, 4)]) for i, s in enumerate(signals)])

    return rank


def diversity(convs: dict[str, Record], lam: float, reach: int | None) -> Ranker:
    """Greedy re-ranking of the first 60: discounted per neighbour (or session) ranked above."""

    def rank(q: Record) -> list[int]:
        place = convs[q["conv"]]["place"]
        pairs = fuse(q["signals"], **q["kw"])
        pool, rest = dict(pairs[:60]), [k for k, _ in pairs[60:]]
        picked: list[int] = []
        while pool:

            def value(key: int) -> float:
                thread, turn = place[key]
                near = sum(
                    1
                    for p in picked
                    if place[p][0] == thread and (reach is None or abs(place[p][1] - turn) <= reach)
                )
                return pool[key] * (1 - lam) ** near

            best = max(pool, key=value)
            picked.append(best)
            del pool[best]
        return picked + rest

    return rank


def _if_across(q: Record, spread: Ranker) -> list[int]:
    """``spread``'s ranking for a question asked across sessions, else the kept one."""
    return spread(q) if asks_across_sessions(q["question"]) else baseline(q)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _nearest(vectors: dict[int, np.ndarray], query: np.ndarray, k: int = 50) -> dict[int, float]:
    ids = list(vectors)
    sims = np.stack([vectors[i] for i in ids]) @ query
    return {ids[i]: float(sims[i]) for i in np.argsort(-sims)[:k]}


def session_prior(convs: dict[str, Record], weight: float) -> Ranker:
    means: dict[str, dict[str, np.ndarray]] = {}
    for name, conv in convs.items():
        by: dict[str, list[np.ndarray]] = defaultdict(list)
        for key, vector in conv["vectors"]["turn"].items():
            by[conv["place"][key][0]].append(vector)
        means[name] = {t: _unit(np.mean(v, axis=0)) for t, v in by.items()}

    def rank(q: Record) -> list[int]:
        place, sessions = convs[q["conv"]]["place"], means[q["conv"]]
        candidates = {k for s in q["signals"] for k in s.scores}
        prior = {k: float(sessions[place[k][0]] @ q["query"]) for k in candidates}
        return ranked(q, [*q["signals"], Signal(prior, "similarity", weight)])

    return rank


def feedback(convs: dict[str, Record], beta: float, n: int) -> Ranker:
    def rank(q: Record) -> list[int]:
        vectors = convs[q["conv"]]["vectors"]
        first = [k for k in baseline(q)[:n] if k in vectors["turn"]]
        if not first:
            return baseline(q)
        moved = _unit(q["query"] + beta * _unit(np.mean([vectors["turn"][k] for k in first], 0)))
        contexts = {**vectors["context"], **vectors["context_tail"]}
        signals = list(q["signals"])
        signals[2] = Signal(_nearest(vectors["turn"], moved), "similarity")
        signals[3] = Signal(_nearest(contexts, moved), "similarity")
        return ranked(q, signals)

    return rank


def context_window(convs: dict[str, Record], before: int, after: int) -> Ranker:
    windows: dict[str, dict[int, np.ndarray]] = {}
    for name, conv in convs.items():
        threads: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for key, (thread, turn) in conv["place"].items():
            if key in conv["vectors"]["turn"]:
                threads[thread].append((turn, key))
        out: dict[int, np.ndarray] = {}
        for items in threads.values():
            ids = [k for _, k in sorted(items)]
            for i, key in enumerate(ids):
                window = ids[max(0, i - before) : i + after + 1]
                out[key] = _unit(np.sum([conv["vectors"]["turn"][j] for j in window], axis=0))
        windows[name] = out

    def rank(q: Record) -> list[int]:
        signals = list(q["signals"])
        signals[3] = Signal(_nearest(windows[q["conv"]], q["query"]), "similarity")
        return ranked(q, signals)

    return rank


def normalised(how: str) -> Ranker:
    def by_max(scores: Any) -> dict[Any, float]:
        top = max(scores.values(), default=0.0)
        return {k: v / top if top > 0 else 1.0 for k, v in scores.items()}

    def by_z(scores: Any) -> dict[Any, float]:
        values = np.array(list(scores.values()) or [0.0])
        spread = float(values.std())
        mean = float(values.mean())
        return {k: (v - mean) / spread if spread > 0 else 1.0 for k, v in scores.items()}

    def rank(q: Record) -> list[int]:
        kept = ranking.minmax_normalize
        ranking.minmax_normalize = by_max if how == "max" else by_z  # type: ignore[assignment]
        try:
            return baseline(q)
        finally:
            ranking.minmax_normalize = kept  # type: ignore[assignment]

    return rank


def comb_mnz(power: float) -> Ranker:
    def rank(q: Record) -> list[int]:
        matched: dict[int, int] = defaultdict(int)
        for s in q["signals"]:
            for key, value in s.scores.items():
                if s.kind == "rank" or value > ranking.SIMILARITY_FLOOR:
                    matched[key] += 1
        pairs = fuse(q["signals"], **q["kw"])
        return [k for k, v in sorted(pairs, key=lambda p: -p[1] * matched.get(p[0], 1) ** power)]

    return rank


NLTK_EXTRA = """about above after again against all am any been before being below between both
can couldn didn doesn doing don down during each few further hadn hasn haven having here hers
herself him himself into isn itself just ll more most mustn myself needn no nor not now off
once only other ours ourselves out over own re same shan should shouldn some such than then
there theirs themselves these those through too under until up very wasn weren while won
wouldn yours yourself yourselves""".split()


def stop_word_run(data: Path, data_dir: Path) -> list[Record]:
    kept = words.STOP_WORDS
    words.STOP_WORDS = kept | frozenset(NLTK_EXTRA)
    try:
        return capture(data, data_dir)[0]
    finally:
        words.STOP_WORDS = kept


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="LoCoMo JSON file")
    parser.add_argument("--data-dir", type=Path, required=True, help="memory stores (reused)")
    args = parser.parse_args(argv)
    print_header("ranking levers on LoCoMo recall search, per conversation")
    questions, convs = capture(args.data, args.data_dir)
    base = score(questions, convs, baseline)
    rows: list[tuple[str, dict[str, tuple[float, float]]]] = [("kept ranking", base)]
    grid = [
        (w, score(questions, convs, weighted(w)))
        for w in itertools.product(
            *[(0.5, 0.75, 1.0, 1.25, 1.5)] * 2,
            (1.0,),
            *[(0.5, 0.75, 1.0, 1.25, 1.5)],
            (0.5, 1.0, 1.5),
        )
    ]
    best_w, best = max(grid, key=lambda pair: sum(pair[1]["all"]))
    rows.append(("weights " + "/".join(map(str, best_w)) + " (grid best)", best))
    for reach, lam in ((1, 0.1), (2, 0.1), (None, 0.1)):
        label = f"diversity {'session' if reach is None else f'r={reach}'} lam={lam}"
        rows.append((label, score(questions, convs, diversity(convs, lam, reach))))
    for lam in (0.1, 0.2, 0.3, 0.5):
        spread = diversity(convs, lam, None)
        rows.append(
            (
                f"spread (asks across sessions) lam={lam}",
                score(questions, convs, lambda q, s=spread: _if_across(q, s)),
            )
        )
    for w in (0.25, 0.5):
        rows.append((f"session prior {w}", score(questions, convs, session_prior(convs, w))))
    for beta, n in ((0.3, 1), (0.3, 3), (0.5, 3)):
        rows.append(
            (f"feedback beta={beta} n={n}", score(questions, convs, feedback(convs, beta, n)))
        )
    for before, after in ((1, 1), (2, 0), (0, 2), (3, 3)):
        label = f"context {before}..{after}"
        rows.append((label, score(questions, convs, context_window(convs, before, after))))
    for how in ("max", "z"):
        rows.append((f"norm {how}", score(questions, convs, normalised(how))))
    rows.append(("CombMNZ 0.25", score(questions, convs, comb_mnz(0.25))))
    stop = stop_word_run(args.data, args.data_dir)
    rows.append(("stop words + NLTK", score(stop, convs, baseline)))
    names = [c for c in base if c != "all"]
    print(f"{'lever':44} " + "  ".join(f"{c:>11}" for c in [*names, "all"]) + "  each")
    for label, fig in rows:
        each = all(fig[c][0] >= base[c][0] and fig[c][1] >= base[c][1] for c in names) and any(
            fig[c] != base[c] for c in names
        )
        cells = "  ".join(f"{fig[c][0]:.3f}/{fig[c][1]:.3f}" for c in [*names, "all"])
        print(f"{label:44} {cells}  {'yes' if each else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
