"""The hipporag/prism name and fact indexes take in new entities and facts at insert time (``prepare_query_indexes``,
the default), before any query (a real insert through the offline extractor; hash embedder)."""

from __future__ import annotations

import pytest

from lightrag_prism import PrismRAG, QueryParam
from lightrag_prism.plugin_state import plugin_state
from lightrag_prism.retrievers.views.passage_graph import FACT_INDEX, NAME_INDEX, hippo_state
from tests.helpers import offline_tokenizer
from tests.retrievers._kg import hash_embedding_func

pytestmark = pytest.mark.asyncio
FIRST = "Alice Vance was born in Townsville. Alice Vance founded Vance Robotics."
SECOND = "Bob Marsh works for Marsh Dynamics in Lakeside. Bob Marsh met Carol White."


async def _rag(tmp_path) -> PrismRAG:
    # A workspace of its own: LightRAG keeps file-storage data per (namespace, workspace) for the whole process.
    rag = PrismRAG(working_dir=str(tmp_path), workspace=tmp_path.name, embedding_func=hash_embedding_func(),
                   tokenizer=offline_tokenizer())
    await rag.initialize_storages()
    return rag


async def _stored_ids(rag) -> tuple[list[str], list[str]]:
    """The fact and name ids the indexes hold, each checked to be in the instance's vector store."""
    state, store = hippo_state(rag), plugin_state(rag).vectors
    facts, names = state.fact_index.ids, state.name_index.ids
    assert sorted(await store.get(FACT_INDEX, facts)) == sorted(facts)
    assert sorted(await store.get(NAME_INDEX, names)) == sorted(names)
    return facts, names


async def test_every_insert_brings_the_indexes_up_to_date_before_any_query(tmp_path):
    rag = await _rag(tmp_path)
    try:
        await rag.ainsert(FIRST)
        facts_before, names_before = await _stored_ids(rag)
        assert facts_before and "Alice Vance" in names_before  # built by the insert (prepare_query_indexes)
        await rag.ainsert(SECOND)
        snapshot = await rag.graph_snapshot()
        facts_after, names_after = await _stored_ids(rag)
        assert len(facts_after) == snapshot.num_edges > len(facts_before)  # stored before any query
        assert sorted(names_after) == sorted(snapshot.node_ids) and "Bob Marsh" in names_after
        # the tokens of every description the query contexts render are pinned by the insert too
        described = [d.get("description") for d in [*snapshot.node_data, *snapshot.edge_data]]
        assert rag.tokenizer._pinned_descriptions == frozenset(described) and rag.tokenizer._pinned
        result = await rag.aquery_data("Where was Alice Vance born?", QueryParam(mode="prism"))
        assert result["data"]["chunks"]
    finally:
        await rag.finalize_storages()


def _count_vector_reads(rag) -> dict[str, list[int]]:
    """Wrap the three vector stores' get_vectors_by_ids (instance attributes) to record how many ids each read."""
    reads: dict[str, list[int]] = {"entities": [], "relationships": [], "chunks": []}
    for name, vdb in (("entities", rag.entities_vdb), ("relationships", rag.relationships_vdb),
                      ("chunks", rag.chunks_vdb)):
        original = vdb.get_vectors_by_ids

        async def counted(ids, _original=original, _name=name):
            reads[_name].append(len(ids))
            return await _original(ids)

        vdb.get_vectors_by_ids = counted
    return reads


