"""Personalized PageRank on an undirected graph by conjugate gradients (the symmetric path of ``ppr.py``).

With a symmetric adjacency A and degrees D, PPR with dangling mass sent to the personalization is
``x = y / sum(y)`` where ``(I - d A D^-1) y = p``: the dangling term only adds a multiple of p, which the
normalisation absorbs. Substituting ``y = D^1/2 z`` gives the symmetric positive definite system
``(I - d D^-1/2 A D^-1/2) z = D^-1/2 p`` with eigenvalues in [1 - d, 1 + d], which CG solves in about
``sqrt((1 + d) / (1 - d))`` times fewer steps than power iteration needs per digit of accuracy (~30 instead of
~90 iterations at d = 0.85 on the MuSiQue KG). Nodes of degree 0 keep ``y = p``.

Stopping rule: the L1 residual of the y-system ``||r_y||_1 = ||D^1/2 r_z||_1 <= tol (1 - d) / 2``. Because
``||(I - d P^T)^-1||_1 <= 1 / (1 - d)`` and ``sum(y*) >= 1``, this guarantees ``||x - x*||_1 <= tol`` (power
iteration's ``||x_t - x_(t-1)||_1 < tol`` is a heuristic by comparison).

Columns are solved together, vectorised; a column leaves the working block once converged, so column j of a
batch does exactly the steps a single solve of it does.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def normalized_adjacency(pt: sp.csr_matrix, degree: np.ndarray) -> sp.csr_matrix:
    """``D^-1/2 A D^-1/2`` from the transition ``pt = A D^-1`` of a symmetric A (rows/columns of degree 0
    stay empty)."""
    inv_sqrt = np.divide(1.0, np.sqrt(degree), out=np.zeros_like(degree), where=degree > 0)
    rows = np.repeat(np.arange(pt.shape[0]), np.diff(pt.indptr))
    # pt[i, j] = A[i, j] / d_j, so B[i, j] = A[i, j] / sqrt(d_i d_j) = pt[i, j] * d_j / sqrt(d_i d_j)
    data = pt.data * degree[pt.indices] * inv_sqrt[pt.indices] * inv_sqrt[rows]
    return sp.csr_matrix((data, pt.indices, pt.indptr), shape=pt.shape)


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->j", a, b)


def solve(normalized: sp.csr_matrix, degree: np.ndarray, p: np.ndarray, damping: float, tol: float,
          max_iter: int) -> np.ndarray:
    """PPR of the columns of ``p`` (N, B), each summing to 1, on the graph of ``normalized``; (N, B) result
    whose columns sum to 1. ``max_iter`` caps the CG steps without raising."""
    sqrt_deg = np.sqrt(degree)[:, None]
    isolated = degree == 0
    # ||D^1/2 r||_1 >= min(sqrt(d)) ||r||_2 (r is 0 on isolated nodes): the exact L1 check waits for this bound
    sqrt_deg_min = float(sqrt_deg[~isolated].min()) if (~isolated).any() else 1.0
    b = np.divide(p, sqrt_deg, out=np.zeros_like(p), where=sqrt_deg > 0)
    out, cols = np.empty_like(p), np.arange(p.shape[1])
    z = b.copy()  # y0 = p on every node of positive degree
    r = b - z + damping * (normalized @ z)
    q, rr = r.copy(), _dot(r, r)
    limit = tol * (1.0 - damping) / 2.0
    for it in range(1, max_iter + 1):
        aq = normalized @ q
        aq *= -damping
        aq += q
        qaq = _dot(q, aq)
        alpha = np.divide(rr, qaq, out=np.zeros_like(rr), where=qaq > 0)
        z += alpha * q
        r -= alpha * aq
        rr_new = _dot(r, r)
        done = np.sqrt(rr_new) * sqrt_deg_min <= limit
        if done.any():
            done[done] = (np.abs(r[:, done]) * sqrt_deg).sum(axis=0) <= limit
        if it == max_iter:
            done[:] = True
        if done.any():
            out[:, cols[done]] = z[:, done]
            keep = ~done
            z, r, q, rr, rr_new, cols = z[:, keep], r[:, keep], q[:, keep], rr[keep], rr_new[keep], cols[keep]
            if not cols.size:
                break
        q *= np.divide(rr_new, rr, out=np.zeros_like(rr), where=rr > 0)
        q += r
        rr = rr_new
    y = out * sqrt_deg
    y[isolated] = p[isolated]
    return y / y.sum(axis=0)
