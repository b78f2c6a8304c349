import random

import pytest

from lightrag_prism.insert.merging.union_find import (
    Cluster,
    MergePair,
    UnionFind,
    cluster_id_for,
    merge_clusters,
    pair_key,
)


def _components_bruteforce(n, edges):
    """Reference: repeated relaxation of component labels."""
    label = list(range(n))
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            low = min(label[a], label[b])
            if label[a] != low or label[b] != low:
                label[a] = label[b] = low
                changed = True
    return label


def test_union_find_matches_bruteforce_on_random_graphs():
    rng = random.Random(42)
    for _ in range(50):
        n = rng.randint(1, 60)
        edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randint(0, 80))]
        uf = UnionFind(range(n))
        for a, b in edges:
            uf.union(a, b)
        label = _components_bruteforce(n, edges)
        for i in range(n):
            for j in range(n):
                assert uf.connected(i, j) == (label[i] == label[j])
        assert sum(len(g) for g in uf.groups()) == n == len(uf)


def test_long_chain_has_no_recursion_problem_and_compresses():
    uf = UnionFind()
    for i in range(50_000):
        uf.union(i, i + 1)
    root = uf.find(0)
    assert uf.find(50_000) == root and 0 in uf and "x" not in uf


def test_chains_merge_into_one_cluster_with_voted_canonical():
    pairs = [
        MergePair("Apple", "Apple Inc.", 0.97, "Apple Inc."),
        MergePair("AAPL", "Apple Inc.", 0.96, "Apple Inc."),
        MergePair("Apple", "AAPL", 0.99, "Apple"),
        ("TSMC", "Taiwan Semiconductor", 0.98),
    ]
    clusters = merge_clusters(pairs, source_counts={"Taiwan Semiconductor": 3, "TSMC": 9})
    assert [c.canonical for c in clusters] == ["Apple Inc.", "TSMC"]
    apple = clusters[0]
    assert apple.members == ("AAPL", "Apple", "Apple Inc.") and apple.sources == ("AAPL", "Apple")
    assert apple.min_confidence == 0.96 and len(apple.pairs) == 3
    assert apple.cluster_id == cluster_id_for(["Apple", "AAPL", "Apple Inc."])


def test_canonical_fallbacks_and_overrides():
    # proposed name not a member -> most source chunks, then alphabetical
    (c,) = merge_clusters([MergePair("b", "a", 1.0, "brand new")], source_counts={"b": 2})
    assert c.canonical == "b"
    (c,) = merge_clusters([("b", "a")])
    assert c.canonical == "a"
    (c,) = merge_clusters([("a", "b", 1.0, "a")], canonical_names={pair_key("b", "a"): "b"})
    assert c.canonical == "b"


def test_vote_ties_break_on_confidence_then_alphabet():
    pairs = [("x", "y", 0.9, "x"), ("y", "z", 0.99, "z")]
    assert merge_clusters(pairs)[0].canonical == "z"
    pairs = [("x", "y", 0.9, "y"), ("y", "z", 0.9, "x")]
    assert merge_clusters(pairs)[0].canonical == "x"


def test_self_pairs_and_low_confidence_are_ignored():
    assert merge_clusters([("a", "a", 1.0), ("b", "c", 0.5)], min_confidence=0.9) == []


def test_result_is_independent_of_pair_order():
    rng = random.Random(3)
    names = [f"e{i}" for i in range(30)]
    pairs = [MergePair(rng.choice(names), rng.choice(names), rng.random(), rng.choice(names)) for _ in range(40)]
    expected = merge_clusters(pairs)
    for _ in range(10):
        rng.shuffle(pairs)
        flipped = [MergePair(p.b, p.a, p.confidence, p.canonical) for p in pairs]
        assert merge_clusters(flipped) == expected
    assert all(isinstance(c, Cluster) and c.canonical in c.members for c in expected)


def test_bad_pair_tuple_raises():
    with pytest.raises(TypeError):
        merge_clusters([("only-one",)])
