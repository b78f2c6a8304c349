"""Edge-weighted FastRP node embeddings with exact incremental updates.

``X = rownorm( sum_k w_k * diag(deg^r) @ S^k @ R )`` with ``S = D^-1/2 A D^-1/2`` on the weighted
(co-occurrence) adjacency A, ``deg`` the weighted degree, ``r`` the normalization strength and R a
very sparse random projection (Achlioptas / Li et al.: entries ``+-sqrt(s)`` with probability
``1/(2s)`` each, 0 otherwise; ``s = sqrt(dim)`` by default, so E[R_ij^2] = 1).

The ``diag(deg^r)`` factor is PrismRAG's formula (``X = sum_k w_k D^r S^k R``). It scales whole rows, so the row
normalisation that cosine similarity needs cancels it: ``r`` changes no embedding row of a node with an edge (tested).
FastRP as published (Chen et al. 2019) puts the degree factor between the graph and R (``P L R``, ``L = diag(deg^r)``
up to a constant), which does not cancel. Moving the factor there would change every FastRP score, so it needs the
retrieval bench first.

Self loops: NOT added. PrismRAG uses ``A + I`` with ``w_0 = 1``, so every embedding carries its own
random row R_v (and, through the lazy walk, again in every S^k): structurally identical nodes get
different vectors, which is noise for a structural-similarity signal. We follow Neo4j's FastRP
(node self influence 0): ``w_0 = 0`` by default and no ``+I``. Consequence: an isolated node has a
zero embedding (cosine 0 to everything) instead of a random one.

Determinism: row v of R is a pure function of ``(seed, v)`` (a vectorised splitmix64 hash, no
global RNG state), so a node added later gets the same row as in a full rebuild of the grown
graph; that is what makes :meth:`FastRPState.update` equal to :meth:`FastRPState.build`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from .ppr_cg import inverse_sqrt

__all__ = ["FastRPState", "fastrp_embeddings", "fastrp_similarity", "random_projection", "normalized_adjacency"]

DEFAULT_ITERATION_WEIGHTS = (0.0, 1.0, 1.0, 0.5)  # k = 0..3; k=0 off (see module docstring)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorised splitmix64 finaliser: a well-mixed 64-bit hash of each uint64 entry."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def random_projection(node_ids, dim: int, seed: int, *, sparsity: float | None = None, dtype=np.float32) -> np.ndarray:
    """Rows of the very sparse random projection R for ``node_ids`` (shape (len(node_ids), dim)).

    Entry (v, j) depends only on (seed, v, j), never on the other nodes or on call order.
    """
    s = float(np.sqrt(dim)) if sparsity is None else float(sparsity)
    if s < 1:
        raise ValueError(f"sparsity must be >= 1, got {s}")
    ids = np.asarray(node_ids, dtype=np.uint64)
    row_key = _splitmix64(_splitmix64(np.full(ids.shape, seed, dtype=np.uint64)) ^ ids)
    col_key = np.arange(dim, dtype=np.uint64) * _GOLDEN
    u = (_splitmix64(row_key[:, None] + col_key[None, :]) >> np.uint64(11)) * (1.0 / 2**53)
    p = 1.0 / (2.0 * s)
    out = np.zeros(u.shape, dtype=dtype)
    out[u < p] = np.sqrt(s)
    out[u >= 1.0 - p] = -np.sqrt(s)
    return out


def normalized_adjacency(adj, dtype=np.float32) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(S, deg)`` with ``S = D^-1/2 A D^-1/2`` (no self loops) and ``deg`` the weighted degree.

    Zero-degree nodes get a zero row/column in S. Raises ``ValueError`` on negative weights.
    """
    a = sp.csr_matrix(adj, dtype=np.float64)
    if a.nnz and a.data.min() < 0:
        raise ValueError("adj must have non-negative weights")
    deg = np.asarray(a.sum(axis=1)).ravel()
    inv_sqrt = inverse_sqrt(deg)
    s = sp.diags(inv_sqrt) @ a @ sp.diags(inv_sqrt)
    return sp.csr_matrix(s, dtype=dtype), deg


