"""The two fusion rules of hybrid retrieval (memory.retrieval.fusion)."""

import pytest

from memory.retrieval.fusion import normalized, rrf


def test_normalised_fusion_keeps_how_far_ahead_a_list_is():
    # "a" is far ahead in the vector list, "b" barely ahead of "c" in FTS.
    fused = normalized({"vector": [("a", 0.9), ("c", 0.3), ("b", 0.29)], "fts": [("b", 10.0), ("c", 9.9)]})
    scores = {f.item: f.score for f in fused}
    assert [f.item for f in fused] == ["a", "b", "c"]
    assert scores["a"] == pytest.approx(0.5)  # 1 in the vector list, absent from FTS
    assert scores["b"] == pytest.approx(0.5)  # 0 and 1
    assert scores["c"] == pytest.approx((0.01 / 0.61 + 0.0) / 2)
    # RRF levels them: "c", second in both lists, overtakes the vector list's clear leader.
    assert [f.item for f in rrf({"vector": ["a", "c", "b"], "fts": ["b", "c"]})] == ["b", "c", "a"]


def test_weights_and_degenerate_lists():
    fused = normalized({"vector": [("a", 0.5)], "fts": [("b", 3.0), ("a", 1.0)]}, weights={"fts": 3.0})
    scores = {f.item: f.score for f in fused}
    assert scores == {"a": pytest.approx(0.25), "b": pytest.approx(0.75)}  # a list of one scores 1
    assert normalized({"vector": [], "fts": []}) == []
    assert [f.ranks for f in normalized({"x": [("a", 1.0), ("b", 1.0)]})] == [{"x": 1}, {"x": 2}]
