"""The ``prism`` mode's own seeds and chunk ranking (no LightRAG stage-1 search; everything on snapshot arrays).

* **Seeds** (:func:`link_seeds`): the ``prism_seed_entities`` entities closest to the ll keywords, plus both
  endpoints of the ``prism_seed_facts`` relations closest to the query (HippoRAG's fact linking). A seed's weight is
  its best similarity divided by the number of chunks it appears in (HippoRAG's node specificity), normalised to 1.
* **Chunk ranking** (:func:`rank_chunks`): entity relevance = the query-aware PPR vector (seeds included) plus the
  fused multi-hop/FastRP scores of the expanded entities, each divided by the entity's chunk count; it is pushed to
  chunks through ``snapshot.entity_chunks``. The chunk score is
  ``(1 - prism_graph_weight) * minmax(dense) + prism_graph_weight * minmax(graph)`` over the union of the dense top
  chunks and the graph's top chunks; the ``prism_dense_head`` best chunks by dense score go first (as hipporag).
"""

from __future__ import annotations

import numpy as np

from ..snapshot import GraphSnapshot

NUM_CHUNKS_KEY = "prism_entity_num_chunks"


def entity_num_chunks(snap: GraphSnapshot) -> np.ndarray:
    """(N,) number of chunks each entity appears in (at least 1), cached on the snapshot."""
    if NUM_CHUNKS_KEY not in snap.derived:
        counts = np.diff(snap.entity_chunks.indptr).astype(np.float64)
        snap.derived[NUM_CHUNKS_KEY] = np.maximum(counts, 1.0)
    return snap.derived[NUM_CHUNKS_KEY]


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest finite scores, best first (ties: lower index)."""
    idx = np.flatnonzero(np.isfinite(scores))
    if k <= 0 or idx.size == 0:
        return np.zeros(0, np.int64)
    if idx.size > k:
        idx = idx[np.argpartition(-scores[idx], k - 1)[:k]]
    return idx[np.lexsort((idx, -scores[idx]))]


def link_seeds(snap: GraphSnapshot, ent_sim: np.ndarray, fact_sim: np.ndarray, n_entities: int,
               n_facts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seed node indices, seed weights summing to 1, linked fact edge ids) — see the module doc."""
    best = np.full(snap.num_nodes, -np.inf)
    ents = top_indices(ent_sim, n_entities) if snap.num_nodes else np.zeros(0, np.int64)
    best[ents] = ent_sim[ents]
    facts = top_indices(fact_sim, n_facts) if snap.num_edges else np.zeros(0, np.int64)
    for ends in (snap.edge_src[facts], snap.edge_tgt[facts]):
        np.maximum.at(best, ends, fact_sim[facts])
    seeds = np.flatnonzero(np.isfinite(best))
    if seeds.size == 0:
        return seeds, np.zeros(0), facts
    weights = np.maximum(best[seeds], 1e-6) / entity_num_chunks(snap)[seeds]
    order = np.lexsort((seeds, -weights))
    return seeds[order], weights[order] / weights.sum(), facts


def minmax(x: np.ndarray) -> np.ndarray:
    if x.size == 0:
        return x
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x, dtype=np.float64)


def graph_chunk_scores(snap: GraphSnapshot, entity_score: np.ndarray) -> np.ndarray:
    """(C,) graph relevance of each chunk: summed specificity-weighted relevance of the entities it mentions."""
    return np.asarray(snap.entity_chunks.T @ (entity_score / entity_num_chunks(snap))).ravel()


def fuse_chunk_scores(dense: dict[str, float], graph: dict[str, float], graph_weight: float,
                      dense_head: int) -> list[tuple[str, float, tuple[str, ...]]]:
    """Rank the union of ``dense`` and ``graph`` candidates (id -> raw score; a missing score counts as the
    list's minimum): weighted min-max sum, then the ``dense_head`` best dense chunks moved to the front."""
    ids = list(dict.fromkeys(list(dense) + list(graph)))
    if not ids:
        return []
    d = np.array([dense.get(i, np.nan) for i in ids], dtype=np.float64)
    g = np.array([graph.get(i, np.nan) for i in ids], dtype=np.float64)
    d = minmax(np.where(np.isnan(d), np.nanmin(d) if np.isfinite(d).any() else 0.0, d))
    g = minmax(np.where(np.isnan(g), np.nanmin(g) if np.isfinite(g).any() else 0.0, g))
    score = (1.0 - graph_weight) * d + graph_weight * g
    head = [i for i in sorted(dense, key=lambda c: -dense[c])[:max(dense_head, 0)]]
    if head:
        top = float(score.max()) + 1.0
        for rank, cid in enumerate(head):
            score[ids.index(cid)] = top + len(head) - rank
    order = np.lexsort((np.arange(len(ids)), -score))
    found = [tuple(n for n, src in (("dense", dense), ("graph", graph)) if ids[i] in src) for i in order]
    return [(ids[i], float(score[i]), fb) for i, fb in zip(order.tolist(), found)]
