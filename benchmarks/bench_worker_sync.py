"""What one worker pays when another worker of `serve --workers 2` indexed a text: journals against whole files.

    python benchmarks/bench_worker_sync.py --index /tmp/bench/pooled/pooled-9002 --workspace pooled

Copies the index's graph and entity vector store to a scratch dir and runs LightRAG's multi-process mode there (its
shared data for two workers), as the server does: a forked writer upserts ``--nodes`` new entities with their
relations and vectors per round and flushes them (``index_done_callback``, which flags the other process); the
parent, the other worker, then reads through the public API (``get_node`` and ``get_vectors_by_ids``, what its next
query or refresh does). Both ways, in the same run:

* ``whole``: the files not journaled, LightRAG's own protocol (the writer rewrites each file; the reader, flagged,
  reads it whole again, on its event loop);
* ``journal``: PrismRAG's (``register_files``: the writer appends; the reader applies the appends, ``journal.catch_up``).

Prints per way the median writer flush and reader catch-up (s) over ``--rounds``, and their ratio. Not collected by
pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _common import write_json  # noqa: E402

FILES = ("graph_chunk_entity_relation.graphml", "vdb_entities.json")


def embedding_func(dim: int):
    from lightrag.utils import EmbeddingFunc

    async def embed(texts, **_):
        rows = [np.frombuffer(hashlib.sha512(t.encode()).digest() * (dim // 16 + 1), dtype=np.uint8)[:dim]
                for t in texts]
        return np.asarray(rows, dtype=np.float32) - 127.5

    return EmbeddingFunc(embedding_dim=dim, max_token_size=8192, func=embed, model_name=f"bench-hash-{dim}")


async def open_storages(working_dir: str, workspace: str, journaled: bool, dim: int):
    from lightrag_prism.storages import PrismNanoVectorDBStorage, PrismNetworkXStorage, register_files

    config = {"working_dir": working_dir, "embedding_batch_num": 32,
              "vector_db_storage_cls_kwargs": {"cosine_better_than_threshold": 0.2}}
    graph = PrismNetworkXStorage(namespace="chunk_entity_relation", workspace=workspace, global_config=config,
                                 embedding_func=None)
    entities = PrismNanoVectorDBStorage(namespace="entities", workspace=workspace, global_config=config,
                                        embedding_func=embedding_func(dim),
                                        meta_fields={"entity_name", "content", "source_id", "file_path"})
    if journaled:
        register_files(SimpleNamespace(graph=graph, entities=entities))
    await graph.initialize()
    await entities.initialize()
    return graph, entities


def writer(args, working_dir: str, journaled: bool, dim: int, go, done) -> None:
    async def run():
        graph, entities = await open_storages(working_dir, args.workspace, journaled, dim)
        for step in range(args.rounds):
            go.recv()
            names = [f"sync bench {journaled} {step} {i}" for i in range(args.nodes)]
            for i, name in enumerate(names):
                await graph.upsert_node(name, {"entity_id": name, "entity_type": "other",
                                               "description": f"{name} was serviced on day {step}.",
                                               "source_id": "bench", "file_path": "bench.txt"})
                if i:
                    await graph.upsert_edge(names[i - 1], name, {"weight": "1.0", "keywords": "bench",
                                                                 "description": "bench", "source_id": "bench"})
            await entities.upsert({f"ent-{hashlib.md5(n.encode()).hexdigest()}": {
                "entity_name": n, "content": n, "source_id": "bench", "file_path": "bench.txt"} for n in names})
            start = time.perf_counter()
            await graph.index_done_callback()
            await entities.index_done_callback()
            done.send((names, time.perf_counter() - start))

    asyncio.run(run())


async def one_way(args, journaled: bool, dim: int) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="bench_worker_sync_"))
    try:
        (scratch / args.workspace).mkdir()
        for name in FILES:
            shutil.copy(Path(args.index) / args.workspace / name, scratch / args.workspace / name)
        graph, entities = await open_storages(str(scratch), args.workspace, journaled, dim)
        go_parent, go_child = multiprocessing.Pipe()
        done_parent, done_child = multiprocessing.Pipe()
        child = multiprocessing.get_context("fork").Process(
            target=writer, args=(args, str(scratch), journaled, dim, go_child, done_child))
        child.start()
        flushes, catch_ups = [], []
        for _ in range(args.rounds):
            go_parent.send("round")
            names, flush = await asyncio.to_thread(done_parent.recv)
            start = time.perf_counter()
            found = await graph.get_node(names[-1])
            vectors = await entities.get_vectors_by_ids([f"ent-{hashlib.md5(names[-1].encode()).hexdigest()}"])
            catch_ups.append(time.perf_counter() - start)
            flushes.append(flush)
            assert found is not None and len(vectors) == 1, "the reader does not see the writer's round"
        child.join(120)
        return {"writer_flush_s": round(statistics.median(flushes), 4),
                "reader_catch_up_s": round(statistics.median(catch_ups), 4)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", required=True, help="a bench index's working dir")
    parser.add_argument("--workspace", default="pooled")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=20, help="new entities per round (with relations, vectors)")
    args = parser.parse_args()
    from lightrag.kg.shared_storage import finalize_share_data, initialize_share_data
    from nano_vectordb.dbs import load_storage

    dim = load_storage(str(Path(args.index) / args.workspace / "vdb_entities.json"))["embedding_dim"]
    initialize_share_data(workers=2)
    try:
        rows = {way: asyncio.run(one_way(args, way == "journal", dim)) for way in ("whole", "journal")}
    finally:
        finalize_share_data()
    for way, row in rows.items():
        print(f"{way:>8}: writer flush {row['writer_flush_s']:.4f} s, reader catch-up {row['reader_catch_up_s']:.4f} s")
    for key in ("writer_flush_s", "reader_catch_up_s"):
        print(f"whole / journal, {key}: {rows['whole'][key] / max(rows['journal'][key], 1e-9):.0f}x")
    write_json("worker_sync", {"index": args.index, "rounds": args.rounds, "nodes": args.nodes, "ways": rows})


if __name__ == "__main__":
    main()
