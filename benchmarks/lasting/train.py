"""Train the core gate's learned judgment of what lasts (`small_model.lasting`).

Data: ``sentences.jsonl`` here, 4,390 sentences a user might type to an assistant, each
labelled ``fact`` (something lasting about them) or ``small_talk``, written by hand on
2026-12-07 by eight helper sessions that saw no scenario file and no output of the gate,
about 500-600 each, repeats across parts left out:

- a, everyday facts and small talk; b, shapes a keyword rule gets wrong; c, fragments with
  no first person; d, a day's chat lines of many people (written for the first model, of
  fragments only);
- e, long stories (25-80 words) with a fact inside or none; f, short lookalike pairs
  (years, "always", others' jobs, dated errands in small talk); g, twenty Englishes;
  h, the same topic told of the user and of someone else (written for this model).

Model: logistic regression on each sentence's MiniLM vector and the rules' cues
(`core_gate.gate_cues`), fitted to its optimum by Newton's method: the same data gives the
same weights.

Printed, each part scored by the model trained on the other parts (on sentences it never
saw): the rules alone (`core_gate.rules_verdict`) against the gate (told outright, or
judged lasting by the model: `lasting.judged_lasting`), small talk taken and facts missed
per part. Then the model trained on all of them is written to
``langgraph_memgpt/small_model/lasting_weights.json`` (``--check`` compares instead of
writing, and fails if the file differs).

Run: ``.venv/bin/python benchmarks/lasting/train.py [--check]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from langgraph_memgpt.small_model import lasting
from langgraph_memgpt.small_model.core_gate import gate_cues, rules_verdict, told_outright
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

DATA = Path(__file__).with_name("sentences.jsonl")
L2 = 1.0
"""The ridge on the weights (not the bias); chosen by the parts' cross-validation (0.1-30)."""


def train(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Logistic regression, L2-regularised, fitted by Newton's method to its optimum.

    The optimum is unique, so the weights do not depend on a step size or a step count
    (and ``--check`` reproduces them on any machine).
    """
    ones = np.hstack([x, np.ones((len(x), 1))])
    ridge = L2 * np.eye(ones.shape[1])
    ridge[-1, -1] = 0.0
    w = np.zeros(ones.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(ones @ w)))
        gradient = ones.T @ (p - y) + ridge @ w
        hessian = (ones * (p * (1 - p))[:, None]).T @ ones + ridge
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w[:-1], float(w[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    texts = [r["text"].strip() for r in rows]
    y = np.array([r["label"] == "fact" for r in rows], dtype=np.float64)
    cues = [gate_cues(text) for text in texts]
    names = sorted(cues[0])
    x = np.hstack(
        [
            MiniLMEmbeddings().embed_array(texts).astype(np.float64),
            np.array([[c[name] for name in names] for c in cues]),
        ]
    )
    if not args.check:
        _report(x, y, texts, np.array([r["part"] for r in rows]))
    w, b = train(x, y)
    model = {
        "about": "core gate: log-odds that a sentence states something lasting about the "
        "user, from its MiniLM vector and the rules' cues; benchmarks/lasting/train.py",
        "sentences": len(rows),
        "l2": L2,
        "cues": names,
        "bias": round(b, 6),
        "weights": [round(float(v), 6) for v in w],
    }
    if args.check:
        same = lasting.WEIGHTS.exists() and _close(json.loads(lasting.WEIGHTS.read_text()), model)
        print("weights file:", "matches" if same else "DIFFERS")
        return 0 if same else 1
    lasting.WEIGHTS.write_text(json.dumps(model) + "\n")
    print(f"wrote {lasting.WEIGHTS}")
    return 0


def _report(x: np.ndarray, y: np.ndarray, texts: list[str], parts: np.ndarray) -> None:
    """Each part scored by a model trained on the others: the rules alone against the gate."""
    outright = np.array([told_outright(text) for text in texts])
    rules = np.array([rules_verdict(text) for text in texts])
    held_score = np.zeros(len(texts))
    for part in sorted(set(parts)):
        w, b = train(x[parts != part], y[parts != part])
        held_score[parts == part] = x[parts == part] @ w + b
    gate = outright | np.array(
        [lasting.judged_lasting(s, rules_take=r) for s, r in zip(held_score, rules, strict=True)]
    )
    print(f"{len(texts)} sentences, {int(y.sum())} facts; each part scored by a model trained")
    print(
        f"on the other parts; told outright: {int(outright.sum())}, of them small talk "
        f"{int((outright & (y == 0)).sum())}"
    )
    print(
        "| part | sentences | rules: small talk taken | rules: facts missed "
        "| gate: small talk taken | gate: facts missed |"
    )
    print("|---|---|---|---|---|---|")
    for part in [*sorted(set(parts)), "all"]:
        idx = parts == part if part != "all" else np.ones(len(texts), dtype=bool)
        facts, talk = idx & (y == 1), idx & (y == 0)
        print(
            f"| {part} | {int(idx.sum())} | {int((rules & talk).sum())} of {int(talk.sum())} "
            f"| {int((~rules & facts).sum())} of {int(facts.sum())} "
            f"| {int((gate & talk).sum())} | {int((~gate & facts).sum())} |"
        )


def _close(a: dict[str, object], b: dict[str, object]) -> bool:
    wa, wb = np.array(a["weights"]), np.array(b["weights"])
    same_cues = a.get("cues") == b.get("cues")
    return same_cues and wa.shape == wb.shape and bool(np.allclose(wa, wb, atol=1e-3))


if __name__ == "__main__":
    sys.exit(main())
