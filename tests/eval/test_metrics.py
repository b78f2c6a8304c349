"""Hand-computed examples for lightrag_prism.eval.metrics."""

import math

import numpy as np
import pytest

from lightrag_prism.eval.metrics import (
    all_in_top_k,
    query_all_in_top_k,
    query_recall,
    recall_at_k,
    recall_at_ks,
    summarize_latencies,
)

GOLD = [["a", "b"], ["c"], ["d", "e", "f"]]
RETRIEVED = [
    ["x", "a", "y", "b"],  # a at rank 2, b at rank 4
    ["c", "z"],  # c at rank 1
    ["d", "q", "e", "d"],  # duplicates do not count twice; f never retrieved
]


def test_query_recall_by_hand():
    assert query_recall(["a", "b"], ["x", "a", "y", "b"], 1) == 0.0
    assert query_recall(["a", "b"], ["x", "a", "y", "b"], 2) == 0.5
    assert query_recall(["a", "b"], ["x", "a", "y", "b"], 4) == 1.0
    assert query_recall(["a", "a", "b"], ["a"], 5) == 0.5  # gold is a set
    assert query_recall([], ["a"], 5) == 0.0


def test_recall_at_k_mean_over_queries():
    # k=1: 0, 1, 1/3 -> 4/9 ; k=2: 1/2, 1, 1/3 -> 11/18 ; k=4: 1, 1, 2/3 -> 8/9
    assert recall_at_k(GOLD, RETRIEVED, 1) == pytest.approx(4 / 9)
    assert recall_at_k(GOLD, RETRIEVED, 2) == pytest.approx(11 / 18)
    assert recall_at_k(GOLD, RETRIEVED, 4) == pytest.approx(8 / 9)
    assert recall_at_ks(GOLD, RETRIEVED, (1, 4)) == pytest.approx({1: 4 / 9, 4: 8 / 9})


def test_recall_edge_cases():
    assert recall_at_k([], [], 5) == 0.0
    assert recall_at_k([[]], [["a"]], 5) == 0.0
    with pytest.raises(ValueError, match="gold lists"):
        recall_at_k([["a"]], [], 2)
    with pytest.raises(ValueError, match="positive integer"):
        recall_at_k([["a"]], [["a"]], 0)


def test_all_in_top_k_by_hand():
    assert query_all_in_top_k(["a", "b"], ["x", "a", "y", "b"], 4)
    assert not query_all_in_top_k(["a", "b"], ["x", "a", "y", "b"], 3)
    assert not query_all_in_top_k([], ["a"], 3)
    # k=2: only query 2 complete -> 1/3 ; k=4: queries 1 and 2 -> 2/3
    assert all_in_top_k(GOLD, RETRIEVED, 2) == pytest.approx(1 / 3)
    assert all_in_top_k(GOLD, RETRIEVED, 4) == pytest.approx(2 / 3)
    assert all_in_top_k(GOLD, RETRIEVED) == pytest.approx(2 / 3)  # default k=21


def test_all_in_top_k_default_is_21():
    ranked = [f"p{i}" for i in range(30)]
    assert query_all_in_top_k(["p20"], ranked)
    assert not query_all_in_top_k(["p21"], ranked)


def test_summarize_latencies():
    # 1..20: median 10.5; p95 at position 0.95*19 = 18.05 -> 19 + 0.05*(20-19) = 19.05
    out = summarize_latencies(range(1, 21))
    assert out == pytest.approx({"median": 10.5, "p95": 19.05})
    assert summarize_latencies([7.0]) == {"median": 7.0, "p95": 7.0}
    empty = summarize_latencies([])
    assert math.isnan(empty["median"]) and math.isnan(empty["p95"])


def test_reciprocal_rank_fusion_against_the_formula():
    from lightrag_prism.eval.metrics import reciprocal_rank_fusion

    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "d"]], k=60)
    expected = {"a": 1 / 61, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    assert fused == sorted(expected, key=lambda item: (-expected[item], "abcd".index(item)))
    assert fused[0] == "c" and fused[1:3] == ["a", "b"]  # b and d tie: first appearance first


def test_paired_bootstrap_against_a_plain_loop():
    import random

    from lightrag_prism.eval.metrics import paired_bootstrap, per_question_recall

    ours = per_question_recall([["g1", "g2"], ["g3"], ["g4", "g5"], ["g6"]],
                               [["g1", "x", "g2"], ["x", "g3"], ["g4"], ["x"]], 2)
    assert ours.tolist() == [0.5, 1.0, 0.5, 0.0]
    base = np.array([0.0, 1.0, 0.5, 0.5])
    result = paired_bootstrap(ours, base, samples=4000, seed=1)
    assert result["mean"] == pytest.approx(100 * (ours - base).mean(), abs=0.05)
    rng = random.Random(2)  # an independent resampling: its interval must agree to about a point
    diffs = (ours - base).tolist()
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(4000))
    assert result["ci95"][0] == pytest.approx(100 * means[100], abs=2.0)
    assert result["ci95"][1] == pytest.approx(100 * means[3899], abs=2.0)
    assert paired_bootstrap(base, base)["ci95"] == [0.0, 0.0]
