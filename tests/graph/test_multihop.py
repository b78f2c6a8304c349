import numpy as np
import pytest
import scipy.sparse as sp

from lightrag_prism.graph.multihop import multihop_expand, path_to_seed
from tests.graph._graphs import to_csr, weighted_graph

PARAMS = dict(alpha=0.4, beta=0.5, gamma=0.1, delta=0.8)


def _reference(adj, seeds, ent, edge, max_hop, top_neighbors, threshold):
    """Plain-Python BFS implementing the documented definition."""
    a, b, g, d = PARAMS["alpha"], PARAMS["beta"], PARAMS["gamma"], PARAMS["delta"]
    visited, frontier, out = set(seeds), sorted(set(seeds)), []
    for hop in range(1, max_hop + 1):
        best = {}  # v -> (score, edge index, parent)
        for u in frontier:
            for e in range(adj.indptr[u], adj.indptr[u + 1]):
                v = int(adj.indices[e])
                if v in visited:
                    continue
                s = a * max(0.0, ent[v]) + b * max(0.0, edge[e]) + g * d ** (hop - 1)
                if v not in best or (s, -e) > (best[v][0], -best[v][1]):
                    best[v] = (s, e, u)
        cands = sorted((-s, v) for v, (s, e, u) in best.items() if s >= threshold)[:top_neighbors]
        chosen = [(v, -ns, hop, best[v][2], best[v][1]) for ns, v in cands]
        out += chosen
        visited |= {c[0] for c in chosen}
        frontier = sorted(c[0] for c in chosen)
    out.sort(key=lambda c: (-c[1], c[2], c[0]))
    edges = {(int(u), int(adj.indices[e])) for u in visited for e in range(adj.indptr[u], adj.indptr[u + 1])
             if adj.indices[e] in visited and u <= adj.indices[e]}
    return out, edges


