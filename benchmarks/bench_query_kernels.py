"""Per-query kernels at the pooled bench's size, each against the way it was done before, in one run.

* top-k selection (``graph.select.top_k``) against ``np.argpartition`` + sort, on 62,000 fact scores and 57,000
  entity scores, k = 5 / 10 / 100 (both must give the same indices on distinct scores);
* the fact scan (one query vector against every fact vector, 62,000 x 384 float32) with the index's matrix
  column-major (``EmbeddingIndex(column_major=True)``) against row-major, as ``IndexRows.scores`` runs it: on rows
  of a buffer with room to append.

Usage: python benchmarks/bench_query_kernels.py [--facts 62258] [--entities 56961] [--reps 200]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lightrag_prism.graph import top_k  # noqa: E402


def timed(fn, reps: int) -> float:
    """Median milliseconds of ``reps`` calls after one warm-up."""
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def argpartition_top_k(values: np.ndarray, k: int) -> np.ndarray:
    part = np.argpartition(-values, k - 1)[:k]
    return part[np.lexsort((part, -values[part]))]


def bench_top_k(n: int, reps: int, rng) -> list[str]:
    values = rng.standard_normal(n).astype(np.float32)
    lines = []
    for k in (5, 10, 100):
        assert top_k(values, k).tolist() == argpartition_top_k(values, k).tolist()
        before, after = timed(lambda: argpartition_top_k(values, k), reps), timed(lambda: top_k(values, k), reps)
        lines.append(f"top-k  n={n:,} k={k:>3}: argpartition {before:.3f} ms, top_k {after:.3f} ms "
                     f"({before / after:.1f}x)")
    return lines


def unit_rows(rng, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def bench_fact_scan(n: int, reps: int, rng, dim: int = 384) -> list[str]:
    vectors, query = unit_rows(rng, n, dim), unit_rows(rng, 1, dim)[0]
    room = n + n // 8  # the index appends into a buffer with room, so it scans rows of a larger buffer
    layouts = {}
    for order in ("C", "F"):
        buffer = np.zeros((room, dim), np.float32, order=order)
        buffer[:n] = vectors
        layouts[order] = buffer[:n]
    row_major = timed(lambda: layouts["C"] @ query, reps)
    column_major = timed(lambda: layouts["F"] @ query, reps)
    diff = float(np.abs(layouts["C"] @ query - layouts["F"] @ query).max())
    return [f"fact scan {n:,} x {dim}: row-major {row_major:.2f} ms, column-major {column_major:.2f} ms "
            f"({row_major / column_major:.2f}x; largest difference {diff:.1e})"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=62_258)
    parser.add_argument("--entities", type=int, default=56_961)
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for line in bench_top_k(args.facts, args.reps, rng) + bench_top_k(args.entities, args.reps, rng):
        print(line)
    for line in bench_fact_scan(args.facts, max(args.reps // 4, 10), rng):
        print(line)


if __name__ == "__main__":
    main()
