"""Personalized PageRank on an undirected graph by conjugate gradients (the symmetric path of ``ppr.py``).

With a symmetric adjacency A and degrees D, PPR with dangling mass sent to the personalization is
``x = y / sum(y)`` where ``(I - d A D^-1) y = p``: the dangling term only adds a multiple of p, which the
normalisation absorbs. Substituting ``y = D^1/2 z`` gives the symmetric positive definite system
``(I - d D^-1/2 A D^-1/2) z = D^-1/2 p`` with eigenvalues in [1 - d, 1 + d], which CG solves in about
``sqrt((1 + d) / (1 - d))`` times fewer steps than power iteration needs per digit of accuracy (~30 instead of
~90 iterations at d = 0.85 on the MuSiQue KG). Nodes of degree 0 keep ``y = p``.

Stopping rule, a guarantee of ``||x - x*||_1 <= tol`` (power iteration's ``||x_t - x_(t-1)||_1 < tol`` is a
heuristic by comparison): with R the L1 residual of the y-system (``||D^1/2 r_z||_1``), the error
``E = ||y - y*||_1 <= R / (1 - d)`` because ``||(I - d P^T)^-1||_1 <= 1 / (1 - d)``; then
``||x - x*||_1 <= E (1 + ||y||_1 / S) / S*`` with ``S = sum(y)`` and ``S* >= S - E``. The solve stops when that
bound is <= tol. The bound needs two passes over the vector, so it is evaluated only once the cheap lower bound
``min(sqrt(d)) ||r_z||_2`` of R is below ``tol / 2`` (about what the rule asks, as ``S ~ 1 / (1 - d)``).
Its three sums are dot products in the iterates' dtype, each widened by the most its rounding can be off
(:func:`dot_rounding`), so the bound holds in exact arithmetic: float32 dots with float64 weights cast the vector
first, which at the pooled bench's 66,000 nodes cost 0.2 ms a check against 0.04 in float32.

One personalization at a time, on 1-D vectors: every caller solves one (a batch of several runs the power
iteration, ``ppr.py``), and 1-D dot products go to BLAS where the earlier (N, B) block form went through
``einsum``. Not scipy's BLAS: its own OpenBLAS threads then spin beside numpy's, and every query of the process,
``naive``'s too, ran 1.7x slower.

A graph re-weighted per query is solved through :class:`ScaledAdjacency`, which applies ``D^-1/2 A D^-1/2``
without forming it.

**Precision follows the matrix.** The iterates are kept in the dtype of the operator's weights: float32 halves the
bytes that every step streams (the sparse product's weights and four dense vectors). The retrieval graphs are solved
so (``passage_rank.PASSAGE_PPR_DTYPE``); the error bound is evaluated from the iterates as they are, its rounding
accounted for (above). float32 rounding (about 1e-7 of each value) moves the answer far less than the tolerances
used (1e-5): on the pooled bench's 66,000-node passage graph the float32 and float64 solves of 40 questions differed
by at most 7.5e-8 in L1, with the same top 20 passages and top 30 entities. That rounding is also the floor of a
float32 solve (1e-7 to 2e-7 in L1 on the 300-node test graphs, whatever the tolerance): tolerances below about 1e-6
need float64.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

# The exact bound is checked only when the last one, scaled by how much the residual shrank since, is within this
# factor of tol: on the pooled bench's passage graph the cheap lower bound let half of the ~10 steps through to an
# exact check that failed. The ratio of bound to residual moves slowly from step to step, so a check that would
# pass is not skipped (the break is then one step later, and the answer only more accurate).
CHECK_SLACK = 4.0
# The bound's dot products run in the iterates' dtype while their worst-case rounding (``dot_rounding``) stays
# under this (float32: graphs under ~170,000 nodes), in float64 beyond.
MAX_DOT_ROUNDING = 0.01


def inverse_sqrt(degree: np.ndarray) -> np.ndarray:
    """``D^-1/2`` as a vector: ``1 / sqrt(degree)``, 0 on nodes of degree 0."""
    degree = np.asarray(degree, dtype=np.float64)
    return np.divide(1.0, np.sqrt(degree), out=np.zeros_like(degree), where=degree > 0)


def rows_by_length(indptr: np.ndarray) -> np.ndarray:
    """A node order for a symmetric CSR whose sparse products are faster: rows by stored entries, longest first
    (ties by index). Relabel the graph with it (``order[k]`` becomes node ``k``) and solve there.

    scipy's CSR product runs one inner loop per row; on a graph of short rows of mixed lengths (the pooled bench's
    passage graph: 66,000 rows of 6 entries on average, from 1 to hundreds) that loop's exit branch is mispredicted on
    most rows. Rows of equal length in a row predict. Measured there: 0.68 -> 0.31 ms per product with rows and
    columns relabelled, 0.31 with the rows alone (so it is the branch, not the reads of x), 0.43 with the rows alone
    and the result scattered back; hence a relabelled graph, not a reordered product."""
    return np.argsort(-np.diff(indptr), kind="stable")


class ScaledAdjacency:
    """``D^-1/2 A D^-1/2`` applied as ``s * (A @ (s * x))`` with ``s = D^-1/2`` (0 on nodes of degree 0).

    For a graph whose weights change per query: forming the normalised matrix costs two gathers and a copy over
    every stored entry per query; scaling the vector costs two passes over the nodes per step instead. On the
    9,002-passage bench graph (66,000 nodes, 417,000 entries), in the querying process, the passage-aware PPR took
    26.5 ms against 29.8 (median of 75 questions, both ways on each, alternating)."""

    def __init__(self, adjacency: sp.csr_matrix, degree: np.ndarray) -> None:
        self.shape, self.dtype = adjacency.shape, adjacency.dtype
        self.adjacency = adjacency
        self.scale = inverse_sqrt(degree).astype(adjacency.dtype)
        self._scaled = np.empty(adjacency.shape[0], dtype=adjacency.dtype)  # reused: one product at a time

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        out = self.adjacency @ np.multiply(x, self.scale, out=self._scaled)
        out *= self.scale
        return out


def normalized_adjacency(pt: sp.csr_matrix, degree: np.ndarray) -> sp.csr_matrix:
    """``D^-1/2 A D^-1/2`` from the transition ``pt = A D^-1`` of a symmetric A (rows/columns of degree 0
    stay empty)."""
    inv_sqrt = inverse_sqrt(degree)
    rows = np.repeat(np.arange(pt.shape[0]), np.diff(pt.indptr))
    # pt[i, j] = A[i, j] / d_j, so B[i, j] = A[i, j] / sqrt(d_i d_j) = pt[i, j] * d_j / sqrt(d_i d_j)
    data = pt.data * degree[pt.indices] * inv_sqrt[pt.indices] * inv_sqrt[rows]
    return sp.csr_matrix((data, pt.indices, pt.indptr), shape=pt.shape)


def dot_rounding(n: int, dtype) -> float:
    """The relative error a computed dot product ``sum(a_i * w_i)`` of ``n`` terms in ``dtype`` can have, against
    the exact one with the unrounded weights, relative to ``sum(|a_i| w_i)``: ``gamma_n`` for the products and sums
    in any order (Higham, Accuracy and Stability of Numerical Algorithms, 3.1), with each weight rounded to
    ``dtype`` (one unit roundoff ``u`` more), widened to ``1 / ((1 - gamma_n)(1 - u)) - 1``; inf when ``n u >= 1/2``."""
    u = float(np.finfo(dtype).eps) / 2.0
    if n * u >= 0.5:
        return np.inf
    gamma = n * u / (1.0 - n * u)
    return 1.0 / ((1.0 - gamma) * (1.0 - u)) - 1.0


def _error_bound(z: np.ndarray, r: np.ndarray, sqrt_deg: np.ndarray, isolated_mass: float, damping: float,
                 scratch: np.ndarray, rounding: float) -> float:
    """The bound on ``||x - x*||_1`` of the stopping rule (module docstring). ``y = D^1/2 z`` is never formed:
    its sums are dot products with ``sqrt_deg`` (>= 0, in the dot products' dtype), ``scratch`` holds the absolute
    values. Each sum is moved by ``rounding`` (:func:`dot_rounding`) the way that widens the bound: the norms up,
    the total down by twice ``rounding`` times the norm (its error is at most once that)."""
    norm = float(np.dot(np.abs(z, out=scratch), sqrt_deg)) * (1.0 + rounding) + isolated_mass
    total = float(np.dot(z, sqrt_deg)) - 2.0 * rounding * norm + isolated_mass
    error = float(np.dot(np.abs(r, out=scratch), sqrt_deg)) * (1.0 + rounding) / (1.0 - damping)
    return error * (1.0 + norm / total) / (total - error) if total - error > 0 else np.inf


def solve(normalized, degree: np.ndarray, p: np.ndarray, damping: float, tol: float, max_iter: int) -> np.ndarray:
    """PPR of the personalization ``p`` (N,), summing to 1, on the graph of ``normalized`` (the CSR
    ``D^-1/2 A D^-1/2``, or a :class:`ScaledAdjacency`); an (N,) float64 result summing to 1. The steps run in
    ``normalized.dtype`` (float32 or float64, see the module docs). ``max_iter`` caps the CG steps without
    raising."""
    p = np.asarray(p, dtype=np.float64)
    dtype = np.float32 if normalized.dtype == np.float32 else np.float64
    sqrt_deg = np.sqrt(np.asarray(degree, dtype=np.float64))
    isolated = degree == 0
    # ||D^1/2 r||_1 >= min(sqrt(d)) ||r||_2 (r is 0 on isolated nodes): the exact check waits for this bound
    sqrt_deg_min = float(sqrt_deg[~isolated].min()) if (~isolated).any() else 1.0
    isolated_mass = float(p[isolated].sum())
    bound_dtype = dtype if dot_rounding(len(p), dtype) <= MAX_DOT_ROUNDING else np.float64
    rounding, bound_weights = dot_rounding(len(p), bound_dtype), sqrt_deg.astype(bound_dtype, copy=False)
    b = np.divide(p, sqrt_deg, out=np.zeros_like(p), where=sqrt_deg > 0).astype(dtype, copy=False)
    z = b.copy()  # y0 = p on every node of positive degree

    def apply(x: np.ndarray) -> np.ndarray:  # (I - d B) x
        out = normalized @ x
        out *= -damping
        out += x
        return out

    r = b - apply(z)
    q, rr = r.copy(), float(np.dot(r, r))
    step = np.empty_like(q)  # reused: a fresh temporary per update costs page faults on large graphs
    bound_per_residual = 0.0  # the last exact bound over ||r||_2 then: it predicts the next one
    for _ in range(max_iter):
        aq = apply(q)
        qaq = float(np.dot(q, aq))
        alpha = rr / qaq if qaq > 0 else 0.0
        z += np.multiply(q, alpha, out=step)
        r -= np.multiply(aq, alpha, out=step)
        rr_new = float(np.dot(r, r))
        residual = np.sqrt(rr_new)
        if residual * sqrt_deg_min <= tol / 2.0 and residual * bound_per_residual <= CHECK_SLACK * tol:
            bound = _error_bound(z, r, bound_weights, isolated_mass, damping, step, rounding)
            if bound <= tol:
                break
            bound_per_residual = bound / residual if np.isfinite(bound) and residual > 0 else 0.0  # inf: no guide
        q *= rr_new / rr if rr > 0 else 0.0
        q += r
        rr = rr_new
    y = z * sqrt_deg  # float64
    y[isolated] = p[isolated]
    return y / y.sum()
