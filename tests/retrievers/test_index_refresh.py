"""The hipporag/prism name and fact indexes take in new entities and facts at insert time once those modes have
built them (a real insert through the offline extractor; hash embedder)."""

from __future__ import annotations

import pytest

from lightrag_prism import PrismRAG, QueryParam
from lightrag_prism.retrievers.hipporag_index import EmbeddingIndex
from tests.helpers import offline_tokenizer
from tests.retrievers._kg import hash_embedding_func

pytestmark = pytest.mark.asyncio
FIRST = "Alice Vance was born in Townsville. Alice Vance founded Vance Robotics."
SECOND = "Bob Marsh works for Marsh Dynamics in Lakeside. Bob Marsh met Carol White."


async def _rag(tmp_path) -> PrismRAG:
    rag = PrismRAG(working_dir=str(tmp_path), embedding_func=hash_embedding_func(), tokenizer=offline_tokenizer())
    await rag.initialize_storages()
    return rag


async def test_insert_refreshes_the_indexes_only_after_the_modes_built_them(tmp_path):
    rag = await _rag(tmp_path)
    try:
        await rag.ainsert(FIRST)
        assert not (tmp_path / "hipporag_facts.npz").exists()  # never queried: the insert did not build them
        await rag.aquery_data("Where was Alice Vance born?", QueryParam(mode="prism"))
        facts_before = EmbeddingIndex(str(tmp_path), "hipporag_facts").ids
        names_before = EmbeddingIndex(str(tmp_path), "hipporag_entity_names").ids
        assert facts_before and names_before
        await rag.ainsert(SECOND)
        snapshot = await rag.graph_snapshot()
        facts_after = EmbeddingIndex(str(tmp_path), "hipporag_facts").ids
        names_after = EmbeddingIndex(str(tmp_path), "hipporag_entity_names").ids
        assert len(facts_after) == snapshot.num_edges > len(facts_before)  # on disk before any new query
        assert sorted(names_after) == sorted(snapshot.node_ids) and "Bob Marsh" in names_after
    finally:
        await rag.finalize_storages()
