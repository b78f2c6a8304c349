"""End to end through LightRAG 1.5.7: naive query with enable_rerank, fake LLM/embedding/tokenizer, offline."""

import asyncio

import numpy as np

from lightrag_prism.rerankers import TournamentReranker, as_rerank_model_func

from .fakes import pair

DOCS = ["Berlin is the capital of Germany.", "Rome is in Italy.", "Paris is the capital of France."]


class CharTokenizer:
    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, tokens):
        return "".join(map(chr, tokens))


async def fake_llm(prompt, system_prompt=None, history_messages=None, **kwargs):
    if "Passage A:" in prompt:
        a, b = pair(prompt)
        return "B" if "Paris" in b and "Paris" not in a else "A"
    return ""  # entity extraction: nothing


async def fake_embed(texts, **kwargs):
    return np.array([[len(t) % 7 + 1.0, t.count("a") + 1.0, 1.0] for t in texts])


async def _query(workdir):
    from lightrag import LightRAG, QueryParam
    from lightrag.utils import EmbeddingFunc, Tokenizer, use_llm_func_with_cache

    outcomes = []
    reranker = TournamentReranker(fake_llm)
    rag = LightRAG(
        working_dir=str(workdir),
        llm_model_func=fake_llm,
        tokenizer=Tokenizer("char", CharTokenizer()),
        embedding_func=EmbeddingFunc(embedding_dim=3, max_token_size=8192, func=fake_embed),
        rerank_model_func=as_rerank_model_func(reranker, on_outcome=outcomes.append),
    )
    await rag.initialize_storages()

    async def cached_llm(prompt, system_prompt=None):
        text, _ = await use_llm_func_with_cache(
            prompt, rag.llm_model_func, llm_response_cache=rag.llm_response_cache,
            system_prompt=system_prompt, cache_type="rerank",
        )
        return text

    reranker.llm = cached_llm
    try:
        await rag.ainsert(DOCS)
        param = QueryParam(mode="naive", enable_rerank=True, only_need_context=True, chunk_top_k=3)
        context = await rag.aquery("What is the capital of France?", param=param)
    finally:
        await rag.finalize_storages()
    return context, outcomes


def test_rerank_model_func_inside_lightrag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    context, outcomes = asyncio.run(_query(tmp_path / "store"))
    assert len(outcomes) == 1 and outcomes[0].llm_calls == 6 and outcomes[0].fallbacks == []
    positions = [context.find(doc) for doc in DOCS]
    assert all(p >= 0 for p in positions)
    assert positions[2] < positions[0] and positions[2] < positions[1]  # Paris chunk first
