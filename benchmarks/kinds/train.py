"""Train the model that tells what kind of fact a held line is (`small_model.kinds`).

Data: ``lines.jsonl`` here, 2,111 lasting facts about a person labelled with their kind
(name, work, health, home, family, pet, likes, plans, other) and their form (``note``: as
the agent writes it in core memory, "Fixes lifts in office buildings."; ``user``: as the
user typed it), written by hand on 2026-12-07 by three helper sessions that saw no scenario
file and no output of the model (``part``: a, everyday lines; b, shapes a keyword rule
gets wrong; c, contrast sets, one topic told as a job, a hobby, a relative, a plan...:
sentence vectors mostly say the topic); and ``questions.jsonl``, questions a user asks
about themselves labelled with the kind whose line answers them, or ``none``, by the
sessions of parts a and b. The question rules were written on part a's questions; part b's
were read only to report.

Model: multinomial logistic regression on each line's MiniLM vector (plain gradient descent
from zero, fixed steps: the same data gives the same weights).

Printed, each part scored by the model trained on the others (lines it never saw): for each
kind a question is read for (`kinds.ASKED`), how many of its lines the model is `kinds.SURE`
of (found), and how many lines of other kinds it is sure are of that kind (wrong); then how
the question rules (`kinds.kind_asked`) read each part's questions. Then the model trained
on every line is written to ``langgraph_memgpt/small_model/kind_weights.json`` (``--check``
compares instead of writing, and fails if the file differs).

Run: ``.venv/bin/python benchmarks/kinds/train.py [--check]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from langgraph_memgpt.small_model import kinds
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

HERE = Path(__file__).parent
LINES = HERE / "lines.jsonl"
QUESTIONS = HERE / "questions.jsonl"
L2 = 0.01
STEPS = 3000
RATE = 2.0


def train(x: np.ndarray, y: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Softmax regression, L2-regularised, by full-batch gradient descent from zero."""
    w = np.zeros((classes, x.shape[1]))
    b = np.zeros(classes)
    target = np.eye(classes)[y]
    for _ in range(STEPS):
        scores = x @ w.T + b
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        g = p - target
        w -= RATE * (g.T @ x / len(y) + L2 * w / len(y))
        b -= RATE * g.mean(axis=0)
    return w, b


def _sure(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> list[str | None]:
    scores = x @ w.T + b
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=1, keepdims=True)
    best = p.argmax(axis=1)
    return [kinds.KINDS[k] if p[i, k] >= kinds.SURE else None for i, k in enumerate(best.tolist())]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    rows = [json.loads(line) for line in LINES.read_text().splitlines() if line.strip()]
    y = np.array([kinds.KINDS.index(r["kind"]) for r in rows])
    x = MiniLMEmbeddings().embed_array([r["text"] for r in rows]).astype(np.float64)
    parts = np.array([r["part"] for r in rows])
    print(
        f"{len(rows)} lines: "
        + ", ".join(f"{k} {n}" for k, n in Counter(r["kind"] for r in rows).items())
    )
    print(f"each part scored by the model trained on the other (sure: p >= {kinds.SURE})")
    print("| part | kind | lines | found | wrong (other kinds taken for it) |")
    print("|---|---|---|---|---|")
    for part in sorted(set(parts)):
        held = parts == part
        w, b = train(x[~held], y[~held], len(kinds.KINDS))
        said = _sure(x[held], w, b)
        truth = [kinds.KINDS[k] for k in y[held]]
        for kind in kinds.ASKED:
            lines = sum(t == kind for t in truth)
            found = sum(t == kind and s == kind for t, s in zip(truth, said, strict=True))
            wrong = sum(t != kind and s == kind for t, s in zip(truth, said, strict=True))
            print(f"| {part} | {kind} | {lines} | {found} | {wrong} |")
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    print()
    print("questions: the rules' reading against the label (kinds not asked count as none)")
    print("| part | questions | read right | read as another kind | asked kind missed |")
    print("|---|---|---|---|---|")
    for part in sorted({q["part"] for q in questions}):
        mine = [q for q in questions if q["part"] == part]
        right = wrong = missed = 0
        for q in mine:
            want = q["kind"] if q["kind"] in kinds.ASKED else None
            got = kinds.kind_asked(q["text"])
            right += got == want
            wrong += got is not None and got != want
            missed += got is None and want is not None
        print(f"| {part} | {len(mine)} | {right} | {wrong} | {missed} |")
    w, b = train(x, y, len(kinds.KINDS))
    model = {
        "about": "what kind of fact a held line is; benchmarks/kinds/train.py",
        "lines": len(rows),
        "l2": L2,
        "steps": STEPS,
        "kinds": list(kinds.KINDS),
        "bias": [round(float(v), 6) for v in b],
        "weights": [[round(float(v), 6) for v in row] for row in w],
    }
    if args.check:
        same = kinds.WEIGHTS.exists() and _close(json.loads(kinds.WEIGHTS.read_text()), model)
        print("weights file:", "matches" if same else "DIFFERS")
        return 0 if same else 1
    kinds.WEIGHTS.write_text(json.dumps(model) + "\n")
    print(f"wrote {kinds.WEIGHTS}")
    return 0


def _close(a: dict[str, object], b: dict[str, object]) -> bool:
    wa, wb = np.array(a["weights"]), np.array(b["weights"])
    return wa.shape == wb.shape and bool(np.allclose(wa, wb, atol=1e-3))


if __name__ == "__main__":
    sys.exit(main())