def _combine(powers, deg: np.ndarray, weights, r: float) -> np.ndarray:
    """``rownorm(sum_k w_k diag(deg^r) Y_k)``; zero-degree nodes get scale 0 (0^r is undefined)."""
    scale = np.power(deg, r, out=np.zeros_like(deg), where=deg > 0).astype(powers[0].dtype)
    x = np.zeros_like(powers[0])
    for w, y in zip(weights, powers):  # loop over the K+1 iterations only
        if w != 0:
            x += np.asarray(w, dtype=x.dtype) * y
    x *= scale[:, None]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


@dataclass(frozen=True)
class FastRPState:
    """A FastRP embedding with what is needed to update it exactly when the graph grows.

    ``powers[k] = S^k R`` (k = 0..K) are kept so that an update recomputes only the rows whose
    value can change: those within k hops of a node whose adjacency row changed.

    ``embedding`` is row-major: a query scores every row against one vector with ``np.vecdot``
    (:func:`fastrp_similarity`), one thread that releases the GIL, so the ``prism`` mode runs it beside its PPR.
    """

    adj: sp.csr_matrix
    powers: tuple
    embedding: np.ndarray
    dim: int = 256
    iteration_weights: tuple = DEFAULT_ITERATION_WEIGHTS
    normalization_strength: float = -0.1
    seed: int = 42
    sparsity: float | None = None
    recomputed_rows: int = 0  # rows of S^k R recomputed by the last build/update (summed over k)

    @classmethod
    def build(cls, adj, *, dim=256, iteration_weights=DEFAULT_ITERATION_WEIGHTS, normalization_strength=-0.1,
              seed=42, sparsity=None) -> "FastRPState":
        """Full build: K sparse x dense products over the whole graph."""
        adj = sp.csr_matrix(adj, dtype=np.float64)
        s, deg = normalized_adjacency(adj)
        powers = [random_projection(np.arange(adj.shape[0]), dim, seed, sparsity=sparsity)]
        for _ in range(len(iteration_weights) - 1):
            powers.append(s @ powers[-1])
        x = _combine(powers, deg, iteration_weights, normalization_strength)
        return cls(adj, tuple(powers), x, dim, tuple(iteration_weights), normalization_strength, seed, sparsity,
                   recomputed_rows=adj.shape[0] * (len(powers) - 1))

    def without_powers(self) -> "FastRPState":
        """This state without ``S^k R`` (the embedding only, about a fifth of the memory): it scores as before but
        cannot be updated: the next graph's state is built whole."""
        return replace(self, powers=())

    def update(self, adj, *, reuse_powers: bool = False) -> "FastRPState":
        """New state for ``adj``: the old graph with nodes appended (indices n_old..n-1) and any edges
        added, removed or reweighted. Exactly equals ``build(adj)`` with the same knobs.

        Cost: S^k R is recomputed on the k-hop ball of the changed rows only, plus O(N * dim) copies.
        On small-world graphs the 3-hop ball of a 1% growth is most of the graph (Barabasi-Albert:
        ~87% of rows, no gain); on locally growing graphs it is small (random geometric: ~1.4%, ~5x).

        ``reuse_powers``: when no node is added, write the new S^k R into this state's arrays instead of copies
        (a fresh array is paid in page faults: three of them were most of the first query after deleting one
        document from 3,000). This state's powers are then the new state's, so the caller must never update
        from this state again; its ``embedding`` is never written.
        """
        if not self.powers:
            raise ValueError("this state kept no powers (without_powers); rebuild with FastRPState.build")
        adj = sp.csr_matrix(adj, dtype=np.float64)
        n_old, n = self.adj.shape[0], adj.shape[0]
        if n < n_old:
            raise ValueError("node deletion changes indices; rebuild with FastRPState.build")
        old = sp.csr_matrix((self.adj.data, self.adj.indices, self.adj.indptr), shape=(n_old, n))
        old = sp.vstack([old, sp.csr_matrix((n - n_old, n))], format="csr")
        diff = abs(adj - old)
        mask = np.diff(sp.csr_matrix(diff > 0).indptr) > 0  # rows whose adjacency (and degree) changed
        mask[n_old:] = True
        reach = sp.csr_matrix(((abs(adj) + old) + (abs(adj) + old).T) > 0, dtype=np.float32)
        s, deg = normalized_adjacency(adj)
        # R is never written after it is made, so with no node added the new state shares it (one copy fewer).
        r = self.powers[0] if n == n_old else np.vstack(
            [self.powers[0], random_projection(np.arange(n_old, n), self.dim, self.seed, sparsity=self.sparsity)])
        powers, count = [r], 0
        for k in range(1, len(self.powers)):
            mask = mask | (reach @ mask.astype(np.float32) > 0)  # k-hop ball of the changed rows
            rows = np.flatnonzero(mask)
            y = self.powers[k] if reuse_powers and n == n_old else _grown(self.powers[k], n)
            y[rows] = s[rows] @ powers[-1]
            powers.append(y)
            count += rows.size
        # A row outside the last ball has the same powers and degree as before, so the same embedding row:
        # only the ball's rows are combined again (the combination is row by row).
        x = _grown(self.embedding, n)
        rows = np.flatnonzero(mask)
        x[rows] = _combine([y[rows] for y in powers], deg[rows], self.iteration_weights, self.normalization_strength)
        return FastRPState(adj, tuple(powers), x, self.dim, self.iteration_weights, self.normalization_strength,
                           self.seed, self.sparsity, recomputed_rows=count)


