"""``reembed`` on Postgres: an agent moves to another embedding model, all at once.

The agent starts on a 16-dimensional toy model (``Letters``) and moves to the shipped
MiniLM. Afterwards every vector is MiniLM's (message, context = mean of its window, and
passage), the agent's recorded model is MiniLM, search works with it, the old model is
refused; writes made while it runs are embedded too; a failure at any point leaves the old
vectors and the old model; other agents are untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.stores.embeddings import (
    MINILM_MODEL_NAME,
    MiniLMEmbeddings,
    embed_texts,
    normalize,
)
from langgraph_memgpt.stores.postgres import PostgresBackend
from langgraph_memgpt.stores.postgres.reembed import reembed_postgres
from langgraph_memgpt.stores.types import EmbeddingMismatchError, RecallMessage
from tests.stores.test_postgres_backend import Letters

DOG = ["I adopted a puppy!", "What is its name?", "Biscuit, a beagle.", "How old?", "Ten weeks."]
TRIP = ["We fly to Lisbon in June.", "Which hotel?", "One by the river."]
PASSAGES = ["Ada's dog Biscuit is a beagle.", "Ada flies to Lisbon in June.", "Ada likes tea."]


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.delenv("MEMGPT_DATABASE_URL", raising=False)
    yield


def messages(agent: str, thread: str, texts: list[str], start: int = 0) -> list[RecallMessage]:
    return [
        RecallMessage(
            agent,
            thread,
            f"{thread}-{start + i}",
            "user" if (start + i) % 2 == 0 else "assistant",
            text,
            f"2026-12-01T09:{start + i:02d}:00Z",
        )
        for i, text in enumerate(texts)
    ]


def seed(url: str, agent: str = "ada") -> PostgresBackend:
    """The agent's memory on the toy model; returns its (still open) backend."""
    letters = PostgresBackend(url, embeddings=Letters())
    memory = letters.open(agent)
    memory.recall.add(messages(agent, "dog", DOG))
    memory.recall.add(messages(agent, "trip", TRIP))
    memory.recall.add([RecallMessage(agent, "dog", "tool-1", "tool", "ok", "2026-12-01T09:30:00Z")])
    memory.archival.insert_many(PASSAGES, tags=["facts"])
    return letters


def vectors(url: str, agent: str) -> dict[str, Any]:
    """The agent's recorded model and every vector, by message / passage text."""
    backend = PostgresBackend(url, embedding_model="none")
    with backend.pool().connection() as conn:
        model = conn.execute(
            "SELECT model, dims FROM memgpt_embeddings WHERE agent_id = %s", (agent,)
        ).fetchone()
        recall = conn.execute(
            "SELECT thread_id, search_text, embedding, context_embedding FROM memgpt_recall "
            "WHERE agent_id = %s AND searchable ORDER BY thread_id, created_at, id",
            (agent,),
        ).fetchall()
        archival = conn.execute(
            "SELECT text, embedding FROM memgpt_archival WHERE agent_id = %s ORDER BY id",
            (agent,),
        ).fetchall()
    backend.close()
    return {"model": tuple(model) if model else None, "recall": recall, "archival": archival}


def assert_all_minilm(url: str, agent: str, minilm: MiniLMEmbeddings) -> None:
    """Every vector of the agent is MiniLM's, contexts the mean of their +-2 window."""
    found = vectors(url, agent)
    assert found["model"] == (MINILM_MODEL_NAME, 384)
    by_thread: dict[str, list[Any]] = {}
    for row in found["recall"]:
        by_thread.setdefault(row[0], []).append(row)
    for rows in by_thread.values():
        expected = embed_texts(minilm, [r[1] for r in rows])
        for i, row in enumerate(rows):
            np.testing.assert_allclose(row[2].to_numpy(), expected[i], atol=1e-5)
            window = expected[max(0, i - 2) : i + 3]
            pooled = normalize(window.mean(axis=0))[0]
            np.testing.assert_allclose(row[3].to_numpy(), pooled, atol=1e-5)
    texts = [r[0] for r in found["archival"]]
    expected = embed_texts(minilm, texts)
    for row, vector in zip(found["archival"], expected, strict=True):
        np.testing.assert_allclose(row[1].to_numpy(), vector, atol=1e-5)


def assert_all_letters(url: str, agent: str) -> None:
    found = vectors(url, agent)
    assert found["model"] == ("letters-16", 16)
    for row in found["recall"]:
        assert len(row[2].to_numpy()) == 16 and len(row[3].to_numpy()) == 16
    for row in found["archival"]:
        assert len(row[1].to_numpy()) == 16