async def test_a_small_insert_reads_only_its_own_rows_and_matches_a_fresh_build(tmp_path):
    import numpy as np

    from lightrag_prism.retrievers.views.facts import fact_view, snapshot_facts
    from lightrag_prism.retrievers.views.passage_graph import hipporag_graph
    from lightrag_prism.snapshot import snapshot_from_storage
    from lightrag_prism.vectors import RELATION_VECTORS, chunk_matrix, entity_matrix, relation_matrix

    rag = await _rag(tmp_path)
    try:
        await rag.ainsert([FIRST, SECOND, "Dana Reyes teaches physics at Lakeside College."], ids=["a", "b", "c"])
        before = await rag.graph_snapshot()
        texts_before = {f"{n}\n{d.get('description', '')}" for n, d in zip(before.node_ids, before.node_data)}
        # LightRAG's relation vectors are prepared only once a query of the process has read them (fidelis does)
        for mode in ("prism", "hipporag", "naive"):
            await rag.aquery_data("Who teaches physics?", QueryParam(mode=mode))
        assert RELATION_VECTORS not in before.derived
        await rag.aquery_data("Who teaches physics?", QueryParam(mode="fidelis"))
        assert RELATION_VECTORS in before.derived
        reads = _count_vector_reads(rag)
        await rag.ainsert("Evan Holt repairs boats in Townsville.", ids=["d"])  # prepares the views incrementally
        after = await rag.graph_snapshot()
        changed = [n for n, d in zip(after.node_ids, after.node_data)
                   if f"{n}\n{d.get('description', '')}" not in texts_before]
        assert 0 < len(changed) < after.num_nodes
        assert sum(reads["entities"]) == len(changed)  # only new or changed entities were read
        assert 0 < sum(reads["relationships"]) < after.num_edges
        assert sum(reads["chunks"]) == 1  # the new passage (the chunk matrix is the passage view's first rows)

        fresh = await snapshot_from_storage(rag.chunk_entity_relation_graph)  # the same graph, built from scratch
        for matrix in (entity_matrix, relation_matrix, chunk_matrix):
            np.testing.assert_allclose(await matrix(rag, after), await matrix(rag, fresh), atol=1e-6)
        # Facts of unchanged edges carried from the previous view: the same facts, in the same order.
        assert after.derived["hipporag_facts"].facts == snapshot_facts(fresh)
        np.testing.assert_allclose(after.derived["hipporag_facts"].vectors, (await fact_view(rag, fresh)).vectors,
                                   atol=1e-6)
        incremental, scratch = after.derived["hipporag_graph"], await hipporag_graph(rag, fresh)
        assert incremental.passage_ids == scratch.passage_ids
        np.testing.assert_allclose(incremental.passage_vectors, scratch.passage_vectors, atol=1e-6)
    finally:
        await rag.finalize_storages()


async def test_the_passage_view_reads_only_the_records_written_since_the_last_view(tmp_path, monkeypatch):
    """On a backend without the JSON fast path (PostgreSQL) each read of the chunk records is a query. After a small
    change the passage view reads only the chunks written since the last view (the text_chunks write log), the chunk
    matrix reads none, and both equal a build from scratch; also when a document comes back under its id with
    other text (same chunk ids, new content)."""
    import numpy as np

    from lightrag_prism import vectors
    from lightrag_prism.retrievers.views import passage_graph as hippo_graph
    from lightrag_prism.retrievers.views.query_state import ensure_views
    from lightrag_prism.snapshot import snapshot_from_storage
    async def assert_as_fresh(snapshot) -> None:
        fresh = await snapshot_from_storage(rag.chunk_entity_relation_graph)
        view, scratch = snapshot.derived["hipporag_graph"], await hippo_graph.hipporag_graph(rag, fresh)
        assert view.passage_ids == scratch.passage_ids and view.passage_data == scratch.passage_data
        np.testing.assert_allclose(view.passage_vectors, scratch.passage_vectors, atol=1e-6)
        np.testing.assert_allclose(await vectors.chunk_matrix(rag, snapshot), await vectors.chunk_matrix(rag, fresh),
                                   atol=1e-6)

    rag = await _rag(tmp_path)
    try:
        await rag.ainsert([FIRST, SECOND], ids=["a", "b"])
        monkeypatch.setattr(type(rag.text_chunks), "read_fields", None)  # get_by_ids, as on PG
        reads, original = [], hippo_graph.chunk_records

        async def counted(rag, ids, fields):
            reads.extend([list(ids)] if ids else [])
            return await original(rag, ids, fields)

        monkeypatch.setattr(hippo_graph, "chunk_records", counted)
        monkeypatch.setattr(vectors, "chunk_records", counted)
        await rag.ainsert("Evan Holt repairs boats in Townsville.", ids=["c"])  # prepares the views
        snapshot = await rag.graph_snapshot()
        assert reads == [["c-chunk-000"]]  # the new passage only; the chunk matrix read nothing
        await assert_as_fresh(snapshot)
        # "c" deleted and inserted again with other text, no view in between: its chunk id is the base view's, with
        # new content. Then "b" deleted, its chunk not read.
        for doc, text, expected in (("c", "Evan Holt sells kites in Lakeside.", [["c-chunk-000"]]), ("b", None, [])):
            reads.clear()
            await rag.adelete_by_doc_id(doc)
            if text is not None:
                await rag.ainsert(text, ids=[doc])  # prepares the views
            snapshot = await rag.graph_snapshot()
            await ensure_views(rag, snapshot)  # what the first query after a deletion does
            assert reads == expected  # what the change wrote (a deleted chunk is not read), not every passage
            await assert_as_fresh(snapshot)
        assert "Evan Holt sells kites in Lakeside." in [d["content"] for d in
                                                        snapshot.derived["hipporag_graph"].passage_data]
    finally:
        await rag.finalize_storages()


