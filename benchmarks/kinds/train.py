"""Train the model that tells what kind of fact a held line is (`small_model.kinds`).

Data: ``lines.jsonl`` here, 2,111 lasting facts about a person labelled with their kind
(name, work, health, home, family, pet, likes, plans, other) and their form (``note``: as
the agent writes it in core memory, "Fixes lifts in office buildings."; ``user``: as the
user typed it), written by hand on 2026-12-07 by five helper sessions that saw no scenario
file and no output of the model (``part``: a, everyday lines; b, shapes a keyword rule
gets wrong; c, contrast sets, one topic told as a job, a hobby, a relative, a plan...:
sentence vectors mostly say the topic; d and e, written apart by two sessions, 20-60-word
lines that tell one lasting fact inside a story full of other kinds' words, and small talk
labelled ``other``); and ``questions.jsonl``, questions a user asks about themselves
labelled with the kind whose line answers them, or ``none``, by the sessions of parts a, b,
d and e. The question rules were written on part a's questions; part b's were read only to
report. `kinds.LIKELY` (blocks of seven lines drawn from one part, as ``human`` holds them)
and `kinds.QUESTION_SURE` were chosen on part d; part e reports.

Models: multinomial logistic regression on each line's MiniLM vector (plain gradient
descent from zero, fixed steps: the same data gives the same weights); the same on each
question's vector, over `kinds.ASKED` and ``none``, for the questions no rule reads.

Printed, each part scored by the model trained on the others (lines it never saw): for each
kind a question is read for (`kinds.ASKED`), how many of its lines the model is `kinds.SURE`
of (found), and how many lines of other kinds it is sure are of that kind (wrong); then how
`kinds.kind_asked` reads each part's questions, by the rules alone and with the question
model trained on the other parts. Then the models trained on every line and every question
are written to ``langgraph_memgpt/small_model/kind_weights.json`` (``--check`` compares
instead of writing, and fails if the file differs).

Run: ``.venv/bin/python benchmarks/kinds/train.py [--check]`` (``--check`` trains only the
two shipped models, without the per-part figures, so the test suite can afford it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

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


def _probabilities(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    scores = x @ w.T + b
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    return np.asarray(p / p.sum(axis=1, keepdims=True))


def _read(question: str, shares: dict[str, float], model: bool) -> str | None:
    """`kinds.kind_asked` with the question model's ``shares`` (or the rules alone)."""
    real = kinds.question_shares
    kinds.question_shares = (lambda _q: shares) if model else (lambda _q: {"none": 1.0})  # type: ignore[assignment]
    try:
        return kinds.kind_asked(question)
    finally:
        kinds.question_shares = real  # type: ignore[assignment]


def _blocks(p: np.ndarray, y: np.ndarray, likely: bool, draws: int = 2000) -> str:
    """How the lines chosen to answer fare in ``draws`` blocks of seven (seeded), as
    ``voice.lines_of_kind_asked`` chooses: every line `kinds.SURE` of the kind asked, or
    with ``likely`` and none sure, the one `kinds.likely_of` takes."""
    rng = np.random.default_rng(7)
    right = wrong = none = taken = 0
    for _ in range(draws):
        block = rng.choice(len(y), size=7, replace=False)
        kind = kinds.KINDS.index(kinds.ASKED[int(rng.integers(len(kinds.ASKED)))])
        own = p[block].argmax(axis=1)
        chosen = [i for i in block if p[i].argmax() == kind and p[i, kind] >= kinds.SURE]
        if not chosen and likely:
            fit = [
                i
                for i, o in zip(block, own, strict=True)
                if o == kind and p[i, kind] >= kinds.LIKELY
            ]
            chosen = [max(fit, key=lambda i: p[i, kind])] if fit else []
        if (y[block] == kind).any():
            if not chosen:
                none += 1
            elif all(y[i] == kind for i in chosen):
                right += 1
            else:
                wrong += 1
        elif chosen:
            taken += 1
    return f"{right} / {wrong} / {none} | {taken}"


