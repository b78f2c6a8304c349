"""Agentic merging: after an insert, the new entities' nearest neighbours (cosine ≥ threshold) are judged by the
LLM; confident "same entity" answers are merged (chains via union-find, relations kept, edge weights summed).

    python examples/insert_agentic_merging.py
"""

import asyncio
import json
import re

from _backend import example_backend

from lightrag_prism import PrismRAG


def offline_judge(body):
    """Scripted judge for the offline run: only the two Acme spellings are the same company."""
    text = body["messages"][-1]["content"]
    names = {m for m in re.findall(r"Entity [AB]: (.+?) \(type", text)}
    same = names == {"Acme Corp", "Acme Corporation"}
    return json.dumps({"merge": same, "confidence": 0.99 if same else 0.05, "canonical_name": "Acme Corporation"})


async def main():
    with example_backend([("You deduplicate entities", offline_judge)]) as kwargs:
        rag = PrismRAG(**kwargs)
        await rag.initialize_storages()
        await rag.ainsert("Acme Corp builds rockets in Texas with Bob Stone.", file_paths=["a.txt"])
        await rag.ainsert("Acme Corporation builds rockets in Texas with Bob Stone.", file_paths=["b.txt"],
                          agentic_merging=True, agentic_merging_threshold=0.5)
        report = rag.last_merge_report
        print("checked", report["checked"], "candidates", report["candidates"], "judged", report["judged"])
        for cluster in report["clusters"]:
            print("merged", cluster["members"], "->", cluster["canonical"])
        print("entities:", sorted(await rag.chunk_entity_relation_graph.get_all_labels()))
        await rag.finalize_storages()


if __name__ == "__main__":
    asyncio.run(main())
