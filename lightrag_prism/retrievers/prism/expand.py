"""The three PrismRAG perspectives over a graph snapshot: multi-hop, query-aware PPR, FastRP; fused by score or rank.

Everything here works on the snapshot's arrays (CSR adjacency, incidence matrices) and on vectors fetched BY ID
(``vectors.py``), so it runs on every graph and vector backend. The kernels are ``lightrag_prism.graph``'s.

Query awareness (PrismRAG's formulas, with its bugs fixed — see docs/prism.md):

* ``ent_sim[v] = cos(entity v, ll-keyword embedding)``; ``rel_sim[e] = cos(relation e, hl-keyword embedding)``;
* seed weights ``softmax(ent_sim[seeds] / seed_temperature)``;
* PPR edge weight ``co-occurrence weight * (max(rel_sim, 0) + ppr_edge_floor)``: the similarity multiplies the
  stored weight (PrismRAG replaced it, raw and possibly negative). The floor (default 1.0) keeps an edge whose
  relation is unrelated to the query traversable at up to half the weight of a perfectly matching one instead of
  cutting it, which would make nodes dangling and hide everything behind them; on MuSiQue a sharper factor (floor
  0.05) cost 1.5 points of R@5 (docs/prism.md).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...graph import (
    cached_rows,
    edge_reweighted,
    fastrp_similarity,
    multihop_expand,
    normalized_score_fusion,
    path_to_seed,
    personalized_pagerank,
    reciprocal_rank_fusion,
    symmetric_transition,
    top_k,
)
from ...snapshot import GraphSnapshot
from ...vectors import entity_and_relation_matrices, entity_matrix
from ..views.fastrp import FastRPCache, fastrp_cache


FASTRP_THREAD = "prism-fastrp"  # the name (prefix) of FastRP's thread


def _fastrp_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=FASTRP_THREAD)


def _renew_fastrp_thread() -> None:
    # a forked child has no copy of the parent's thread, but the executor would count it as idle and never run a task
    global _BESIDE
    _BESIDE = _fastrp_thread()


# FastRP's scores are computed on this thread while the query's own thread runs multi-hop and the PPR: all three are
# single-threaded (fastrp_similarity is one np.vecdot, which releases the GIL), so a second core takes most of
# FastRP's pass over the embedding (57,000 x 256 on the pooled bench index) off the query's path: 0.7-1.4 ms a pooled
# prism query, paired (docs/benchmarks.md, stop 62). One thread: a query waits for its FastRP before it returns, so
# one event loop never has two of them in flight.
_BESIDE = _fastrp_thread()
os.register_at_fork(after_in_child=_renew_fastrp_thread)


class EntitySimilarity:
    """``cos(entity v, vector)`` by snapshot row, computed for the rows asked for and kept for the query.

    The full product streams the whole entity matrix (87 MB at 57,000 entities: about 7 ms of a ``prism`` query on
    the 9,000-passage pooled index) while multi-hop reads the rows around the seeds only. ``values()``: every row.
    """

    def __init__(self, matrix: np.ndarray, vector: np.ndarray) -> None:
        self.matrix, self.vector = matrix, vector
        self._values = np.full(len(matrix), np.nan, dtype=np.float32)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return cached_rows(self._values, rows, lambda missing: self.matrix[missing] @ self.vector)

    def values(self) -> np.ndarray:
        """(N,) every row's similarity."""
        if np.isnan(self._values).any():
            self._values = self.matrix @ self.vector
        return self._values


@dataclass
class QuerySignals:
    """Per-query similarities aligned with the snapshot (nodes, edges) and the query embedding."""

    ent_sim: EntitySimilarity
    rel_sim: np.ndarray
    query_vec: np.ndarray
    fact_sim: np.ndarray | None = None  # cos(relation e, query), computed in the same pass as rel_sim


