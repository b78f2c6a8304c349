"""The ``prism`` mode and the PrismRAG perspectives inside LightRAG's local/global/hybrid/mix.

* ``retrieve(ctx)`` (mode ``"prism"``): no LightRAG stage-1 search. Seeds come from fact linking and name linking
  (``passage_rank``), multi-hop and FastRP expand them, and one query-aware PPR over entities and passages (HippoRAG's
  graph view, shared with the hipporag mode, re-weighted per query) is the PPR perspective and ranks the chunks.
  Entities/relations reach LightRAG without ``source_id`` (``OWN_CHUNK_RANKING``), so its chunk merge keeps this
  order.
* ``augment(ctx, stock_result)``: called by ``query.PrismHooks.kg_search`` for a stock KG mode when a perspective
  knob (or ``enable_recognition``) is on. LightRAG's own items come first, unchanged; expanded entities, relations
  and their source chunks (ranked by query similarity) are appended. LightRAG then applies its token budgets.

Both set ``ctx.retrieval``, so ``aquery_data`` shows each item's ``score``, ``found_by`` and (multi-hop) ``path``.
With ``enable_recognition`` the LLM filter of ``recognition.py`` runs on the result.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from ...graph import top_k
from ...keywords import entity_spans
from ...param import resolve_prism_knobs
from ...result import Retrieval, ScoredItem, relation_id
from ...snapshot import GraphSnapshot
from ...vectors import chunk_matrix
from . import expand as px
from ..recognition import filter_retrieval
from ..views import passage_rank as pr
from ..views.facts import fact_view, rank_facts
from ..views.passage_graph import HippoGraph, hipporag_graph
from ..views.ranking import (MIN_KEPT_FACT_SCORE, bridge_home, dense_head, first_stage_found_by, fusion_items,
                             passage_items, seed_weights, thin_graph)

KIND = "kg"
# query.py hands LightRAG our entities/relations without source_id, so its chunk merge keeps our chunk order
OWN_CHUNK_RANKING = True
STOCK = ("stock",)


def reads_keywords(param) -> bool:
    """Whether a ``prism`` query reads LightRAG's ll/hl keywords: only to embed them (``prism_keyword_vectors``);
    otherwise the query's own vector stands in, and asking the LLM for keywords would be a wasted call."""
    return bool(param.prism_keyword_vectors)


def _pair(record: dict) -> tuple[str, str]:
    if record.get("src_id") is not None and record.get("tgt_id") is not None:
        return str(record["src_id"]), str(record["tgt_id"])
    src, tgt = record.get("src_tgt") or ("", "")
    return str(src), str(tgt)


def _degrees(snap: GraphSnapshot) -> np.ndarray:
    if "degrees" not in snap.derived:
        snap.derived["degrees"] = np.diff(snap.adj.indptr)
    return snap.derived["degrees"]


def _entity_item(snap: GraphSnapshot, i: int, score: float, found_by, path=()) -> ScoredItem:
    name = snap.node_ids[i]
    data = {k: v for k, v in snap.node_data[i].items() if k != "id"}
    data.update(entity_name=name, rank=int(_degrees(snap)[i]))
    return ScoredItem("entity", name, float(score), tuple(found_by), data, tuple(snap.node_ids[j] for j in path))


def _edge_item(snap: GraphSnapshot, e: int, score: float, found_by) -> ScoredItem:
    src, tgt = snap.edge_key(e)
    data = {k: v for k, v in snap.edge_data[e].items() if k not in ("source", "target")}
    deg = _degrees(snap)
    data.update(src_id=src, tgt_id=tgt, rank=int(deg[snap.edge_src[e]] + deg[snap.edge_tgt[e]]))
    return ScoredItem("relation", relation_id(src, tgt), float(score), tuple(found_by), data)


