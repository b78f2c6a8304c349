"""Two processes over one working dir in LightRAG's multi-process mode, as ``lightrag-prism serve --workers 2`` runs
them: ``python -m tests.storages.shared_journal_worker DIR`` prints one JSON line of what it measured.

The parent starts LightRAG's shared data for two workers, opens the graph and the entity vector store (PrismRAG's
classes, journaled by ``register_files``) and forks a writer, which opens its own and writes rounds of nodes, edges,
removals and vectors, each flushed through LightRAG's ``index_done_callback`` (which flags the parent). After each
round the parent reads through the public API: what it sees must equal what the writer holds, caught up from the
journal (no whole read). Its snapshot cache refreshes by a patch. Last, the writer compacts (rewrites the files
whole) before a round, and the parent must then read them whole. A JSON store (one dict in LightRAG's manager) is
appended to by each process with what it wrote, and its file always reads back as the shared dict.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import sys
from types import SimpleNamespace

ROUNDS = 6
WORKSPACE = "shared"


def open_storages(working_dir: str):
    from lightrag_prism.storages import PrismJsonKVStorage, PrismNanoVectorDBStorage, PrismNetworkXStorage
    from tests.helpers import hash_embedding_func

    config = {"working_dir": working_dir, "embedding_batch_num": 16,
              "vector_db_storage_cls_kwargs": {"cosine_better_than_threshold": 0.2}}
    graph = PrismNetworkXStorage(namespace="chunk_entity_relation", workspace=WORKSPACE, global_config=config,
                                 embedding_func=None)
    entities = PrismNanoVectorDBStorage(namespace="entities", workspace=WORKSPACE, global_config=config,
                                        embedding_func=hash_embedding_func(16), meta_fields={"entity_name", "content"})
    chunks = PrismJsonKVStorage(namespace="text_chunks", workspace=WORKSPACE, global_config=config,
                                embedding_func=None)
    return graph, entities, chunks


async def initialized(working_dir: str):
    from lightrag_prism.storages import register_files

    graph, entities, chunks = open_storages(working_dir)
    states = register_files(SimpleNamespace(graph=graph, entities=entities, chunks=chunks))
    for storage in (graph, entities, chunks):
        await storage.initialize()
    return graph, entities, chunks, states


def file_content(path: str) -> dict:
    """A JSON store's file and its journal, as the next process reads them (without noting them here)."""
    from lightrag.utils import load_json

    from lightrag_prism import journal

    data = load_json(path) or {}
    for record in journal.read_journal(path):
        journal.KVKind.apply(data, record)
    return data


async def content(graph, entities, names: list[str]) -> dict:
    """What a reader sees through the public API: nodes and edges with their data, the vectors of ``names``."""
    nodes = {n["id"]: n.get("description") for n in await graph.get_all_nodes()}
    edges = sorted(sorted([e["source"], e["target"]]) + [e.get("keywords")] for e in await graph.get_all_edges())
    vectors = await entities.get_vectors_by_ids(names)
    return {"nodes": nodes, "edges": edges, "vectors": {k: [round(float(x), 5) for x in v]
                                                        for k, v in sorted(vectors.items())}}


def writer(working_dir: str, go, done) -> None:
    """The forked writer: a round per message from the parent; answers with what it holds after the flush."""
    async def run():
        from lightrag_prism import journal

        graph, entities, chunks, states = await initialized(working_dir)
        rng, names = random.Random(7), [f"entity {i}" for i in range(12)]
        for step in range(ROUNDS + 1):
            if go.recv() == "compact":  # the base files replaced, then one more round
                for state in states:
                    journal.compact(state)
            live = await graph._get_graph()
            for _ in range(6):
                a, b = rng.sample(names, 2)
                if rng.random() < 0.15 and a in live:
                    await graph.delete_node(a)
                    await entities.delete_entity(a)
                else:
                    await graph.upsert_node(a, {"entity_id": a, "description": f"{a} at {step}"})
                    await graph.upsert_node(b, {"entity_id": b, "description": f"{b} at {step}"})
                    await graph.upsert_edge(a, b, {"keywords": f"{a}-{b} {step}", "weight": "1.0"})
                    await entities.upsert({a: {"entity_name": a, "content": f"{a} {step} {rng.random()}"}})
            await chunks.upsert({f"chunk {step}-{i}": {"content": f"text {step} {i}"} for i in range(3)})
            if step % 2:
                await chunks.delete([f"chunk {step - 1}-0"])
            await graph.index_done_callback()
            await entities.index_done_callback()
            await chunks.index_done_callback()
            chunk_state = journal.registered(chunks._file_name)
            done.send({**await content(graph, entities, names),
                       "chunks_file_equal": file_content(chunks._file_name) == chunks._data.copy(),
                       "chunks_flushes": [chunk_state.appends, chunk_state.rewrites]})

    asyncio.run(run())


