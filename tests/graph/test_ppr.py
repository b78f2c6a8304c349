import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from lightrag_prism.graph.ppr import (
    Transition,
    edge_reweighted,
    personalized_pagerank,
    personalized_pagerank_batch,
    symmetric_transition,
    transition_matrix,
)
from lightrag_prism.graph.ppr_cg import normalized_adjacency
from tests.graph._graphs import to_csr, weighted_graph


def _nx_ppr(g, p, damping):
    pers = {i: float(w) for i, w in enumerate(p)}
    ref = nx.pagerank(g, alpha=damping, personalization=pers, weight="weight", tol=1e-12, max_iter=10000)
    return np.array([ref[i] for i in range(g.number_of_nodes())])


@pytest.mark.parametrize("kind", ["er", "ba"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_matches_networkx(kind, seed, damping):
    g = weighted_graph(kind, 300, seed, n_isolated=5)
    rng = np.random.default_rng(seed)
    p = np.zeros(g.number_of_nodes())
    p[rng.choice(g.number_of_nodes(), 5, replace=False)] = rng.uniform(0.5, 2.0, 5)
    ours = personalized_pagerank(to_csr(g), p, damping=damping)
    assert ours.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.abs(ours - _nx_ppr(g, p, damping)).sum() <= 1e-6


def test_batch_equals_single_per_column():
    g = weighted_graph("ba", 400, 7, n_isolated=3)
    t = transition_matrix(to_csr(g))
    rng = np.random.default_rng(7)
    p = rng.uniform(size=(g.number_of_nodes(), 6)) * (rng.uniform(size=(g.number_of_nodes(), 6)) < 0.05)
    p[0, :] += 1.0  # every column non-empty
    batch = personalized_pagerank_batch(t, p)
    for j in range(p.shape[1]):
        np.testing.assert_allclose(batch[:, j], personalized_pagerank(t, p[:, j]), atol=1e-15)


def test_accepts_transition_or_adjacency():
    a = to_csr(weighted_graph("er", 100, 3))
    p = np.eye(100)[0]
    t = transition_matrix(a)
    assert isinstance(t, Transition)
    np.testing.assert_array_equal(personalized_pagerank(a, p), personalized_pagerank(t, p))


@pytest.mark.parametrize("seed", [0, 1])
def test_symmetric_transition_equals_the_transposed_build(seed):
    a = to_csr(weighted_graph("ba", 200, seed, n_isolated=4))  # isolated nodes: dangling columns
    general, fast = transition_matrix(a), transition_matrix(a, symmetric=True)
    np.testing.assert_allclose(fast.pt.toarray(), general.pt.toarray(), atol=1e-15)
    np.testing.assert_array_equal(fast.dangling, general.dangling)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_one_pass_symmetric_transition_equals_the_general_build_and_its_ppr(seed):
    a = to_csr(weighted_graph("ba", 200, seed, n_isolated=4))
    a.sort_indices()
    reference, fast = transition_matrix(a, symmetric=True), symmetric_transition(a)
    np.testing.assert_allclose(fast.pt.toarray(), reference.pt.toarray(), atol=1e-15)
    np.testing.assert_array_equal(fast.dangling, reference.dangling)
    np.testing.assert_allclose(fast.out_weight, reference.out_weight, rtol=1e-14)
    np.testing.assert_allclose(fast.cache[("normalized",)].toarray(),
                               normalized_adjacency(reference.pt, reference.out_weight).toarray(), atol=1e-15)
    g = weighted_graph("ba", 200, seed, n_isolated=4)
    p = np.zeros(a.shape[0])
    p[[1, 5, 9]] = 1.0
    assert np.abs(personalized_pagerank(fast, p) - _nx_ppr(g, p, 0.85)).sum() <= 1e-6


def test_negative_weight_raises():
    a = sp.csr_matrix(np.array([[0, -1.0], [-1.0, 0]]))
    with pytest.raises(ValueError, match="non-negative"):
        transition_matrix(a)
    with pytest.raises(ValueError, match="non-negative"):
        personalized_pagerank(a, np.ones(2))


def test_zero_personalization_raises():
    a = to_csr(weighted_graph("er", 20, 0))
    with pytest.raises(ValueError, match="all zero"):
        personalized_pagerank(a, np.zeros(20))


def test_dangling_mass_goes_to_personalization():
    # Path 0 - 1 plus a directed edge 1 -> 2 where 2 is dangling: walks that reach 2 restart at the
    # seed (node 0), never at a uniformly chosen node; so isolated node 3 keeps exactly 0 mass.
    a = sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=float))
    p = np.array([1.0, 0, 0, 0])
    ours = personalized_pagerank(a, p, tol=1e-14, max_iter=1000)
    assert ours[3] == 0.0
    g = nx.DiGraph()
    g.add_nodes_from(range(4))
    g.add_weighted_edges_from([(0, 1, 1.0), (1, 0, 1.0), (1, 2, 1.0)])
    ref = _nx_ppr(g, p, 0.85)
    np.testing.assert_allclose(ours, ref, atol=1e-10)
    # closed form: x0 = 0.15 + 0.85 (x1/2 + x2), x1 = 0.85 x0, x2 = 0.85 x1 / 2
    x0 = 0.15 / (1 - 0.85 * (0.85 / 2 + 0.85 * 0.85 / 2))
    np.testing.assert_allclose(ours[:3], [x0, 0.85 * x0, 0.85 * 0.85 * x0 / 2], atol=1e-12)


def test_edge_reweighted_multiplies_weights():
    a = to_csr(weighted_graph("er", 50, 4))
    f = np.random.default_rng(4).uniform(size=a.nnz)
    b = edge_reweighted(a, f)
    np.testing.assert_array_equal(b.indices, a.indices)
    np.testing.assert_array_equal(b.indptr, a.indptr)
    np.testing.assert_allclose(b.data, a.data * f)
    with pytest.raises(ValueError):
        edge_reweighted(a, -f)
    with pytest.raises(ValueError):
        edge_reweighted(a, f[:-1])


def test_reweighted_ppr_matches_networkx_on_temp_weights():
    g = weighted_graph("ba", 200, 5)
    a = to_csr(g)
    sim = np.random.default_rng(5).uniform(-1, 1, size=(200, 200))
    sim = np.triu(sim) + np.triu(sim, 1).T  # one similarity per undirected edge
    rows = np.repeat(np.arange(200), np.diff(a.indptr))
    b = edge_reweighted(a, np.maximum(sim[rows, a.indices], 0.0))
    h = nx.Graph()
    h.add_nodes_from(range(200))
    r, c = b.nonzero()
    h.add_weighted_edges_from(zip(r.tolist(), c.tolist(), np.asarray(b[r, c]).ravel().tolist()))
    p = np.eye(200)[[3, 9]].sum(axis=0)
    np.testing.assert_allclose(personalized_pagerank(b, p), _nx_ppr(h, p, 0.85), atol=1e-6)


def test_max_iter_caps_without_raising():
    a = to_csr(weighted_graph("ba", 100, 1))
    x = personalized_pagerank(a, np.eye(100)[0], max_iter=1)
    assert x.sum() == pytest.approx(1.0)
