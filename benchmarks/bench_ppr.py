"""Personalized PageRank: ours vs networkx.pagerank vs igraph prpack on the MuSiQue KG and on seeded
Barabasi-Albert graphs of 10k, 100k and 1M edges.

The MuSiQue KG ("dev KG") is the entity graph of the bundled musique_train_100 OpenIE triples: one node per
case-folded subject/object, edge weight = number of triples linking the pair (what LightRAG's co-occurrence weight
sums to when the triples are inserted), no index build needed.

Fair tolerance: networkx stops when ||x - x_last||_1 < N * tol, ours when < tol, so networkx runs
with tol = 1e-6 / N. "ours" is the default path for an undirected graph (conjugate gradients, ppr_cg.py); the
power iteration (the path for directed graphs) is timed on the same graph too. Accuracy: L1 to a converged reference (ours at tol 1e-14, cross-checked with
prpack). Batch: 64 single-seed queries in one personalized_pagerank_batch call vs 64 single calls,
timed alternately BATCH_ROUNDS times (medians), with the block width the batch chose.
Solve order: the sparse product and ``symmetric_ppr`` (prism's per-query solve) on the graph as numbered and
relabelled by ``ppr_cg.rows_by_length`` (what ``PassageGraph`` keeps), alternating ORDER_ROUNDS times (medians).
Stopping bound: the float32 solve of the passage-graph-like graph (the retrieval graphs' dtype) with its error bound
in float32, widened by ``ppr_cg.dot_rounding`` (the default), against the bound in float64, alternating.
Usage: python benchmarks/bench_ppr.py [--quick]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

sys.path.insert(0, str(Path(__file__).parent))
from _common import timed, write_json  # noqa: E402

from lightrag_prism.graph import ppr_cg  # noqa: E402
from lightrag_prism.graph.ppr import (  # noqa: E402
    _block_width,
    personalized_pagerank,
    personalized_pagerank_batch,
    symmetric_ppr,
    transition_matrix,
)

TOL, DAMPING, NX_BUDGET_S, BATCH_ROUNDS, ORDER_ROUNDS = 1e-6, 0.85, 120.0, 3, 5


def _as_graphs(n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray):
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_weighted_edges_from(zip(u.tolist(), v.tolist(), w.tolist()))
    a = sp.coo_matrix((w, (u, v)), shape=(n, n))
    return g, sp.csr_matrix(a + a.T), (u, v, w)


def make_graph(n_edges: int, seed: int):
    ba = nx.barabasi_albert_graph(n_edges // 5, 5, seed=seed)
    u, v = np.array(ba.edges).T
    return _as_graphs(ba.number_of_nodes(), u, v, np.random.default_rng(seed).uniform(0.5, 5.0, u.size))


def musique_kg():
    """The entity graph of the bundled MuSiQue OpenIE triples (see the module docstring)."""
    from lightrag_prism.eval.datasets import load_musique

    index, counts = {}, {}
    for openie in load_musique().openie.values():
        for subj, _, obj in openie.triples:
            a, b = (index.setdefault(x.strip().casefold(), len(index)) for x in (subj, obj))
            if a != b:
                key = (min(a, b), max(a, b))
                counts[key] = counts.get(key, 0) + 1
    pairs = np.array(list(counts), dtype=np.int64)
    return _as_graphs(len(index), pairs[:, 0], pairs[:, 1], np.array(list(counts.values()), dtype=np.float64))


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


def bench_size(n_edges: int, reps: int, nx_estimate: float | None, graph=None, seed_node=None) -> tuple[dict, float]:
    g, adj, edges = graph or make_graph(n_edges, seed=n_edges)
    n = adj.shape[0]
    seed_node = int(np.random.default_rng(0).integers(n)) if seed_node is None else seed_node
    p = np.zeros(n)
    p[seed_node] = 1.0
    t_build, t = timed(lambda: transition_matrix(adj, symmetric=True), reps)  # undirected: the CG path
    t_ours, ours = timed(lambda: personalized_pagerank(t, p), reps)
    power_t = transition_matrix(adj)  # the same graph through the power iteration (directed-graph path)
    t_power, power = timed(lambda: personalized_pagerank(power_t, p), reps)
    ref = personalized_pagerank(power_t, p, tol=1e-14, max_iter=10000)
    row = dict(n_nodes=n, n_edges=int(adj.nnz // 2), t_transition_s=t_build, t_ours_s=t_ours,
               t_ours_incl_build_s=t_ours + t_build, l1_ours_vs_ref=float(np.abs(ours - ref).sum()),
               t_power_s=t_power, l1_power_vs_ref=float(np.abs(power - ref).sum()))
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
               timed(lambda: [personalized_pagerank(t, pb[:, j]) for j in range(64)], 1)[0],
               timed(lambda: [personalized_pagerank(power_t, pb[:, j]) for j in range(64)], 1)[0])
              for _ in range(BATCH_ROUNDS)]
    row["t_batch64_s"], row["t_64_singles_s"], row["t_64_power_singles_s"] = (
        float(np.median(ts)) for ts in zip(*rounds))  # interleaved: fair under load
    row["batch_speedup"] = row["t_64_singles_s"] / row["t_batch64_s"]
    row["batch_speedup_vs_power_singles"] = row["t_64_power_singles_s"] / row["t_batch64_s"]
    row["batch_block_width"] = _block_width(n)
    per_nx = row.get("t_networkx_s", nx_estimate or 0.0) / n_edges
    return row, per_nx


def passage_graph_like(n_passages: int, n_entities: int, seed: int) -> sp.csr_matrix:
    """A synthetic entities + passages graph shaped like the pooled bench's passage graph: every entity is mentioned
    once, plus half as many mentions again drawn Zipf-like (a few hubs in hundreds of passages), spread over the
    passages (at least 3 each); a passage links to its entities, and each mention has a fact edge to another
    mention of its passage."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, n_entities + 1)
    extra = rng.choice(n_entities, n_entities // 2, p=popularity / popularity.sum())
    mentions = rng.permutation(np.concatenate([np.arange(n_entities), extra]))
    counts = 3 + rng.multinomial(mentions.size - 3 * n_passages, np.full(n_passages, 1.0 / n_passages))
    passage = np.repeat(np.arange(n_passages), counts)
    start = np.repeat(np.cumsum(counts) - counts, counts)
    size = counts[passage]
    k = np.arange(mentions.size) - start  # each mention's place in its passage
    partner = start + (k + 1 + rng.integers(0, size - 1)) % size  # another mention of the same passage
    u = np.concatenate([mentions, mentions])
    v = np.concatenate([passage + n_entities, mentions[partner]])
    keep = u != v
    a = sp.coo_matrix((rng.uniform(0.5, 2.0, keep.sum()), (u[keep], v[keep])), shape=(n_entities + n_passages,) * 2)
    a = sp.csr_matrix(a + a.T)
    a.sum_duplicates()
    return a


def bench_solve_order(adj: sp.csr_matrix, seed_node: int) -> dict:
    """Sparse product and ``symmetric_ppr`` on ``adj`` as numbered vs relabelled rows-by-length (medians of
    ORDER_ROUNDS alternating rounds; the PPR results compared after relabelling back)."""
    order = ppr_cg.rows_by_length(adj.indptr)
    relabelled = adj[order][:, order]
    position = np.argsort(order)
    p = np.zeros(adj.shape[0])
    p[seed_node] = 1.0
    x = np.random.default_rng(0).random(adj.shape[0])
    cases = {"numbered": (adj, p, np.arange(adj.shape[0])), "rows_by_length": (relabelled, p[order], position)}
    degrees = {name: np.asarray(a.sum(axis=1)).ravel() for name, (a, _, _) in cases.items()}
    times: dict[str, list] = {f"{k}_{what}": [] for k in cases for what in ("product", "ppr")}
    results = {}
    for _ in range(ORDER_ROUNDS):
        for name, (a, pers, back) in cases.items():
            degree = degrees[name]
            times[f"{name}_product"].append(timed(lambda: a @ x, 20)[0])
            t, out = timed(lambda: symmetric_ppr(a, degree, pers, damping=0.5, tol=1e-5), 3)
            times[f"{name}_ppr"].append(t)
            results[name] = out[back]
    row = {f"t_{k}_s": float(np.median(v)) for k, v in times.items()}
    row["product_speedup"] = row["t_numbered_product_s"] / row["t_rows_by_length_product_s"]
    row["ppr_speedup"] = row["t_numbered_ppr_s"] / row["t_rows_by_length_ppr_s"]
    row["l1_between_orders"] = float(np.abs(results["numbered"] - results["rows_by_length"]).sum())
    return row


def bench_bound_dtype(adj: sp.csr_matrix, seed_node: int) -> dict:
    """``symmetric_ppr`` of a float32 graph with the stopping bound's dot products in float32 (widened) against
    float64 (``dot_rounding`` made to refuse float32), medians of ORDER_ROUNDS alternating rounds."""
    adj32, degree = adj.astype(np.float32), np.asarray(adj.sum(axis=1)).ravel()
    p = np.zeros(adj.shape[0])
    p[seed_node] = 1.0
    widened = ppr_cg.dot_rounding
    cases = {"float32": widened, "float64": lambda n, dtype: widened(n, dtype) if dtype == np.float64 else np.inf}
    times, results = {name: [] for name in cases}, {}
    try:
        for _ in range(ORDER_ROUNDS):
            for name, rounding in cases.items():
                ppr_cg.dot_rounding = rounding
                t, results[name] = timed(lambda: symmetric_ppr(adj32, degree, p, damping=0.5, tol=1e-5), 5)
                times[name].append(t)
    finally:
        ppr_cg.dot_rounding = widened
    return {"t_bound_float64_s": float(np.median(times["float64"])),
            "t_bound_float32_s": float(np.median(times["float32"])),
            "l1_between_bounds": float(np.abs(results["float32"] - results["float64"]).sum())}


def order_summary(name: str, r: dict) -> str:
    return (f"solve order, {name}: product {r['t_numbered_product_s']*1e3:.3f} -> "
            f"{r['t_rows_by_length_product_s']*1e3:.3f} ms ({r['product_speedup']:.2f}x), symmetric_ppr at damping "
            f"0.5 {r['t_numbered_ppr_s']*1e3:.2f} -> {r['t_rows_by_length_ppr_s']*1e3:.2f} ms "
            f"({r['ppr_speedup']:.2f}x), L1 between the two {r['l1_between_orders']:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k and 100k edges only, fewer repeats")
    args = ap.parse_args()
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    kg = musique_kg()
    _, labels = connected_components(kg[1], directed=False)
    giant = int(np.flatnonzero(labels == np.bincount(labels).argmax())[0])
    rows = []
    for name, seed in (("random seed", None), ("seed in the largest component", giant)):
        row, _ = bench_size(kg[1].nnz // 2, 3 if args.quick else 5, None, graph=kg, seed_node=seed)
        rows.append({"graph": f"musique_kg ({name})", **row})
        print(f"MuSiQue KG, {name}:", summary(row))
    orders = [{"graph": "musique_kg", **bench_solve_order(kg[1], giant)}]
    print(order_summary("MuSiQue KG", orders[-1]))
    passages = passage_graph_like(9_000, 57_000, seed=0)
    orders.append({"graph": "passage_graph_like_9000", **bench_solve_order(passages, int(np.diff(passages.indptr).argmax()))})
    print(order_summary(f"passage-graph-like ({passages.shape[0]} nodes, {passages.nnz} entries)", orders[-1]))
    bound = bench_bound_dtype(passages, int(np.diff(passages.indptr).argmax()))
    print(f"stopping bound, passage-graph-like, float32 solve: bound in float64 {bound['t_bound_float64_s']*1e3:.2f} "
          f"ms -> float32 widened {bound['t_bound_float32_s']*1e3:.2f} ms, L1 between the two "
          f"{bound['l1_between_bounds']:.1e}")
    per_edge = None
    for m in sizes:
        estimate = None if per_edge is None else 1.5 * per_edge * m  # linear extrapolation with margin
        graph = make_graph(m, seed=m)
        row, per_edge = bench_size(m, 3 if args.quick else 5, estimate, graph=graph)
        rows.append({"graph": f"barabasi_albert_{m}", **row})
        print(summary(row))
        orders.append({"graph": f"barabasi_albert_{m}", **bench_solve_order(graph[1], 0)})
        print(order_summary(f"Barabasi-Albert {m} edges", orders[-1]))
    write_json("bench_ppr" + ("_quick" if args.quick else ""),
               {"tol": TOL, "damping": DAMPING, "rows": rows, "solve_order": orders, "bound_dtype": bound})


def summary(r: dict) -> str:
    nxs = (f"networkx {r['t_networkx_s']*1e3:8.1f} ms ({r['speedup_vs_networkx']:.1f}x, "
           f"{r['speedup_vs_networkx_incl_build']:.1f}x incl. build; L1 {r['l1_networkx_vs_ref']:.1e})"
           if "t_networkx_s" in r else f"networkx skipped: {r['networkx_skipped']}")
    igs = (f"prpack {r['t_igraph_prpack_s']*1e3:7.1f} ms ({r['speedup_vs_igraph']:.2f}x; L1 {r['l1_prpack_vs_ref']:.1e})"
           if "t_igraph_prpack_s" in r else "igraph skipped")
    return (f"{r['n_edges']:>8} edges {r['n_nodes']:>7} nodes | ours {r['t_ours_s']*1e3:7.1f} ms "
            f"(+{r['t_transition_s']*1e3:.1f} ms transition, L1 {r['l1_ours_vs_ref']:.1e}; power iteration "
            f"{r['t_power_s']*1e3:.1f} ms, L1 {r['l1_power_vs_ref']:.1e}) | {nxs} | {igs} | "
            f"batch64 {r['t_batch64_s']*1e3:.0f} ms vs 64 singles {r['t_64_singles_s']*1e3:.0f} ms "
            f"({r['batch_speedup']:.1f}x; vs 64 power-iteration singles {r['batch_speedup_vs_power_singles']:.1f}x; "
            f"block width {r['batch_block_width']})")


if __name__ == "__main__":
    main()