@pytest.mark.parametrize("kind", ["er", "ba"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_hop,top_neighbors,threshold", [(2, 30, 0.2), (3, 5, 0.3), (1, 100, 0.0)])
def test_matches_bruteforce_bfs(kind, seed, max_hop, top_neighbors, threshold):
    adj = to_csr(weighted_graph(kind, 200, seed, n_isolated=2))
    rng = np.random.default_rng(seed)
    ent = rng.uniform(-0.5, 1.0, adj.shape[0])
    edge = rng.uniform(-0.5, 1.0, adj.nnz)
    seeds = rng.choice(adj.shape[0], 4, replace=False)
    res = multihop_expand(adj, seeds, ent, edge, max_hop=max_hop, top_neighbors=top_neighbors,
                          threshold=threshold, **PARAMS)
    ref, ref_edges = _reference(adj, seeds.tolist(), ent, edge, max_hop, top_neighbors, threshold)
    assert res.nodes.tolist() == [c[0] for c in ref]
    np.testing.assert_array_equal(res.scores, [c[1] for c in ref])
    assert res.hops.tolist() == [c[2] for c in ref]
    assert res.parents.tolist() == [c[3] for c in ref]
    assert res.parent_edges.tolist() == [c[4] for c in ref]
    assert set(zip(res.edge_src.tolist(), res.edge_dst.tolist())) == ref_edges
    assert len(res.edge_index) == len(ref_edges)
    np.testing.assert_array_equal(adj.indices[res.edge_index], res.edge_dst)
    for v, h in zip(res.nodes.tolist(), res.hops.tolist()):
        path = path_to_seed(res, v)
        assert path[0] in set(seeds.tolist()) and path[-1] == v and len(path) == h + 1
        assert all(adj[x, y] != 0 for x, y in zip(path, path[1:]))


@pytest.mark.parametrize("seed", range(3))
def test_entity_similarity_as_a_function_is_asked_only_for_nodes_reached(seed):
    adj = to_csr(weighted_graph("ba", 300, seed))
    rng = np.random.default_rng(seed)
    ent = rng.uniform(-0.5, 1.0, adj.shape[0]).astype(np.float32)  # float32, as the entity matrix's products
    edge = rng.uniform(-0.5, 1.0, adj.nnz)
    seeds = rng.choice(adj.shape[0], 3, replace=False)
    asked = []

    def sims(rows):
        asked.append(np.asarray(rows).copy())
        return ent[rows]

    lazy = multihop_expand(adj, seeds, sims, edge, max_hop=2, top_neighbors=10, **PARAMS)
    whole = multihop_expand(adj, seeds, ent, edge, max_hop=2, top_neighbors=10, **PARAMS)
    for name in ("nodes", "scores", "hops", "parents", "parent_edges", "edge_index"):
        np.testing.assert_array_equal(getattr(lazy, name), getattr(whole, name))
    # only neighbours of the seeds and of the first hop's nodes
    frontier = np.concatenate([seeds, lazy.nodes[lazy.hops == 1]])
    neighbours = set(np.concatenate([adj.indices[adj.indptr[u]:adj.indptr[u + 1]] for u in frontier]).tolist())
    reached = set(np.concatenate(asked).tolist())
    assert reached <= neighbours and len(reached) < adj.shape[0] // 2


def _star_and_chain():
    # 0 - 1, 0 - 2, 1 - 3, 2 - 3, 3 - 4: node 3 is reachable from 1 and 2 at hop 2
    rows, cols = zip(*[(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
    a = sp.coo_matrix((np.ones(5), (rows, cols)), shape=(5, 5))
    a = sp.csr_matrix(a + a.T)
    a.sort_indices()
    return a


def test_best_incoming_edge_and_global_cap():
    a = _star_and_chain()
    ent = np.array([0.0, 0.5, 0.9, 0.8, 0.1])
    edge = np.zeros(a.nnz)
    edge[a.indptr[2]:a.indptr[3]][a.indices[a.indptr[2]:a.indptr[3]] == 3] = 1.0  # edge 2 -> 3 is the relevant one
    res = multihop_expand(a, [0], ent, edge, max_hop=2, top_neighbors=1, threshold=0.0)
    # hop 1: global cap 1 keeps only node 2 (0.36 + 0.1 beats node 1's 0.2 + 0.1)
    assert res.nodes.tolist() == [3, 2]
    assert res.parents.tolist() == [2, 0]
    assert path_to_seed(res, 3) == [0, 2, 3]
    assert res.scores[0] == pytest.approx(0.4 * 0.8 + 0.5 * 1.0 + 0.1 * 0.8)
    # induced subgraph over {0, 2, 3}: edges 0-2 and 2-3, nothing else
    assert set(zip(res.edge_src.tolist(), res.edge_dst.tolist())) == {(0, 2), (2, 3)}


def test_threshold_filters_and_edge_sim_as_csr():
    a = _star_and_chain()
    ent = np.array([0.0, 0.1, 0.9, 0.0, 0.0])
    edge_csr = a.copy()
    edge_csr.data = np.zeros(a.nnz)
    res = multihop_expand(a, [0], ent, edge_csr, max_hop=3, threshold=0.3)
    assert res.nodes.tolist() == [2]  # node 1: 0.04 + 0.1 < 0.3; node 3 at hop 2: 0.08 < 0.3


def test_induced_edges_include_seed_seed_edges_and_no_expansion():
    a = _star_and_chain()
    res = multihop_expand(a, [1, 0], np.zeros(5), np.zeros(a.nnz), max_hop=0)
    assert res.nodes.size == 0 and res.seeds.tolist() == [0, 1]
    assert set(zip(res.edge_src.tolist(), res.edge_dst.tolist())) == {(0, 1)}


def test_visited_nodes_not_readded():
    a = _star_and_chain()
    res = multihop_expand(a, [0], np.ones(5), np.ones(a.nnz), max_hop=4, threshold=0.0)
    assert sorted(res.nodes.tolist()) == [1, 2, 3, 4] and res.hops.tolist() == [1, 1, 2, 3]


def test_bad_inputs_raise():
    a = _star_and_chain()
    with pytest.raises(ValueError):
        multihop_expand(a, [0], np.zeros(4), np.zeros(a.nnz))
    with pytest.raises(ValueError):
        multihop_expand(a, [0], np.zeros(5), np.zeros(a.nnz - 1))
    with pytest.raises(ValueError):
        multihop_expand(a, [7], np.zeros(5), np.zeros(a.nnz))
