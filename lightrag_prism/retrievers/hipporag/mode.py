"""The ``hipporag`` mode: HippoRAG 2 retrieval over a LightRAG knowledge graph (KIND = "chunks").

1. Facts (one per relation, ``views/facts.py``) are scored against the query embedding; the top
   ``linking_top_k`` go to the recognition-memory filter (:mod:`.filter`), which keeps up to
   ``max_filtered_facts``.
2. Seeds: each kept fact's subject and object get ``fact score / #passages containing the entity`` (averaged over
   the facts naming it); the ``top_seed_phrases`` phrases with the best mean fact score are kept. With
   ``hipporag_name_linking`` (an addition to HippoRAG 2, shared with the prism mode), every entity the query names
   exactly gets ``1 / #passages`` more: a question's own names are the recognition signal a model without an LLM
   filter still has (docs/hipporag.md).
3. Every passage gets ``minmax(dense score) * passage_node_weight``; Personalized PageRank with
   ``hipporag_damping`` over the undirected entity + passage graph (``views/passage_graph.py``); passages are ranked
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

from ...graph import personalized_pagerank
from ...keywords import entity_spans
from ...result import Retrieval, ScoredItem
from ..views.facts import fact_view, minmax, top_facts
from ..views.passage_graph import HippoGraph, hipporag_graph
from ..views.passage_rank import PASSAGE_PPR_TOL, name_links, seed_vector
from ..views.ranking import (MIN_KEPT_FACT_SCORE, bridge_home, dense_head, first_stage_found_by, fusion_items,
                             passage_items, seed_weights, thin_graph)
from .filter import STEP, recognise

KIND = "chunks"
async def _kept_facts(ctx, candidates: list) -> list[int]:
    """Candidate positions kept by the filter, or all of them when the filter is off or falls back."""
    if not ctx.param.enable_fact_filter:
        ctx.retrieval.record_fallback(STEP, "enable_fact_filter=False: unfiltered top facts used")
        return list(range(len(candidates)))
    kept = await recognise(ctx, candidates)
    return list(range(len(candidates))) if kept is None else kept


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
    thin = thin_graph(snapshot, graph, param)
    # a thin graph's passages are ranked by the fusion alone (fusion_items): the walk's first stage is not needed
    dense = None if thin else graph.first_stage(query_vector, ctx.query, param.lexical_weight)
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
    if not kept and linked.size == 0:
        if thin:
            out.chunks = fusion_items(ctx, graph, query_vector, k, thin)
        else:
            out.record_fallback("hipporag_ppr", "no fact survived and no entity named: first-stage ranking ("
                                + "+".join(first_found_by) + ")")
            out.chunks = passage_items(graph, dense, k, first_found_by)
        out.chunks = bridge_home(graph, snapshot, out.chunks, ctx.query, param.bridge_pool)
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
    out.chunks = bridge_home(graph, snapshot, out.chunks, ctx.query, param.bridge_pool)
    seed_rows = np.flatnonzero(seeds)
    seed_rows = seed_rows[np.argsort(-seeds[seed_rows], kind="stable")]
    named = set(linked.tolist())
    out.entities = [ScoredItem("entity", snapshot.node_ids[i], float(seeds[i]), ("name",) if i in named else ("fact",),
                               dict(snapshot.node_data[i])) for i in seed_rows.tolist()]
    meta.update(seeds=[{"entity": e.id, "weight": e.score} for e in out.entities], ranking="fusion" if thin else "ppr",
                seconds=time.perf_counter() - started)
    return out