async def test_a_passage_whose_record_is_gone_is_never_embedded(tmp_path):
    """Without an extraction cache (``enable_llm_cache_for_entity_extract=False``, as the bench builds) LightRAG's
    deletion cannot rebuild an entity the deleted document shared, and leaves its ``source_id`` naming the deleted
    chunk. The views then hold a passage without a record: it gets no vector (embedding its empty text started the
    local embedder's worker processes inside the first query after the deletion: 20-25 s on the pooled bench index)
    and no mode returns it."""
    import numpy as np
    from lightrag.utils import EmbeddingFunc

    from tests.retrievers._kg import DIM, hash_vector

    embedded: list[str] = []

    async def recording(texts, **_):
        embedded.extend(texts)
        return np.stack([hash_vector(t) for t in texts])

    rag = PrismRAG(working_dir=str(tmp_path), workspace=tmp_path.name, tokenizer=offline_tokenizer(),
                   embedding_func=EmbeddingFunc(embedding_dim=DIM, max_token_size=8192, func=recording),
                   enable_llm_cache_for_entity_extract=False)
    await rag.initialize_storages()
    try:
        await rag.ainsert([FIRST, "Carol White moved to Townsville. Carol White paints harbours.", SECOND],
                          ids=["a", "b", "c"])
        await rag.aquery_data("Who lives in Townsville?", QueryParam(mode="prism"))
        await rag.adelete_by_doc_id("b")
        node = await rag.chunk_entity_relation_graph.get_node("Townsville")
        assert "b-chunk-000" in node["source_id"]  # LightRAG's stale provenance: what this test is about
        embedded.clear()
        for mode in ("prism", "hipporag", "fidelis", "local"):
            result = await rag.aquery_data("Who moved to Townsville and paints?", QueryParam(mode=mode))
            assert "b-chunk-000" not in [c.get("chunk_id") for c in result["data"].get("chunks", [])], mode
        assert "" not in embedded
        view = (await rag.graph_snapshot()).derived["hipporag_graph"]
        gone = view.passage_ids.index("b-chunk-000")
        assert not view.passage_valid[gone] and not view.passage_vectors[gone].any()
    finally:
        await rag.finalize_storages()


async def test_the_snapshot_before_is_let_go_once_the_views_are_built_from_it(tmp_path):
    """After an insert (views prepared at once) and after a deletion (views prepared by the next query), the process
    holds the current snapshot's views only: the snapshot they were carried from, with its views, is freed."""
    import gc
    import weakref

    rag = await _rag(tmp_path)
    try:
        await rag.ainsert(FIRST, ids=["a"])
        first = weakref.ref(await rag.graph_snapshot())
        assert first().derived.get("query_views_ready")
        await rag.ainsert(SECOND, ids=["b"])
        second = await rag.graph_snapshot()
        assert second is not first() and second.derived.get("query_views_ready")
        assert rag._snapshots.previous is None
        gc.collect()
        assert first() is None
        await rag.adelete_by_doc_id("a")  # leaves the next snapshot and its views to the first query
        second = weakref.ref(second)
        result = await rag.aquery_data("Where does Bob Marsh work?", QueryParam(mode="prism"))
        third = await rag.graph_snapshot()
        assert third is not second() and "Alice Vance" not in third.node_ids and result["data"]["chunks"]
        assert rag._snapshots.previous is None
        gc.collect()
        assert second() is None
    finally:
        await rag.finalize_storages()