def _sure(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> list[str | None]:
    p = _probabilities(x, w, b)
    best = p.argmax(axis=1)
    return [kinds.KINDS[k] if p[i, k] >= kinds.SURE else None for i, k in enumerate(best.tolist())]


def _report_lines(x: np.ndarray, y: np.ndarray, parts: np.ndarray) -> None:
    """Each part's lines by the model trained on the others; the answering line in blocks."""
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
    print()
    print("blocks of seven lines drawn at random from one long-line part, one kind asked:")
    print("the line chosen to answer, by the model trained on the other parts")
    print("| part | rule | kind held: right / wrong line / none | not held: a line taken |")
    print("|---|---|---|---|")
    for part in ("d", "e"):
        held = parts == part
        w, b = train(x[~held], y[~held], len(kinds.KINDS))
        for rule, likely in (
            (f"sure ({kinds.SURE})", False),
            (f"or likely ({kinds.LIKELY})", True),
        ):
            print(
                f"| {part} | {rule} | {_blocks(_probabilities(x[held], w, b), y[held], likely)} |"
            )


def _report_questions(
    questions: list[dict[str, str]],
    labels: list[str],
    qx: np.ndarray,
    qy: np.ndarray,
    qparts: np.ndarray,
) -> None:
    """Each part's questions by the rules alone and with the model trained on the others."""
    print()
    print("questions: `kind_asked` against the label (kinds not asked count as none), by the")
    print("rules alone and with the question model trained on the other parts")
    print("| part | questions | rules: right / another kind / missed | with the model |")
    print("|---|---|---|---|")
    for part in sorted(set(qparts)):
        held = qparts == part
        qw, qb = train(qx[~held], qy[~held], len(labels))
        shares = _probabilities(qx[held], qw, qb)
        mine = [q for q, h in zip(questions, held, strict=True) if h]
        cells = []
        for model in (False, True):
            right = wrong = missed = 0
            for q, share in zip(mine, shares, strict=True):
                want = q["kind"] if q["kind"] in kinds.ASKED else None
                got = _read(q["text"], dict(zip(labels, share.tolist(), strict=True)), model)
                right += got == want
                wrong += got is not None and got != want
                missed += got is None and want is not None
            cells.append(f"{right} / {wrong} / {missed}")
        print(f"| {part} | {len(mine)} | {cells[0]} | {cells[1]} |")


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
    if not args.check:
        _report_lines(x, y, parts)
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    labels = [*kinds.ASKED, "none"]
    qy = np.array(
        [labels.index(q["kind"] if q["kind"] in kinds.ASKED else "none") for q in questions]
    )
    qx = MiniLMEmbeddings().embed_array([q["text"] for q in questions]).astype(np.float64)
    qparts = np.array([q["part"] for q in questions])
    if not args.check:  # the figures; --check only retrains the shipped models
        _report_questions(questions, labels, qx, qy, qparts)
    w, b = train(x, y, len(kinds.KINDS))
    qw, qb = train(qx, qy, len(labels))
    model = {
        "about": "what kind of fact a held line is, and a question asks; benchmarks/kinds/train.py",
        "lines": len(rows),
        "l2": L2,
        "steps": STEPS,
        "labels": list(kinds.KINDS),
        "bias": [round(float(v), 6) for v in b],
        "weights": [[round(float(v), 6) for v in row] for row in w],
        "questions": {
            "questions": len(questions),
            "labels": labels,
            "bias": [round(float(v), 6) for v in qb],
            "weights": [[round(float(v), 6) for v in row] for row in qw],
        },
    }
    if args.check:
        same = kinds.WEIGHTS.exists() and _close(json.loads(kinds.WEIGHTS.read_text()), model)
        print("weights file:", "matches" if same else "DIFFERS")
        return 0 if same else 1
    kinds.WEIGHTS.write_text(json.dumps(model) + "\n")
    print(f"wrote {kinds.WEIGHTS}")
    return 0


def _close(a: dict[str, Any], b: dict[str, Any]) -> bool:
    for one, other in ((a, b), (a.get("questions", {}), b["questions"])):
        wa, wb = np.array(one.get("weights", [])), np.array(other["weights"])
        if wa.shape != wb.shape or not np.allclose(wa, wb, atol=1e-3):
            return False
    return True


if __name__ == "__main__":
    sys.exit(main())
