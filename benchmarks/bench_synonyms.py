"""Synonym-edge build time of the hipporag graph view on synthetic entities.

    python benchmarks/bench_synonyms.py [--entities 100000] [--new 1000] [--dim 384]

Synthetic unit vectors: random directions plus ~10% near-duplicates (noisy copies, cosine ~0.9), so there are real
synonym pairs to find. Times a full build (every entity queries the blocked top-k kNN, which is what HippoRAG 2
redoes on every ``index()``) and the incremental update after ``--new`` entities arrive (only they query), and prints
the ratio full/incremental measured in the same run. Writes benchmarks/results/bench_synonyms.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from lightrag_prism.retrievers.views.passage_graph import SynonymState


def synthetic(n: int, dim: int, rng: np.random.Generator) -> tuple[list[str], np.ndarray]:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    dup = rng.choice(n, size=n // 10, replace=False)
    vectors[dup] = vectors[rng.integers(0, n, size=dup.size)] + 0.35 * rng.standard_normal((dup.size, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [f"entity {i:06d}" for i in range(n)], vectors


def main(args) -> None:
    rng = np.random.default_rng(args.seed)
    names, vectors = synthetic(args.entities + args.new, args.dim, rng)
    old_names, old_vectors = names[:args.entities], vectors[:args.entities]
    state = SynonymState()
    start = time.perf_counter()
    state.update(old_names, old_vectors)
    full = time.perf_counter() - start
    pairs_full = len(state.pairs)
    start = time.perf_counter()
    state.update(names, vectors)
    incremental = time.perf_counter() - start
    result = {"entities": args.entities, "new": args.new, "dim": args.dim, "full_seconds": full,
              "incremental_seconds": incremental, "ratio_full_over_incremental": full / incremental,
              "pairs_after_full": pairs_full, "pairs_after_incremental": len(state.pairs)}
    print(f"full build over {args.entities} entities: {full:.2f} s ({pairs_full} synonym pairs)")
    print(f"incremental update with {args.new} new entities: {incremental:.3f} s ({len(state.pairs)} pairs); "
          f"full/incremental = {full / incremental:.1f}x")
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "bench_synonyms.json"), "w") as handle:
        json.dump(result, handle, indent=2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=1_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args())
