"""``ensemble`` mode: query expansion, one dense retrieval pass, listwise LLM rerank fused with retrieval scores.

After the LangProBe HoVer "two-stage ensemble reranking" pipeline:

1. **Expansion.** The LLM rewrites the query into ``expansion_queries_min``..``expansion_queries_max`` queries
   (entity-focused, relationship-focused, negation) as JSON. The original query always comes first; duplicates
   (case/whitespace-insensitive) are dropped and the list is cut to ``expansion_queries_max`` *including* the
   original. An unparseable answer (or no LLM) leaves the original query alone; that is recorded.
2. **Retrieval.** All queries are embedded in one embedding call; LightRAG's own chunk vector search runs once per
   query, concurrently, with the precomputed embedding. Depth per query
   ``k = max(per_query_k, ceil(ensemble_top_k / n_queries))``: 5 for 5-7 queries, 21 for the query alone, so the
   candidate pool can always fill ``ensemble_top_k``.
3. **Retrieval score.** Rank ``r`` (0-based) in its query's list scores
   ``retrieval_score_max - (retrieval_score_max - retrieval_score_min) * r / (k - 1)`` (100 → 50; ``k = 1`` → 100).
   Chunks are deduplicated by id; a chunk found by several queries keeps its best score. Candidates are ordered by
   that score, ties by first appearance (query order, then rank).
4. **Listwise rerank.** :class:`~lightrag_prism.rerankers.ListwiseReranker` (``rerank_window_size`` 10,
   ``rerank_window_overlap`` 3) scores every candidate 0-100 (mean over the windows it is in).
5. **Fusion.** ``score = llm_score_weight * llm + retrieval_score_weight * retrieval`` (0.6 / 0.4); the top
   ``ensemble_top_k`` (21) are returned, ties by candidate order.

Without an LLM the listwise step is skipped: the score is the retrieval score and the order the retrieval order
(fallback recorded). A window whose answer is garbage gets the reranker's retrieval-rank scores (recorded).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from dataclasses import replace

import numpy as np

from ...context import QueryContext
from ...llm import parse_json_answer, total_parser
from ...rerankers import ListwiseReranker
from ...result import Retrieval, ScoredItem

logger = logging.getLogger(__name__)

KIND = "chunks"

EXPANSION_SYSTEM_PROMPT = "You write search queries for a passage retriever. You reply with JSON only."

EXPANSION_PROMPT = """Rewrite the query below into {min_n} to {max_n} diverse search queries that together find every \
passage needed to answer or verify it.

