"""Personalized PageRank by sparse power iteration.

Conventions
-----------
* ``adj`` is an N x N ``scipy.sparse`` matrix of non-negative weights; ``adj[u, v]`` is the weight of
  the edge u -> v. For the (undirected) knowledge graph it is symmetric, each edge stored twice.
* ``damping`` is the probability of following an edge (networkx ``alpha``); with probability
  ``1 - damping`` the walk teleports to the personalization distribution.
* A dangling node (zero out-weight) sends all its mass to the personalization vector, as networkx
  does by default. PrismRAG's reweighting could zero out every edge of a node; the mass then
  returns to the seeds instead of leaking.
* Convergence: stop when ``||x_t - x_{t-1}||_1 < tol``. Unlike networkx the tolerance is NOT
  multiplied by N (networkx with ``tol=1e-3`` on a 3,000-node graph stops after one step).
* An all-zero personalization vector raises ``ValueError``: silently falling back to uniform
  would turn "no seed found" into global PageRank, a different retrieval signal.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = [
    "Transition",
    "transition_matrix",
    "edge_reweighted",
    "personalized_pagerank",
    "personalized_pagerank_batch",
]


@dataclass(frozen=True)
class Transition:
    """Column-stochastic transition of a weighted graph, computed once and cached by callers.

    ``pt[v, u] = adj[u, v] / out_weight(u)`` (CSR), so ``pt @ x`` moves mass one step along edges.
    ``dangling[u]`` is True when u has zero out-weight (its column of ``pt`` is empty).
    """

    pt: sp.csr_matrix
    dangling: np.ndarray

    @property
    def n(self) -> int:
        return self.pt.shape[0]


def _check_adjacency(adj) -> sp.csr_matrix:
    if not sp.issparse(adj) or adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
        raise ValueError(f"adj must be a square scipy.sparse matrix, got {type(adj).__name__}")
    adj = sp.csr_matrix(adj, dtype=np.float64)
    if adj.nnz and (adj.data.min() < 0 or not np.isfinite(adj.data).all()):
        raise ValueError("adj must have finite non-negative weights")
    return adj


def transition_matrix(adj) -> Transition:
    """Build the cached :class:`Transition` (P^T with P = D^-1 A, D = out-weights) of ``adj``."""
    adj = _check_adjacency(adj)
    out_w = np.asarray(adj.sum(axis=1)).ravel()
    dangling = out_w == 0
    inv = np.divide(1.0, out_w, out=np.zeros_like(out_w), where=~dangling)
    pt = sp.csr_matrix((sp.diags(inv) @ adj).T)  # one transpose at build time, none per query
    pt.sort_indices()
    return Transition(pt=pt, dangling=dangling)


def edge_reweighted(adj, edge_factor) -> sp.csr_matrix:
    """Return a copy of CSR ``adj`` whose stored weights are multiplied by ``edge_factor``.

    ``edge_factor`` is aligned with ``adj.data`` (CSR order, length ``adj.nnz``) and must be
    non-negative; for query-aware PPR pass ``np.maximum(relation_query_similarity, 0)``. The factor
    multiplies the co-occurrence weight, it never replaces it. The sparsity pattern is kept, so a
    zero factor leaves an explicit zero (the node may become dangling; see module docstring).
    For an undirected graph give both stored copies of an edge the same factor.
    """
    if not sp.isspmatrix_csr(adj):
        raise ValueError("adj must be a CSR matrix so that edge_factor aligns with adj.data")
    factor = np.asarray(edge_factor, dtype=np.float64)
    if factor.shape != adj.data.shape:
        raise ValueError(f"edge_factor must have shape ({adj.nnz},), got {factor.shape}")
    if factor.size and (factor.min() < 0 or not np.isfinite(factor).all()):
        raise ValueError("edge_factor must be finite and non-negative (clamp similarities at 0)")
    out = adj.copy().astype(np.float64)
    out.data = out.data * factor
    return out


def _as_transition(adj_or_transition) -> Transition:
    if isinstance(adj_or_transition, Transition):
        return adj_or_transition
    return transition_matrix(adj_or_transition)


def _normalized_columns(p: np.ndarray, n: int) -> np.ndarray:
    if p.shape[0] != n:
        raise ValueError(f"personalization must have {n} rows, got shape {p.shape}")
    if not np.isfinite(p).all() or (p.size and p.min() < 0):
        raise ValueError("personalization must be finite and non-negative")
    total = p.sum(axis=0)
    if (total == 0).any():
        raise ValueError("personalization vector is all zero (no seed); refusing to use uniform")
    return p / total


def _power_iterate(t: Transition, p: np.ndarray, damping: float, tol: float, max_iter: int) -> np.ndarray:
    """Iterate ``x <- d P^T x + (d * dangling_mass(x) + 1 - d) p`` on the columns of ``p``.

    One sparse mat-mat product per iteration over the still-active columns; a converged column is
    written out and dropped from the working block. ``p`` enters through its non-zeros only (seed
    vectors are sparse), so the per-iteration dense work is the product and the L1 check.
    """
    out, x, cols = np.empty_like(p), p.copy(), np.arange(p.shape[1])
    pr, pc = np.nonzero(p)
    pv, dang = p[pr, pc], np.flatnonzero(t.dangling)
    for it in range(1, max_iter + 1):
        new = t.pt @ x
        new *= damping
        coef = damping * x[dang].sum(axis=0) + (1.0 - damping)  # dangling mass + teleport, per column
        new[pr, pc] += pv * coef[pc]
        done = (np.abs(new - x).sum(axis=0) < tol) | (it == max_iter)
        x = new
        if done.any():
            out[:, cols[done]] = x[:, done]
            keep = ~done
            x, cols, slot = x[:, keep], cols[keep], np.cumsum(keep) - 1
            sel = keep[pc]
            pr, pc, pv = pr[sel], slot[pc[sel]], pv[sel]
        if cols.size == 0:
            break
    return out / out.sum(axis=0)


def _check_params(damping: float, tol: float, max_iter: int) -> None:
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if tol <= 0 or max_iter < 1:
        raise ValueError("tol must be > 0 and max_iter >= 1")


def personalized_pagerank(adj, personalization, *, damping=0.85, tol=1e-6, max_iter=100) -> np.ndarray:
    """Personalized PageRank of one seed distribution.

    ``adj``: N x N sparse adjacency or a cached :class:`Transition`. ``personalization``: length-N
    non-negative vector (normalised here; all-zero raises ``ValueError``). Returns a length-N
    probability vector (sums to 1). ``max_iter`` caps the iterations without raising.
    """
    t = _as_transition(adj)
    p = np.asarray(personalization, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"personalization must be 1-D, got shape {p.shape}")
    return personalized_pagerank_batch(t, p[:, None], damping=damping, tol=tol, max_iter=max_iter)[:, 0]


def personalized_pagerank_batch(adj, personalizations, *, damping=0.85, tol=1e-6, max_iter=100) -> np.ndarray:
    """Personalized PageRank of B seed distributions at once.

    ``personalizations`` has shape (N, B): one column per distribution (columns because
    ``P^T @ X`` then is a single CSR x dense product). Each column is normalised and converges on
    its own L1 criterion. Returns an (N, B) array whose columns sum to 1.

    Note: scipy's CSR x dense kernel becomes memory-latency bound once the (N, B) block leaves the
    cache, so on large graphs this is about as fast as B single calls (see benchmarks/bench_ppr.py);
    it is a convenience, not a speedup, beyond ~10^5 nodes.
    """
    _check_params(damping, tol, max_iter)
    t = _as_transition(adj)
    p = np.asarray(personalizations, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"personalizations must have shape (N, B), got {p.shape}")
    return _power_iterate(t, _normalized_columns(p, t.n), damping, tol, max_iter)
