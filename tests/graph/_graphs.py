"""Seeded random graphs shared by the kernel tests."""
import networkx as nx
import numpy as np
import scipy.sparse as sp


def weighted_graph(kind: str, n: int, seed: int, n_isolated: int = 0) -> nx.Graph:
    """ER or BA graph with positive random weights and ``n_isolated`` extra isolated nodes."""
    g = nx.erdos_renyi_graph(n, 3.0 / n, seed=seed) if kind == "er" else nx.barabasi_albert_graph(n, 2, seed=seed)
    rng = np.random.default_rng(seed)
    for u, v in g.edges:
        g[u][v]["weight"] = float(rng.uniform(0.1, 5.0))
    g.add_nodes_from(range(n, n + n_isolated))
    return g


def to_csr(g: nx.Graph) -> sp.csr_matrix:
    a = nx.to_scipy_sparse_array(g, nodelist=range(g.number_of_nodes()), weight="weight", format="csr")
    a = sp.csr_matrix(a)
    a.sort_indices()
    return a