async def reader(working_dir: str) -> dict:
    from lightrag_prism import journal
    from lightrag_prism.snapshot import SnapshotCache, snapshot_from_storage

    graph, entities, chunks, states = await initialized(working_dir)
    cache = SnapshotCache(graph)
    await cache.get()
    names = [f"entity {i}" for i in range(12)]
    go_parent, go_child = multiprocessing.Pipe()
    done_parent, done_child = multiprocessing.Pipe()
    child = multiprocessing.get_context("fork").Process(target=writer, args=(working_dir, go_child, done_child))
    child.start()
    report = {"rounds": [], "states": {}}

    def shape(snapshot) -> tuple:
        return ({name: snapshot.node_data[i].get("description") for i, name in enumerate(snapshot.node_ids)},
                sorted([*snapshot.edge_key(e), snapshot.edge_data[e].get("keywords")]
                       for e in range(snapshot.num_edges)))

    async def refreshed_equals_whole() -> bool:
        await cache.refresh(lambda snapshot, base: asyncio.sleep(0))
        return shape(cache.current) == shape(await snapshot_from_storage(graph))

    chunk_state = journal.registered(chunks._file_name)
    for step in range(ROUNDS):
        if step == ROUNDS // 2:  # the reader writes a chunk too: appended by its own flush
            await chunks.upsert({"reader's chunk": {"content": "written by the reader"}})
            await chunks.index_done_callback()
            report["reader_chunk_flushes"] = [chunk_state.appends, chunk_state.rewrites]
        go_parent.send("round")
        expected = await asyncio.to_thread(done_parent.recv)
        chunks_written = {key: expected.pop(key) for key in ("chunks_file_equal", "chunks_flushes")}
        seen = await content(graph, entities, names)
        report["rounds"].append({**chunks_written, "equal": seen == expected, "nodes": len(seen["nodes"]),
                                 "snapshot_equal": await refreshed_equals_whole(), "patches": cache.patches,
                                 "catch_ups": [s.catch_ups for s in states if not s.shared_content]})
    go_parent.send("compact")
    expected = await asyncio.to_thread(done_parent.recv)
    report["chunks_after_compaction"] = expected.pop("chunks_file_equal")
    expected.pop("chunks_flushes")
    report["after_compaction"] = await content(graph, entities, names) == expected
    report["compacted_snapshot_equal"] = await refreshed_equals_whole()
    child.join(60)
    report["writer_exit"] = child.exitcode
    # The reader's compaction writes the shared dict whole, the writer's appends since included.
    report["reader_compacted"] = journal.compact(chunk_state)
    report["chunks_whole_file"] = (file_content(chunks._file_name) == chunks._data.copy()
                                   and not os.path.exists(journal.journal_path(chunks._file_name)))
    report["states"] = {state.file_name.rsplit("/", 1)[-1]: {"catch_ups": state.catch_ups, "reloads": state.reloads}
                        for state in states if not state.shared_content}
    report["journaled"] = [journal.registered(s.file_name) is not None for s in states]
    return report


def main() -> None:
    from lightrag.kg.shared_storage import finalize_share_data, initialize_share_data

    initialize_share_data(workers=2)
    try:
        print(json.dumps(asyncio.run(reader(sys.argv[1]))), flush=True)
    finally:
        finalize_share_data()


if __name__ == "__main__":
    main()