@dataclass
class Expansion:
    """Seeds and what the perspectives found, in fused order (node indices into the snapshot)."""

    seeds: np.ndarray
    seed_weights: np.ndarray
    nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    found_by: list[tuple[str, ...]] = field(default_factory=list)
    paths: dict[int, tuple[int, ...]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    ppr: np.ndarray | None = None  # the full PPR vector (seeds included) when PPR ran


async def query_signals(ctx, snap: GraphSnapshot,
                        relation_scores: Callable[[np.ndarray], np.ndarray] | None = None) -> QuerySignals:
    """Entity/relation similarities to the ll/hl keywords (the query itself when a keyword list is empty).
    ``relation_scores(vector)``: (E,) cosines standing in for LightRAG's relation vectors (prism: the fact texts',
    ``FactView.scores``)."""
    texts = [ctx.query, ctx.ll_keywords or ctx.query, ctx.hl_keywords or ctx.query]
    vecs = await ctx.embed(texts)
    if relation_scores is None:
        ent, rel = await entity_and_relation_matrices(ctx.rag, snap)
        relation_scores = rel.__matmul__
    else:
        ent = await entity_matrix(ctx.rag, snap)
    if not snap.num_edges:
        return QuerySignals(EntitySimilarity(ent, vecs[1]), np.zeros(0, np.float32), vecs[0], np.zeros(0, np.float32))
    fact_sim = relation_scores(vecs[0])  # two matrix-vector products: a 2-column GEMM is ~4x slower in OpenBLAS
    rel_sim = fact_sim if ctx.hl_keywords in ("", ctx.query) else relation_scores(vecs[2])
    return QuerySignals(EntitySimilarity(ent, vecs[1]), rel_sim, vecs[0], fact_sim)


def seed_weights(ent_sim: EntitySimilarity, seeds: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(cos(seed, ll keywords) / temperature) over the seeds."""
    if seeds.size == 0:
        return np.zeros(0)
    z = ent_sim(seeds).astype(np.float64) / temperature
    w = np.exp(z - z.max())
    return w / w.sum()


def top_non_seed(scores: np.ndarray, seeds: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best positive-scoring non-seed nodes, best first (ties: lower index). The best ``k + len(seeds)``
    hold them: selected from ``scores`` as they are, no copy of the N scores with the seeds masked."""
    scores = np.asarray(scores)
    best = top_k(scores, k + len(seeds), above=0.0)
    best = best[~np.isin(best, seeds)][:k]
    return best, scores[best].astype(np.float64)


def edge_factor(rel_sim: np.ndarray, floor: float) -> np.ndarray:
    """(E,) query factor of each fact edge: ``max(cos(relation, query), 0) + floor`` (multiplies co-occurrence)."""
    return np.maximum(rel_sim.astype(np.float64), 0.0) + floor


def ppr_scores(snap: GraphSnapshot, seeds, weights, rel_sim, damping: float, floor: float) -> np.ndarray:
    """Query-aware personalized PageRank: seeds weighted, edges reweighted by relation-query similarity."""
    adj = edge_reweighted(snap.adj, edge_factor(rel_sim, floor)[snap.entry_edge])
    p = np.zeros(snap.num_nodes)
    p[seeds] = weights
    return personalized_pagerank(symmetric_transition(adj, entry_rows(snap)), p, damping=damping)


def entry_rows(snap: GraphSnapshot) -> np.ndarray:
    """The row of each stored entry of ``snap.adj`` (cached on the snapshot)."""
    if "adj_entry_rows" not in snap.derived:
        snap.derived["adj_entry_rows"] = np.repeat(np.arange(snap.num_nodes), np.diff(snap.adj.indptr))
    return snap.derived["adj_entry_rows"]


def fastrp_scores(snap: GraphSnapshot, previous: GraphSnapshot | None, seeds: np.ndarray,
                  weights: np.ndarray) -> np.ndarray:
    """:func:`~lightrag_prism.graph.fastrp_similarity` of every node to the weighted ``seeds`` (snapshot rows), in
    snapshot order; computed on the state's rows (a tombstone's zero row scores 0 and is dropped)."""
    return _state_scores(fastrp_cache(snap, previous), seeds, weights)


def _state_scores(cache: FastRPCache, seeds: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return fastrp_similarity(cache.state.embedding, cache.state_rows[seeds], weights)[cache.state_rows]


def fastrp_top(cache: FastRPCache, seeds: np.ndarray, weights: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` non-seed nodes most FastRP-similar to the weighted ``seeds`` and their scores (``top_non_seed``)."""
    return top_non_seed(_state_scores(cache, seeds, weights), seeds, k)


def start_fastrp(snap: GraphSnapshot, previous, seeds: np.ndarray, weights: np.ndarray, k: int) -> Future:
    """:func:`fastrp_top` on the FastRP thread (``_BESIDE``). The state is built (when the snapshot is new) and
    cached on the caller's thread, as before; the FastRP thread only reads it."""
    return _BESIDE.submit(fastrp_top, fastrp_cache(snap, previous), seeds, np.maximum(weights, 1e-12), k)


def fuse_ranked(perspectives: dict[str, tuple[list, np.ndarray]], method: str):
    """Fuse ranked (ids, scores) lists by ``"rrf"`` or min-max ``"score"``; None when all are empty."""
    named = {name: (list(ids), scores) for name, (ids, scores) in perspectives.items() if len(ids)}
    if not named:
        return None
    if method == "score":
        return normalized_score_fusion(named)
    return reciprocal_rank_fusion({name: ids for name, (ids, _) in named.items()})


def _as_lists(found: dict) -> dict:
    return {name: (ids.tolist(), scores) for name, (ids, scores) in found.items()}


def fused_vector(snap: GraphSnapshot, fused) -> np.ndarray:
    """(N,) fused score of each node (0 where no perspective found it)."""
    vec = np.zeros(snap.num_nodes)
    if fused is not None:
        vec[np.asarray(fused.ids, dtype=np.int64)] = fused.scores
    return vec


def expand(snap: GraphSnapshot, previous, seeds: np.ndarray, sig: QuerySignals, knobs: dict, param,
           weights: np.ndarray | None = None, ppr_fn=None) -> Expansion:
    """Run the perspectives that are on and fuse them (seeds are never returned as expanded nodes).
    ``weights``: the seeds' weights (default: softmax of their ll-keyword similarity, :func:`seed_weights`).
    ``ppr_fn(feed) -> (N,) entity scores``: replaces the entity-graph PPR and always runs (the prism mode's
    passage-aware PPR, which ranks passages); ``feed`` is the fused multi-hop/FastRP score of each node."""
    if weights is None:
        weights = seed_weights(sig.ent_sim, seeds, param.seed_temperature)
    out = Expansion(seeds=seeds, seed_weights=weights)
    if seeds.size == 0 or snap.num_nodes == 0:
        return out
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    fastrp = None
    if knobs["top_fastrp_nodes"] > 0 and snap.adj.nnz:  # beside multi-hop and the PPR, collected after them
        fastrp = start_fastrp(snap, previous, seeds, weights, knobs["top_fastrp_nodes"])
    multihop = None
    if knobs["max_hop"] > 0:
        multihop = multihop_expand(
            snap.adj, seeds, sig.ent_sim, sig.rel_sim[snap.entry_edge], max_hop=knobs["max_hop"],
            top_neighbors=knobs["top_neighbors"], threshold=param.multi_hop_relevance_threshold)
        found["multihop"] = (multihop.nodes, multihop.scores)
    if ppr_fn is not None:
        out.ppr = ppr_fn(fused_vector(snap, fuse_ranked(_as_lists(found), param.fusion_method)))
    elif knobs["top_ppr_nodes"] > 0 and snap.adj.nnz:
        out.ppr = ppr_scores(snap, seeds, weights, sig.rel_sim, knobs["ppr_damping"], param.ppr_edge_floor)
    if out.ppr is not None and knobs["top_ppr_nodes"] > 0:
        found["ppr"] = top_non_seed(out.ppr, seeds, knobs["top_ppr_nodes"])
    if fastrp is not None:
        found["fastrp"] = fastrp.result()
    out.counts = {name: int(ids.size) for name, (ids, _) in found.items()}
    fused = fuse_ranked(_as_lists(found), param.fusion_method)
    if fused is None:
        return out
    out.nodes = np.asarray(fused.ids, dtype=np.int64)
    out.scores = np.asarray(fused.scores, dtype=np.float64)
    out.found_by = [tuple(p.split("+")) for p in fused.provenance]
    if multihop is not None:  # at most top_neighbors * max_hop nodes
        out.paths = {int(v): tuple(path_to_seed(multihop, int(v))) for v in multihop.nodes.tolist()}
    return out


def node_scores(snap: GraphSnapshot, exp: Expansion) -> np.ndarray:
    """(N,) graph relevance: seeds by their weight relative to the best seed, expanded nodes by fused score
    relative to the best one, scaled into (0, 0.9] so seeds stay ahead; 0 elsewhere."""
    score = np.zeros(snap.num_nodes)
    if exp.seeds.size:
        score[exp.seeds] = exp.seed_weights / exp.seed_weights.max()
    if exp.nodes.size:
        score[exp.nodes] = 0.9 * exp.scores / max(exp.scores.max(), 1e-12)
    return score


def expanded_edges(snap: GraphSnapshot, exp: Expansion, sig: QuerySignals, exclude: set, cap: int):
    """Edges among visited nodes (seeds + expanded) with at least one expanded endpoint, not in ``exclude``
    (sorted name pairs), ranked by 0.5 * mean endpoint score + 0.5 * max(relation-query similarity, 0)."""
    if exp.nodes.size == 0 or snap.num_edges == 0 or cap <= 0:
        return np.zeros(0, np.int64), np.zeros(0)
    visited = np.zeros(snap.num_nodes, dtype=bool)
    visited[exp.seeds] = True
    expanded = np.zeros(snap.num_nodes, dtype=bool)
    expanded[exp.nodes] = True
    visited |= expanded
    src, tgt = snap.edge_src, snap.edge_tgt
    eids = np.flatnonzero(visited[src] & visited[tgt] & (expanded[src] | expanded[tgt]))
    ns = node_scores(snap, exp)
    scores = 0.25 * (ns[src[eids]] + ns[tgt[eids]]) + 0.5 * np.maximum(sig.rel_sim[eids], 0.0)
    order = np.lexsort((eids, -scores))
    eids, scores = eids[order], scores[order]
    keep = [i for i, e in enumerate(eids.tolist()) if tuple(sorted(snap.edge_key(e))) not in exclude][:cap]
    return eids[keep], scores[keep]


def chunk_support(snap: GraphSnapshot, node_score: np.ndarray, edge_ids: np.ndarray, edge_scores) -> np.ndarray:
    """(C,) graph support of each chunk: summed scores of the entities and relations it mentions."""
    edge_vec = np.zeros(snap.num_edges)
    edge_vec[edge_ids] = edge_scores
    return np.asarray(snap.entity_chunks.T @ node_score + snap.relation_chunks.T @ edge_vec).ravel()
