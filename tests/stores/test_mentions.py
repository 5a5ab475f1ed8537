"""What a query names besides words (dates, participants) and how recall search uses it."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
import sqlite_utils

from langgraph_memgpt.stores.embeddings import FloatArray, MiniLMEmbeddings
from langgraph_memgpt.stores.mentions import (
    date_closeness,
    mentioned_dates,
    mentioned_names,
    without_names,
)
from langgraph_memgpt.stores.sqlite import recall_signals
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.types import RecallMessage
from langgraph_memgpt.stores.words import query_terms


def test_dates_named_in_a_query_are_found_in_common_forms() -> None:
    day = (date(2023, 6, 3), date(2023, 6, 3))
    assert mentioned_dates("what did Maria start on 3 June, 2023?") == [day]
    assert mentioned_dates("on the 3rd of June 2023") == [day]
    assert mentioned_dates("on June 3, 2023") == [day]
    assert mentioned_dates("on 2023-06-03") == [day]
    assert mentioned_dates("in June 2023") == [(date(2023, 6, 1), date(2023, 6, 30))]
    assert mentioned_dates("in December 2023") == [(date(2023, 12, 1), date(2023, 12, 31))]
    assert mentioned_dates("last week, yesterday") == []
    # An impossible day still names its month.
    assert mentioned_dates("on 31 February, 2023") == [(date(2023, 2, 1), date(2023, 2, 28))]


def test_date_closeness_fades_over_the_reach() -> None:
    june = [(date(2023, 6, 1), date(2023, 6, 30))]
    assert date_closeness(date(2023, 6, 15), june, 7) == 1.0
    assert date_closeness(date(2023, 7, 1), june, 7) == 1 - 1 / 7
    assert date_closeness(date(2023, 7, 30), june, 7) == 0.0


def test_participants_are_matched_as_whole_words() -> None:
    names = ["Ann", "Melanie"]
    assert mentioned_names("What does Melanie's family give her?", names) == {"Melanie"}
    assert mentioned_names("Did anna call?", names) == set()


def test_names_are_taken_out_with_their_possessive_and_only_as_whole_words() -> None:
    names = ["Ann", "Melanie"]
    assert without_names("What do Melanie's kids like?", names) == "What do kids like?"
    assert without_names("Did melanie\u2019s friend Ann call Annabel?", names) == (
        "Did friend call Annabel?"
    )
    assert without_names("What did Bob say?", names) == "What did Bob say?"


def test_stop_words_are_left_out_of_the_query_unless_nothing_else_remains() -> None:
    assert query_terms("When did the cello lessons start?") == ["cello", "lessons", "start"]
    assert query_terms("who are you") == ["who", "are", "you"]


def _msg(i: int, text: str, day: str, name: str) -> RecallMessage:
    return RecallMessage(
        agent_id="a", thread_id=f"t{day}", message_id=f"m{i}", role="user", text=text,
        created_at=f"{day}T10:00:00+00:00", name=name,
    )  # fmt: skip


def test_a_query_naming_a_day_or_a_speaker_lifts_their_messages(
    db: sqlite_utils.Database, tmp_data_dir: Path
) -> None:
    recall = SqliteRecallMemory(db, "a", None, tmp_data_dir / "faiss")
    recall.add(
        [
            _msg(1, "I went hiking in the hills.", "2023-06-03", "Ann"),
            _msg(2, "We went hiking by the lake.", "2023-07-20", "Bob"),
            _msg(3, "Hiking again, this time with the dog.", "2023-08-11", "Ann"),
        ]
    )
    on_day = recall.search("where did we go hiking on 3 June, 2023?", page_size=3).hits
    assert on_day[0].item.message_id == "m1"
    by_bob = recall.search("where did Bob go hiking?", page_size=3).hits
    assert by_bob[0].item.message_id == "m2"


def test_a_named_speaker_only_lifts_messages_another_signal_found(
    db: sqlite_utils.Database, tmp_data_dir: Path
) -> None:
    # Every message of a participant would be half the memory; alone, a name says
    # nothing about the topic, so Bob's other messages are not results.
    recall = SqliteRecallMemory(db, "a", None, tmp_data_dir / "faiss")
    recall.add(
        [
            _msg(1, "I bought a kayak.", "2023-06-03", "Ann"),
            _msg(2, "My kayak is red.", "2023-06-04", "Bob"),
            *(_msg(i, f"Lunch number {i} was fine.", "2023-06-05", "Bob") for i in range(3, 9)),
        ]
    )
    page = recall.search("what colour is Bob's kayak?", page_size=10)
    assert [hit.item.message_id for hit in page.hits] == ["m2", "m1"]
    assert page.total == 2


def test_hybrid_search_embeds_the_query_without_the_participants_it_names(
    db: sqlite_utils.Database,
    tmp_data_dir: Path,
    embeddings: MiniLMEmbeddings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recall = SqliteRecallMemory(db, "a", embeddings, tmp_data_dir / "faiss")
    recall.add(
        [
            _msg(1, "Ann: I took up pottery last month.", "2023-06-03", "Ann"),
            _msg(2, "Bob: Ann, that sounds great!", "2023-06-03", "Bob"),
        ]
    )
    embedded: list[str] = []
    real = recall_signals.embed_query

    def spy(emb: MiniLMEmbeddings, text: str) -> FloatArray:
        embedded.append(text)
        return real(emb, text)

    monkeypatch.setattr(recall_signals, "embed_query", spy)
    hits = recall.search("What hobbies does Ann have?", page_size=2).hits
    assert embedded == ["What hobbies does have?"]
    assert hits[0].item.message_id == "m1"
    # Vector mode has no other signal for who is asked about, so it keeps the name; a
    # query of nothing but a name is embedded as it is.
    recall.search("What hobbies does Ann have?", mode="vector")
    recall.search("Ann?")
    assert embedded[1:] == ["What hobbies does Ann have?", "Ann?"]
