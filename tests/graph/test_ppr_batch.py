"""The blocked batch kernel: equal to per-column singles, networkx and a plain power iteration."""
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from lightrag_prism.graph.ppr import (
    _BLOCK_BYTES,
    Transition,
    _block_width,
    personalized_pagerank,
    personalized_pagerank_batch,
    transition_matrix,
)
from tests.graph._graphs import to_csr, weighted_graph


def _plain_ppr(adj, p, damping=0.85, tol=1e-6, max_iter=100):
    """Textbook power iteration (independent of the kernel): dangling mass goes to p."""
    adj = sp.csr_matrix(adj, dtype=float)
    out_w = np.asarray(adj.sum(axis=1)).ravel()
    p = p / p.sum()
    x = p.copy()
    for _ in range(max_iter):
        moved = adj.T @ np.divide(x, out_w, out=np.zeros_like(x), where=out_w > 0)
        new = damping * moved + (damping * x[out_w == 0].sum() + 1 - damping) * p
        if np.abs(new - x).sum() < tol:
            return new / new.sum()
        x = new
    return x / x.sum()


def _seeds(n, cols, rng):
    p = np.zeros((n, cols))
    for j in range(cols):
        p[rng.choice(n, 1 + j % 3, replace=False), j] = rng.uniform(0.5, 2.0, 1 + j % 3)
    return p


def _assert_columns_equal_singles(t, p, **kw):
    batch = personalized_pagerank_batch(t, p, **kw)
    kw.pop("block_width", None)
    for j in range(p.shape[1]):
        np.testing.assert_allclose(batch[:, j], personalized_pagerank(t, p[:, j], **kw), rtol=0, atol=1e-13)
    return batch


@pytest.mark.parametrize("width", [1, 3, 4, 64])
def test_blocks_equal_singles_and_networkx(width):
    g = weighted_graph("ba", 300, 11, n_isolated=2)
    t = transition_matrix(to_csr(g))
    p = _seeds(g.number_of_nodes(), 10, np.random.default_rng(11))  # 10 columns: several blocks, last partial
    batch = _assert_columns_equal_singles(t, p, block_width=width, tol=1e-13, max_iter=1000)
    for j in (0, 4, 9):
        pers = {i: float(w) for i, w in enumerate(p[:, j])}
        ref = nx.pagerank(g, alpha=0.85, personalization=pers, weight="weight", tol=1e-15, max_iter=10000)
        np.testing.assert_allclose(batch[:, j], [ref[i] for i in range(g.number_of_nodes())], atol=1e-12)


def test_columns_converge_at_different_iterations():
    # Column 0 seeds an isolated node (fixed point after one step); column 1 seeds a hub and needs
    # many steps. Both sit in one block; each must stop on its own criterion.
    g = weighted_graph("ba", 200, 3, n_isolated=1)
    t = transition_matrix(to_csr(g))
    p = np.zeros((201, 3))
    p[200, 0], p[0, 1], p[[5, 70], 2] = 1.0, 1.0, 1.0
    fast, slow = p[:, 0], p[:, 1]
    assert np.array_equal(personalized_pagerank(t, fast, max_iter=1), personalized_pagerank(t, fast))
    assert np.abs(personalized_pagerank(t, slow, max_iter=5) - personalized_pagerank(t, slow)).sum() > 1e-4
    batch = _assert_columns_equal_singles(t, p, block_width=3)
    np.testing.assert_array_equal(batch[:, 0], np.eye(201)[200])


