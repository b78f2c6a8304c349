"""``tournament`` mode: dense retrieval of ``rerank_top_k`` chunks, pairwise LLM tournament, top ``return_top_k``.

The tournament is :class:`~lightrag_prism.rerankers.TournamentReranker` (after IBM granite-io's ``llmrerank``: all
pairs below 10 documents, knockout above, every comparison asked in both orders). Its judge is the instance's LLM
through LightRAG's cache and queue (``ctx.llm``; at most ``llm_model_max_async`` calls in flight), so a repeated
query sends no request. Chunk score = the tournament relevance in [0, 1]; metadata holds the full ranking
(``tournament_ranking``: chunk ids, best first), ``llm_calls`` and ``llm_cache_hits``.

Without an LLM the chunks keep their retrieval order (score ``1 - rank / n``; fallback recorded).
"""

from __future__ import annotations

from dataclasses import replace

from ...context import QueryContext
from ...rerankers import TournamentReranker
from ...result import Retrieval, ScoredItem

KIND = "chunks"


async def retrieve(ctx: QueryContext) -> Retrieval:
    p, stats = ctx.param, {"llm_calls": 0, "cache_hits": 0}
    chunks = await ctx.stock_search(query_param=replace(p, chunk_top_k=p.rerank_top_k))
    chunks = [c for c in chunks if c.get("chunk_id") is not None][:p.rerank_top_k]
    n = len(chunks)
    if n and ctx.llm_configured:
        reranker = TournamentReranker(ctx.reranker_llm("tournament_rerank", stats),
                                      max_concurrency=max(1, int(ctx.rag.llm_model_max_async)),
                                      cache_size=0)  # repeats are served by LightRAG's cache
        outcome = await reranker.rerank(ctx.query, [c.get("content", "") for c in chunks])
        for note in outcome.fallbacks:
            ctx.retrieval.record_fallback("tournament_rerank", note)
        order, scores = outcome.order, [outcome.relevance(i) for i in range(n)]
        found_by = ("dense", "tournament")
    else:
        if n:
            ctx.retrieval.record_fallback("tournament_rerank", "no LLM configured: retrieval order")
        order, scores, found_by = list(range(n)), [1.0 - i / n for i in range(n)], ("dense",)
    items = [ScoredItem("chunk", chunks[i]["chunk_id"], float(scores[i]), found_by, data=dict(chunks[i]))
             for i in order[:p.return_top_k]]
    ctx.own_final_ranking(len(items))
    ctx.retrieval.chunks = items
    ctx.retrieval.metadata.update(tournament_ranking=[chunks[i]["chunk_id"] for i in order], candidates=n,
                                  llm_calls=stats["llm_calls"], llm_cache_hits=stats["cache_hits"])
    return ctx.retrieval
