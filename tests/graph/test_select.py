"""top_k against a plain sort: the sampled threshold must never change the result."""
import numpy as np
import pytest

from lightrag_prism.graph import select
from lightrag_prism.graph.select import top_k


def reference(values, k, above=-np.inf):
    eligible = [i for i, v in enumerate(values) if np.isfinite(v) and v > above]
    return sorted(eligible, key=lambda i: (-values[i], i))[:max(k, 0)]


def shapes(rng, n):
    yield rng.standard_normal(n)  # distinct
    yield rng.integers(0, 4, n).astype(np.float64)  # mass ties at the k-th place
    yield np.sort(rng.standard_normal(n))  # best values at the end: the sample's stride lines up with nothing
    with_gaps = rng.standard_normal(n).astype(np.float32)
    with_gaps[rng.random(n) < 0.2] = np.nan
    with_gaps[rng.random(n) < 0.1] = -np.inf
    with_gaps[rng.random(n) < 0.05] = np.inf
    yield with_gaps
    periodic = np.zeros(n)
    periodic[:: select.SAMPLE_STRIDE] = 1.0  # every sampled value is the maximum: the candidates are all of them
    yield periodic


@pytest.mark.parametrize("n", [0, 1, 7, 300, 5_000])
@pytest.mark.parametrize("k", [0, 1, 5, 64, 400])
def test_top_k_equals_a_full_sort(n, k):
    rng = np.random.default_rng(n * 1000 + k)
    for values in shapes(rng, n):
        for above in (-np.inf, 0.0):
            assert top_k(values, k, above).tolist() == reference(values.tolist(), k, above)


def test_the_sampled_path_runs_and_agrees_on_a_long_vector():
    rng = np.random.default_rng(7)
    values = rng.standard_normal(62_000).astype(np.float32)
    values[rng.integers(0, values.size, 500)] = values.max()  # ties at the very top
    for k in (1, 5, 100):
        assert values.size >= select.SAMPLE_STRIDE * 4 * k  # the threshold path, not the plain one
        expected = np.lexsort((np.arange(values.size), -values))[:k]
        assert top_k(values, k).tolist() == expected.tolist()


def test_ties_at_the_cut_keep_the_lower_index():
    assert top_k(np.array([1.0, 3.0, 2.0, 2.0, 2.0]), 3).tolist() == [1, 2, 3]
    assert top_k(np.array([0.0, -1.0, 5.0]), 5, above=0.0).tolist() == [2]
