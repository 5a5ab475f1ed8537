"""minmax_fuse: the score fusion hybrid search ranks by."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_memgpt.stores.ranking import minmax_fuse, minmax_normalize


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
