"""Entity extraction without an LLM, in place of LightRAG's per-chunk LLM calls.

PrismRAG's extract hook sends an offline instance's chunks here instead of to ``extract_entities``:

1. every chunk of the call goes to the offline extractor at once (:func:`~.extraction.extract_rows`); chunks of
   documents processed concurrently share its ``nlp.pipe`` batches;
2. the rows are parsed by LightRAG's own parser (``patches.insert_hooks.parse_extraction_rows``), so names, types
   and descriptions are normalised exactly as for an LLM's answer, and the result has the same shape;
3. with ``enable_llm_cache_for_entity_extract`` (LightRAG's default), each chunk's rows are stored as an
   ``extract`` entry of the LLM cache and listed in the chunk's ``llm_cache_list``, as LightRAG does for an LLM
   answer: deleting a document rebuilds the entities it shared from them. The entry records the extractor, not the
   ~10 KB extraction prompt an LLM call would store.
"""

from __future__ import annotations

import asyncio
import time

from lightrag.utils import CacheData, compute_args_hash, generate_cache_key, save_to_cache, update_chunk_cache_list

from ... import patches
from . import EXTRACTOR_VERSION, extract_rows


def cache_prompt(extractor: str) -> str:
    return f"lightrag-prism offline extraction ({extractor}, v{EXTRACTOR_VERSION})"


async def _cache(rag, chunk_id: str, content: str, rows: str, extractor: str) -> None:
    prompt = cache_prompt(extractor)
    args_hash = compute_args_hash(prompt, content)
    await save_to_cache(rag.llm_response_cache, CacheData(args_hash=args_hash, content=rows, prompt=prompt,
                                                          cache_type="extract", chunk_id=chunk_id))
    await update_chunk_cache_list(chunk_id, rag.text_chunks, [generate_cache_key("default", "extract", args_hash)],
                                  "entity_extraction")


async def extract_offline(rag, chunks: dict[str, dict]) -> list[tuple[dict, dict]]:
    """``[(nodes, edges)]`` per chunk (in order), as ``extract_entities`` returns them."""
    extractor = getattr(rag.llm_model_func, "extractor", rag.offline_extractor)
    ids = list(chunks)
    contents = [str(chunks[c].get("content", "")) for c in ids]
    all_rows = await asyncio.gather(*(extract_rows(text, extractor) for text in contents))
    now = int(time.time())
    results = []
    for chunk_id, content, rows in zip(ids, contents, all_rows):
        file_path = chunks[chunk_id].get("file_path") or "unknown_source"
        results.append(await patches.insert_hooks.parse_extraction_rows(rows, chunk_id, now, file_path))
        if rag.enable_llm_cache_for_entity_extract:
            await _cache(rag, chunk_id, content, rows, extractor)
    return results