def _stock_items(snap, stock: dict, exp: px.Expansion, sig: px.QuerySignals) -> tuple[list, list, list]:
    """LightRAG's own items as ScoredItems (score: seed weight / relation similarity / dense rank)."""
    weight = dict(zip((snap.node_ids[i] for i in exp.seeds.tolist()), exp.seed_weights.tolist()))
    entities = [ScoredItem("entity", r["entity_name"], weight.get(r["entity_name"], 0.0), STOCK, r)
                for r in stock["final_entities"]]
    relations = []
    for r in stock["final_relations"]:
        src, tgt = _pair(r)
        e = snap.edge_of(src, tgt)
        score = max(float(sig.rel_sim[e]), 0.0) if e is not None else 0.0
        relations.append(ScoredItem("relation", relation_id(src, tgt), score, STOCK,
                                    {**r, "src_id": src, "tgt_id": tgt}))
    chunks = [ScoredItem("chunk", c.get("chunk_id") or c.get("id"), 1.0 / (i + 1), ("dense",), c)
              for i, c in enumerate(stock["vector_chunks"])]
    return entities, relations, chunks


def _seeds(snap: GraphSnapshot, stock: dict) -> np.ndarray:
    names = [r.get("entity_name") for r in stock["final_entities"]]
    idx = [snap.node_index[n] for n in dict.fromkeys(names) if n in snap.node_index]
    return np.asarray(idx, dtype=np.int64)


def _expanded_items(snap, exp: px.Expansion, sig, stock_relations: list[ScoredItem], cap: int,
                    entity_cap: int | None = None):
    """Items of the expanded entities (the first ``entity_cap``, default all) and of at most ``cap`` edges."""
    entities = [_entity_item(snap, v, s, fb, exp.paths.get(v, ()))
                for v, s, fb in zip(exp.nodes[:entity_cap].tolist(), exp.scores.tolist(), exp.found_by)]
    perspectives = dict(zip(exp.nodes.tolist(), exp.found_by))
    exclude = {tuple(sorted((r.data["src_id"], r.data["tgt_id"]))) for r in stock_relations}
    eids, scores = px.expanded_edges(snap, exp, sig, exclude, cap)
    relations = []
    for e, score in zip(eids.tolist(), scores.tolist()):
        ends = (int(snap.edge_src[e]), int(snap.edge_tgt[e]))
        found_by = tuple(dict.fromkeys(p for v in ends for p in perspectives.get(v, ())))
        relations.append(_edge_item(snap, e, score, found_by))
    return entities, relations, eids, scores


async def _chunk_items(ctx, ranked: list[tuple[str, float, tuple[str, ...]]]) -> list[ScoredItem]:
    """Chunk ScoredItems with their text (chunks missing from text storage are dropped)."""
    if not ranked:
        return []
    records = await ctx.rag.text_chunks.get_by_ids([cid for cid, _, _ in ranked])
    items = []
    for (cid, score, found_by), rec in zip(ranked, records):
        if rec and rec.get("content") is not None:
            data = {"content": rec["content"], "file_path": rec.get("file_path", "unknown_source"),
                    "created_at": rec.get("create_time")}
            items.append(ScoredItem("chunk", cid, float(score), found_by, data))
    return items


def _cap(param) -> int:
    return int(param.chunk_top_k or param.top_k or 20)


async def _expanded_chunks(ctx, snap, exp, sig, eids, exclude: set) -> list[ScoredItem]:
    """Source chunks of the expanded entities and relations, ranked by query similarity (augment path)."""
    node_vec = np.zeros(snap.num_nodes)
    node_vec[exp.nodes] = 1.0
    support = px.chunk_support(snap, node_vec, eids, np.ones(len(eids)))
    cand = np.flatnonzero(support > 0)
    if cand.size == 0:
        return []
    sims = (await chunk_matrix(ctx.rag, snap))[cand] @ sig.query_vec
    order = np.lexsort((cand, -sims))
    ranked = [(snap.chunk_ids[c], float(s), ("expansion",)) for c, s in zip(cand[order], sims[order])
              if snap.chunk_ids[c] not in exclude]
    return await _chunk_items(ctx, ranked[: _cap(ctx.param)])


async def _expand(ctx, stock: dict):
    """Seeds from LightRAG's result, the perspectives, and the items they add."""
    snap = await ctx.snapshot()
    knobs = resolve_prism_knobs(ctx.param)
    sig = await px.query_signals(ctx, snap)
    exp = px.expand(snap, ctx.rag._snapshots.previous, _seeds(snap, stock), sig, knobs, ctx.param)
    ctx.retrieval.metadata["expansion"] = {"knobs": knobs, "seeds": int(exp.seeds.size), "found": exp.counts,
                                       "expanded_entities": int(exp.nodes.size)}
    return snap, sig, exp


