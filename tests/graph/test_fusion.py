import numpy as np
import pytest

from lightrag_prism.graph.fusion import normalized_score_fusion, reciprocal_rank_fusion


def test_normalized_score_fusion_hand_computed():
    res = normalized_score_fusion(
        {"multihop": {"a": 0.9, "b": 0.5, "c": 0.1}, "ppr": {"b": 0.02, "d": 0.01}},
        weights={"multihop": 1.0, "ppr": 2.0},
    )
    # multihop min-max: a 1, b 0.5, c 0; ppr: b 1, d 0  ->  b 0.5 + 2 = 2.5, a 1, c 0, d 0
    assert res.ids == ["b", "a", "c", "d"]
    np.testing.assert_allclose(res.scores, [2.5, 1.0, 0.0, 0.0])
    assert res.provenance == ["multihop+ppr", "multihop", "multihop", "ppr"]
    assert res.perspectives == ("multihop", "ppr")
    assert res.contributors.tolist() == [[True, True], [True, False], [True, False], [False, True]]


def test_normalized_constant_list_and_pairs_input():
    res = normalized_score_fusion([(["x", "y"], [3.0, 3.0]), (np.array([5, 6]), [1.0, 0.0])])
    # list 0 is constant -> both 1.0; list 1: 5 -> 1, 6 -> 0; ties keep first appearance x, y, 5
    assert res.ids == ["x", "y", 5, 6]
    np.testing.assert_allclose(res.scores, [1, 1, 1, 0])
    assert res.provenance == ["0", "0", "1", "1"]


def test_rrf_hand_computed_with_stable_ties():
    res = reciprocal_rank_fusion({"multihop": ["a", "b"], "ppr": ["b", "a"], "fastrp": ["c"]}, k=60)
    # a: 1/61 + 1/62, b: 1/62 + 1/61 (tie, a first seen), c: 1/61
    assert res.ids == ["a", "b", "c"]
    np.testing.assert_allclose(res.scores, [1 / 61 + 1 / 62, 1 / 61 + 1 / 62, 1 / 61])
    assert res.provenance == ["multihop+ppr", "multihop+ppr", "fastrp"]


def test_rrf_weights_and_k():
    res = reciprocal_rank_fusion([["a", "b", "c"], ["c"]], k=0, weights=[1.0, 0.5])
    # a 1, b 1/2, c 1/3 + 0.5 = 0.8333
    assert res.ids == ["a", "c", "b"]
    np.testing.assert_allclose(res.scores, [1.0, 1 / 3 + 0.5, 0.5])


def test_empty_and_invalid():
    res = reciprocal_rank_fusion({"a": [], "b": []})
    assert res.ids == [] and res.scores.size == 0
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a", "a"]])
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], weights=[-1.0])
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], weights=[1.0, 2.0])
    with pytest.raises(ValueError):
        normalized_score_fusion([(["a", "b"], [1.0])])
    with pytest.raises(ValueError):
        normalized_score_fusion("abc")

