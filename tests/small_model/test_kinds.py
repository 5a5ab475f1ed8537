"""What kind of fact a held line is, and which kind a question asks for (`small_model.kinds`)."""

from __future__ import annotations

import pytest
from trained import assert_shipped_weights_match

from langgraph_memgpt.small_model.kinds import kind_asked, kind_of


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What do I do for a living?", "work"),
        ("What's my line of work?", "work"),
        ("remind me what I do all day", "work"),
        ("Am I still working or retired?", "work"),
        ("Anything I can't eat?", "health"),
        ("Do I have any allergies?", "health"),
        ("Is there anything medical you should know about me?", "health"),
        ("Where did I grow up?", "home"),
        ("Which town do we live in?", "home"),
        ("What kind of pet do I have?", "pet"),
        ("Which metal can't I wear?", "health"),
        ("Where am I moving to?", "plans"),
        ("What have I got coming up?", "plans"),
    ],
)
def test_a_question_for_a_kind_of_fact_is_read_by_its_kind(question: str, kind: str) -> None:
    """The ways to ask for one's work, health, home or animals are few; each is read."""
    assert kind_asked(question) == kind


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("when do we get the keys to the new place", "plans"),
        ("how many cats have I got", "pet"),
        ("do I have a bad knee or something", "health"),
    ],
)
def test_a_question_no_rule_reads_is_read_by_the_question_model(question: str, kind: str) -> None:
    """Questions written for this test, not in the model's data; no rule reads them."""
    assert kind_asked(question) == kind


@pytest.mark.parametrize(
    "question",
    [
        "What does my wife do?",  # one of their people, not the user
        "Is my daughter allergic to anything?",
        "Where does my sister live?",
        "Is my pet on any medication?",
        "What's my name?",  # kinds whose questions share words with their lines
        "What's my favourite film?",
        "Should I get a dog?",  # no fact asked
        "Is it healthy to skip breakfast",
    ],
)
def test_a_question_about_someone_else_or_no_kind_of_fact_asks_for_none(question: str) -> None:
    assert kind_asked(question) is None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("Fixes lifts in office buildings.", "work"),
        ("Spends the week up ladders clearing gutters.", "work"),
        ("Grew up on a sheep farm near Dunedin.", "home"),
        ("Can't touch shellfish, throat closes up.", "health"),
        ("Has two rescue greyhounds.", "pet"),
    ],
)
def test_a_held_line_is_told_by_its_kind_though_it_has_no_word_of_it(line: str, kind: str) -> None:
    """Lines written for this test, not in the model's data: no word names the kind."""
    assert kind_of(line) == kind


def test_a_passing_line_of_another_kind_is_not_taken_for_work() -> None:
    assert kind_of("Loves fishing on the river on Sundays.") != "work"
    assert kind_of("Sister Ana is a vet in Porto.") != "work"


def test_the_kind_model_file_is_the_one_its_data_trains() -> None:
    """`benchmarks/kinds/train.py --check`: the shipped weights come from the shipped
    lines (same data, same steps, same weights)."""
    assert_shipped_weights_match("kinds/train.py")
