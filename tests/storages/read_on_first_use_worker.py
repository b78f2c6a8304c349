"""A fresh process on an index (``tests/storages/test_read_on_first_use.py``): which of LightRAG's insert-time KV
stores it read, after opening, after a query in every mode, after an insert and after a deletion. Prints JSON."""

from __future__ import annotations

import asyncio
import json
import sys

from lightrag_prism import PrismQueryParam, PrismRAG
from lightrag_prism.backends.tokenizer import OfflineTokenizer
from tests.helpers import hash_embedding_func

STORES = ("full_docs", "full_entities", "full_relations", "entity_chunks", "relation_chunks")
DOCS = ("doc-curie", "doc-paris", "doc-irene")
MODES = ("prism", "hipporag", "naive", "local", "global", "hybrid", "mix", "fidelis")


def opened(working_dir: str) -> PrismRAG:
    return PrismRAG(working_dir=working_dir, workspace="w", embedding_func=hash_embedding_func(),
                    tokenizer=OfflineTokenizer())


async def main(working_dir: str, step: str) -> dict:
    rag = opened(working_dir)
    await rag.initialize_storages()
    report = {"opened": [getattr(rag, name).unread for name in STORES]}
    try:
        if step == "build":
            await rag.ainsert(["Marie Curie was born in Warsaw. She won the Nobel Prize in Physics.",
                               "Pierre Curie worked in Paris with Marie Curie."], ids=["doc-curie", "doc-paris"])
        elif step == "query_then_insert":
            for mode in MODES:
                await rag.aquery_data("Where was Marie Curie born?", PrismQueryParam(mode=mode))
            report["queried"] = [getattr(rag, name).unread for name in STORES]
            await rag.ainsert(["Irene Joliot-Curie was born in Paris. She worked with Frederic Joliot."],
                              ids=["doc-irene"])
            report["inserted"] = [getattr(rag, name).unread for name in STORES]
        elif step == "delete":
            await rag.adelete_by_doc_id("doc-paris")
            report["deleted"] = [getattr(rag, name).unread for name in STORES]
        report["docs"] = [doc for doc in DOCS if await rag.full_docs.get_by_id(doc)]
        labels = sorted(await rag.chunk_entity_relation_graph.get_all_labels())
        # every entity of the graph has its chunk list (nothing an insert or a deletion wrote was lost)
        report["entities_without_chunk_list"] = [e for e in labels if not await rag.entity_chunks.get_by_id(e)]
        report["entities"] = labels
    finally:
        await rag.finalize_storages()
    return report


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
