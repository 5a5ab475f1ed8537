"""Train the core gate's model for sentences told without "I" (`small_model.lasting`).

Data: ``sentences.jsonl`` here, 1,993 sentences a user might type to an assistant, each
labelled ``fact`` (something lasting about them) or ``small_talk``, written by hand on
2026-12-07 by four helper sessions that saw no scenario file and no output of the gate
(``part``: a, everyday facts and small talk; b, shapes a keyword rule gets wrong; c,
fragments with no first person; d, a day's chat lines of many people; about 500 each,
repeats across parts left out). Model: logistic regression on each sentence's MiniLM vector
(plain gradient descent from zero, fixed steps: the same data gives the same weights).

Printed, each part scored by the model trained on the other parts (on sentences it never saw):
the rules alone (`core_gate.fact_sentences`) against the rules with the model deciding the
fragments (`lasting.is_fragment`), small talk taken and facts missed per part. Then the
model trained on all of them is written to ``langgraph_memgpt/small_model/lasting_weights.json``
(``--check`` compares instead of writing, and fails if the file differs).

``--trained-on a,b`` scores the other parts by a model trained on those alone (the gate as
it was before parts c and d were written) and writes nothing.

Run: ``.venv/bin/python benchmarks/lasting/train.py [--check | --trained-on PARTS]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from langgraph_memgpt.small_model import lasting
from langgraph_memgpt.small_model.core_gate import (
    _sentences,
    about_themselves,
    names_themselves,
    passing,
)
from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

DATA = Path(__file__).with_name("sentences.jsonl")
L2 = 0.1
STEPS = 4000
RATE = 1.0


def train(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Logistic regression, L2-regularised, by full-batch gradient descent from zero."""
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        g = p - y
        w -= RATE * (x.T @ g / len(y) + L2 * w / len(y))
        b -= RATE * float(g.mean())
    return w, b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument(
        "--trained-on",
        metavar="PARTS",
        help="score every other part by one model trained on these (e.g. a,b); write nothing",
    )
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    texts = [r["text"] for r in rows]
    y = np.array([r["label"] == "fact" for r in rows], dtype=np.float64)
    x = MiniLMEmbeddings().embed_array(texts).astype(np.float64)
    parts = np.array([r["part"] for r in rows])
    held_score = np.zeros(len(rows))
    names = sorted(set(parts))
    if args.trained_on:
        trained = np.isin(parts, args.trained_on.split(","))
        w, b = train(x[trained], y[trained])
        held_score = x @ w + b
        names = [n for n in names if n not in args.trained_on.split(",")]
        print(f"parts {', '.join(names)} scored by a model trained on {args.trained_on}")
    else:
        for part in names:
            w, b = train(x[parts != part], y[parts != part])
            held_score[parts == part] = x[parts == part] @ w + b
        print(f"{len(rows)} sentences, {int(y.sum())} facts; each part scored by a model trained")
        print("on the other parts")
    print(
        "| part | sentences | rules: small talk taken | rules: facts missed "
        "| with the model: small talk taken | with the model: facts missed |"
    )
    print("|---|---|---|---|---|---|")
    for part in names:
        idx = np.flatnonzero(parts == part)
        read = [_read(texts[i]) for i in idx]
        rules = np.array([r for r, _ in read])
        fragment = np.array([f for _, f in read])
        both = rules | (fragment & (held_score[idx] > lasting.ABOVE))
        facts, talk = y[idx] == 1, y[idx] == 0
        print(
            f"| {part} | {len(idx)} | {int((rules & talk).sum())} | {int((~rules & facts).sum())} "
            f"| {int((both & talk).sum())} | {int((~both & facts).sum())} |"
        )
    if args.trained_on:
        return 0
    w, b = train(x, y)
    model = {
        "about": "core gate: log-odds that a sentence told without 'I' lasts; "
        "benchmarks/lasting/train.py",
        "sentences": len(rows),
        "l2": L2,
        "steps": STEPS,
        "bias": round(b, 6),
        "weights": [round(float(v), 6) for v in w],
    }
    text = json.dumps(model) + "\n"
    if args.check:
        same = lasting.WEIGHTS.exists() and _close(json.loads(lasting.WEIGHTS.read_text()), model)
        print("weights file:", "matches" if same else "DIFFERS")
        return 0 if same else 1
    lasting.WEIGHTS.write_text(text)
    print(f"wrote {lasting.WEIGHTS}")
    return 0


def _read(text: str) -> tuple[bool, bool]:
    """(the rules take a sentence of ``text``, ``text`` has a fragment) without the model.

    A text of several sentences is scored whole: nearly all are one sentence.
    """
    rules = fragment = False
    for sentence in _sentences(text):
        if sentence.endswith("?"):
            continue
        if names_themselves(sentence):
            rules = True
        elif about_themselves(sentence):
            rules = rules or not passing(sentence)
        else:
            fragment = fragment or lasting.is_fragment(sentence)
    return rules, fragment


def _close(a: dict[str, object], b: dict[str, object]) -> bool:
    wa, wb = np.array(a["weights"]), np.array(b["weights"])
    return wa.shape == wb.shape and bool(np.allclose(wa, wb, atol=1e-3))


if __name__ == "__main__":
    sys.exit(main())
