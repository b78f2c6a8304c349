"""How the graph snapshot, Personalized PageRank and FastRP grow with the graph: memory per edge and time.

    python benchmarks/bench_scale.py                          # 100k, 1M and 3M edges
    python benchmarks/bench_scale.py --edges 100000,1000000

Synthetic graphs shaped like LightRAG knowledge graphs (about 1 node per edge, heavy-tailed degrees from
preferential attachment, each node and edge a dict with LightRAG's fields and a source_id). Per size, in a fresh
process each:

* ``storage rows``: the dicts ``get_all_nodes``/``get_all_edges`` return (what a snapshot build reads);
* ``snapshot``: ``build_snapshot`` (CSR adjacency, edge and chunk indexes), time and memory it keeps;
* ``ppr``: transition build, then the median of 5 single-seed ``personalized_pagerank`` queries;
* ``fastrp``: ``fastrp_embeddings`` (256-d float32), time and memory.

Memory is ``tracemalloc``'s traced size of what each stage keeps (numpy and Python objects), in bytes per edge,
from a second run of the stage (times come from the first, untraced, run).
Writes ``benchmarks/results/bench_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402


def synthetic_rows(n_edges: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    rng = np.random.default_rng(seed)
    n_nodes = n_edges
    # preferential attachment, vectorised: each edge joins a new-ish node to an earlier node picked with bias
    src = rng.integers(1, n_nodes, size=n_edges)
    tgt = (src * rng.random(n_edges) ** 2).astype(np.int64)
    keep = src != tgt
    src, tgt = src[keep], tgt[keep]
    nodes = [{"id": f"entity {i}", "entity_type": "concept", "description": f"entity {i} of the graph",
              "source_id": f"chunk-{i // 8}", "file_path": "synthetic"} for i in range(n_nodes)]
    edges = [{"source": f"entity {s}", "target": f"entity {t}", "weight": 1.0, "keywords": "related to",
              "description": "", "source_id": f"chunk-{s // 8}"} for s, t in zip(src.tolist(), tgt.tolist())]
    return nodes, edges


def traced(fn):
    """(result, seconds of an untraced run, bytes a traced run keeps); tracing slows Python allocation, so the time
    comes from a separate run."""
    started = time.perf_counter()
    fn()
    seconds = time.perf_counter() - started
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    out = fn()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return out, seconds, kept


def measure(n_edges: int) -> dict:
    from lightrag_prism.graph.fastrp import fastrp_embeddings
    from lightrag_prism.graph.ppr import personalized_pagerank, transition_matrix
    from lightrag_prism.snapshot import build_snapshot

    (nodes, edges), _, rows_bytes = traced(lambda: synthetic_rows(n_edges))
    snap, snap_s, snap_bytes = traced(lambda: build_snapshot(nodes, edges))
    e = snap.num_edges
    transition, trans_s, trans_bytes = traced(lambda: transition_matrix(snap.adj, symmetric=True))
    rng = np.random.default_rng(1)
    times = []
    for seed_node in rng.integers(0, snap.num_nodes, size=5):
        p = np.zeros(snap.num_nodes)
        p[seed_node] = 1.0
        started = time.perf_counter()
        personalized_pagerank(transition, p, damping=0.5)
        times.append(time.perf_counter() - started)
    _, fastrp_s, fastrp_bytes = traced(lambda: fastrp_embeddings(snap.adj, dim=256))
    return {"edges": e, "nodes": snap.num_nodes,
            "storage_rows_bytes_per_edge": rows_bytes / e, "snapshot_seconds": snap_s,
            "snapshot_bytes_per_edge": snap_bytes / e, "ppr_transition_seconds": trans_s,
            "ppr_transition_bytes_per_edge": trans_bytes / e, "ppr_query_ms": 1000 * statistics.median(times),
            "fastrp_seconds": fastrp_s, "fastrp_bytes_per_edge": fastrp_bytes / e}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", default="100000,1000000,3000000")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    rows = []
    for n in [int(x) for x in args.edges.split(",")]:
        run = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        rows.append(json.loads(run.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"{r['edges']:>9,} edges {r['nodes']:>9,} nodes | rows {r['storage_rows_bytes_per_edge']:6.0f} B/edge"
              f" | snapshot {r['snapshot_seconds']:6.2f} s {r['snapshot_bytes_per_edge']:5.0f} B/edge"
              f" | PPR transition {r['ppr_transition_seconds']:5.2f} s {r['ppr_transition_bytes_per_edge']:4.0f} B/edge,"
              f" query {r['ppr_query_ms']:7.1f} ms | FastRP {r['fastrp_seconds']:6.2f} s"
              f" {r['fastrp_bytes_per_edge']:5.0f} B/edge", flush=True)
    write_json("bench_scale", {"rows": rows})


if __name__ == "__main__":
    main()
