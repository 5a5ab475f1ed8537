"""fuse / minmax_fuse: the score fusion hybrid search ranks by."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_memgpt.stores.ranking import (
    SIMILARITY_FLOOR,
    Signal,
    fuse,
    is_question,
    minmax_fuse,
    minmax_normalize,
    rare_term_matches,
    similarity_normalize,
)


def test_each_signal_is_scaled_to_zero_one_before_summing() -> None:
    bm25 = {"a": 12.0, "b": 7.0, "c": 2.0}
    cosine = {"a": 0.2, "b": 0.8, "c": 0.5}
    fused = dict(minmax_fuse([bm25, cosine]))
    assert fused["a"] == pytest.approx(1.0 + 0.0)
    assert fused["b"] == pytest.approx(0.5 + 1.0)
    assert fused["c"] == pytest.approx(0.0 + 0.5)


def test_results_are_sorted_best_first() -> None:
    ranked = minmax_fuse([{"a": 1.0, "b": 3.0, "c": 2.0}])
    assert [key for key, _ in ranked] == ["b", "c", "a"]


def test_a_key_missing_from_a_signal_scores_zero_there() -> None:
    fused = dict(minmax_fuse([{"a": 5.0, "b": 1.0}, {"c": 0.9, "a": 0.1}]))
    assert fused == {"a": pytest.approx(1.0), "b": pytest.approx(0.0), "c": pytest.approx(1.0)}


def test_a_single_score_or_all_equal_scores_count_as_full_matches() -> None:
    assert minmax_normalize({"only": -3.5}) == {"only": 1.0}
    assert minmax_normalize({"a": 0.4, "b": 0.4}) == {"a": 1.0, "b": 1.0}
    assert dict(minmax_fuse([{"x": 2.0}, {}])) == {"x": 1.0}


def test_weights_scale_each_signal() -> None:
    fused = dict(minmax_fuse([{"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0}], weights=[2.0, 1.0]))
    assert fused == {"a": pytest.approx(2.0), "b": pytest.approx(1.0)}


def test_weights_must_match_the_number_of_signals() -> None:
    with pytest.raises(ValueError, match="2 score maps but 1 weights"):
        minmax_fuse([{"a": 1.0}, {"a": 1.0}], weights=[1.0])


def test_ties_keep_first_seen_key_order() -> None:
    ranked = minmax_fuse([{"z": 1.0, "m": 1.0, "a": 1.0}, {"q": 0.5}])
    assert [key for key, _ in ranked] == ["z", "m", "a", "q"]


def test_no_signals_and_empty_signals_rank_nothing() -> None:
    assert minmax_fuse([]) == []
    assert minmax_fuse([{}, {}]) == []


scores = st.dictionaries(
    st.integers(0, 30), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), max_size=20
)


@given(st.lists(scores, min_size=1, max_size=4))
def test_fused_scores_are_bounded_sorted_and_cover_every_key(maps: list[dict[int, float]]) -> None:
    ranked = minmax_fuse(maps)
    values = [score for _, score in ranked]
    assert values == sorted(values, reverse=True)
    assert all(-1e-9 <= v <= len(maps) + 1e-9 for v in values)
    assert {key for key, _ in ranked} == set().union(*maps)


# -- fusion that respects exact matches ----------------------------------------------------


def test_one_exact_match_is_not_outvoted_by_two_vector_signals_of_noise() -> None:
    # An identifier query: only "fact" holds the word; the vectors (noise) prefer others.
    words = Signal({"fact": 3.0, "question": 9.0})
    turn = Signal({"noise1": 0.31, "noise2": 0.30, "fact": 0.22}, "similarity")
    context = Signal({"noise1": 0.29, "noise2": 0.33, "fact": 0.21}, "similarity")
    plain = [key for key, _ in fuse([words, turn, context])]
    assert plain.index("noise1") < plain.index("fact")  # the failure the lift fixes
    ranked = [key for key, _ in fuse([words, turn, context], rare=[{"fact", "question"}])]
    assert ranked.index("fact") < ranked.index("noise1")
    assert ranked.index("fact") < ranked.index("noise2")


def test_a_statement_comes_before_the_question_that_asked_about_it() -> None:
    words = Signal({"asked": 9.0, "asked-again": 8.0, "statement": 2.0, "other": 1.0})
    ranked = fuse(
        [words],
        rare=[{"asked", "asked-again", "statement"}],
        questions={"asked", "asked-again"},
    )
    assert [key for key, _ in ranked] == ["statement", "asked", "asked-again", "other"]


def test_a_result_holding_only_some_rare_terms_is_not_lifted() -> None:
    words = Signal({"both": 1.0, "one": 2.0, "none": 5.0})
    ranked = fuse([words], rare=[{"both", "one"}, {"both"}])
    assert [key for key, _ in ranked] == ["both", "none", "one"]


def test_weak_similarity_stays_weak_instead_of_being_stretched() -> None:
    # Min-max would give the second 0 and the first 1; from the floor both are close.
    close = similarity_normalize({"a": 0.90, "b": 0.85})
    assert close["a"] == 1.0 and close["b"] > 0.9
    assert similarity_normalize({"a": 0.5, "b": SIMILARITY_FLOOR - 0.1})["b"] == 0.0
    assert similarity_normalize({"a": SIMILARITY_FLOOR / 2}) == {"a": 0.0}
    assert similarity_normalize({}) == {}


def test_with_matches_only_a_key_no_signal_matched_is_no_result() -> None:
    words = Signal({"worded": 0.4})
    meaning = Signal(
        {"close": 0.6, "worded": 0.1, "nearest_of_nothing": SIMILARITY_FLOOR}, "similarity"
    )
    ranked = fuse([words, meaning], matches_only=True)
    assert [key for key, _ in ranked] == ["worded", "close"]
    # Without it (a "vector" listing), every candidate of the pool is ranked.
    assert len(fuse([words, meaning])) == 3


def test_rare_terms_are_those_few_results_hold() -> None:
    assert rare_term_matches({"zx4417": {1}, "code": set(range(50))}, limit=8) == [{1}]
    assert rare_term_matches({"zx4417": {1, 2}, "absent": set()}, limit=8) == [{1, 2}]


def test_a_question_in_ordinary_words_is_not_an_exact_lookup() -> None:
    # One rare word among many common ones: the answer may paraphrase it, so no lift.
    matches = {"research": {7}, "caroline": set(range(40)), "essay": set(range(12))}
    assert rare_term_matches(matches, limit=8) == []


def test_a_question_is_a_text_that_asks() -> None:
    assert is_question("what was ZX4417 again?")
    assert not is_question("The locker code is ZX4417.")


def test_a_long_statement_that_also_asks_something_else_is_a_statement() -> None:
    text = "Did you see the sunset? Oh, and the locker code is ZX4417. Anyway, how are you?"
    assert not is_question(text, ["zx4417"])
    assert is_question("Lovely day. What was ZX4417 again?", ["zx4417"])
    assert not is_question("Nothing about it here?", ["zx4417"])


keys = st.integers(0, 15)


@given(
    words=st.dictionaries(keys, st.floats(0.1, 50), max_size=12),
    vectors=st.dictionaries(keys, st.floats(-1, 1), max_size=12),
    holders=st.lists(st.sets(keys, max_size=6), min_size=1, max_size=3),
    asks=st.sets(keys, max_size=4),
)
def test_a_result_holding_every_rare_term_never_ranks_below_one_holding_none(
    words: dict[int, float],
    vectors: dict[int, float],
    holders: list[set[int]],
    asks: set[int],
) -> None:
    ranked = [k for k, _ in fuse([Signal(words), Signal(vectors, "similarity")], rare=holders)]
    every = set.intersection(*holders)
    none = set(ranked) - set.union(*holders)
    for exact in every & set(ranked):
        assert all(ranked.index(exact) < ranked.index(other) for other in none)
    ranked = fuse([Signal(words)], rare=holders, questions=asks)
    order = [k for k, _ in ranked]
    statements = (every - asks) & set(order)
    for question in every & asks & set(order):
        assert all(order.index(s) < order.index(question) for s in statements)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