def _grown(rows: np.ndarray, n: int) -> np.ndarray:
    """A copy of ``rows`` with zero rows appended up to ``n`` (the old state's arrays are never written)."""
    out = np.empty((n, rows.shape[1]), rows.dtype)
    out[:rows.shape[0]] = rows
    out[rows.shape[0]:] = 0
    return out


def fastrp_embeddings(adj, *, dim=256, iteration_weights=DEFAULT_ITERATION_WEIGHTS, normalization_strength=-0.1,
                      seed=42, sparsity=None) -> np.ndarray:
    """FastRP embedding matrix (N, dim), rows L2-normalised (zero rows for isolated nodes)."""
    return FastRPState.build(adj, dim=dim, iteration_weights=iteration_weights,
                             normalization_strength=normalization_strength, seed=seed, sparsity=sparsity).embedding


def fastrp_similarity(x: np.ndarray, seed_idx, seed_weights=None) -> np.ndarray:
    """Weighted mean cosine of every row of ``x`` (rows L2-normalised) to the seed rows.

    ``seed_weights`` default to equal weights. Returns (N,) scores; seeds are included, callers
    drop them. Since rows are unit vectors, mean cosine = dot with the weighted mean seed vector.
    """
    seed_idx = np.asarray(seed_idx, dtype=np.int64)
    if seed_idx.size == 0:
        raise ValueError("seed_idx is empty")
    w = np.ones(seed_idx.size) if seed_weights is None else np.asarray(seed_weights, dtype=np.float64)
    if w.shape != seed_idx.shape or w.min() < 0 or w.sum() == 0:
        raise ValueError("seed_weights must be non-negative, not all zero, one per seed")
    centroid = (w @ x[seed_idx]) / w.sum()
    # a dot product per row on one core (np.vecdot), not OpenBLAS's matrix-vector product, which takes both: the prism
    # mode runs this beside its single-threaded PPR (retrievers/prism/expand.py)
    return np.vecdot(x, centroid.astype(x.dtype))