def test_cli_reembeds_an_agent_in_postgres_and_records_its_new_model(
    postgres_url: str,
    embeddings: MiniLMEmbeddings,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed(postgres_url).close()
    seed(postgres_url, "bob").close()
    code = main(
        ["reembed", "--agent", "ada", "--database-url", postgres_url, "--embedding-model", "minilm"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Re-embedded 8 messages and 3 passages of agent 'ada'" in out
    assert_all_minilm(postgres_url, "ada", embeddings)
    assert_all_letters(postgres_url, "bob")  # another agent keeps its own model
    # The agent now opens with MiniLM, and searches by meaning with it.
    minilm = PostgresBackend(postgres_url, embeddings=embeddings)
    ada = minilm.open("ada")
    assert (
        ada.archival.search("what breed is the dog?", mode="vector").hits[0].item.text
        == (PASSAGES[0])
    )
    assert ada.recall.search("hotel", mode="vector").hits[0].item.text == "Which hotel?"
    minilm.close()
    with pytest.raises(EmbeddingMismatchError, match=MINILM_MODEL_NAME):
        PostgresBackend(postgres_url, embeddings=Letters()).open("ada")


def test_cli_reembed_on_postgres_refuses_what_it_cannot_do(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(postgres_url).close()
    code = main(["reembed", "--agent", "zoe", "--database-url", postgres_url])
    assert code == 1 and "agent 'zoe' has no memory in the database" in capsys.readouterr().err
    code = main(
        ["reembed", "--agent", "ada", "--database-url", postgres_url, "--embedding-model", "none"]
    )
    assert code == 2 and "nothing to embed" in capsys.readouterr().err
    code = main(["reembed", "--agent", "ada"])  # neither a data directory nor a database
    assert code == 2 and "--data-dir is required" in capsys.readouterr().err
    assert_all_letters(postgres_url, "ada")


class Failing(Embeddings):
    """MiniLM under another name that fails at its ``fail_at``-th call (a crash halfway)."""

    model_name = "failing-minilm"
    dimension = 384

    def __init__(self, minilm: MiniLMEmbeddings, fail_at: int) -> None:
        self.minilm, self.fail_at, self.calls = minilm, fail_at, 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("the embedding server went away")
        return self.minilm.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.minilm.embed_query(text)


@pytest.mark.parametrize("fail_at", [2, 4])
def test_a_reembed_failing_halfway_leaves_the_old_vectors_and_model(
    postgres_url: str, embeddings: MiniLMEmbeddings, fail_at: int
) -> None:
    """Call 2 fails while staging (the second thread); call 4 inside the switch (late rows)."""
    letters = seed(postgres_url)
    backend = PostgresBackend(postgres_url, embedding_model="none")
    failing = Failing(embeddings, fail_at)

    def progress_for(task: str) -> Any:
        def progress(done: int, total: int) -> None:
            if task == "archival passages" and done == total:
                # Written while staging: the switch embeds it (call 4: fails in there).
                letters.open("ada").archival.insert("Ada's bike is green.")

        return progress

    with pytest.raises(RuntimeError, match="went away"):
        reembed_postgres(backend, "ada", failing, progress_for)
    assert failing.calls == fail_at
    assert_all_letters(postgres_url, "ada")
    # The old model still writes and searches.
    ada = letters.open("ada")
    ada.recall.add(messages("ada", "dog", ["He sleeps a lot."], start=40))
    assert ada.recall.search("sleep", mode="vector").hits
    backend.close()
    letters.close()


def test_writes_during_a_reembed_are_embedded_and_the_old_model_is_refused_after(
    postgres_url: str, embeddings: MiniLMEmbeddings
) -> None:
    letters = seed(postgres_url)
    stale = letters.open("ada")  # a server still running the old model
    backend = PostgresBackend(postgres_url, embedding_model="none")

    def progress_for(task: str) -> Any:
        def progress(done: int, total: int) -> None:
            if task == "recall messages" and done == 5:  # the dog thread is staged
                # A new message joins the staged thread: its neighbours' contexts change.
                stale.recall.add(messages("ada", "dog", ["He chews shoes."], start=20))
                stale.archival.insert("Ada's bike is green.")

        return progress

    counted = reembed_postgres(backend, "ada", embeddings, progress_for)
    assert counted == (9, 4)
    assert_all_minilm(postgres_url, "ada", embeddings)
    # The old model's writes are refused now, and nothing of them is stored.
    with pytest.raises(EmbeddingMismatchError, match="reembed"):
        stale.recall.add(messages("ada", "dog", ["Too late."], start=30))
    with pytest.raises(EmbeddingMismatchError):
        stale.archival.insert("Too late.")
    with pytest.raises(EmbeddingMismatchError):
        stale.recall.delete(["dog-0"])
    assert_all_minilm(postgres_url, "ada", embeddings)
    found = vectors(postgres_url, "ada")
    assert "Too late." not in [r[1] for r in found["recall"]] + [r[0] for r in found["archival"]]
    backend.close()
    letters.close()
