import numpy as np
import pytest

from lightrag_prism.graph import knn
from lightrag_prism.graph.knn import topk_cosine


def _brute(q, c, k, exclude=None, threshold=None):
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    cn = c / np.linalg.norm(c, axis=1, keepdims=True)
    sims = qn @ cn.T
    if exclude is not None:
        sims[np.arange(len(q)), exclude] = -np.inf
    idx = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    val = np.take_along_axis(sims, idx, axis=1)
    if threshold is not None:
        idx = np.where(val >= threshold, idx, -1)
        val = np.where(val >= threshold, val, -np.inf)
    return idx, val


@pytest.mark.parametrize("block_size", [1, 7, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_bruteforce(block_size, dtype):
    rng = np.random.default_rng(0)
    q, c = rng.normal(size=(50, 16)).astype(dtype), rng.normal(size=(200, 16)).astype(dtype)
    idx, val = topk_cosine(q, c, 10, block_size=block_size)
    ref_idx, ref_val = _brute(q.astype(np.float64), c.astype(np.float64), 10)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(val, ref_val, atol=1e-5 if dtype == np.float32 else 1e-12)


def test_exclude_self_and_threshold():
    rng = np.random.default_rng(1)
    c = rng.normal(size=(100, 8))
    idx, val = topk_cosine(c, c, 5, threshold=0.5, block_size=16, exclude_self_ids=np.arange(100))
    ref_idx, ref_val = _brute(c, c, 5, exclude=np.arange(100), threshold=0.5)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(val, ref_val)
    assert (idx != np.arange(100)[:, None]).all()
    assert (idx == -1).any() and (val[idx == -1] == -np.inf).all()


def test_k_larger_than_corpus_pads():
    c = np.eye(3)
    idx, val = topk_cosine(c[:1], c, 5, exclude_self_ids=[0])
    assert idx[0, 0] in (1, 2) and idx[0, 2:].tolist() == [-1, -1, -1]
    assert val[0, 0] == 0.0 and np.isneginf(val[0, 2:]).all()


def test_ties_prefer_lower_index_and_zero_vectors():
    c = np.array([[1.0, 0], [1.0, 0], [0, 0], [2.0, 0]])
    idx, val = topk_cosine(np.array([[3.0, 0]]), c, 4)
    assert idx.tolist() == [[0, 1, 3, 2]]
    np.testing.assert_allclose(val, [[1, 1, 1, 0]])


def test_bad_shapes_raise():
    with pytest.raises(ValueError):
        topk_cosine(np.ones((2, 3)), np.ones((4, 2)), 1)
    with pytest.raises(ValueError):
        topk_cosine(np.ones((2, 3)), np.ones((4, 3)), 0)


def test_cached_rows_computes_each_missing_row_once_and_keeps_it():
    from lightrag_prism.graph import cached_rows

    values = np.arange(10, dtype=np.float64) * 1.5
    asked = []

    def compute(rows):
        asked.append(rows.tolist())
        return values[rows]

    cache = np.full(10, np.nan)
    assert cached_rows(cache, [3, 1, 3], compute).tolist() == [4.5, 1.5, 4.5]
    assert cached_rows(cache, np.array([1, 7]), compute).tolist() == [1.5, 10.5]
    assert cached_rows(cache, [7, 3], compute).tolist() == [10.5, 4.5]
    assert asked == [[1, 3], [7]]  # sorted, distinct, and only rows not computed before
    assert np.isnan(cache[[0, 2, 4, 5, 6, 8, 9]]).all()


@pytest.mark.parametrize("threshold", [0.9, 0.6, 0.3, -2.0])  # few above it (ranked alone) ... all (partitioned)
@pytest.mark.parametrize("k", [1, 3, 40])
def test_threshold_matches_bruteforce_whether_few_or_many_pass(threshold, k):
    rng = np.random.default_rng(2)
    c = rng.normal(size=(300, 4))
    idx, val = topk_cosine(c[:60], c, k, threshold=threshold, block_size=32, exclude_self_ids=np.arange(60))
    ref_idx, ref_val = _brute(c[:60], c, k, exclude=np.arange(60), threshold=threshold)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(val, ref_val)
    unit = c / np.linalg.norm(c, axis=1, keepdims=True)
    share = ((unit[:32] @ unit.T) >= threshold).mean()  # the first block: which way it is ranked
    assert share <= 1 / knn.SPARSE_SHARE if threshold == 0.9 else share > 1 / knn.SPARSE_SHARE


def test_above_threshold_ties_at_the_cut_prefer_lower_index():
    c = np.array([[1.0, 0], [0, 1.0], [2.0, 0], [1.0, 0], [3.0, 0], [-1.0, 0]] + [[0, 1.0]] * 100)  # exact ties
    idx, val = topk_cosine(c[:1], c, 2, threshold=0.5, exclude_self_ids=[0])
    assert idx.tolist() == [[2, 3]]  # three tie above the threshold; the cut keeps the lower indices
    idx, _ = topk_cosine(c[:1], c, 5, threshold=0.5, exclude_self_ids=[0])
    assert idx.tolist() == [[2, 3, 4, -1, -1]]
