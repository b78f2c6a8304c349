"""The insert path under kill -9 and under concurrent queries.

* A 200-document offline insert is killed (SIGKILL) at random points, then run again on the same directory until
  it completes: every document is present exactly once and processed, every chunk is stored, embedded and
  retrievable, and no relation names an entity that is not in the graph.
* 50 concurrent ``aquery_data`` calls in mixed modes during an ``ainsert`` all succeed.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lightrag_prism import PrismQueryParam, PrismRAG
from lightrag_prism.retrievers import valid_modes
from tests.helpers import hash_embedding_func
from tests.insert.crash_insert_worker import WORKSPACE, documents

ROOT = Path(__file__).resolve().parents[2]
N_DOCS = 200
KILLS = 3
# Seconds after the storages are open: a whole uninterrupted insert takes about 9 s here, a restart resumes it.
KILL_WINDOW = (0.5, 6.0)


def start_worker(working_dir: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.insert.crash_insert_worker", str(working_dir),
                             str(N_DOCS)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})


def processed_count(working_dir: Path) -> int:
    path = working_dir / WORKSPACE / "kv_store_doc_status.json"
    try:
        rows = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return 0
    return sum(row.get("status") == "processed" for row in rows.values())


def test_kill_9_during_an_offline_insert_then_restart_loses_and_duplicates_nothing(tmp_path):
    rng = random.Random(int(os.environ.get("PRISM_CRASH_SEED", "7")))
    progress = []  # documents processed when each kill landed
    for _ in range(KILLS):
        worker = start_worker(tmp_path)
        assert worker.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(*KILL_WINDOW))
        assert worker.poll() is None, "the insert finished before the kill: widen KILL_WINDOW's lower end"
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        progress.append(processed_count(tmp_path))
    worker = start_worker(tmp_path)
    out, _ = worker.communicate(timeout=600)
    assert worker.returncode == 0 and out.split() == ["ready", "done"], out
    print(f"documents processed when each kill landed: {progress}")
    assert progress[-1] < N_DOCS, progress
    asyncio.run(check_index(tmp_path))


async def check_index(working_dir: Path) -> None:
    rag = PrismRAG(working_dir=str(working_dir), workspace=WORKSPACE, embedding_func=hash_embedding_func())
    await rag.initialize_storages()
    try:
        texts, ids = documents(N_DOCS)
        rows = json.loads((working_dir / WORKSPACE / "kv_store_doc_status.json").read_text())
        # Each re-run of ainsert adds LightRAG's own "duplicate submission" rows (status failed, no content, no
        # chunks), one per resubmitted document: bookkeeping of the request, not a second copy of the document.
        duplicates = {k: r for k, r in rows.items() if "'is_duplicate': True" in str(r.get("metadata"))}
        assert all(r["chunks_count"] == 0 and r["metadata"]["original_doc_id"] in ids for r in duplicates.values())
        statuses = {k: r for k, r in rows.items() if k not in duplicates}
        assert sorted(statuses) == ids  # every document exactly once
        assert all(row["status"] == "processed" for row in statuses.values())
        full_docs = json.loads((working_dir / WORKSPACE / "kv_store_full_docs.json").read_text())
        assert sorted(full_docs) == ids and all(full_docs[i]["content"] == t for i, t in zip(ids, texts))
        chunk_ids = [c for row in statuses.values() for c in row["chunks_list"]]
        assert len(chunk_ids) == len(set(chunk_ids)) >= N_DOCS
        chunks = await rag.text_chunks.get_by_ids(chunk_ids)
        assert all(chunk and chunk["content"] for chunk in chunks)
        vectors = await rag.chunks_vdb.get_by_ids(chunk_ids)
        assert all(v is not None for v in vectors)  # embedded, so retrievable by naive/mix
        stored = json.loads((working_dir / WORKSPACE / "kv_store_text_chunks.json").read_text())
        assert set(stored) == set(chunk_ids)  # no orphan chunk from an interrupted attempt
        graph = rag.chunk_entity_relation_graph
        nodes = set(await graph.get_all_labels())
        edges = await graph.get_all_edges()
        assert edges and all(e["source"] in nodes and e["target"] in nodes for e in edges)
        node_rows = await graph.get_nodes_batch(sorted(nodes))
        assert all(row.get("entity_type") and row.get("source_id") for row in node_rows.values())
        known_chunks = set(chunk_ids)
        assert all(set(row["source_id"].split("<SEP>")) <= known_chunks for row in node_rows.values())
        for chunk in chunks[:: max(1, len(chunks) // 20)]:  # a sample: each chunk's own text finds it first
            result = await rag.aquery_data(chunk["content"], PrismQueryParam(mode="naive", chunk_top_k=5,
                                                                             enable_rerank=False))
            assert result["data"]["chunks"][0]["content"] == chunk["content"]
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_50_concurrent_queries_in_mixed_modes_during_an_insert(tmp_path):
    rag = PrismRAG(working_dir=str(tmp_path), workspace="concurrent", embedding_func=hash_embedding_func())
    await rag.initialize_storages()
    try:
        texts, ids = documents(120)
        await rag.ainsert(texts[:60], ids=ids[:60])
        modes = [m for m in valid_modes() if m != "bypass"]
        questions = [t.split("\n", 1)[0] for t in texts[:50]]

        async def ask(i: int):
            return await rag.aquery_data(f"What is known about {questions[i]}?",
                                         PrismQueryParam(mode=modes[i % len(modes)], enable_rerank=False))

        insert = asyncio.create_task(rag.ainsert(texts[60:], ids=ids[60:]))
        await asyncio.sleep(0.05)  # the insert is under way
        results = await asyncio.wait_for(asyncio.gather(*(ask(i) for i in range(50))), timeout=300)
        assert not insert.done() or insert.exception() is None
        await asyncio.wait_for(insert, timeout=300)
        assert all(r["status"] == "success" for r in results), [r.get("message") for r in results]
        assert {r["metadata"]["query_mode"] for r in results} == set(modes)
        assert await rag.doc_status.get_status_counts() == {"processed": 120} or \
            (await rag.doc_status.get_status_counts()).get("processed") == 120
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_an_interrupted_document_without_recovery_anchors_is_resumed(tmp_path):
    """The state a kill leaves after a retry's purge completed: PROCESSING, marked as having reached the graph,
    no anchors. LightRAG alone refuses to purge it (the document ends FAILED); the run rebuilds the anchors."""
    from lightrag.base import DocStatus

    from lightrag_prism.insert.recovery import documents_missing_anchors

    rag = PrismRAG(working_dir=str(tmp_path), workspace="anchors", embedding_func=hash_embedding_func())
    await rag.initialize_storages()
    try:
        texts, ids = documents(20)
        await rag.ainsert(texts, ids=ids)
        victim = ids[3]
        row = await rag.doc_status.get_by_id(victim)
        assert row["metadata"]["kg_write_state"] == "graph_mutation_started"
        await rag.doc_status.upsert({victim: {**row, "status": DocStatus.PROCESSING}})
        await rag.full_entities.delete([victim])
        await rag.full_relations.delete([victim])
        assert await documents_missing_anchors(rag) == [victim]
        await rag.apipeline_process_enqueue_documents()
        assert (await rag.doc_status.get_by_id(victim))["status"] == DocStatus.PROCESSED
        assert await documents_missing_anchors(rag) == []
        assert (await rag.full_entities.get_by_id(victim))["entity_names"]  # re-extracted: real anchors again
    finally:
        await rag.finalize_storages()
