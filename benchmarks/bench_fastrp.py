"""FastRP: full build vs exact incremental update after adding 1% nodes (and their edges).

Two seeded graphs with ~100k nodes, dim 256: Barabasi-Albert (small world: the 3-hop ball of the
new nodes is most of the graph) and a random geometric graph with the new nodes in one corner
(local growth: the ball is small). Baseline in the same run: full rebuild of the grown graph.
Usage: python benchmarks/bench_fastrp.py [--quick]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

sys.path.insert(0, str(Path(__file__).parent))
from _common import timed, write_json  # noqa: E402

from lightrag_prism.graph.fastrp import FastRPState  # noqa: E402


def _sym(u, v, w, n):
    a = sp.coo_matrix((w, (u, v)), shape=(n, n))
    return sp.csr_matrix(a + a.T)


def ba_graphs(n: int, m: int, grow: int, seed: int):
    """BA-like edge list via degree-proportional sampling (vectorised per new node block)."""
    rng = np.random.default_rng(seed)
    u = np.repeat(np.arange(m, n + grow), m)
    # target = uniform earlier endpoint of an earlier edge ~ preferential attachment, approximated
    v = np.floor(rng.uniform(size=u.size) ** 2 * u).astype(np.int64)
    w = rng.uniform(0.5, 5.0, u.size)
    ok = u != v
    u, v, w = u[ok], v[ok], w[ok]
    old = (u < n) & (v < n)
    return _sym(u[old], v[old], w[old], n), _sym(u, v, w, n + grow)


def geometric_graphs(n: int, grow: int, seed: int, k: int = 10):
    rng = np.random.default_rng(seed)
    pts = np.vstack([rng.uniform(size=(n, 2)), rng.uniform(0, 0.05, size=(grow, 2))])  # new nodes in a corner
    _, nbr = cKDTree(pts[:n]).query(pts, k=k + 1)
    u = np.repeat(np.arange(n + grow), k)
    v = nbr[:, 1:].ravel()
    w = rng.uniform(0.5, 5.0, u.size)
    old = u < n
    return _sym(u[old], v[old], w[old], n), _sym(u, v, w, n + grow)


def bench(name: str, old: sp.csr_matrix, grown: sp.csr_matrix, dim: int) -> dict:
    t_build, state = timed(lambda: FastRPState.build(old, dim=dim), 1)
    t_update, updated = timed(lambda: state.update(grown), 1)
    t_rebuild, rebuilt = timed(lambda: FastRPState.build(grown, dim=dim), 1)
    k = len(state.powers) - 1
    row = dict(graph=name, n_nodes=old.shape[0], n_edges=int(old.nnz // 2), added_nodes=grown.shape[0] - old.shape[0],
               added_edges=int((grown.nnz - old.nnz) // 2), dim=dim, t_build_s=t_build, t_update_s=t_update,
               t_rebuild_s=t_rebuild, update_speedup=t_rebuild / t_update,
               rows_recomputed_fraction=updated.recomputed_rows / (k * grown.shape[0]),
               max_abs_diff_vs_rebuild=float(np.abs(updated.embedding - rebuilt.embedding).max()))
    print(f"{name:>10}: {row['n_nodes']} nodes {row['n_edges']} edges dim {dim} | build {t_build:.2f} s | "
          f"+{row['added_nodes']} nodes/+{row['added_edges']} edges: update {t_update:.2f} s vs rebuild "
          f"{t_rebuild:.2f} s ({row['update_speedup']:.1f}x), rows recomputed "
          f"{100 * row['rows_recomputed_fraction']:.1f}%, max |diff| {row['max_abs_diff_vs_rebuild']:.1e}")
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k nodes instead of 100k")
    args = ap.parse_args()
    n = 10_000 if args.quick else 100_000
    grow, dim = n // 100, 256
    rows = [bench("ba", *ba_graphs(n, 5, grow, seed=1), dim), bench("geometric", *geometric_graphs(n, grow, seed=2), dim)]
    write_json("bench_fastrp" + ("_quick" if args.quick else ""), {"rows": rows})


if __name__ == "__main__":
    main()
