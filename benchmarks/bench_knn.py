"""Blocked top-k cosine on random 384-d unit vectors (float32), k = 10, self excluded.

Reports time and tracemalloc peak (numpy allocations are traced). Peak memory should grow about
linearly with N (O(block_size * N)), never quadratically. Baseline in the same run: dense
brute force (full Q x N similarity matrix + argsort) where it fits (10k only); float32 GEMM rounding differs
between blocked and full products, so near-tied neighbours can swap: agreement is reported in %.
The 100k case queries a 10k subset by default (the full 100k x 100k product is ~7.7 TFLOP);
``--full`` queries all 100k. Usage: python benchmarks/bench_knn.py [--quick] [--full]
"""
from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402

from lightrag_prism.graph.knn import topk_cosine  # noqa: E402

DIM, K = 384, 10


def unit_vectors(n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def measure(fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak, out


def dense_topk(q, c, self_ids):
    sims = q @ c.T
    sims[np.arange(len(q)), self_ids] = -np.inf
    idx = np.argsort(-sims, axis=1)[:, :K]
    return idx


def bench(n: int, n_queries: int, block: int, with_dense: bool) -> dict:
    corpus = unit_vectors(n, seed=n)
    qids = np.arange(n_queries)
    t, peak, (idx, _) = measure(lambda: topk_cosine(corpus[qids], corpus, K, block_size=block, exclude_self_ids=qids))
    row = dict(n=n, n_queries=n_queries, dim=DIM, k=K, block_size=block, t_s=t, peak_mb=peak / 2**20,
               peak_bytes_per_corpus_row=peak / n, est_all_vs_all_s=t * n / n_queries)
    if with_dense:
        td, peak_d, ref = measure(lambda: dense_topk(corpus[qids], corpus, qids))
        row.update(t_dense_s=td, peak_dense_mb=peak_d / 2**20, same_as_dense=float(np.mean(np.sort(ref, axis=1) == np.sort(idx, axis=1))))
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="2k queries for the 100k case")
    ap.add_argument("--full", action="store_true", help="query all 100k vectors against 100k")
    args = ap.parse_args()
    big_q = 100_000 if args.full else (2_000 if args.quick else 10_000)
    rows = [bench(10_000, 10_000, 1024, True), bench(100_000, big_q, 1024, False)]
    for r in rows:
        dense = (f" | dense brute force {r['t_dense_s']:.2f} s, peak {r['peak_dense_mb']:.0f} MB, same neighbours: "
                 f"{100 * r['same_as_dense']:.3f}%" if "t_dense_s" in r else " | dense skipped (N x N float32 would be "
                 f"{r['n'] ** 2 * 4 / 2**30:.0f} GiB)")
        print(f"N={r['n']:>6} queries={r['n_queries']:>6}: {r['t_s']:.2f} s (all-vs-all est. {r['est_all_vs_all_s']:.1f} s), "
              f"peak {r['peak_mb']:.0f} MB = {r['peak_bytes_per_corpus_row']:.0f} B per corpus row{dense}")
    ratio_mem = rows[1]["peak_mb"] / rows[0]["peak_mb"]
    print(f"peak memory ratio 100k/10k = {ratio_mem:.1f} for 10x N (linear ~10, quadratic would be 100)")
    write_json("bench_knn" + ("_quick" if args.quick else ""), {"rows": rows, "peak_ratio_100k_over_10k": ratio_mem})


if __name__ == "__main__":
    main()
