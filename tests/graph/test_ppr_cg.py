"""The conjugate-gradient path of personalized PageRank (symmetric transitions) against networkx and against the
power iteration on the same graph."""
import networkx as nx
import numpy as np
import pytest

from lightrag_prism.graph import ppr_cg
from lightrag_prism.graph.ppr import (
    personalized_pagerank,
    personalized_pagerank_batch,
    symmetric_ppr,
    transition_matrix,
)
from tests.graph._graphs import to_csr, weighted_graph


def _nx_ppr(g, p, damping):
    pers = {i: float(w) for i, w in enumerate(p)}
    ref = nx.pagerank(g, alpha=damping, personalization=pers, weight="weight", tol=1e-14, max_iter=100000)
    return np.array([ref[i] for i in range(g.number_of_nodes())])


def _seeds(n, k, rng, extra=()):
    p = np.zeros(n)
    p[rng.choice(n, k, replace=False)] = rng.uniform(0.5, 2.0, k)
    p[list(extra)] = 1.0
    return p


@pytest.mark.parametrize("kind", ["er", "ba"])
@pytest.mark.parametrize("damping", [0.5, 0.85, 0.95])
@pytest.mark.parametrize("tol", [1e-4, 1e-6, 1e-9])
def test_cg_is_within_tol_of_networkx(kind, damping, tol):
    g = weighted_graph(kind, 300, 11, n_isolated=4)  # ER leaves small components and isolated nodes
    p = _seeds(304, 4, np.random.default_rng(3), extra=(301,))  # one seed on an isolated (dangling) node
    t = transition_matrix(to_csr(g), symmetric=True)
    assert t.symmetric
    got = personalized_pagerank(t, p, damping=damping, tol=tol, max_iter=10000)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.abs(got - _nx_ppr(g, p, damping)).sum() <= tol  # the stopping rule's guarantee


def test_cg_agrees_with_the_power_iteration():
    a = to_csr(weighted_graph("ba", 400, 5, n_isolated=2))
    p = _seeds(402, 3, np.random.default_rng(5))
    cg = personalized_pagerank(transition_matrix(a, symmetric=True), p, tol=1e-10, max_iter=10000)
    power = personalized_pagerank(transition_matrix(a), p, tol=1e-10, max_iter=10000)
    assert np.abs(cg - power).sum() < 1e-8


def test_the_solve_through_the_scaled_adjacency_equals_the_one_through_the_normalised_matrix():
    g = weighted_graph("er", 250, 9, n_isolated=3)
    a = to_csr(g)
    t = transition_matrix(a, symmetric=True)
    p = _seeds(253, 8, np.random.default_rng(9))
    p = p / p.sum()
    normalized = ppr_cg.solve(ppr_cg.normalized_adjacency(t.pt, t.out_weight), t.out_weight, p, 0.85, 1e-6, 100)
    scaled = ppr_cg.solve(ppr_cg.ScaledAdjacency(a, t.out_weight), t.out_weight, p, 0.85, 1e-6, 100)
    np.testing.assert_allclose(scaled, normalized, rtol=0, atol=1e-14)
    assert np.abs(normalized - _nx_ppr(g, p, 0.85)).sum() <= 1e-6
    capped = ppr_cg.solve(ppr_cg.ScaledAdjacency(a, t.out_weight), t.out_weight, p, 0.85, 1e-6, 2)
    assert capped.sum() == pytest.approx(1.0) and np.abs(capped - normalized).sum() > 1e-6  # max_iter caps


def test_a_batch_on_a_symmetric_graph_runs_the_power_iteration_within_tol():
    g = weighted_graph("ba", 300, 4)
    t = transition_matrix(to_csr(g), symmetric=True)
    p = np.stack([_seeds(300, k, np.random.default_rng(k)) for k in (1, 5)], axis=1)
    batch = personalized_pagerank_batch(t, p)
    for j in range(2):
        assert np.abs(batch[:, j] - _nx_ppr(g, p[:, j], 0.85)).sum() <= 1e-6


