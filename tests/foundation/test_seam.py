"""seam.py: one PrismSeam per PrismRAG, reachable from every config LightRAG builds, absent for a plain LightRAG."""

from __future__ import annotations

import asyncio
import copy

from lightrag import LightRAG as StockLightRAG
from lightrag import operate

from lightrag_prism import LightRAG
from lightrag_prism.patches import build_global_config
from lightrag_prism.patches.insert_hooks import seam_of
from lightrag_prism.rag import GRAPH_MUTATORS, PrismRAG
from lightrag_prism.seam import PrismSeam
from lightrag_prism.storages import PrismJsonKVStorage
from tests.helpers import hash_embedding_func, offline_tokenizer


def test_the_seam_is_in_every_config_and_in_the_storages(tmp_path):
    rag = LightRAG(working_dir=str(tmp_path), workspace="seam", embedding_func=hash_embedding_func(16))
    seam = rag.prism_seam
    assert isinstance(seam, PrismSeam) and seam.rag is rag
    assert seam_of(build_global_config(rag)) is seam  # LightRAG's asdict deep copy keeps the one seam
    assert seam_of(rag.text_chunks.global_config) is seam  # what the rebuild-after-delete wrapper reads
    assert copy.deepcopy({"prism_seam": seam})["prism_seam"] is seam
    assert seam.plugin_state is not None and seam.insert_hooks is not None and seam.pipeline_turn is not None
    assert isinstance(rag.text_chunks, PrismJsonKVStorage)


def test_a_plain_lightrag_has_no_seam_and_its_own_storage_classes(tmp_path):
    from lightrag.kg.json_kv_impl import JsonKVStorage

    rag = StockLightRAG(working_dir=str(tmp_path), workspace="plain-seam", embedding_func=hash_embedding_func(16),
                        llm_model_func=lambda *a, **k: None, tokenizer=offline_tokenizer())  # no download
    assert seam_of(build_global_config(rag)) is None
    assert type(rag.text_chunks) is JsonKVStorage


def test_graph_changing_methods_are_defined_on_the_class_and_publish_the_change(tmp_path):
    assert all(name in PrismRAG.__dict__ for name in GRAPH_MUTATORS)

    async def run():
        rag = LightRAG(working_dir=str(tmp_path), workspace="seam-mut", embedding_func=hash_embedding_func(16))
        await rag.initialize_storages()
        try:
            published = []
            original = rag.publish_graph_change

            async def counted():
                published.append(1)
                await original()

            rag.publish_graph_change = counted
            await rag.acreate_entity("Port Wenna", {"description": "a harbour town", "entity_type": "location"})
            assert published == [1]
            names = operate.normalize_entity_name.cache
            names.cache_clear()
            await rag.ainsert("Ines Vale founded Alpha Works in Port Wenna in 2011.", ids=["doc-1"])
            assert names.cache_info().currsize > 0  # the insert's parse ran with the seam active: memoised
        finally:
            await rag.finalize_storages()

    asyncio.run(run())