def test_dangling_nodes_in_blocks_match_networkx():
    rng = np.random.default_rng(8)
    g = nx.gnp_random_graph(120, 0.04, seed=8, directed=True)
    for u, v in g.edges:
        g[u][v]["weight"] = float(rng.uniform(0.1, 3.0))
    g.remove_edges_from([e for e in list(g.edges) if e[0] % 10 == 0])  # every 10th node dangles
    a = sp.csr_matrix(nx.to_scipy_sparse_array(g, nodelist=range(120), weight="weight"))
    t = transition_matrix(a)
    assert t.dangling.sum() >= 12
    p = _seeds(120, 7, rng)
    batch = _assert_columns_equal_singles(t, p, block_width=2, tol=1e-13, max_iter=1000)
    for j in range(7):
        pers = {i: float(w) for i, w in enumerate(p[:, j])}
        ref = nx.pagerank(g, alpha=0.85, personalization=pers, weight="weight", tol=1e-15, max_iter=10000)
        np.testing.assert_allclose(batch[:, j], [ref[i] for i in range(120)], atol=1e-12)


def test_max_iter_caps_every_block():
    t = transition_matrix(to_csr(weighted_graph("ba", 150, 2)))
    p = _seeds(150, 5, np.random.default_rng(2))
    capped = _assert_columns_equal_singles(t, p, block_width=2, max_iter=3)
    np.testing.assert_allclose(capped.sum(axis=0), 1.0, atol=1e-12)
    converged = personalized_pagerank_batch(t, p, block_width=2)
    assert (np.abs(capped - converged).sum(axis=0) > 1e-3).all()
    for j in range(5):
        np.testing.assert_allclose(capped[:, j], _plain_ppr(to_csr(weighted_graph("ba", 150, 2)), p[:, j], max_iter=3),
                                   atol=1e-13)


def test_large_graph_hub_probe_is_exact():
    # n >= 16,384 switches on the cheap hub-row lower bound; it may only skip exact checks that
    # could not succeed, so results equal the always-exact kernel (no hubs) and a plain iteration.
    n = 20_000
    rng = np.random.default_rng(4)
    rows, cols = rng.integers(n, size=60_000), rng.integers(n, size=60_000)
    a = sp.coo_matrix((rng.uniform(0.5, 2.0, rows.size), (rows, cols)), shape=(n, n))
    keep = np.ones(n)
    keep[::500] = 0.0  # rows of zero out-weight: some dangling nodes
    a = sp.csr_matrix(sp.diags(keep) @ (a + a.T))
    a.eliminate_zeros()
    t = transition_matrix(a)
    assert t.hubs.size >= 1024 and t.dangling.any()
    exact = Transition(t.dangling, hubs=np.arange(0), pt_matrix=t.pt)
    p = _seeds(n, 6, rng)
    p[0, 5] = 1.0  # node 0 dangles: a seed that keeps its own mass
    fast = personalized_pagerank_batch(t, p, block_width=4)
    np.testing.assert_allclose(fast, personalized_pagerank_batch(exact, p, block_width=4), rtol=0, atol=1e-15)
    for j in (0, 5):
        np.testing.assert_allclose(fast[:, j], _plain_ppr(a, p[:, j]), rtol=0, atol=1e-13)


def test_block_width_rule():
    for n in (10, 2_000, 20_000, 200_000, 10**7):
        w = _block_width(n)
        assert 1 <= w <= 64 and w & (w - 1) == 0
        assert w == 1 or 2 * 8 * n * w <= _BLOCK_BYTES < 2 * 8 * n * min(2 * w, 128) or w == 64
    assert _block_width(2_000) == 64 and _block_width(10**7) == 1
    t = transition_matrix(to_csr(weighted_graph("er", 30, 0)))
    with pytest.raises(ValueError, match="block_width"):
        personalized_pagerank_batch(t, np.eye(30)[:, :2], block_width=0)


def test_damped_matrix_cache_keeps_damping_values_apart():
    a = to_csr(weighted_graph("ba", 120, 6))
    t = transition_matrix(a)
    p = _seeds(120, 3, np.random.default_rng(6))
    for damping in (0.5, 0.85, 0.5, 0.3, 0.6, 0.7, 0.9, 0.85):
        np.testing.assert_array_equal(personalized_pagerank_batch(t, p, damping=damping),
                                      personalized_pagerank_batch(transition_matrix(a), p, damping=damping))
        assert sum(k[0] == "damped" for k in t.cache) <= 4
