"""Timestamps: every description extracted from a document is prefixed ``[Time: ts]``, merged descriptions are
ordered chronologically, summaries must keep every marker, and chunks show their timestamp in the query context.

    python examples/insert_timestamps.py
"""

import asyncio

from _backend import example_backend

from lightrag_prism import PrismRAG, QueryParam

Q3 = "Apple reported iPhone revenue of 39.3 billion dollars. Tim Cook credited the iPhone 15."
Q2 = "Apple reported iPhone revenue of 45.9 billion dollars. Tim Cook praised Services growth."


async def main():
    with example_backend() as kwargs:
        rag = PrismRAG(**kwargs)
        await rag.initialize_storages()
        await rag.ainsert([Q3], timestamps=["2024-Q3"], file_paths=["apple_q3_2024.pdf"])
        await rag.ainsert([Q2], timestamps=["2024-Q2"], file_paths=["apple_q2_2024.pdf"])  # older, inserted later
        apple = await rag.chunk_entity_relation_graph.get_node("Apple")
        print("Apple:")
        for fragment in apple["description"].split("<SEP>"):
            print("  ", fragment)
        data = await rag.aquery_data("Apple iPhone revenue", QueryParam(mode="naive", enable_rerank=False))
        print("chunks in context:", [c["content"].splitlines()[0] for c in data["data"]["chunks"]])
        try:
            await rag.ainsert(["a", "b"], timestamps=["2024-Q4"])
        except ValueError as exc:
            print("wrong number of timestamps:", exc)
        await rag.finalize_storages()


if __name__ == "__main__":
    asyncio.run(main())
