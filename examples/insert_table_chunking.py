"""Table-aware chunking: an HTML table stays in one chunk with its surrounding context, and its chunk is extracted
with the table guidance added to the prompt (on by default: ``PrismRAG(table_aware_chunking=True)``).

    python examples/insert_table_chunking.py
"""

import asyncio

from _backend import example_backend

from lightrag_prism import PrismRAG, QueryParam

REPORT = (
    "Apple and Microsoft published their quarterly results. " * 4
    + "<table><tr><th>Company</th><th>2024-Q3 revenue</th><th>EPS</th></tr>"
    "<tr><td>Apple</td><td>85.8 billion USD</td><td>1.40</td></tr>"
    "<tr><td>Microsoft</td><td>65.6 billion USD</td><td>3.30</td></tr></table>"
    + " Analysts at Goldman Sachs called the quarter strong. " * 4
)


async def main():
    with example_backend() as kwargs:
        rag = PrismRAG(**kwargs, chunk_token_size=120, chunk_overlap_token_size=0)
        await rag.initialize_storages()
        await rag.ainsert(REPORT, ids=["report"], file_paths=["q3_report.html"])
        status = await rag.doc_status.get_by_id("report")
        chunks = await rag.text_chunks.get_by_ids(status["chunks_list"])
        for chunk in chunks:
            kind = "TABLE" if chunk.get("is_table") else "text "
            print(f"{kind} chunk, {chunk['tokens']} tokens: {chunk['content'][:90]!r}...")
        data = await rag.aquery_data("Apple revenue EPS", QueryParam(mode="hybrid", enable_rerank=False))
        print("entities:", [e["entity_name"] for e in data["data"]["entities"]])
        await rag.finalize_storages()


if __name__ == "__main__":
    asyncio.run(main())
