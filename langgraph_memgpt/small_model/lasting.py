"""Whether a sentence told without "I" says something lasting about the user.

People type to an assistant in fragments: "software dev by trade, mostly Go", "Huge Arsenal
fan, season ticket since 2004", "Going to Japan for two weeks in November". The core gate's
rules (`core_gate`) read a sentence as the user's own by its first person ("I", "my") or a
few openings ("Allergic to ...", "Born in ..."). A fragment has neither: of 500 written for
the purpose (`benchmarks/lasting/`, part c) the gate before this model took none of the 250
lasting ones. No rule of words tells "Lovely weather today" from "Night owl, always have
been".

So such a sentence is scored by a linear model over its MiniLM vector (the embedded
embeddings, already loaded for memory search), trained on those sentences by
`benchmarks/lasting/train.py`, which writes its weights next to this module and prints what
it gets right on each part of them it was not trained on. A fragment counts as lasting only
well above the model's even odds (`ABOVE`): a false fact costs a line in every later prompt.
The scores are cached: the gate reads the same sentences again at every step of a thread.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np

WEIGHTS = Path(__file__).with_name("lasting_weights.json")
"""The trained model: ``{"weights": [384 floats], "bias": float, ...}``."""
ABOVE = 1.0
"""The score (log-odds) over which a fragment is a lasting fact: about 73% sure."""

_THIRD_PARTY = re.compile(
    r"^(?:he|she|they|it|its|it['\u2019]s|his|her|their|someone|somebody|everyone|"
    r"everybody|nobody|no one|the|a|an|this|that|there|these|those|what|how|why)\b"
    r"|^[A-Z][\w'\u2019-]*(?:['\u2019]s)?\s+(?:is|was|has|had|said|says|got|went|just|will)\b",
    re.IGNORECASE,
)
"""An opening on someone or something else: the sentence is theirs, not the user's."""


def is_fragment(sentence: str) -> bool:
    """Whether a sentence the rules found no user in is told of no one, 3+ words, no question.

    "Night owl, always have been" is; "The kettle's broken" and "Is it Friday yet?" are not.
    """
    text = sentence.strip()
    return not text.endswith("?") and len(text.split()) >= 3 and _THIRD_PARTY.match(text) is None


@functools.lru_cache(maxsize=1)
def _model() -> tuple[np.ndarray, float]:
    data = json.loads(WEIGHTS.read_text())
    return np.asarray(data["weights"], dtype=np.float32), float(data["bias"])


@functools.lru_cache(maxsize=4096)
def lasting_score(sentence: str) -> float:
    """The model's log-odds that ``sentence`` states something lasting about the user."""
    from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

    weights, bias = _model()
    vector = MiniLMEmbeddings().embed_array([sentence])[0]
    return float(vector @ weights + bias)


def tells_lasting(sentence: str) -> bool:
    """Whether the model is sure enough (`ABOVE`) that ``sentence`` lasts."""
    return lasting_score(sentence.strip()) > ABOVE


__all__ = ["ABOVE", "WEIGHTS", "is_fragment", "lasting_score", "tells_lasting"]
