import numpy as np
import pytest
import scipy.sparse as sp

from lightrag_prism.graph.fastrp import (
    FastRPState,
    fastrp_embeddings,
    fastrp_similarity,
    random_projection,
)
from tests.graph._graphs import to_csr, weighted_graph


def _dense_reference(a: np.ndarray, r_mat: np.ndarray, weights, r: float) -> np.ndarray:
    deg = a.sum(axis=1)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    s = inv[:, None] * a * inv[None, :]
    scale = np.where(deg > 0, np.where(deg > 0, deg, 1.0) ** r, 0.0)
    x = sum(w * scale[:, None] * (np.linalg.matrix_power(s, k) @ r_mat) for k, w in enumerate(weights))
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.where(norms > 0, x / np.where(norms > 0, norms, 1.0), 0.0)


@pytest.mark.parametrize("kind", ["er", "ba"])
@pytest.mark.parametrize("weights", [(0.0, 1.0, 1.0, 0.5), (1.0, 1.0, 0.5, 0.25)])
def test_matches_dense_reference(kind, weights):
    a = to_csr(weighted_graph(kind, 150, 11, n_isolated=4))
    r_mat = random_projection(np.arange(a.shape[0]), 64, 42).astype(np.float64)
    ours = fastrp_embeddings(a, dim=64, iteration_weights=weights, normalization_strength=-0.1, seed=42)
    ref = _dense_reference(a.toarray(), r_mat, weights, -0.1)
    np.testing.assert_allclose(ours, ref, atol=2e-5)


def test_isolated_nodes_have_zero_rows_others_unit():
    a = to_csr(weighted_graph("er", 80, 2, n_isolated=3))
    x = fastrp_embeddings(a, dim=32)
    deg = np.asarray(a.sum(axis=1)).ravel()
    np.testing.assert_array_equal(x[deg == 0], 0.0)
    np.testing.assert_allclose(np.linalg.norm(x[deg > 0], axis=1), 1.0, atol=1e-5)


def test_random_projection_is_per_node_deterministic_and_sparse():
    full = random_projection(np.arange(1000), 256, 7)
    part = random_projection(np.array([999, 3, 500]), 256, 7)
    np.testing.assert_array_equal(part, full[[999, 3, 500]])
    assert not np.array_equal(full, random_projection(np.arange(1000), 256, 8))
    assert set(np.unique(full).tolist()) == {-4.0, 0.0, 4.0}  # s = sqrt(256) = 16 -> +-sqrt(16)
    assert np.count_nonzero(full) / full.size == pytest.approx(1 / 16, rel=0.05)
    assert np.mean(full.astype(np.float64) ** 2) == pytest.approx(1.0, rel=0.05)