async def augment(ctx, stock_result: dict) -> dict:
    """LightRAG's stage-1 result with the expanded entities, relations and chunks appended (see module doc)."""
    snap, sig, exp = await _expand(ctx, stock_result)
    entities, relations, chunks = _stock_items(snap, stock_result, exp, sig)
    new_entities, new_relations, eids, escores = _expanded_items(snap, exp, sig, relations, ctx.param.top_k)
    seen_chunks = {c.id for c in chunks}
    new_chunks = await _expanded_chunks(ctx, snap, exp, sig, eids, seen_chunks)
    retrieval = ctx.retrieval
    retrieval.entities = entities + new_entities
    retrieval.relations = relations + new_relations
    retrieval.chunks = chunks + new_chunks
    if ctx.param.enable_recognition:
        await filter_retrieval(ctx, retrieval)
    return _as_search_result(retrieval, stock_result)


async def _linked_seeds(ctx, snap, sig: px.QuerySignals) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N,) seed weights, the linked fact ids and their scores (fact linking + name linking, see passage_rank).
    When nothing links (no fact asked for, no name in the query), the entity nearest the query is the seed."""
    param = ctx.param
    fact_ids, fact_scores = rank_facts(sig.fact_sim, param.prism_seed_facts)
    num_chunks = pr.entity_num_chunks(snap)
    seeds = seed_weights(fact_ids, np.maximum(fact_scores, MIN_KEPT_FACT_SCORE), snap.edge_src, snap.edge_tgt,
                         num_chunks, param.prism_seed_phrases)
    # the query's own spans only: the offline ll keywords add common nouns ("state", "author") that name entities
    spans = entity_spans(ctx.query) if param.prism_name_linking else []
    linked = pr.name_links(snap, spans)
    ctx.retrieval.metadata["name_links"] = [snap.node_ids[i] for i in linked.tolist()]
    if not seeds.any() and linked.size == 0 and snap.num_nodes:
        linked = top_k(sig.ent_sim.values(), 1)
        ctx.retrieval.record_fallback("prism_seeds", f"nothing linked: nearest entity {snap.node_ids[linked[0]]!r}")
    return pr.seed_vector(seeds, linked, num_chunks), fact_ids, fact_scores


def _ranked_chunks(hippo: HippoGraph, scores: np.ndarray, dense: np.ndarray, head_rows: np.ndarray, param,
                   ranked_by: str):
    """The top chunks by ``scores`` (PPR probabilities), after the head passages (``head_rows``)."""
    first = first_stage_found_by(param)
    if ranked_by == "dense":
        return passage_items(hippo, dense, _cap(param), first)
    return passage_items(hippo, dense_head(scores, head_rows), _cap(param), (ranked_by,), head_above=1.0,  # head > 1
                         head_found_by=first)


def _ppr_feed(seed_vec: np.ndarray, feed: np.ndarray, num_chunks: np.ndarray, weight: float) -> np.ndarray:
    """Entity personalization: the seeds plus ``weight`` x their total mass spread over the multi-hop/FastRP
    nodes by fused score / passage count (a node in many passages is weak evidence, as for seeds)."""
    out = seed_vec.copy()
    spread = feed / num_chunks
    if weight > 0 and spread.sum() > 0:
        out += weight * seed_vec.sum() * spread / spread.sum()
    return out


def _linked_items(snap, exp: px.Expansion, fact_ids: np.ndarray, fact_scores: np.ndarray) -> tuple[list, list]:
    seeds = [_entity_item(snap, v, w, ("seed",)) for v, w in zip(exp.seeds.tolist(), exp.seed_weights.tolist())]
    facts = [_edge_item(snap, e, s, ("fact",)) for e, s in zip(fact_ids.tolist(), fact_scores.tolist())]
    return seeds, facts


async def retrieve(ctx) -> Retrieval:
    """Mode ``prism``: fact + name linking as seeds, multi-hop and FastRP expansion, and one query-aware PPR over
    entities and passages whose passage scores rank the chunks (see the module docs of passage_rank)."""
    snap, param = await ctx.snapshot(), ctx.param
    knobs = resolve_prism_knobs(param)
    if not param.prism_keyword_vectors:  # the query's own vector stands in for both keyword lists
        ctx.ll_keywords = ctx.hl_keywords = ""
    hippo, facts = await asyncio.gather(hipporag_graph(ctx.rag, snap), fact_view(ctx.rag, snap))  # shared view
    sig = await px.query_signals(ctx, snap, relation_scores=facts.scores)  # fact texts: one relation matrix
    seed_vec, fact_ids, fact_scores = await _linked_seeds(ctx, snap, sig)
    seeds = np.flatnonzero(seed_vec)
    seeds = seeds[np.lexsort((seeds, -seed_vec[seeds]))]
    dense = hippo.first_stage(sig.query_vec, ctx.query, param.lexical_weight)
    head_rows = hippo.head_rows(dense, param.prism_dense_head, param.dense_head_novelty)
    passage_scores = {}

    def passage_aware_ppr(feed: np.ndarray) -> np.ndarray:
        entity_weights = _ppr_feed(seed_vec, feed, pr.entity_num_chunks(snap), param.prism_expansion_weight)
        passage_weights = pr.passage_personalization(dense, param.prism_passage_weight, head_rows,
                                                     param.prism_head_seed_weight * entity_weights.sum())
        entity, passages = pr.passage_ppr(hippo.structure, entity_weights, passage_weights,
                                          px.edge_factor(sig.rel_sim, param.ppr_edge_floor), knobs["ppr_damping"])
        passage_scores["ppr"] = passages
        return entity

    weights = seed_vec[seeds] / seed_vec[seeds].sum() if seeds.size else np.zeros(0)
    exp = px.expand(snap, ctx.rag._snapshots.previous, seeds, sig, knobs, param, weights=weights,
                    ppr_fn=passage_aware_ppr)
    ctx.retrieval.metadata["expansion"] = {"knobs": knobs, "seeds": int(seeds.size), "found": exp.counts,
                                           "expanded_entities": int(exp.nodes.size), "linked_facts": int(fact_ids.size)}
    # top_k entities and top_k relations, as LightRAG's local and global modes return: every item beyond them is
    # rendered and token-counted by LightRAG's context assembly (on the pooled bench, 70 entities made it 17 ms)
    top_k = max(param.top_k, 0)
    seed_items, fact_items = (items[:top_k] for items in _linked_items(snap, exp, fact_ids, fact_scores))
    new_entities, new_relations, _, _ = _expanded_items(snap, exp, sig, fact_items, top_k - len(fact_items),
                                                        entity_cap=top_k - len(seed_items))
    retrieval = ctx.retrieval
    retrieval.entities = seed_items + new_entities
    retrieval.relations = fact_items + new_relations
    thin = thin_graph(snap, hippo, param)
    if thin:  # the entities and relations above still make the answer's context
        retrieval.chunks = fusion_items(ctx, hippo, sig.query_vec, _cap(param), thin)
    elif "ppr" in passage_scores:
        retrieval.chunks = _ranked_chunks(hippo, passage_scores["ppr"], dense, head_rows, param, "ppr")
    else:  # an empty graph: LightRAG answers "no results" for a KG mode without entities anyway
        retrieval.chunks = _ranked_chunks(hippo, dense, dense, head_rows, param, "dense")
    retrieval.chunks = bridge_home(hippo, snap, retrieval.chunks, ctx.query, param.bridge_pool)
    if param.enable_recognition:
        await filter_retrieval(ctx, retrieval)
    return retrieval


def _record(item: ScoredItem) -> dict[str, Any]:
    """An entity or relation item as a LightRAG stage-1 record (stock items unchanged)."""
    if item.kind == "entity":
        return item.data if "stock" in item.found_by else {**item.data, "entity_name": item.id}
    return {**item.data, "src_tgt": (item.data["src_id"], item.data["tgt_id"])}


def _as_search_result(retrieval: Retrieval, stock: dict) -> dict:
    """The augmented stage-1 result. Expanded chunks are NOT put among ``vector_chunks``: LightRAG's chunk merge
    puts vector chunks first, which would push the expansion ahead of the stock entities' own chunks. The expanded
    entities and relations keep their ``source_id``, so LightRAG brings their chunks in after the stock ones,
    ranked by query similarity (``kg_chunk_pick_method``)."""
    return {**stock, "final_entities": [_record(e) for e in retrieval.entities],
            "final_relations": [_record(r) for r in retrieval.relations]}
