"""Citations: every retrieved chunk names its file, pages and section, and the LLM's [n] markers are checked.

Pages come from form feeds between pages (what ``pdftotext`` writes; ``lightrag-prism index`` reads PDFs and DOCX
files that way), sections from Markdown headings. With the scripted local server, the "LLM" cites [1] and a
reference that does not exist, [9]: the answer comes back with [9] taken out and the fallback recorded.

    python examples/citations.py
"""

import asyncio

from _backend import example_backend

from lightrag_prism import PrismRAG, QueryParam

MANUAL = ("# Pump Manual\n\n## Installation\n\nThe P7 pump is bolted to the frame with four M8 bolts.\f"
          "## Maintenance\n\nThe P7 pump's seals are replaced every 2,000 hours by the harbour crew.")
NOTES = "# Crew notes\n\nMara Quist leads the harbour crew on night shifts."
ANSWER = "The seals are replaced every 2,000 hours [1] by Mara Quist's crew [9]."


async def main():
    with example_backend(scripted_replies=[("---Context---", ANSWER)]) as kwargs:
        rag = PrismRAG(**kwargs, chunk_token_size=24, chunk_overlap_token_size=0)  # small chunks
        await rag.initialize_storages()
        await rag.ainsert([MANUAL, NOTES], file_paths=["pump_manual.pdf", "crew_notes.md"])
        question = "How often are the P7 pump's seals replaced?"
        data = await rag.aquery_data(question, QueryParam(mode="naive", enable_rerank=False))
        for chunk in data["data"]["chunks"]:
            c = chunk["citation"]
            print(f"{c['file']} pages={c['pages']} section={c['section']!r} span={c['span']}")
        print("references:", [(r["file_path"], r["pages"]) for r in data["data"]["references"]])
        if rag.llm_configured:
            result = await rag.aquery_llm(question, QueryParam(mode="naive", enable_rerank=False))
            print("answer:", result["llm_response"]["content"])
            print("fallbacks:", [f for f in result["metadata"]["prism"]["fallbacks"] if f["step"] == "citations"])
        await rag.finalize_storages()


if __name__ == "__main__":
    asyncio.run(main())
