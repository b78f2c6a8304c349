"""PrismRAG's JSON doc-status store's indexed lookups (``storages/doc_status.py``) answer what LightRAG's scans answer.

Every answer of ``PrismJsonDocStatusStorage`` is compared with LightRAG's own method (its base class,
``JsonDocStatusStorage``) on the same data, after random writes of every kind the index follows."""

from __future__ import annotations

import asyncio
import random

import pytest

from lightrag.kg import json_doc_status_impl
from lightrag.kg.shared_storage import initialize_share_data

from lightrag_prism.storages import PrismJsonDocStatusStorage

Storage = PrismJsonDocStatusStorage
LOOKUPS = ("get_doc_by_content_hash", "resolve_doc_source_strict", "get_doc_by_file_basename", "get_doc_by_file_path")


def original(name):
    return getattr(json_doc_status_impl.JsonDocStatusStorage, name)


def storage_in(tmp_path, workspace="ds"):
    return Storage(namespace="doc_status", workspace=workspace, global_config={"working_dir": str(tmp_path)},
                   embedding_func=None)


async def assert_same_answers(storage, hashes, paths, excluded):
    for content_hash in hashes:
        for exclude in excluded:
            assert (await storage.get_doc_by_content_hash(content_hash, exclude_doc_id=exclude)
                    == await original("get_doc_by_content_hash")(storage, content_hash, exclude_doc_id=exclude))
    for path in paths:
        for name in LOOKUPS[1:]:
            assert await getattr(storage, name)(path) == await original(name)(storage, path), (name, path)


def test_every_lookup_answers_as_the_scan_through_random_writes(tmp_path):
    """Upserts (new rows, rows changed in place, duplicate markers), field updates that move a row to another hash
    or path, deletes, a conflict repair and a drop; several rows share hashes and paths, so the earliest-row rule
    and the dict-order rules are exercised."""
    initialize_share_data()
    rng = random.Random(11)
    hashes = [f"h{i}" for i in range(5)] + ["", "absent"]
    paths = [f"p{i}.txt" for i in range(5)] + ["unknown_source", "", "absent.txt"]

    def row(step):
        doc_row = {"status": "pending", "content_summary": f"s{step}", "updated_at": "t",
                   "created_at": f"2026-01-{rng.randint(1, 28):02d}", "content_hash": rng.choice(hashes[:5]),
                   "file_path": rng.choice(paths[:5]), "chunks_list": []}
        if rng.random() < 0.25:
            doc_row["metadata"] = {"is_duplicate": True, "original_doc_id": f"doc-{rng.randint(0, 19)}"}
        return doc_row

    async def run():
        storage = storage_in(tmp_path)
        await storage.initialize()
        docs = [f"doc-{i}" for i in range(20)]
        for step in range(150):
            doc, roll = rng.choice(docs), rng.random()
            if roll < 0.15 and doc in storage._data:
                await storage.delete([doc, rng.choice(docs)])
            elif roll < 0.35 and doc in storage._data:
                await storage.update_doc_status_fields(doc, {"content_hash": rng.choice(hashes[:5]),
                                                             "file_path": rng.choice(paths[:5])})
            elif roll < 0.45 and doc in storage._data:
                storage._data[doc]["status"] = "processed"  # a caller's row changed in place, upserted again
                await storage.upsert({doc: storage._data[doc]})
            else:
                await storage.upsert({doc: row(step), rng.choice(docs): row(step)})
            await assert_same_answers(storage, hashes, paths, [None, *rng.sample(docs, 3)])
        conflicts = await original("resolve_doc_source_strict")(storage, "p0.txt")
        if getattr(conflicts, "sample_doc_ids", None):
            candidates = storage._primary_candidates_locked("p0.txt")
            await storage.repair_source_conflict(
                "p0.txt", primary_doc_id=candidates[0], expected_candidate_count=len(candidates),
                expected_candidate_fingerprint=storage._conflict_fingerprint(candidates), dry_run=False)
            await assert_same_answers(storage, hashes, paths, [None])
        await storage.drop()
        await assert_same_answers(storage, hashes, paths, [None])
        await storage.upsert({"doc-0": row(0)})
        await assert_same_answers(storage, hashes, paths, [None])

    asyncio.run(run())


def test_a_lookup_during_an_upsert_sees_the_new_row(tmp_path):
    """LightRAG's upsert persists before it returns: a lookup from another task meanwhile (the pipeline runs many
    documents at once) must already find the row, as the scan does."""
    initialize_share_data()

    async def run():
        storage = storage_in(tmp_path)
        await storage.initialize()
        await storage.upsert({"doc-a": {"status": "pending", "content_hash": "ha", "file_path": "a.txt"}})
        assert await storage.get_doc_by_content_hash("hb") is None  # the index is built before the write
        seen = []
        flush = storage.index_done_callback

        async def flush_and_look():
            seen.append(await storage.get_doc_by_content_hash("hb"))
            seen.append(await storage.resolve_doc_source_strict("b.txt"))
            await flush()

        storage.index_done_callback = flush_and_look
        await storage.upsert({"doc-b": {"status": "pending", "content_hash": "hb", "file_path": "b.txt"}})
        storage.index_done_callback = flush
        assert seen[0][0] == "doc-b" and seen[1].doc_id == "doc-b"
        assert (await storage.get_doc_by_content_hash("hb"))[0] == "doc-b"

    asyncio.run(run())


def test_instances_sharing_a_workspace_see_each_others_writes(tmp_path):
    """Two instances of one workspace in a process share LightRAG's data dict, and so the index."""
    initialize_share_data()

    async def run():
        first, second = storage_in(tmp_path), storage_in(tmp_path)
        await first.initialize()
        await second.initialize()
        assert await second.get_doc_by_content_hash("hx") is None
        await first.upsert({"doc-x": {"status": "pending", "content_hash": "hx", "file_path": "x.txt"}})
        assert (await second.get_doc_by_content_hash("hx"))[0] == "doc-x"
        await first.delete(["doc-x"])
        assert await second.get_doc_by_file_path("x.txt") is None

    asyncio.run(run())


@pytest.mark.parametrize("name", LOOKUPS)
def test_a_storage_that_is_not_initialized_fails_as_lightrag_does(tmp_path, name):
    storage = storage_in(tmp_path)
    with pytest.raises(Exception) as ours:
        asyncio.run(getattr(storage, name)("x"))
    with pytest.raises(type(ours.value)):
        asyncio.run(original(name)(storage, "x"))


def test_lightrags_class_keeps_its_own_lookups():
    for name in LOOKUPS:
        assert getattr(json_doc_status_impl.JsonDocStatusStorage, name).__module__ == json_doc_status_impl.__name__
        assert getattr(Storage, name).__module__ != json_doc_status_impl.__name__
