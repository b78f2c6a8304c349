"""A file vector store reads its file on first use: a process that never reads a store does not hold it, and what
it answers once read is what a store read at construction answers."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from lightrag.kg.nano_vector_db_impl import NanoVectorDBStorage
from lightrag.kg.shared_storage import initialize_share_data

from lightrag_prism import PrismQueryParam
from lightrag_prism.storages.nano import PrismNanoVectorDBStorage
from tests.helpers import hash_embedding_func, opened_offline_rag


def _config(tmp_path) -> dict:
    return {"working_dir": str(tmp_path), "embedding_batch_num": 8,
            "vector_db_storage_cls_kwargs": {"cosine_better_than_threshold": 0.1}}


def test_the_storage_is_set_up_as_lightrags_own_except_the_read(tmp_path):
    """PrismNanoVectorDBStorage.__post_init__ is LightRAG's without the file read: the same attributes with the same
    values (a LightRAG release that sets up something more fails here)."""
    made = {}
    for cls in (NanoVectorDBStorage, PrismNanoVectorDBStorage):
        made[cls] = cls(namespace="entities", workspace="w", global_config=_config(tmp_path),
                        embedding_func=hash_embedding_func(), meta_fields={"content"})
    stock, prism = made[NanoVectorDBStorage], made[PrismNanoVectorDBStorage]
    ours = {k: v for k, v in vars(prism).items() if k not in ("_prism_client", "_load_lock")}
    theirs = {k: v for k, v in vars(stock).items() if k != "_client"}
    assert ours.keys() == theirs.keys()
    for name, value in theirs.items():
        if name != "embedding_func":
            assert ours[name] == value, name
    assert not prism.client_read
    assert len(prism._client) == len(stock._client) == 0 and prism.client_read  # read on first use


@pytest.mark.asyncio
async def test_a_store_no_query_reads_stays_on_disk_and_answers_as_before_once_read(tmp_path):
    initialize_share_data()
    docs = ["Marie Curie was born in Warsaw. She won the Nobel Prize in Physics.",
            "Pierre Curie worked in Paris with Marie Curie. Paris is the capital of France."]

    rag = await opened_offline_rag(tmp_path)
    try:
        await rag.ainsert(docs)
        relations_before = await rag.relationships_vdb.query("Curie Paris", top_k=5)
    finally:
        await rag.finalize_storages()
    rag = await opened_offline_rag(tmp_path)
    try:
        for mode in ("prism", "hipporag", "naive"):
            await rag.aquery_data("Where was Marie Curie born?", PrismQueryParam(mode=mode))
        assert not rag.relationships_vdb.client_read  # the relation vectors: never read by these modes
        assert rag.chunks_vdb.client_read
        relations = await rag.relationships_vdb.query("Curie Paris", top_k=5)
        assert rag.relationships_vdb.client_read
        assert [(r["id"], round(r["distance"], 6)) for r in relations] == \
            [(r["id"], round(r["distance"], 6)) for r in relations_before] and relations
        vectors = await rag.relationships_vdb.get_vectors_by_ids([r["id"] for r in relations])
        assert all(np.isfinite(v).all() for v in vectors.values()) and len(vectors) == len(relations)
    finally:
        await rag.finalize_storages()


@pytest.mark.asyncio
async def test_writes_to_a_store_not_read_yet_land_on_what_the_file_holds(tmp_path):
    """An upsert into a store not read yet, then its flush: the file's rows and the new ones, none lost; readers
    asking at once all get them."""
    initialize_share_data()
    config = _config(tmp_path)

    def storage() -> PrismNanoVectorDBStorage:
        return PrismNanoVectorDBStorage(namespace="chunks", workspace="w", global_config=config,
                                        embedding_func=hash_embedding_func(), meta_fields={"content"})

    first = storage()
    await first.initialize()
    await first.upsert({f"c{i}": {"content": f"text number {i}"} for i in range(5)})
    await first.index_done_callback()
    second = storage()
    await second.initialize()
    assert not second.client_read
    await second.upsert({"c9": {"content": "one more text"}})
    await second.index_done_callback()
    found = await asyncio.gather(*(second.get_by_ids([f"c{i}" for i in (0, 4, 9)]) for _ in range(3)))
    assert all([row["id"] for row in rows] == ["c0", "c4", "c9"] for rows in found)
    third = storage()
    await third.initialize()
    rows = await third.get_by_ids([f"c{i}" for i in range(10)])
    assert [row["id"] for row in rows if row] == ["c0", "c1", "c2", "c3", "c4", "c9"]


@pytest.mark.asyncio
async def test_the_entity_view_comes_from_the_vector_cache_equal_to_the_entity_store(tmp_path):
    """A process that opens the index builds its entity view from the vectors kept in the plugin's cache: LightRAG's
    entity store is not read (nor the chunk store, for the passage view), the kept vectors are the store's, bit for
    bit, and the view is those rows normalised; an entity whose description changed misses and is read again."""
    from lightrag_prism.plugin_state import plugin_state
    from lightrag_prism.vectors import (CHUNK_VECTORS_KEPT, ENTITY_VECTORS_KEPT, VectorsKept, entity_vdb_id,
                                        unit_rows)

    initialize_share_data()
    rag = await opened_offline_rag(tmp_path)
    try:
        await rag.ainsert(["Marie Curie was born in Warsaw. She won the Nobel Prize in Physics.",
                           "Pierre Curie worked in Paris with Marie Curie. Paris is the capital of France."])
    finally:
        await rag.finalize_storages()

    async def check(rag) -> None:
        snapshot = await rag.graph_snapshot()
        ids = [entity_vdb_id(name) for name in snapshot.node_ids]
        texts = [f"{name}\n{data.get('description', '')}" for name, data in zip(snapshot.node_ids,
                                                                               snapshot.node_data)]
        kept = await VectorsKept(plugin_state(rag).vectors, ENTITY_VECTORS_KEPT).get(ids, texts)
        assert sorted(kept) == list(range(len(ids)))  # every entity, under its current text
        stored = await rag.entities_vdb.get_vectors_by_ids(ids)
        for i, vid in enumerate(ids):
            np.testing.assert_array_equal(kept[i], stored[vid])
        # the norm's last bit depends on the array's alignment (numpy's SIMD reduction), not on where rows came from
        np.testing.assert_allclose(snapshot.derived["entity_vectors"], unit_rows(np.stack([stored[v] for v in ids])),
                                   rtol=0, atol=1e-7)
        chunks = snapshot.chunk_ids
        contents = [r["content"] for r in await rag.text_chunks.get_by_ids(chunks)]
        kept = await VectorsKept(plugin_state(rag).vectors, CHUNK_VECTORS_KEPT).get(chunks, contents)
        stored = await rag.chunks_vdb.get_vectors_by_ids(chunks)
        assert sorted(kept) == list(range(len(chunks)))
        for i, vid in enumerate(chunks):
            np.testing.assert_array_equal(kept[i], stored[vid])

    rag = await opened_offline_rag(tmp_path)
    try:
        for mode in ("prism", "hipporag"):
            await rag.aquery_data("Where was Marie Curie born?", PrismQueryParam(mode=mode))
        assert not (rag.entities_vdb.client_read or rag.relationships_vdb.client_read or rag.chunks_vdb.client_read)
        await check(rag)
        snapshot = await rag.graph_snapshot()
        before = {name: (entity_vdb_id(name), f"{name}\n{data.get('description', '')}")
                  for name, data in zip(snapshot.node_ids, snapshot.node_data) if name in ("Warsaw", "Paris")}
        await rag.aedit_entity("Warsaw", {"description": "Warsaw is the capital of Poland, on the Vistula."})
        await rag.adelete_by_entity("Paris")
        await rag.aquery_data("Where was Marie Curie born?", PrismQueryParam(mode="prism"))
        await check(rag)
        # the copies of the old description and of the removed entity are dropped, not kept forever
        kept = VectorsKept(plugin_state(rag).vectors, ENTITY_VECTORS_KEPT)
        assert len(before) == 2 and await kept.get(*map(list, zip(*before.values()))) == {}
    finally:
        await rag.finalize_storages()
