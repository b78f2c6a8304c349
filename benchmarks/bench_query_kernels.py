"""Per-query kernels at the pooled bench's size, each against the way it was done before, in one run.

* top-k selection (``graph.select.top_k``) against ``np.argpartition`` + sort, on 62,000 fact scores and 57,000
  entity scores, k = 5 / 10 / 100 (both must give the same indices on distinct scores);
* the fact scan (one query vector against every fact vector, 62,000 x 384 float32) with the index's matrix
  column-major (``EmbeddingIndex(column_major=True)``) against row-major, as ``IndexRows.scores`` runs it: on rows
  of a buffer with room to append;
* the same scan with the matrix kept in 16 bits (float16, int16 fixed point, bfloat16 as the top half of float32)
  and widened to float32 a block of rows at a time before the block's product: half the bytes to stream, but numpy
  has no 16-bit matrix product, and the widening costs more than the bytes saved (stop 61, docs/benchmarks.md);
* FastRP's scores (57,000 x 256) beside a PPR-sized loop of sparse products, as the ``prism`` mode runs them
  (``np.vecdot`` on its own thread over the row-major embedding), against one after the other with OpenBLAS's
  product over a column-major copy (stop 61's code); each with OpenBLAS's worker threads asleep and right after a
  threaded BLAS call, which leaves them spinning on the second core for a while (stop 62).

Usage: python benchmarks/bench_query_kernels.py [--facts 62258] [--entities 56961] [--reps 200]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lightrag_prism.graph import top_k  # noqa: E402


def timed(fn, reps: int, before=lambda: None) -> float:
    """Median milliseconds of ``reps`` calls after one warm-up, ``before()`` run untimed ahead of each."""
    fn()
    times = []
    for _ in range(reps):
        before()
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


NARROW_BLOCK = 1024  # rows widened at a time (1.5 MB of float32): the fastest of 256, 1,024 and 4,096 at stop 61


def _widen(block: np.ndarray, out: np.ndarray) -> None:
    np.copyto(out, block, casting="unsafe")


def _widen_bfloat16(block: np.ndarray, out: np.ndarray) -> None:
    bits = out.view(np.uint32)
    np.copyto(bits, block, casting="unsafe")
    bits <<= 16  # a bfloat16 is the top half of the float32 it came from


def narrow_scans(vectors: np.ndarray) -> dict[str, tuple[np.ndarray, object, float]]:
    """16-bit copies of ``vectors`` (rows in [-1, 1]): (copy, function widening a block of it to float32 in place,
    scale folded into the query)."""
    as_bits = np.ascontiguousarray(vectors).view(np.uint32)
    return {
        "float16": (vectors.astype(np.float16), _widen, 1.0),
        "int16 fixed point": (np.round(vectors * 32767).astype(np.int16), _widen, 1 / 32767),
        "bfloat16": ((as_bits >> 16).astype(np.uint16), _widen_bfloat16, 1.0),
    }


def blocked_scan(narrow: np.ndarray, widen, query: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    for start in range(0, len(narrow), NARROW_BLOCK):
        block = narrow[start:start + NARROW_BLOCK]
        wide = scratch[:len(block)]
        widen(block, wide)
        np.dot(wide, query, out=out[start:start + len(block)])
    return out


def bench_narrow_scan(n: int, reps: int, rng, dim: int = 384) -> list[str]:
    vectors, query = unit_rows(rng, n, dim), unit_rows(rng, 1, dim)[0]
    column_major = np.asfortranarray(vectors)
    exact = column_major @ query
    baseline = timed(lambda: column_major @ query, reps)
    lines = [f"fact scan {n:,} x {dim} float32 column-major (the index's): {baseline:.2f} ms"]
    out, scratch = np.empty(n, np.float32), np.empty((NARROW_BLOCK, dim), np.float32)
    for name, (narrow, widen, scale) in narrow_scans(vectors).items():
        scaled = (query * scale).astype(np.float32)
        scores = blocked_scan(narrow, widen, scaled, out, scratch)
        error = float(np.abs(scores - exact).max())
        ms = timed(lambda: blocked_scan(narrow, widen, scaled, out, scratch), reps)
        lines.append(f"  stored as {name}, widened per {NARROW_BLOCK} rows: {ms:.2f} ms "
                     f"({ms / baseline:.2f}x the float32 scan; largest score error {error:.1e})")
    return lines


PPR_PRODUCTS = 10  # a pooled prism query's CG solve: about 10 sparse products


def bench_fastrp_beside(nodes: int, reps: int, rng, dim: int = 256, graph_nodes: int = 66_000,
                        entries: int = 418_000) -> list[str]:
    """FastRP's pass beside (or after) a loop of sparse products the size of the pooled passage graph's."""
    rows, cols = rng.integers(0, graph_nodes, (2, entries // 2))
    half = sp.csr_matrix((rng.random(entries // 2, dtype=np.float32), (rows, cols)), shape=(graph_nodes,) * 2)
    graph = (half + half.T).tocsr()
    graph.indices, graph.indptr = graph.indices.astype(np.int32), graph.indptr.astype(np.int32)
    x = np.ones(graph_nodes, np.float32)
    embedding = unit_rows(rng, nodes, dim)
    column_major, centroid = np.asfortranarray(embedding), unit_rows(rng, 1, dim)[0]
    assert np.allclose(np.vecdot(embedding, centroid), column_major @ centroid, atol=1e-5)
    small, small_vector = unit_rows(rng, 20_000, 384), unit_rows(rng, 1, 384)[0]
    stream = np.ones(25_000_000, np.float32)  # 100 MB: the caches as the query's fact scan leaves them
    beside_thread = ThreadPoolExecutor(max_workers=1)
    beside_thread.submit(lambda: None).result()

    def products():
        for _ in range(PPR_PRODUCTS):
            graph @ x

    def after():
        products()
        column_major @ centroid

    def beside():
        scores = beside_thread.submit(np.vecdot, embedding, centroid)
        products()
        scores.result()

    def asleep():
        # OpenBLAS's workers spin about 100 ms after a threaded call, then sleep (docs/benchmarks.md, stop 62); busy
        # here, not sleeping, so that the core keeps its clock
        until = time.perf_counter() + 0.15
        while time.perf_counter() < until:
            pass
        stream.sum()

    def spinning():
        stream.sum()
        small @ small_vector  # as the query's dense passage scores do just before

    lines = [f"FastRP {nodes:,} x {dim} beside {PPR_PRODUCTS} sparse products ({graph.nnz:,} entries):"]
    for name, before in (("OpenBLAS's workers asleep", asleep), ("right after a threaded BLAS call", spinning)):
        alone, one_after, along = (timed(fn, reps, before) for fn in (products, after, beside))
        lines.append(f"  {name}: products alone {alone:.2f} ms, FastRP after them {one_after:.2f} ms, "
                     f"beside them {along:.2f} ms ({along / one_after:.2f}x)")
    beside_thread.shutdown()
    return lines


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
    for line in bench_narrow_scan(args.facts, max(args.reps // 4, 10), rng):
        print(line)
    for line in bench_fastrp_beside(args.entities, max(args.reps // 10, 10), rng):
        print(line)


if __name__ == "__main__":
    main()
