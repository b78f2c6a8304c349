"""Merge-candidate search: time and peak memory for 10k and 100k synthetic entities.

Ours: :func:`lightrag_prism.insert.merging.agentic.candidate_pairs` (blocked exact top-k cosine, threshold, dedup).
Baseline measured in the same run: PrismRAG's dense approach (full N×N cosine matrix, then every pair above the
threshold), only where it fits in memory (10k: a 400 MB matrix; 100k would need 40 GB).

Two workloads per size: ``incremental`` (1,000 new entities against the whole graph, what runs after an insert)
and ``full`` (every entity is a query: a whole-graph deduplication pass). ``candidate_pairs`` picks exact top-k
up to ``EXACT_PAIR_LIMIT`` comparisons and the IVF index above (the 100k full pass); at 10k the IVF result is
also computed and its recall against the exact pairs reported.

    python benchmarks/bench_merge_candidates.py [--sizes 10000,100000] [--dim 384]
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from pathlib import Path

import numpy as np

from lightrag_prism.insert.merging.agentic import EXACT_PAIR_LIMIT, candidate_pairs

THRESHOLD, TOP_K, NEW = 0.8, 5, 1000


def synthetic(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Unit vectors; 5 % of them are near-duplicates (cosine ≈ 0.9) of another entity."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim), dtype=np.float32)
    dup = rng.choice(n, size=n // 20, replace=False)
    x[dup] = x[(dup + 1) % n] + 0.35 * rng.standard_normal((len(dup), dim), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def dense_pairs(x: np.ndarray, threshold: float) -> int:
    sims = x @ x.T
    i, j = np.nonzero(np.triu(sims, 1) >= threshold)
    return len(i)


def measure(fn) -> tuple[float, float, object]:
    tracemalloc.start()
    start = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak / 2**20, out


def run(sizes: list[int], dim: int) -> list[dict]:
    rows = []
    for n in sizes:
        x = synthetic(n, dim)
        input_mb = x.nbytes / 2**20
        for workload, queries in (("incremental", np.arange(n - NEW, n)), ("full", np.arange(n))):
            t, mb, pairs = measure(lambda: candidate_pairs(x, queries, TOP_K, THRESHOLD))
            row = {"n": n, "dim": dim, "workload": workload, "queries": len(queries), "seconds": round(t, 3),
                   "peak_extra_mb": round(mb, 1), "input_mb": round(input_mb, 1), "pairs": len(pairs),
                   "method": "ivf" if len(queries) * n > EXACT_PAIR_LIMIT else "exact"}
            if workload == "full" and n <= 20000:
                ivf = {p[:2] for p in candidate_pairs(x, queries, TOP_K, THRESHOLD, method="ivf")}
                row["ivf_recall_vs_exact"] = round(len(ivf & {p[:2] for p in pairs}) / max(len(pairs), 1), 4)
                bt, bmb, bpairs = measure(lambda: dense_pairs(x, THRESHOLD))
                row.update(baseline_seconds=round(bt, 3), baseline_peak_mb=round(bmb, 1), baseline_pairs=bpairs,
                           time_ratio=round(bt / t, 2), memory_ratio=round(bmb / max(mb, 1e-9), 2))
            rows.append(row)
            print(json.dumps(row))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    rows = run([int(s) for s in args.sizes.split(",")], args.dim)
    full = {r["n"]: r for r in rows if r["workload"] == "full"}
    if len(full) >= 2:
        small, big = sorted(full)[0], sorted(full)[-1]
        print(f"memory growth {small}->{big}: x{full[big]['peak_extra_mb'] / full[small]['peak_extra_mb']:.1f} "
              f"for x{big / small:.0f} entities (linear = x{big / small:.0f})")
    out = Path(__file__).parent / "results" / "bench_merge_candidates.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
