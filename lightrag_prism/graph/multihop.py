"""Query-guided multi-hop frontier expansion over a CSR adjacency.

A candidate v reached at hop h through the stored edge (u, v), u in the current frontier, scores

    alpha * max(0, entity_sim[v]) + beta * max(0, edge_sim[(u, v)]) + gamma * delta**(h - 1)

(PrismRAG's formula). Differences from PrismRAG's implementation, on purpose:

* each candidate keeps its BEST incoming edge from the frontier (ties: lowest CSR edge index, i.e.
  lowest parent index), not the first one met;
* the breadth cap is GLOBAL: the ``top_neighbors`` best candidates of a hop over all frontier nodes,
  not per frontier node (80 seeds x 10 per node flooded the context);
* every result carries its parent, so its path back to a seed can be rendered;
* all edges among visited nodes (seeds and expanded) are returned: the induced subgraph.

Every stored entry of ``adj`` is an edge (its weight is not used). ``adj`` should be symmetric for
an undirected graph; induced edges are then reported once, as the stored entry with src <= dst.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["MultihopResult", "multihop_expand", "path_to_seed"]

_COLUMN_DTYPES = (np.int64, np.float64, np.int64, np.int64, np.int64)  # nodes, scores, hops, parents, edges


@dataclass(frozen=True)
class MultihopResult:
    """Expanded nodes in rank order (score desc, then hop, then node index) and the induced edges.

    ``parents[i]`` is the node through which ``nodes[i]`` was reached (a seed or an earlier
    expanded node) and ``parent_edges[i]`` the CSR index of the stored entry (parent -> node).
    ``edge_index``/``edge_src``/``edge_dst`` list every edge among ``seeds`` and ``nodes``.
    """

    seeds: np.ndarray
    nodes: np.ndarray
    scores: np.ndarray
    hops: np.ndarray
    parents: np.ndarray
    parent_edges: np.ndarray
    edge_index: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray


def _row_edges(adj: sp.csr_matrix, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(source row, CSR edge index) of every stored entry in ``rows``, without a loop."""
    starts = adj.indptr[rows]
    lens = adj.indptr[rows + 1] - starts
    offsets = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
    return np.repeat(rows, lens), np.repeat(starts, lens) + offsets


def _best_per_target(dst: np.ndarray, score: np.ndarray, eidx: np.ndarray) -> np.ndarray:
    """Position of the best incoming edge for each distinct ``dst`` (ties: lowest edge index)."""
    order = np.lexsort((eidx, -score, dst))
    _, first = np.unique(dst[order], return_index=True)
    return order[first]


def _expand_hop(adj, frontier, visited, entity_sim, edge_sim, hop, p):
    """Score unvisited neighbours of ``frontier``; keep the global top ``p['top_neighbors']``."""
    src, eidx = _row_edges(adj, frontier)
    dst = adj.indices[eidx]
    fresh = ~visited[dst]
    src, eidx, dst = src[fresh], eidx[fresh], dst[fresh]
    score = (p["alpha"] * np.maximum(0.0, entity_sim(dst)) + p["beta"] * np.maximum(0.0, edge_sim[eidx])
             + p["gamma"] * p["delta"] ** (hop - 1))
    best = _best_per_target(dst, score, eidx)
    best = best[score[best] >= p["threshold"]]
    best = best[np.lexsort((dst[best], -score[best]))][: p["top_neighbors"]]
    return dst[best], score[best], src[best], eidx[best]


def _induced_edges(adj, visited_mask):
    src, eidx = _row_edges(adj, np.flatnonzero(visited_mask))
    dst = adj.indices[eidx]
    keep = visited_mask[dst] & (src <= dst)
    return eidx[keep], src[keep], dst[keep]


def _check_inputs(adj, seeds, entity_sim, edge_sim):
    if not sp.isspmatrix_csr(adj) or adj.shape[0] != adj.shape[1]:
        raise ValueError("adj must be a square CSR matrix")
    n = adj.shape[0]
    if sp.issparse(edge_sim):
        edge_sim = sp.csr_matrix(edge_sim)
        if not (np.array_equal(edge_sim.indptr, adj.indptr) and np.array_equal(edge_sim.indices, adj.indices)):
            raise ValueError("edge_sim CSR must have exactly the sparsity structure of adj")
        edge_sim = edge_sim.data
    edge_sim = np.asarray(edge_sim, np.float64)
    if callable(entity_sim):  # computed for the nodes reached only
        def sims(rows):
            return np.asarray(entity_sim(rows), np.float64)
    else:
        entity_sim = np.asarray(entity_sim, np.float64)
        if entity_sim.shape != (n,):
            raise ValueError(f"entity_sim must have shape ({n},)")
        sims = entity_sim.__getitem__
    if edge_sim.shape != (adj.nnz,):
        raise ValueError(f"edge_sim must have shape ({adj.nnz},), aligned with adj.data")
    seeds = np.unique(np.asarray(seeds, dtype=np.int64))
    if seeds.size and (seeds[0] < 0 or seeds[-1] >= n):
        raise ValueError("seed index out of range")
    return seeds, sims, edge_sim


def multihop_expand(adj, seeds, entity_sim, edge_sim, *, max_hop=2, top_neighbors=30, threshold=0.2,
                    alpha=0.4, beta=0.5, gamma=0.1, delta=0.8) -> MultihopResult:
    """Expand ``seeds`` hop by hop (see module docstring); visited nodes are never re-added.

    ``entity_sim``: (N,) query similarity per node, or a function of an index array returning the similarities
    of those nodes (then only the nodes reached are scored). ``edge_sim``: (nnz,) query similarity per stored
    entry aligned with ``adj.data``, or a CSR with the same structure as ``adj``.
    """
    seeds, entity_sim, edge_sim = _check_inputs(adj, seeds, entity_sim, edge_sim)
    p = dict(top_neighbors=top_neighbors, threshold=threshold, alpha=alpha, beta=beta, gamma=gamma, delta=delta)
    visited = np.zeros(adj.shape[0], dtype=bool)
    visited[seeds] = True
    frontier, found = seeds, []
    for hop in range(1, max_hop + 1):  # loop over hops only
        if frontier.size == 0:
            break
        nodes, scores, parents, pedges = _expand_hop(adj, frontier, visited, entity_sim, edge_sim, hop, p)
        visited[nodes] = True
        found.append((nodes, scores, np.full(nodes.size, hop), parents, pedges))
        frontier = nodes
    cols = [np.concatenate(c) for c in zip(*found)] if found else [np.zeros(0, t) for t in _COLUMN_DTYPES]
    order = np.lexsort((cols[0], cols[2], -cols[1]))
    nodes, scores, hops, parents, pedges = (c[order] for c in cols)
    eidx, esrc, edst = _induced_edges(adj, visited)
    return MultihopResult(seeds, nodes, scores, hops, parents, pedges, eidx, esrc, edst)


def path_to_seed(result: MultihopResult, node: int) -> list[int]:
    """Node indices from a seed to ``node`` (inclusive), following ``result.parents``."""
    where = dict(zip(result.nodes.tolist(), result.parents.tolist()))
    seeds = set(result.seeds.tolist())
    if node not in where and node not in seeds:
        raise ValueError(f"node {node} was not visited")
    path = [int(node)]
    while path[-1] not in seeds:  # at most max_hop steps
        path.append(where[path[-1]])
    return path[::-1]
