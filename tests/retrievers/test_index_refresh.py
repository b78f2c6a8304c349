"""The hipporag/prism name and fact indexes take in new entities and facts at insert time (``prepare_query_indexes``,
the default), before any query (a real insert through the offline extractor; hash embedder)."""

from __future__ import annotations

import pytest

from lightrag_prism import PrismRAG, QueryParam
from lightrag_prism.plugin_state import plugin_state
from lightrag_prism.retrievers.hipporag.graph import FACT_INDEX, NAME_INDEX, hippo_state
from tests.helpers import offline_tokenizer
from tests.retrievers._kg import hash_embedding_func

pytestmark = pytest.mark.asyncio
FIRST = "Alice Vance was born in Townsville. Alice Vance founded Vance Robotics."
SECOND = "Bob Marsh works for Marsh Dynamics in Lakeside. Bob Marsh met Carol White."


async def _rag(tmp_path) -> PrismRAG:
    rag = PrismRAG(working_dir=str(tmp_path), embedding_func=hash_embedding_func(), tokenizer=offline_tokenizer())
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
        result = await rag.aquery_data("Where was Alice Vance born?", QueryParam(mode="prism"))
        assert result["data"]["chunks"]
    finally:
        await rag.finalize_storages()
