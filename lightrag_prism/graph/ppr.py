"""Personalized PageRank by sparse power iteration (and, for one distribution on an undirected graph,
conjugate gradients: see "Solvers").

Conventions
-----------
* ``adj`` is an N x N ``scipy.sparse`` matrix of non-negative weights; ``adj[u, v]`` is the weight of
  the edge u -> v. For the (undirected) knowledge graph it is symmetric, each edge stored twice.
* ``damping`` is the probability of following an edge (networkx ``alpha``); with probability
  ``1 - damping`` the walk teleports to the personalization distribution.
* A dangling node (zero out-weight) sends all its mass to the personalization vector, as networkx
  does by default. PrismRAG's reweighting could zero out every edge of a node; the mass then
  returns to the seeds instead of leaking.
* Convergence: stop when ``||x_t - x_{t-1}||_1 < tol`` (CG: when the residual guarantees
  ``||x - x*||_1 <= tol``). Unlike networkx the tolerance is NOT multiplied by N (networkx with
  ``tol=1e-3`` on a 3,000-node graph stops after one step).
* An all-zero personalization vector raises ``ValueError``: silently falling back to uniform
  would turn "no seed found" into global PageRank, a different retrieval signal.

Solvers
-------
* Undirected graphs (``transition_matrix(adj, symmetric=True)``): a single distribution is solved by
  conjugate gradients on the symmetrised system (``ppr_cg``; same fixed point, an L1 error bound
  instead of a heuristic stop, ~3x fewer matrix products at damping 0.85). On the MuSiQue KG that is
  1 ms against 10 ms for the power iteration (benchmarks/bench_ppr.py). An undirected graph whose
  weights change per query takes ``symmetric_ppr``: the same solve with no transition built per call.
* Directed graphs, and batches of several distributions: the power iteration below. CG batches
  poorly (four dense vectors per column per step against the power iteration's two), so a batch
  on an undirected graph runs the power iteration too; its columns then agree with single calls
  within ``tol``, not to rounding.

Speed of the batched power iteration
------------------------------------
* Each stored edge of ``P^T`` reads one row of the iterate x at a random place. A single query's
  x (8 N bytes) stays in L2 up to N ~ 2 * 10^5, and then the iteration just streams the matrix.
  A batch runs its columns in blocks of b (C-contiguous (N, b), so one random read fetches b
  values and one matrix pass serves b queries); that pays only while the block's two iterates
  stay in a share of the L3 cache: ``b = _block_width(N)``, the widest power of two <= 64 with
  ``2 * 8 * N * b <= 8 MB``. 64 queries in one batch vs 64 single power-iteration calls: ~5x at
  2,000 nodes (b = 64), ~2x at 20,000 (b = 16), ~1x at 200,000 (b = 2). Past ~10^5 nodes no block
  of 4 or more columns fits, the batch's random reads go to DRAM and wider blocks were measured
  slower than single calls, so the batch there is a convenience, not a speedup.
* The exact L1 check costs three dense passes per iteration. On graphs with n >= 16,384 it runs
  only once the L1 change restricted to a few thousand hub and seed rows (a lower bound of the
  full L1 change) drops below ``tol``; until then no column can have converged. Results do not
  depend on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from . import ppr_cg

__all__ = [
    "Transition",
    "transition_matrix",
    "edge_reweighted",
    "personalized_pagerank",
    "personalized_pagerank_batch",
    "symmetric_ppr",
    "symmetric_transition",
]

_BLOCK_BYTES = 8 * 2**20  # two iterates of one column block: a quarter of a 32 MB L3 (see _block_width)
_PROBE_MAX = 4096  # rows of the cheap convergence lower bound; see _hub_rows


@dataclass(frozen=True)
class Transition:
    """Column-stochastic transition of a weighted graph, computed once and cached by callers.

    ``pt[v, u] = adj[u, v] / out_weight(u)`` (CSR), so ``pt @ x`` moves mass one step along edges.
    ``dangling[u]`` is True when u has zero out-weight (its column of ``pt`` is empty).
    ``hubs``: the rows probed by the cheap convergence bound (see ``_hub_rows``). ``symmetric``: the
    graph is undirected, so PPR is solved by conjugate gradients (``ppr_cg``), which needs
    ``out_weight``. ``cache``: ``damping * pt`` per damping value (see ``_damped``) and the
    normalised adjacency of the CG path. ``pt_matrix``: ``pt`` as built; a symmetric transition
    leaves it out and :attr:`pt` derives it from the normalised adjacency on first use (a graph
    re-weighted per query and solved by CG never needs it).
    """

    dangling: np.ndarray
    hubs: np.ndarray | None = None
    out_weight: np.ndarray | None = None
    symmetric: bool = False
    cache: dict = field(default_factory=dict, repr=False, compare=False)
    pt_matrix: sp.csr_matrix | None = field(default=None, repr=False)

    @property
    def pt(self) -> sp.csr_matrix:
        if self.pt_matrix is not None:
            return self.pt_matrix
        if ("pt",) not in self.cache:  # A D^-1 = D^1/2 (D^-1/2 A D^-1/2) D^-1/2
            normalized = self.cache[("normalized",)]
            sqrt_w, inv_sqrt = np.sqrt(self.out_weight), ppr_cg.inverse_sqrt(self.out_weight)
            rows = np.repeat(np.arange(self.n), np.diff(normalized.indptr))
            data = normalized.data * sqrt_w[rows] * inv_sqrt[normalized.indices]
            pt = sp.csr_matrix((data, normalized.indices, normalized.indptr), shape=normalized.shape)
            pt.has_sorted_indices = normalized.has_sorted_indices
            self.cache[("pt",)] = pt
        return self.cache[("pt",)]

    @property
    def n(self) -> int:
        return len(self.dangling)


def _check_adjacency(adj) -> sp.csr_matrix:
    if not sp.issparse(adj) or adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
        raise ValueError(f"adj must be a square scipy.sparse matrix, got {type(adj).__name__}")
    adj = sp.csr_matrix(adj, dtype=np.float64)
    if adj.nnz and (adj.data.min() < 0 or not np.isfinite(adj.data).all()):
        raise ValueError("adj must have finite non-negative weights")
    return adj


def transition_matrix(adj, symmetric: bool = False, dtype=np.float64) -> Transition:
    """Build the cached :class:`Transition` (P^T with P = D^-1 A, D = out-weights) of ``adj``.

    ``symmetric=True`` promises ``adj == adj.T`` (an undirected graph, not checked): then
    ``P^T = A D^-1`` is ``adj`` with each column scaled, built in one O(nnz) pass without the
    transpose (for graphs re-weighted per query), and PPR on it is solved by conjugate gradients
    (module ``ppr_cg``: same fixed point, ~3x fewer iterations at damping 0.85). ``dtype``: what those
    CG steps run in (float32 or float64; see ``ppr_cg``, "Precision follows the matrix")."""
    adj = _check_adjacency(adj)
    if symmetric:  # symmetric single solves never probe hubs; batches compute them lazily
        return symmetric_transition(adj if adj.has_sorted_indices else adj.sorted_indices(), dtype=dtype)
    out_w = np.asarray(adj.sum(axis=1)).ravel()
    dangling = out_w == 0
    inv = np.divide(1.0, out_w, out=np.zeros_like(out_w), where=~dangling)
    pt = sp.csr_matrix((sp.diags(inv) @ adj).T)  # one transpose at build time, none per query
    pt.sort_indices()
    return Transition(dangling, hubs=_hub_rows(pt), out_weight=out_w, pt_matrix=pt)


def symmetric_transition(adj: sp.csr_matrix, entry_rows: np.ndarray | None = None,
                         out_weight: np.ndarray | None = None, dtype=np.float64) -> Transition:
    """The transition of an undirected graph (``transition_matrix(adj, symmetric=True)`` after its checks): the
    conjugate-gradient path's normalised adjacency ``D^-1/2 A D^-1/2``, in one pass; called directly for graphs
    re-weighted per query. ``P^T`` is derived from it only if asked for (:attr:`Transition.pt`).

    ``adj``: a symmetric CSR with sorted indices and finite non-negative weights (not checked here). ``entry_rows``:
    the row of each stored entry, which callers cache with the sparsity structure. ``out_weight``: the row sums of
    ``adj``, when the caller has them. ``dtype``: the normalised adjacency's, so the CG steps' (computed in float64,
    then cast)."""
    n = adj.shape[0]
    rows = entry_rows if entry_rows is not None else np.repeat(np.arange(n), np.diff(adj.indptr))
    if out_weight is None:
        out_weight = np.bincount(rows, weights=adj.data, minlength=n)
    out_w = np.asarray(out_weight, dtype=np.float64)  # bincount gives int64 when adj is empty
    dangling = out_w == 0
    inv_sqrt = np.sqrt(np.divide(1.0, out_w, out=np.zeros_like(out_w), where=~dangling))
    data = (adj.data * inv_sqrt[adj.indices] * inv_sqrt[rows]).astype(dtype, copy=False)
    normalized = sp.csr_matrix((data, adj.indices, adj.indptr), shape=adj.shape)
    normalized.has_sorted_indices = True
    transition = Transition(dangling, out_weight=out_w, symmetric=True)
    transition.cache[("normalized",)] = normalized
    return transition


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


def _block_width(n: int) -> int:
    """Columns per block: the largest power of two (1..64) whose two (n, b) float64 iterates fit
    ``_BLOCK_BYTES``; wider, the random reads of ``P^T @ x`` miss the cache ("Speed" above)."""
    fit = _BLOCK_BYTES // (2 * 8 * max(n, 1))
    return 1 << min(6, max(fit, 1).bit_length() - 1)


def _damped(t: Transition, damping: float) -> sp.csr_matrix:
    """``damping * P^T`` sharing the index arrays of ``t.pt`` (saves one dense pass per iteration),
    cached on ``t`` for the last few damping values (callers use one or two)."""
    key = ("damped", damping)
    if key not in t.cache:
        damped = [k for k in t.cache if k[0] == "damped"]
        for old in damped[:max(len(damped) - 3, 0)]:  # keep the last few damping values
            del t.cache[old]
        t.cache[key] = sp.csr_matrix((t.pt.data * damping, t.pt.indices, t.pt.indptr), shape=t.pt.shape)
    return t.cache[key]


def _normalized(t: Transition) -> sp.csr_matrix:
    if ("normalized",) not in t.cache:
        t.cache[("normalized",)] = ppr_cg.normalized_adjacency(t.pt, t.out_weight)
    return t.cache[("normalized",)]


def _colsum(a: np.ndarray) -> np.ndarray:
    """Column sums of a C-contiguous (N, b) array; 3x faster than ``a.sum(axis=0)`` for small b
    (``ones @ a`` is faster still, but OpenBLAS threads stall when the cores are busy)."""
    return np.einsum("ij->j", a)


def _hub_rows(pt: sp.csr_matrix) -> np.ndarray:
    """The n/16 (at most 4096) nodes with the most in-edges, where the still-moving mass of a walk
    concentrates; empty below n = 16,384, where the exact L1 check is cheaper than probing."""
    n = pt.shape[0]
    k = min(n // 16, _PROBE_MAX)
    return np.argpartition(np.diff(pt.indptr), n - k)[n - k:] if k >= 1024 else np.arange(0)


def _probe_rows(t: Transition, seeds: np.ndarray):
    """Rows of the cheap L1 lower bound (hubs and seeds), or None for "always check exactly"."""
    hubs = _hub_rows(t.pt) if t.hubs is None else t.hubs
    if not hubs.size:
        return None
    mask = np.zeros(t.n, dtype=bool)  # unique rows: a row counted twice would break the bound
    mask[hubs] = mask[seeds] = True
    return np.flatnonzero(mask)


def _power_iterate(dpt, dang, p: np.ndarray, probe, damping: float, tol: float, max_iter: int) -> np.ndarray:
    """Iterate ``x <- d P^T x + (d * dangling_mass(x) + 1 - d) p`` on the columns of block ``p``.

    ``dpt`` is ``d P^T``, ``dang`` the dangling node indices, ``p`` a C-contiguous (N, b) block
    (each stored edge then reads one contiguous row of x). One sparse product per iteration over
    the still-active columns; a converged column is written out and dropped from the block. ``p``
    enters through its non-zeros only (seeds are sparse). The exact L1 check (three dense passes)
    runs only once some column's L1 change on the ``probe`` rows, a lower bound of its full L1
    change, is below ``tol``: before that no column can have converged.
    """
    out, x, cols = np.empty_like(p), p.copy(), np.arange(p.shape[1])
    pr, pc = np.nonzero(p)
    pv = p[pr, pc]
    for it in range(1, max_iter + 1):
        new = dpt @ x
        coef = damping * x[dang].sum(axis=0) + (1.0 - damping)  # dangling mass + teleport, per column
        new[pr, pc] += pv * coef[pc]
        done = np.zeros(cols.size, dtype=bool)
        if probe is None or it == max_iter or (_colsum(np.abs(new[probe] - x[probe])) < tol).any():
            x -= new
            np.abs(x, out=x)
            done = (_colsum(x) < tol) | (it == max_iter)
        x = new
        if done.any():
            out[:, cols[done]] = x[:, done]
            keep = ~done
            x, cols, slot = np.ascontiguousarray(x[:, keep]), cols[keep], np.cumsum(keep) - 1
            sel = keep[pc]
            pr, pc, pv = pr[sel], slot[pc[sel]], pv[sel]
        if cols.size == 0:
            break
    return out


def _check_params(damping: float, tol: float, max_iter: int) -> None:
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if tol <= 0 or max_iter < 1:
        raise ValueError("tol must be > 0 and max_iter >= 1")


def _one_column(personalization) -> np.ndarray:
    """A 1-D personalization as an (N, 1) float64 column (the solvers work on columns)."""
    p = np.asarray(personalization, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"personalization must be 1-D, got shape {p.shape}")
    return p[:, None]


def personalized_pagerank(adj, personalization, *, damping=0.85, tol=1e-6, max_iter=100) -> np.ndarray:
    """Personalized PageRank of one seed distribution.

    ``adj``: N x N sparse adjacency or a cached :class:`Transition`. ``personalization``: length-N
    non-negative vector (normalised here; all-zero raises ``ValueError``). Returns a length-N
    probability vector (sums to 1). ``max_iter`` caps the iterations without raising.
    """
    t = _as_transition(adj)
    column = _one_column(personalization)
    return personalized_pagerank_batch(t, column, damping=damping, tol=tol, max_iter=max_iter)[:, 0]


def symmetric_ppr(adj: sp.csr_matrix, out_weight: np.ndarray, personalization, *, damping=0.85, tol=1e-6,
                  max_iter=100) -> np.ndarray:
    """Personalized PageRank of one distribution on an undirected graph whose weights change per call.

    ``adj``: a symmetric CSR of finite non-negative weights (not checked here); ``out_weight``: its row sums, which
    callers re-weighting a graph per query have. The same fixed point and L1 guarantee as
    ``personalized_pagerank(symmetric_transition(adj), ...)``, by conjugate gradients on ``D^-1/2 A D^-1/2`` applied
    as a scaled product (``ppr_cg.ScaledAdjacency``) instead of a normalised copy of ``adj`` per call. The whole
    graph is solved: the restriction to the seeds' components is for a few seeds on a cached transition.
    """
    _check_params(damping, tol, max_iter)
    degree = np.asarray(out_weight, dtype=np.float64)
    p = _normalized_columns(_one_column(personalization), adj.shape[0])
    return ppr_cg.solve(ppr_cg.ScaledAdjacency(adj, degree), degree, p[:, 0], damping, tol, max_iter)


def personalized_pagerank_batch(adj, personalizations, *, damping=0.85, tol=1e-6, max_iter=100,
                                block_width=None) -> np.ndarray:
    """Personalized PageRank of B seed distributions at once.

    ``personalizations`` has shape (N, B): one column per distribution. Each column is normalised
    and converges on its own L1 criterion; column j of the result equals
    ``personalized_pagerank(adj, personalizations[:, j])`` to rounding on a directed transition,
    within ``tol`` on a symmetric one (see "Solvers"). Returns an (N, B) array whose columns sum to 1.

    The columns run in blocks of ``block_width`` columns (default ``_block_width(N)``, chosen so a
    block stays in cache; see "Speed" in the module docstring). Against 64 single calls, 64
    queries cost about 5x less at 2,000 nodes and 2x less at 20,000, but about the same at
    200,000 nodes: on graphs that large the batch is a convenience, not a speedup.
    """
    _check_params(damping, tol, max_iter)
    t = _as_transition(adj)
    p = np.asarray(personalizations, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"personalizations must have shape (N, B), got {p.shape}")
    p = _normalized_columns(p, t.n)
    width = _block_width(t.n) if block_width is None else int(block_width)
    if width < 1:
        raise ValueError(f"block_width must be >= 1, got {width}")
    if t.symmetric and p.shape[1] == 1:  # CG batches poorly (more dense work per product), so batches use power
        return _solve_symmetric(t, p, damping, tol, max_iter)
    dpt, dang = _damped(t, damping), np.flatnonzero(t.dangling)
    probe = _probe_rows(t, np.flatnonzero(p.any(axis=1)))
    out = np.empty_like(p)
    for j in range(0, p.shape[1], width):
        out[:, j:j + width] = _power_iterate(dpt, dang, np.ascontiguousarray(p[:, j:j + width]), probe, damping,
                                             tol, max_iter)
    return out / _colsum(out)


def _solve_symmetric(t: Transition, p: np.ndarray, damping: float, tol: float, max_iter: int) -> np.ndarray:
    """CG (``ppr_cg``) on the connected components holding the seeds when they are a small part of the graph
    (PPR mass never leaves them), else on the whole graph."""
    nodes = _seed_components(t, np.flatnonzero(p[:, 0]))
    if nodes is None:
        return ppr_cg.solve(_normalized(t), t.out_weight, p[:, 0], damping, tol, max_iter)[:, None]
    out = np.zeros_like(p)
    sub = _normalized(t)[nodes][:, nodes]
    out[nodes, 0] = ppr_cg.solve(sub, t.out_weight[nodes], p[nodes, 0], damping, tol, max_iter)
    return out


def _seed_components(t: Transition, seeds: np.ndarray) -> np.ndarray | None:
    """Nodes of the components containing ``seeds`` if they hold under 80% of the graph; None otherwise, and for
    seed sets over 1% of the nodes (retrieval personalizations spread over all passages touch every component,
    so the component labels are only computed for the few-seed case)."""
    if seeds.size * 100 > t.n:
        return None
    if ("components",) not in t.cache:
        t.cache[("components",)] = connected_components(_normalized(t), directed=False)[1]  # pt's pattern
    labels = t.cache[("components",)]
    touched = np.zeros(labels.max() + 1, dtype=bool)
    touched[labels[seeds]] = True
    nodes = np.flatnonzero(touched[labels])
    return nodes if nodes.size < 0.8 * t.n else None