[[ ## query ## ]]
{query}

[[ ## instructions ## ]]
Include entity-focused queries (one per key entity), relationship-focused queries (how the entities are connected,
one per hop), and at least one negation query (what would contradict the claim or answer).
Reply with one JSON object and nothing else, for example:
{{"queries": ["first query", "second query", "third query"]}}

[[ ## queries ## ]]
"""

# Horizontal whitespace only: with \s a run of blank lines made every line start rescan the rest of the run
# (quadratic: 21 s on a 50,000-newline answer).
_LIST_LINE = re.compile(r"^[ \t]*(?:\d+[.)]|[-*•])[ \t]+(.+?)[ \t]*$", re.MULTILINE)


def _strings(value) -> list[str]:
    """Query strings out of a parsed JSON value: a list of strings/objects, or an object holding such a list."""
    if isinstance(value, dict):
        for key in ("queries", "expanded_queries", "search_queries", "query"):
            if key in value:
                return _strings(value[key])
        lists = [v for v in value.values() if isinstance(v, list)]
        return _strings(lists[0]) if len(lists) == 1 else []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict):
                text = item.get("query") or item.get("text")
                if isinstance(text, str):
                    out.append(text)
        return out
    return []


@total_parser()
def parse_expansion(text: str | None) -> list[str] | None:
    """Queries from an expansion answer: JSON first, then numbered/bulleted lines; ``None`` when nothing usable."""
    queries = _strings(parse_json_answer(text))
    if not queries and text:
        queries = [m.strip().strip('"').strip() for m in _LIST_LINE.findall(text)]
    queries = [" ".join(q.split()) for q in queries if isinstance(q, str) and q.strip()]
    return queries or None


def assemble_queries(query: str, expanded: list[str] | None, max_n: int) -> list[str]:
    """The original query first, then the expansions, deduplicated (case/whitespace-insensitive), at most ``max_n``."""
    seen, out = set(), []
    for q in [query] + list(expanded or []):
        key = " ".join(q.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out[:max(1, max_n)]


def rank_scores(k: int, high: float, low: float) -> np.ndarray:
    """Retrieval scores for ranks ``0..k-1``: linear from ``high`` down to ``low`` (``[high]`` for k = 1)."""
    if k <= 1:
        return np.full(max(k, 0), high, dtype=float)
    return high - (high - low) * np.arange(k) / (k - 1)


def merge_results(result_lists: list[list[dict]], k: int, high: float, low: float):
    """Deduplicate chunk lists by id; each chunk keeps its best rank score and the queries that found it.

    Returns ``(chunks, scores, found_by_queries)`` ordered by score, ties by first appearance.
    """
    per_rank = rank_scores(k, high, low)
    chunks: dict[str, dict] = {}
    best: dict[str, float] = {}
    sources: dict[str, list[int]] = {}
    for qi, results in enumerate(result_lists):
        for rank, chunk in enumerate(results[:k]):
            cid = chunk.get("chunk_id")
            if cid is None:
                continue
            score = float(per_rank[rank])
            if cid not in chunks:
                chunks[cid], best[cid], sources[cid] = chunk, score, []
            best[cid] = max(best[cid], score)
            sources[cid].append(qi)
    ids = list(chunks)
    scores = np.array([best[c] for c in ids], dtype=float)
    order = np.argsort(-scores, kind="stable")  # ties: first appearance
    return [chunks[ids[i]] for i in order], scores[order], [sources[ids[i]] for i in order]


async def expand_query(ctx: QueryContext, stats: dict) -> list[str]:
    p = ctx.param
    answer = await ctx.llm(EXPANSION_PROMPT.format(min_n=p.expansion_queries_min, max_n=p.expansion_queries_max,
                                                   query=ctx.query),
                           step="query_expansion", system_prompt=EXPANSION_SYSTEM_PROMPT, stats=stats)
    expanded = parse_expansion(answer)
    if answer is not None and expanded is None:
        logger.warning("ensemble: unparseable query expansion %r; using the query alone", answer[:200])
        ctx.retrieval.record_fallback("query_expansion", "unparseable answer: using the original query alone")
    queries = assemble_queries(ctx.query, expanded, p.expansion_queries_max)
    if expanded is not None and len(queries) < p.expansion_queries_min:
        ctx.retrieval.metadata["expansion_note"] = (
            f"{len(queries)} distinct queries (< expansion_queries_min={p.expansion_queries_min})")
    return queries


async def dense_pass(ctx: QueryContext, queries: list[str], k: int) -> list[list[dict]]:
    """LightRAG's chunk vector search for every query: one embedding call, searches run concurrently."""
    vectors = await ctx.embed(queries)
    search_param = replace(ctx.param, chunk_top_k=k)
    return list(await asyncio.gather(*(
        ctx.stock_search(query=q, query_param=search_param, query_embedding=vectors[i])
        for i, q in enumerate(queries))))


async def retrieve(ctx: QueryContext) -> Retrieval:
    p, stats = ctx.param, {"llm_calls": 0, "cache_hits": 0}
    queries = await expand_query(ctx, stats)
    k = max(p.per_query_k, math.ceil(p.ensemble_top_k / len(queries)))
    chunks, retrieval, sources = merge_results(await dense_pass(ctx, queries, k), k,
                                               p.retrieval_score_max, p.retrieval_score_min)
    found_by: tuple[str, ...] = ("dense",)
    if chunks and ctx.llm_configured:
        reranker = ListwiseReranker(ctx.reranker_llm("listwise_rerank", stats), window_size=p.rerank_window_size,
                                    overlap=p.rerank_window_overlap,
                                    max_concurrency=max(1, int(ctx.rag.llm_model_max_async)))
        outcome = await reranker.rerank(ctx.query, [c.get("content", "") for c in chunks])
        for note in outcome.fallbacks:
            ctx.retrieval.record_fallback("listwise_rerank", note)
        llm_scores = np.asarray(outcome.scores, dtype=float)
        final = p.llm_score_weight * llm_scores + p.retrieval_score_weight * retrieval
        found_by = ("dense", "listwise")
    else:
        if chunks:
            ctx.retrieval.record_fallback("listwise_rerank", "no LLM configured: retrieval order")
        llm_scores, final = None, retrieval
    top = np.argsort(-final, kind="stable")[:p.ensemble_top_k]
    items = [ScoredItem("chunk", chunks[i]["chunk_id"], float(final[i]), found_by,
                        data={**chunks[i], "retrieval_score": float(retrieval[i]),
                              "llm_score": None if llm_scores is None else float(llm_scores[i]),
                              "queries": [queries[q] for q in sources[i]]})
             for i in top]
    ctx.own_final_ranking(len(items))
    ctx.retrieval.chunks = items
    ctx.retrieval.metadata.update(
        expanded_queries=queries, per_query_k=k, candidates=len(chunks),
        llm_calls=stats["llm_calls"], llm_cache_hits=stats["cache_hits"],
        score_breakdown=[{"chunk_id": it.id, "final": it.score, "retrieval": it.data["retrieval_score"],
                          "llm": it.data["llm_score"], "queries": it.data["queries"]} for it in items])
    return ctx.retrieval
