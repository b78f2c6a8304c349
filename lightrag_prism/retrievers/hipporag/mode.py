"""The ``hipporag`` mode: HippoRAG 2 retrieval over a LightRAG knowledge graph (KIND = "chunks").

1. Facts (one per relation, :mod:`.facts`) are scored against the query embedding; the top
   ``linking_top_k`` go to the recognition-memory filter (:mod:`.filter`), which keeps up to
   ``max_filtered_facts``.
2. Seeds: each kept fact's subject and object get ``fact score / #passages containing the entity`` (averaged over
   the facts naming it); the ``top_seed_phrases`` phrases with the best mean fact score are kept. With
   ``hipporag_name_linking`` (an addition to HippoRAG 2, shared with the prism mode), every entity the query names
   exactly gets ``1 / #passages`` more: a question's own names are the recognition signal a model without an LLM
   filter still has (docs/hipporag.md).
3. Every passage gets ``minmax(dense score) * passage_node_weight``; Personalized PageRank with
   ``hipporag_damping`` over the undirected entity + passage graph (:mod:`.graph`); passages are ranked
   by PPR probability; the ``hipporag_dense_head`` best passages by dense score go first (default 1, which keeps R@1
   at least at the dense level; 0 = HippoRAG 2's pure PPR order, see docs/hipporag.md). HippoRAG 2's settings are
   ``linking_top_k=5, passage_node_weight=0.05, hipporag_dense_head=0``; the defaults (10, 0.1, 1) were chosen
   offline on musique_train_100 (docs/hipporag.md has the ablation).

Fallbacks, recorded in ``metadata.prism.fallbacks``: no LLM or ``enable_fact_filter=False`` -> the top facts pass
unfiltered (HippoRAG's no-filter setting); LLM error or garbage -> the same; no fact survives -> dense ranking.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from ...graph import personalized_pagerank, top_k
from ...result import Retrieval, ScoredItem
from .facts import fact_view, minmax, top_facts
from .filter import STEP, recognise
from .graph import HippoGraph, hipporag_graph
from ...keywords import entity_spans
from ..passage_rank import PASSAGE_PPR_TOL, name_links, seed_vector

KIND = "chunks"
# Min-max over all facts gives the graph's worst fact 0; in a small graph that can be a kept fact, which would then
# seed nothing. Kept facts are floored at this score so every kept fact seeds its entities.
MIN_KEPT_FACT_SCORE = 0.01


def seed_weights(fact_rows: np.ndarray, fact_scores: np.ndarray, edge_src: np.ndarray, edge_tgt: np.ndarray,
                 num_chunks: np.ndarray, top_n: int) -> np.ndarray:
    """HippoRAG 2's phrase weights (``graph_search_with_fact_entities``) as a length-N vector.

    Each endpoint of a kept fact gets ``score / num_chunks`` (``/ 1`` for an entity in no passage), averaged over
    the facts naming it; only the ``top_n`` phrases by mean fact score keep their weight.
    """
    ends = np.concatenate([edge_src[fact_rows], edge_tgt[fact_rows]]).astype(np.int64)
    scores = np.concatenate([fact_scores, fact_scores]).astype(np.float64)
    # sums over the few entities the facts name (ascending), not over all N: 57,000 on the pooled bench index
    ents, which = np.unique(ends, return_inverse=True)
    count = np.bincount(which, minlength=ents.size).astype(np.float64)
    weighted = scores / np.where(num_chunks[ends] > 0, num_chunks[ends], 1.0)
    weights = np.bincount(which, weighted, minlength=ents.size) / count
    if top_n > 0 and ents.size > top_n:  # ties: the lower entity index, as ents is ascending
        mean_score = np.bincount(which, scores, minlength=ents.size) / count
        drop = np.ones(ents.size, dtype=bool)
        drop[top_k(mean_score, top_n)] = False
        weights[drop] = 0.0
    out = np.zeros(len(num_chunks))
    out[ents] = weights
    return out


FUSION_FOUND_BY = ("dense", "bm25")


def first_stage_found_by(param) -> tuple[str, ...]:
    """What found a passage of the first stage: the dense scores, and BM25 with the lexical channel."""
    return FUSION_FOUND_BY if param.lexical_weight > 0 else ("dense",)


def thin_graph(snapshot, graph: HippoGraph, param) -> str | None:
    """Why the graph has too little to say to rank the passages (fewer relations per passage than
    ``thin_graph_relations``: a walk from the question's entities reaches few passages, and those by chance), or
    None. Measured on the benches (docs/benchmarks.md): the Wikipedia-style graphs hold 6 to 9 relations per passage
    and their walk ranks better than the fusion; the PostgreSQL manual's and the notes' (offline extractor) 3.8 and
    2.2, and theirs ranks worse."""
    passages = int(graph.passage_valid.sum())
    per_passage = snapshot.num_edges / passages if passages else 0.0
    if per_passage >= param.thin_graph_relations:
        return None
    return (f"thin graph: {per_passage:.1f} relations per passage (thin_graph_relations="
            f"{param.thin_graph_relations:g}): passages ranked by the BM25 + dense fusion")


def fusion_items(ctx, graph: HippoGraph, query_vector: np.ndarray, k: int, reason: str) -> list[ScoredItem]:
    """The top ``k`` passages of the BM25 + dense fusion (equal weights), the fallback recorded."""
    ctx.retrieval.record_fallback("thin_graph", reason)
    return passage_items(graph, graph.first_stage(query_vector, ctx.query, 1.0), k, FUSION_FOUND_BY)


def passage_items(graph: HippoGraph, scores: np.ndarray, k: int, found_by: tuple[str, ...],
                  head_above: float = np.inf, head_found_by: tuple[str, ...] = ("dense",)) -> list[ScoredItem]:
    """The top ``k`` valid passages by ``scores``; those scoring above ``head_above`` came from the head
    (``head_found_by``)."""
    scores = np.where(graph.passage_valid, scores, -np.inf)
    return [ScoredItem("chunk", graph.passage_ids[i], float(scores[i]),
                       head_found_by if scores[i] > head_above else found_by,
                       {"content": graph.passage_data[i]["content"], "file_path": graph.passage_data[i]["file_path"]})
            for i in top_k(scores, k).tolist()]


async def _kept_facts(ctx, candidates: list) -> list[int]:
    """Candidate positions kept by the filter, or all of them when the filter is off or falls back."""
    if not ctx.param.enable_fact_filter:
        ctx.retrieval.record_fallback(STEP, "enable_fact_filter=False: unfiltered top facts used")
        return list(range(len(candidates)))
    kept = await recognise(ctx, candidates)
    return list(range(len(candidates))) if kept is None else kept


def dense_head(ppr: np.ndarray, head_rows: np.ndarray) -> np.ndarray:
    """Scores whose order is: the head passages (``head_rows``, best first; ``passage_rank.dense_head_rows``), then
    the rest in PPR order.

    The head items score ``1 + ppr.max() + (their head rank bonus)`` so they sort first; PPR scores are kept for the
    others. An empty head returns ``ppr`` unchanged (HippoRAG 2).
    """
    if head_rows.size == 0:
        return ppr
    scores = ppr.astype(np.float64, copy=True)
    scores[head_rows] = float(ppr.max()) + 1.0 + np.arange(len(head_rows), 0, -1, dtype=np.float64)
    return scores


def rank_passages(graph: HippoGraph, seeds: np.ndarray, dense: np.ndarray, param) -> np.ndarray:
    """PPR over the entity + passage graph from ``seeds`` and dense passage weights; passage scores (C,).

    Then the dense head (``hipporag_dense_head``; 0 gives HippoRAG 2's PPR order)."""
    personalization = np.concatenate([seeds, minmax(dense) * param.passage_node_weight])
    structure = graph.structure  # the transition is in the passage graph's solve order
    ppr = personalized_pagerank(graph.transition, personalization[structure.order], damping=param.hipporag_damping,
                                tol=PASSAGE_PPR_TOL)[structure.position]
    head = graph.head_rows(dense, param.hipporag_dense_head, param.dense_head_novelty)
    return dense_head(ppr[graph.n_entities:], head)


async def retrieve(ctx) -> Retrieval:
    started = time.perf_counter()
    rag, param, out = ctx.rag, ctx.param, ctx.retrieval
    snapshot = await ctx.snapshot()
    graph, facts = await asyncio.gather(hipporag_graph(rag, snapshot), fact_view(rag, snapshot))
    query_vector = (await ctx.embed([ctx.query]))[0]
    dense = graph.first_stage(query_vector, ctx.query, param.lexical_weight)
    first_found_by = first_stage_found_by(param)
    k = param.chunk_top_k or param.top_k
    rows, scores = top_facts(facts, query_vector, param.linking_top_k)
    candidates = [facts.facts[r] for r in rows.tolist()]
    kept = await _kept_facts(ctx, candidates) if candidates else []
    meta = out.metadata.setdefault("hipporag", {})
    meta.update(candidate_facts=[{"fact": list(f), "score": float(s)} for f, s in zip(candidates, scores)],
                facts=[{"fact": list(candidates[i]), "score": float(scores[i])} for i in kept],
                n_passages=len(graph.passage_ids), n_synonym_edges=graph.n_synonym_edges)
    linked = name_links(snapshot, entity_spans(ctx.query)) if param.hipporag_name_linking else np.zeros(0, np.int64)
    meta["name_links"] = [snapshot.node_ids[i] for i in linked.tolist()]
    thin = thin_graph(snapshot, graph, param)
    if not kept and linked.size == 0:
        if thin:
            out.chunks = fusion_items(ctx, graph, query_vector, k, thin)
        else:
            out.record_fallback("hipporag_ppr", "no fact survived and no entity named: first-stage ranking ("
                                + "+".join(first_found_by) + ")")
            out.chunks = passage_items(graph, dense, k, first_found_by)
        meta.update(seeds=[], ranking="fusion" if thin else "dense", seconds=time.perf_counter() - started)
        return out
    kept_rows = rows[kept]
    seeds = seed_weights(kept_rows, np.maximum(scores[kept], MIN_KEPT_FACT_SCORE), snapshot.edge_src, snapshot.edge_tgt,
                         graph.entity_num_chunks, param.top_seed_phrases)
    seeds = seed_vector(seeds, linked, graph.entity_num_chunks)
    if thin:
        out.chunks = fusion_items(ctx, graph, query_vector, k, thin)
    else:
        passage_scores = rank_passages(graph, seeds, dense, param)
        head_above = 1.0 if param.hipporag_dense_head > 0 else np.inf  # PPR probabilities are <= 1
        out.chunks = passage_items(graph, passage_scores, k, ("ppr",), head_above, first_found_by)
    seed_rows = np.flatnonzero(seeds)
    seed_rows = seed_rows[np.argsort(-seeds[seed_rows], kind="stable")]
    named = set(linked.tolist())
    out.entities = [ScoredItem("entity", snapshot.node_ids[i], float(seeds[i]), ("name",) if i in named else ("fact",),
                               dict(snapshot.node_data[i])) for i in seed_rows.tolist()]
    meta.update(seeds=[{"entity": e.id, "weight": e.score} for e in out.entities], ranking="fusion" if thin else "ppr",
                seconds=time.perf_counter() - started)
    return out