def test_max_iter_caps_without_raising():
    a = to_csr(weighted_graph("ba", 300, 2))
    p = _seeds(300, 2, np.random.default_rng(2))
    t = transition_matrix(a, symmetric=True)
    capped = personalized_pagerank(t, p, damping=0.95, max_iter=2)
    full = personalized_pagerank(t, p, damping=0.95)
    assert capped.sum() == pytest.approx(1.0) and np.abs(capped - full).sum() > 1e-3


def test_normalized_adjacency_is_d_half_a_d_half():
    a = to_csr(weighted_graph("er", 60, 4, n_isolated=2))
    t = transition_matrix(a, symmetric=True)
    deg = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, np.sqrt(deg), out=np.zeros_like(deg), where=deg > 0)
    np.testing.assert_allclose(ppr_cg.normalized_adjacency(t.pt, t.out_weight).toarray(),
                               inv[:, None] * a.toarray() * inv[None, :], atol=1e-15)


def test_a_seed_in_a_small_component_is_solved_on_that_component_only():
    g = weighted_graph("ba", 300, 8)
    g.add_weighted_edges_from([(300, 301, 2.0), (301, 302, 1.0)])  # a separate 3-node component
    t = transition_matrix(to_csr(g), symmetric=True)
    p = np.zeros(303)
    p[301] = 1.0
    got = personalized_pagerank(t, p, tol=1e-9)
    assert np.count_nonzero(got) == 3 and ("components",) in t.cache
    assert np.abs(got - _nx_ppr(g, p, 0.85)).sum() <= 1e-9
    p[:] = 0.0
    p[[0, 301]] = 1.0  # seeds in both components: still exact
    assert np.abs(personalized_pagerank(t, p) - _nx_ppr(g, p, 0.85)).sum() <= 1e-6


@pytest.mark.parametrize("kind", ["er", "ba"])
@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_symmetric_ppr_on_the_scaled_product_is_within_tol_of_networkx(kind, damping):
    """symmetric_ppr never forms D^-1/2 A D^-1/2 (ScaledAdjacency); same guarantee as the cached transition."""
    g = weighted_graph(kind, 300, 17, n_isolated=3)
    a = to_csr(g)
    p = _seeds(303, 5, np.random.default_rng(8), extra=(301,))  # a seed on an isolated node keeps its mass
    got = symmetric_ppr(a, np.asarray(a.sum(axis=1)).ravel(), p, damping=damping, tol=1e-8, max_iter=10000)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.abs(got - _nx_ppr(g, p, damping)).sum() <= 1e-8
    cached = personalized_pagerank(transition_matrix(a, symmetric=True), p, damping=damping, tol=1e-8, max_iter=10000)
    assert np.abs(got - cached).sum() <= 2e-8


@pytest.mark.parametrize("kind", ["er", "ba"])
@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_a_float32_graph_is_solved_in_float32_within_tol_of_networkx(kind, damping):
    """Precision follows the matrix: float32 weights run float32 steps (half the bytes per step), and the answer
    keeps the stopping rule's guarantee up to float32 rounding (~1e-7 of each value)."""
    g = weighted_graph(kind, 300, 17, n_isolated=3)
    a32 = to_csr(g).astype(np.float32)
    g32 = nx.from_scipy_sparse_array(a32.astype(np.float64), create_using=nx.Graph)  # the weights as rounded
    g32.add_nodes_from(range(303))
    degree = np.asarray(a32.sum(axis=1, dtype=np.float64)).ravel()
    p = _seeds(303, 5, np.random.default_rng(8), extra=(301,))
    reference = _nx_ppr(g32, p, damping)
    assert (ppr_cg.ScaledAdjacency(a32, degree) @ np.ones(303, np.float32)).dtype == np.float32
    got = symmetric_ppr(a32, degree, p, damping=damping, tol=1e-6, max_iter=10000)
    assert got.dtype == np.float64 and got.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.abs(got - reference).sum() <= 1e-6 + 1e-7
    t = transition_matrix(a32, symmetric=True, dtype=np.float32)
    assert t.cache[("normalized",)].dtype == np.float32
    cached = personalized_pagerank(t, p, damping=damping, tol=1e-6, max_iter=10000)
    assert np.abs(cached - reference).sum() <= 1e-6 + 1e-7


