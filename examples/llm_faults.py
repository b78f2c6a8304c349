"""When the LLM fails: the plugin's modes fall back, a failed answer raises LLMCallError, or, with
answer_without_llm="context", returns the retrieved context under a note. Runs offline: the "LLM" is a local
port nothing listens on.

    python examples/llm_faults.py
"""

import asyncio, tempfile
from lightrag_prism import LightRAG, LLMCallError, QueryParam, local_embedding_func, openai_compatible_llm

async def main():
    down = openai_compatible_llm("any-model", "http://127.0.0.1:9/v1", "x", max_retries=0, timeout=2)  # nothing listens
    for answer_without_llm in ("raise", "context"):
        rag = LightRAG(working_dir=tempfile.mkdtemp(), llm_model_func=down, embedding_func=local_embedding_func(),
                       answer_without_llm=answer_without_llm, stock_mode_llm_fallbacks=True)
        await rag.initialize_storages()
        await rag.ainsert_custom_kg({"chunks": [{"content": "Marta Olvide was born in Vexholm.", "source_id": "c1"}],
                                     "entities": [{"entity_name": "Marta Olvide", "entity_type": "person",
                                                   "description": "born in Vexholm", "source_id": "c1"}],
                                     "relationships": []})
        data = await rag.aquery_data("Where was Marta Olvide born?", QueryParam(mode="hybrid"))
        print(data["status"], [f["step"] for f in data["metadata"]["prism"]["fallbacks"]])  # keywords fell back
        try:
            print((await rag.aquery("Where was Marta Olvide born?", QueryParam(mode="prism")))[:80])
        except LLMCallError as exc:
            print("LLMCallError:", exc.endpoint, exc.cause[:40])
        await rag.finalize_storages()

asyncio.run(main())
