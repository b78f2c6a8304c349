"""Every query mode on a tiny corpus, offline by default.

    python examples/query_modes.py                 # no LLM: offline fallbacks, retrieved context only
    PRISM_LLM_MODEL=... OPENAI_BASE_URL=... OPENAI_API_KEY=... python examples/query_modes.py   # with answers

Without an LLM the documents are indexed with the offline extractor and each mode prints what it retrieved (its
top chunk with its score and which perspective found it; stock modes have neither) and the fallbacks it took. With an LLM each mode also answers.
"""

import asyncio
import tempfile

from lightrag_prism import LightRAG, QueryParam, llm_from_env, local_embedding_func, valid_modes

DOCS = [
    "Alice Vance was born in Townsville. She founded Vance Robotics in 2011.",
    "The Blue River flows through Townsville before reaching the Grey Sea.",
    "Vance Robotics builds underwater drones. Its drones survey the Grey Sea every summer.",
    "Bob Marsh, a rival engineer, was born in Lakeside and works for Marsh Dynamics.",
]
QUESTION = "Which river flows through the birthplace of the founder of Vance Robotics?"


async def main() -> None:
    with tempfile.TemporaryDirectory() as working_dir:
        rag = LightRAG(working_dir=working_dir, llm_model_func=llm_from_env(),
                       embedding_func=local_embedding_func(), embedding_batch_num=64)
        await rag.initialize_storages()
        await rag.ainsert(DOCS, ids=[f"doc-{i}" for i in range(len(DOCS))])
        for mode in valid_modes():
            if mode == "bypass":
                continue
            param = QueryParam(mode=mode, enable_rerank=False, topic_entities=["Vance Robotics"])
            data = await rag.aquery_data(QUESTION, param)
            chunks = (data.get("data") or {}).get("chunks", [])
            fallbacks = [f["step"] for f in data.get("metadata", {}).get("prism", {}).get("fallbacks", [])]
            top = chunks[0] if chunks else {}
            found = f"score {top['score']:.3f} found by {top.get('found_by')}" if "score" in top else "stock order"
            print(f"{mode:>10}: {len(chunks)} chunks, top: {top.get('content', '(nothing)')[:50]!r} ({found}), "
                  f"fallbacks: {fallbacks}")
            if rag.llm_configured:
                print(" " * 12 + str(await rag.aquery(QUESTION, param))[:200])
        await rag.finalize_storages()


if __name__ == "__main__":
    asyncio.run(main())