def test_scaled_adjacency_is_the_normalised_matrix_on_vectors():
    a = to_csr(weighted_graph("er", 200, 4, n_isolated=2))
    degree = np.asarray(a.sum(axis=1)).ravel()
    normalized = ppr_cg.normalized_adjacency(transition_matrix(a).pt, degree)
    x = np.random.default_rng(1).standard_normal(202)
    scaled = ppr_cg.ScaledAdjacency(a, degree)
    np.testing.assert_allclose(scaled @ x, normalized @ x, rtol=1e-12, atol=1e-14)
    assert not (scaled @ x)[degree == 0].any()  # isolated nodes: empty rows, as in the normalised matrix


def test_symmetric_ppr_rejects_what_personalized_pagerank_rejects():
    a = to_csr(weighted_graph("ba", 50, 2))
    degree = np.asarray(a.sum(axis=1)).ravel()
    with pytest.raises(ValueError, match="all zero"):
        symmetric_ppr(a, degree, np.zeros(50))
    with pytest.raises(ValueError, match="1-D"):
        symmetric_ppr(a, degree, np.ones((50, 1)))
    with pytest.raises(ValueError, match="damping"):
        symmetric_ppr(a, degree, np.ones(50), damping=1.0)


def test_rows_by_length_orders_rows_longest_first_and_ppr_solved_there_is_the_same():
    g = weighted_graph("ba", 300, 3, n_isolated=4)
    a = to_csr(g)
    order = ppr_cg.rows_by_length(a.indptr)
    lengths = np.diff(a.indptr)
    assert order.tolist() == sorted(range(304), key=lambda v: (-lengths[v], v))  # ties by index
    relabelled = a[order][:, order]
    position = np.argsort(order)
    p = _seeds(304, 6, np.random.default_rng(3), extra=(302,))
    degree = np.asarray(relabelled.sum(axis=1)).ravel()
    got = symmetric_ppr(relabelled, degree, p[order], damping=0.5, tol=1e-10, max_iter=1000)[position]
    assert np.abs(got - _nx_ppr(g, p, 0.5)).sum() <= 1e-10
    assert ppr_cg.rows_by_length(np.zeros(1, dtype=np.int64)).size == 0  # no node


def _exact_error_bound(z, r, sqrt_deg, isolated_mass, damping):
    """The stopping rule's bound with its sums exact (math.fsum of the float64 products; a float32 value times a
    float64 weight is exact to 1e-16 in float64), as the independent reference of the widened float32 one."""
    import math

    z, r = z.astype(np.float64), r.astype(np.float64)
    total = math.fsum(z * sqrt_deg) + isolated_mass
    norm = math.fsum(np.abs(z) * sqrt_deg) + isolated_mass
    error = math.fsum(np.abs(r) * sqrt_deg) / (1.0 - damping)
    return error * (1.0 + norm / total) / (total - error)


@pytest.mark.parametrize("n", [300, 20_000, 100_000])
def test_the_float32_error_bound_is_never_below_the_exact_one_and_close_to_it(n):
    rng = np.random.default_rng(n)
    rounding = ppr_cg.dot_rounding(n, np.float32)
    for _ in range(10):
        z = rng.normal(1.0, 0.6, n).astype(np.float32)  # iterates: some entries negative
        r = rng.normal(0.0, 1e-6, n).astype(np.float32)
        sqrt_deg = np.sqrt(rng.integers(1, 400, n).astype(np.float64))
        exact = _exact_error_bound(z, r, sqrt_deg, 0.01, 0.5)
        got = ppr_cg._error_bound(z, r, sqrt_deg.astype(np.float32), 0.01, 0.5, np.empty(n, np.float32), rounding)
        assert exact <= got <= exact * (1.0 + 8.0 * rounding)


def test_dot_rounding_grows_with_the_length_and_gives_up_past_half_a_unit():
    assert 0 < ppr_cg.dot_rounding(10, np.float64) < ppr_cg.dot_rounding(10, np.float32)
    assert ppr_cg.dot_rounding(1_000, np.float32) < ppr_cg.dot_rounding(100_000, np.float32) < 0.01
    assert ppr_cg.dot_rounding(66_000, np.float32) == pytest.approx(66_001 * 2.0 ** -24, rel=0.01)
    assert ppr_cg.dot_rounding(2 ** 23, np.float32) == np.inf
