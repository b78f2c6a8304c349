"""Approximate top-k cosine for large merge-candidate searches: an inverted-file (IVF) index in plain numpy.

Exact blocked top-k (:func:`lightrag_prism.graph.knn.topk_cosine`) costs Q × N dot products; for a whole-graph
pass over 100k entities that is 10^10 products. Near-duplicates (cosine ≥ 0.8) are close in space, so a coarse
partition finds them almost always:

1. ``n_lists ≈ 2·sqrt(N)`` centroids from a few spherical k-means steps on a sample (seeded);
2. every vector goes to its nearest centroid (one N × n_lists product);
3. each query probes its ``n_probe`` nearest lists and is compared exactly with their members only.

Work is ≈ Q × N × n_probe / n_lists; memory is O(N + block) (no N×N, no Q×N matrix). Loops run over lists
(≈ 2·sqrt(N) iterations), never over entities. Recall against the exact search is measured in
``benchmarks/bench_merge_candidates.py``.
"""

from __future__ import annotations

import numpy as np


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _nearest(x: np.ndarray, centroids: np.ndarray, n: int, block: int = 8192) -> np.ndarray:
    out = np.empty((len(x), n), dtype=np.int64)
    for s in range(0, len(x), block):
        sims = x[s:s + block] @ centroids.T
        out[s:s + block] = np.argsort(-sims, axis=1)[:, :n] if n > 1 else sims.argmax(axis=1)[:, None]
    return out


def train_centroids(x: np.ndarray, n_lists: int, *, seed: int = 0, iters: int = 6, sample: int = 20000):
    rng = np.random.default_rng(seed)
    pool = x[rng.choice(len(x), size=min(sample, len(x)), replace=False)]
    centroids = pool[rng.choice(len(pool), size=n_lists, replace=False)].copy()
    for _ in range(iters):
        assign = _nearest(pool, centroids, 1)[:, 0]
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, pool)
        empty = np.bincount(assign, minlength=n_lists) == 0
        sums[empty] = centroids[empty]
        centroids = _unit(sums)
    return centroids


def ivf_topk_cosine(queries_idx: np.ndarray, x: np.ndarray, k: int, threshold: float, *, n_probe: int = 6,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate triples ``(query_row, corpus_row, cosine)`` with cosine ≥ threshold, ≤ k per query, no self."""
    x = _unit(np.asarray(x, dtype=np.float32))
    n_lists = max(1, min(len(x), int(2 * np.sqrt(len(x)))))
    centroids = train_centroids(x, n_lists, seed=seed)
    home = _nearest(x, centroids, 1)[:, 0]
    probes = _nearest(x[queries_idx], centroids, min(n_probe, n_lists))
    order = np.argsort(home, kind="stable")
    bounds = np.searchsorted(home[order], np.arange(n_lists + 1))
    rows, cols, vals = [], [], []
    for lst in range(n_lists):  # loop over lists, not entities
        members = order[bounds[lst]:bounds[lst + 1]]
        asking = queries_idx[np.any(probes == lst, axis=1)]
        if len(members) == 0 or len(asking) == 0:
            continue
        sims = x[asking] @ x[members].T
        qi, mi = np.nonzero(sims >= threshold)
        keep = asking[qi] != members[mi]
        rows.append(asking[qi][keep]), cols.append(members[mi][keep]), vals.append(sims[qi, mi][keep])
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    o = np.lexsort((-v, r))  # per query, best first
    r, c, v = r[o], c[o], v[o]
    rank = np.arange(len(r)) - np.searchsorted(r, r)  # position within its query's run
    keep = rank < k
    return r[keep], c[keep], v[keep]
