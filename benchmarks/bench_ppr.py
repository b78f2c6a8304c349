"""Personalized PageRank: ours vs networkx.pagerank vs igraph prpack on seeded Barabasi-Albert graphs.

Fair tolerance: networkx stops when ||x - x_last||_1 < N * tol, ours when < tol, so networkx runs
with tol = 1e-6 / N. Accuracy: L1 to a converged reference (ours at tol 1e-14, cross-checked with
prpack). Batch: 64 single-seed queries in one personalized_pagerank_batch call vs 64 single calls,
timed alternately BATCH_ROUNDS times (medians), with the block width the batch chose.
Usage: python benchmarks/bench_ppr.py [--quick]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))
from _common import timed, write_json  # noqa: E402

from lightrag_prism.graph.ppr import (  # noqa: E402
    _block_width,
    personalized_pagerank,
    personalized_pagerank_batch,
    transition_matrix,
)

TOL, DAMPING, NX_BUDGET_S, BATCH_ROUNDS = 1e-6, 0.85, 120.0, 3


def make_graph(n_edges: int, seed: int):
    g = nx.barabasi_albert_graph(n_edges // 5, 5, seed=seed)
    rng = np.random.default_rng(seed)
    u, v = np.array(g.edges).T
    w = rng.uniform(0.5, 5.0, u.size)
    nx.set_edge_attributes(g, dict(zip(zip(u.tolist(), v.tolist()), w.tolist())), "weight")
    a = sp.coo_matrix((w, (u, v)), shape=(g.number_of_nodes(),) * 2)
    return g, sp.csr_matrix(a + a.T), (u, v, w)


def run_networkx(g, seed_node):
    n = g.number_of_nodes()
    r = nx.pagerank(g, alpha=DAMPING, personalization={seed_node: 1.0}, weight="weight", tol=TOL / n, max_iter=10000)
    return np.fromiter((r[i] for i in range(n)), dtype=np.float64, count=n)


def run_igraph(edges, n, seed_node):
    import igraph as ig

    u, v, w = edges
    gi = ig.Graph(n=n, edges=np.column_stack([u, v]).tolist(), directed=False)
    gi.es["weight"] = w.tolist()
    reset = np.zeros(n)
    reset[seed_node] = 1.0

    def call():
        return np.array(gi.personalized_pagerank(directed=False, damping=DAMPING, reset=reset.tolist(),
                                                 weights="weight", implementation="prpack"))

    return call


def bench_size(n_edges: int, reps: int, nx_estimate: float | None) -> tuple[dict, float]:
    g, adj, edges = make_graph(n_edges, seed=n_edges)
    n = adj.shape[0]
    seed_node = int(np.random.default_rng(0).integers(n))
    p = np.zeros(n)
    p[seed_node] = 1.0
    t_build, t = timed(lambda: transition_matrix(adj), reps)
    t_ours, ours = timed(lambda: personalized_pagerank(t, p), reps)
    ref = personalized_pagerank(t, p, tol=1e-14, max_iter=10000)
    row = dict(n_nodes=n, n_edges=int(adj.nnz // 2), t_transition_s=t_build, t_ours_s=t_ours,
               t_ours_incl_build_s=t_ours + t_build, l1_ours_vs_ref=float(np.abs(ours - ref).sum()))
    if nx_estimate is not None and nx_estimate > NX_BUDGET_S:
        row["networkx_skipped"] = f"estimated {nx_estimate:.0f} s > {NX_BUDGET_S:.0f} s budget"
    else:
        row["t_networkx_s"], nxr = timed(lambda: run_networkx(g, seed_node), 1 if n_edges >= 10**6 else reps)
        row["l1_networkx_vs_ref"] = float(np.abs(nxr - ref).sum())
        row["speedup_vs_networkx"] = row["t_networkx_s"] / t_ours
        row["speedup_vs_networkx_incl_build"] = row["t_networkx_s"] / (t_ours + t_build)
    try:
        call = run_igraph(edges, n, seed_node)
        row["t_igraph_prpack_s"], igr = timed(call, reps)
        row["l1_prpack_vs_ref"] = float(np.abs(igr - ref).sum())
        row["speedup_vs_igraph"] = row["t_igraph_prpack_s"] / t_ours
    except ImportError as exc:
        row["igraph_skipped"] = str(exc)
    pb = np.zeros((n, 64))
    pb[np.random.default_rng(1).integers(n, size=64), np.arange(64)] = 1.0
    rounds = [(timed(lambda: personalized_pagerank_batch(t, pb), 1)[0],
               timed(lambda: [personalized_pagerank(t, pb[:, j]) for j in range(64)], 1)[0]) for _ in range(BATCH_ROUNDS)]
    row["t_batch64_s"], row["t_64_singles_s"] = (float(np.median(ts)) for ts in zip(*rounds))  # interleaved: fair under load
    row["batch_speedup"] = row["t_64_singles_s"] / row["t_batch64_s"]
    row["batch_block_width"] = _block_width(n)
    per_nx = row.get("t_networkx_s", nx_estimate or 0.0) / n_edges
    return row, per_nx


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k and 100k edges only, fewer repeats")
    args = ap.parse_args()
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    rows, per_edge = [], None
    for m in sizes:
        estimate = None if per_edge is None else 1.5 * per_edge * m  # linear extrapolation with margin
        row, per_edge = bench_size(m, 3 if args.quick else 5, estimate)
        rows.append(row)
        print(summary(row))
    write_json("bench_ppr" + ("_quick" if args.quick else ""), {"tol": TOL, "damping": DAMPING, "rows": rows})


def summary(r: dict) -> str:
    nxs = (f"networkx {r['t_networkx_s']*1e3:8.1f} ms ({r['speedup_vs_networkx']:.1f}x, "
           f"{r['speedup_vs_networkx_incl_build']:.1f}x incl. build; L1 {r['l1_networkx_vs_ref']:.1e})"
           if "t_networkx_s" in r else f"networkx skipped: {r['networkx_skipped']}")
    igs = (f"prpack {r['t_igraph_prpack_s']*1e3:7.1f} ms ({r['speedup_vs_igraph']:.2f}x; L1 {r['l1_prpack_vs_ref']:.1e})"
           if "t_igraph_prpack_s" in r else "igraph skipped")
    return (f"{r['n_edges']:>8} edges {r['n_nodes']:>7} nodes | ours {r['t_ours_s']*1e3:7.1f} ms "
            f"(+{r['t_transition_s']*1e3:.1f} ms transition, L1 {r['l1_ours_vs_ref']:.1e}) | {nxs} | {igs} | "
            f"batch64 {r['t_batch64_s']*1e3:.0f} ms vs 64 singles {r['t_64_singles_s']*1e3:.0f} ms "
            f"({r['batch_speedup']:.1f}x, block width {r['batch_block_width']})")


if __name__ == "__main__":
    main()
