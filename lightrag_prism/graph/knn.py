"""Blocked exact top-k cosine neighbours (synonym edges, merge candidates).

The query x corpus similarity matrix is never materialised: queries are processed ``block_size`` at
a time, so peak extra memory is O(block_size * N) floats. The dtype of the inputs is kept (float32
inputs halve time and memory; float64 otherwise). Also :func:`cached_rows`, the similarities of a query computed
only for the rows a walk reaches (prism's multi-hop, FiDeLiS's beams).
"""
from __future__ import annotations

import numpy as np

__all__ = ["cached_rows", "topk_cosine", "unit_rows"]


SPARSE_SHARE = 16  # a block with at most 1/16 of its entries above the threshold ranks only those


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm in ``x``'s dtype; a zero row stays zero (cosine 0 to everything)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)  # zero vector: cosine 0


def cached_rows(cache: np.ndarray, rows, compute) -> np.ndarray:
    """``cache[rows]``, where NaN marks a row not computed yet: those are filled first by ``compute(missing rows)``
    (each once, however often ``rows`` names it). For per-query similarities that only some rows ever need."""
    rows = np.asarray(rows, dtype=np.int64)
    missing = np.unique(rows[np.isnan(cache[rows])])
    if missing.size:
        cache[missing] = compute(missing)
    return cache[rows]


def _block_topk(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` columns per row of ``sims``, sorted descending (ties: lower index first)."""
    if k < sims.shape[1]:
        cut = sims.shape[1] - k  # partition on sims itself: no negated (block x N) copy
        part = np.argpartition(sims, cut, axis=1)[:, cut:]
    else:
        part = np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
    vals = np.take_along_axis(sims, part, axis=1)
    order = np.lexsort((part, -vals))  # along the last axis, per row
    return np.take_along_axis(part, order, axis=1), np.take_along_axis(vals, order, axis=1)


def _block_topk_above(sims: np.ndarray, k: int, threshold: float) -> tuple[np.ndarray, np.ndarray] | None:
    """``_block_topk`` of the entries >= ``threshold`` only (rows with fewer: -1 / -inf), ordered the same way;
    None when more than ``1 / SPARSE_SHARE`` of the block passes (then partitioning every row is cheaper).
    A high threshold (synonym edges: 0.8) leaves a few entries per row, and sorting those replaces a partition
    of every row: most of the synonym kNN's time over 57,000 names."""
    above = sims >= threshold
    if np.count_nonzero(above) > sims.size // SPARSE_SHARE:
        return None
    rows, cols = np.nonzero(above)
    vals = sims[rows, cols]
    order = np.lexsort((cols, -vals, rows))  # by row, then best first, ties: lower index first
    rows, cols, vals = rows[order], cols[order], vals[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, rows)  # place within its row
    keep = rank < k
    idx = np.full((sims.shape[0], k), -1, dtype=np.int64)
    val = np.full((sims.shape[0], k), -np.inf, dtype=sims.dtype)
    idx[rows[keep], rank[keep]] = cols[keep]
    val[rows[keep], rank[keep]] = vals[keep]
    return idx, val


def topk_cosine(queries, corpus, k: int, threshold: float | None = None, block_size: int = 1024,
                exclude_self_ids=None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` corpus rows most cosine-similar to each query row.

    ``queries``: (Q, d), ``corpus``: (N, d). ``exclude_self_ids``: optional (Q,) corpus index to skip
    for each query (e.g. ``np.arange(N)`` when queries are the corpus; -1 = skip none).
    Returns ``(indices, scores)``, both (Q, k), best first. Slots that are excluded, fall below
    ``threshold`` or exceed N hold index -1 and score -inf.
    """
    q, c = np.asarray(queries), np.asarray(corpus)
    dtype = np.result_type(q.dtype, c.dtype, np.float32)
    if q.ndim != 2 or c.ndim != 2 or q.shape[1] != c.shape[1]:
        raise ValueError(f"queries (Q, d) and corpus (N, d) must share d, got {q.shape} and {c.shape}")
    if k < 1 or block_size < 1:
        raise ValueError("k and block_size must be >= 1")
    excl = None if exclude_self_ids is None else np.asarray(exclude_self_ids, dtype=np.int64)
    if excl is not None and excl.shape != (q.shape[0],):
        raise ValueError(f"exclude_self_ids must have shape ({q.shape[0]},)")
    c = unit_rows(c.astype(dtype, copy=False))
    kk = min(k, c.shape[0])
    idx = np.full((q.shape[0], k), -1, dtype=np.int64)
    val = np.full((q.shape[0], k), -np.inf, dtype=dtype)
    for start in range(0, q.shape[0], block_size):  # loop over query blocks only
        stop = min(start + block_size, q.shape[0])
        sims = unit_rows(q[start:stop].astype(dtype, copy=False)) @ c.T
        if excl is not None:
            rows = np.flatnonzero(excl[start:stop] >= 0)
            sims[rows, excl[start:stop][rows]] = -np.inf
        top = _block_topk_above(sims, kk, threshold) if threshold is not None else None
        idx[start:stop, :kk], val[start:stop, :kk] = top if top is not None else _block_topk(sims, kk)
    drop = ~np.isfinite(val) | (val < threshold if threshold is not None else False)
    idx[drop], val[drop] = -1, -np.inf
    return idx, val