def _grow(a: sp.csr_matrix, n_new: int, n_edges: int, seed: int) -> sp.csr_matrix:
    """Append n_new nodes and n_edges random symmetric edges (some between old nodes)."""
    n = a.shape[0] + n_new
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, n_edges)
    v = np.concatenate([rng.integers(a.shape[0], n, n_edges // 2), rng.integers(0, n, n_edges - n_edges // 2)])
    keep = u != v
    e = sp.csr_matrix((rng.uniform(0.5, 2, keep.sum()), (u[keep], v[keep])), shape=(n, n))
    big = sp.csr_matrix((a.data, a.indices, a.indptr), shape=(a.shape[0], n))
    big = sp.vstack([big, sp.csr_matrix((n_new, n))], format="csr")
    return sp.csr_matrix(big + e + e.T)


@pytest.mark.parametrize("kind", ["er", "ba"])
def test_incremental_update_equals_full_rebuild(kind):
    a = to_csr(weighted_graph(kind, 400, 5, n_isolated=2))
    state = FastRPState.build(a, dim=64)
    grown = _grow(a, 8, 10, seed=5)
    updated = state.update(grown)
    rebuilt = FastRPState.build(grown, dim=64)
    np.testing.assert_allclose(updated.embedding, rebuilt.embedding, atol=1e-6)
    for y_upd, y_full in zip(updated.powers, rebuilt.powers):
        np.testing.assert_allclose(y_upd, y_full, atol=1e-6)


def test_update_with_reweighted_edge_only_touches_its_ball():
    a = to_csr(weighted_graph("er", 500, 9))  # sparse ER: the 3-hop ball of one edge is small
    state = FastRPState.build(a, dim=32)
    b = a.copy()
    u = int(np.flatnonzero(np.diff(a.indptr))[0])
    v = int(a.indices[a.indptr[u]])
    b[u, v] = b[v, u] = a[u, v] + 3.0
    updated = state.update(b)
    np.testing.assert_allclose(updated.embedding, FastRPState.build(b, dim=32).embedding, atol=1e-6)
    assert 0 < updated.recomputed_rows < 3 * 500 // 2


def test_update_in_place_of_the_old_powers_equals_a_copying_update_and_a_rebuild():
    a = to_csr(weighted_graph("er", 500, 9))
    b = a.copy()
    u = int(np.flatnonzero(np.diff(a.indptr))[0])
    b[u, a.indices[a.indptr[u]]] = b[a.indices[a.indptr[u]], u] = 0.0  # an edge gone, as after a deletion
    b.eliminate_zeros()
    copying = FastRPState.build(a, dim=32).update(b)
    state = FastRPState.build(a, dim=32)
    old_embedding, old_powers = state.embedding.copy(), [y.copy() for y in state.powers]
    in_place = state.update(b, reuse_powers=True)
    rebuilt = FastRPState.build(b, dim=32)
    np.testing.assert_array_equal(in_place.embedding, copying.embedding)
    np.testing.assert_allclose(in_place.embedding, rebuilt.embedding, atol=1e-6)
    assert all(y is z for y, z in zip(in_place.powers, state.powers))  # written over, not copied
    assert not np.array_equal(state.powers[1], old_powers[1])
    np.testing.assert_array_equal(state.embedding, old_embedding)  # the old embedding is never written
    # With nodes added the arrays cannot grow in place: the update copies, and the old powers stay intact.
    grown = _grow(a, 5, 6, seed=3)
    state = FastRPState.build(a, dim=32)
    updated = state.update(grown, reuse_powers=True)
    np.testing.assert_allclose(updated.embedding, FastRPState.build(grown, dim=32).embedding, atol=1e-6)
    for y, before in zip(state.powers, old_powers):
        np.testing.assert_array_equal(y, before)


def test_update_rejects_node_deletion():
    a = to_csr(weighted_graph("er", 50, 1))
    with pytest.raises(ValueError, match="deletion"):
        FastRPState.build(a, dim=16).update(a[:40, :40])


def test_similarity_is_weighted_mean_cosine():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 8))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    seeds, w = np.array([2, 5, 7]), np.array([1.0, 2.0, 0.5])
    expected = (x @ x[seeds].T) @ w / w.sum()
    np.testing.assert_allclose(fastrp_similarity(x, seeds, w), expected)
    np.testing.assert_allclose(fastrp_similarity(x, seeds), (x @ x[seeds].T).mean(axis=1))
    with pytest.raises(ValueError):
        fastrp_similarity(x, [])


def test_negative_weight_raises():
    with pytest.raises(ValueError, match="non-negative"):
        fastrp_embeddings(sp.csr_matrix(np.array([[0, -1.0], [-1.0, 0]])), dim=8)


def test_embedding_is_row_major_after_a_build_and_after_updates_and_scores_like_a_float64_product():
    a = to_csr(weighted_graph("er", 300, 5))
    grown = _grow(a, 7, 8, seed=5)
    built = FastRPState.build(a, dim=32)
    for state in (built, built.update(grown), FastRPState.build(grown, dim=32).update(grown, reuse_powers=True)):
        # queries score each row against one vector with np.vecdot, which reads a row-major matrix in order
        assert state.embedding.flags.c_contiguous
        seeds, weights = np.array([3, 17, 40]), np.array([0.5, 0.3, 0.2])
        exact = state.embedding.astype(np.float64)
        reference = exact @ (weights @ exact[seeds] / weights.sum())
        np.testing.assert_allclose(fastrp_similarity(state.embedding, seeds, weights), reference, atol=1e-6)


def test_the_normalization_strength_cancels_in_the_row_normalised_embedding():
    """``diag(deg^r)`` scales whole rows (PrismRAG's formula), so the unit rows do not depend on ``r``: the module
    docstring says so, and a change that moves the factor must change this test."""
    a = to_csr(weighted_graph("ba", 120, 7, n_isolated=2))
    flat = fastrp_embeddings(a, dim=32, normalization_strength=0.0)
    for r in (-0.5, -0.1, 0.7):
        np.testing.assert_allclose(fastrp_embeddings(a, dim=32, normalization_strength=r), flat, atol=1e-6)
