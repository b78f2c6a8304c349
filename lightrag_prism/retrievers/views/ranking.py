"""Passage ranking steps shared by the ``hipporag`` and ``prism`` modes: HippoRAG 2's seed weights from kept facts,
the dense head, the thin-graph fallback to the BM25 + dense fusion, the bridge passage at rank 2, and ranked
passages as result items."""

from __future__ import annotations

import dataclasses

import numpy as np

from ...graph import top_k
from ...result import ScoredItem
from ...snapshot import GraphSnapshot
from .lexical import terms
from .passage_graph import HippoGraph, variant_key

BRIDGE_FOUND_BY = "bridge"
ENTITY_COLUMNS_KEY = "prism_entity_chunk_columns"

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


def _entity_columns(snapshot: GraphSnapshot):
    """The snapshot's chunk -> entity incidence by chunk (CSC of ``entity_chunks``), cached on the snapshot."""
    if ENTITY_COLUMNS_KEY not in snapshot.derived:
        snapshot.derived[ENTITY_COLUMNS_KEY] = snapshot.entity_chunks.tocsc()
    return snapshot.derived[ENTITY_COLUMNS_KEY]


def bridge_rows(graph: HippoGraph, snapshot: GraphSnapshot, row: int, question: str) -> set[int]:
    """The home passages (``HippoGraph.home_rows``: titled by the name) of the entities passage ``row`` names and
    the question does not: the passages a two-hop question's second hop starts from."""
    if row >= snapshot.entity_chunks.shape[1]:  # a passage beyond the graph's chunks names no entity
        return set()
    asked, homes, names = set(terms(question)), graph.home_rows, snapshot.node_ids
    found = set()
    for entity in _entity_columns(snapshot)[:, row].indices.tolist():
        name = names[entity]
        if not set(terms(name)) <= asked:
            found.update(homes.get(variant_key(name), ()))
    found.discard(row)
    return found


def bridge_home(graph: HippoGraph, snapshot: GraphSnapshot, items: list[ScoredItem], question: str,
                pool: int) -> list[ScoredItem]:
    """``items`` (ranked passages) with a bridge passage at rank 2: the best ranked of the first ``pool`` whose title
    names an entity that the first passage names and the question does not (:func:`bridge_rows`). A two-hop question
    names its first passage; that passage names the bridge; the answer is on the bridge's own page ("Who heads the
    department in which Tidewell's CTO studied?": the CTO's page names the University of Halden, whose page
    answers). Measured in docs/prism.md ("The bridge"). Unchanged when no such passage is among them (``pool`` 0:
    off); the passage moved up scores as the one it displaces and is found by ``bridge`` as well."""
    if pool <= 1 or len(items) < 3:
        return items
    first = graph.passage_row.get(items[0].id)
    candidates = bridge_rows(graph, snapshot, first, question) if first is not None else set()
    position = next((k for k in range(1, min(pool, len(items)))
                     if graph.passage_row.get(items[k].id) in candidates), None)
    if position is None:
        return items
    moved = items[position]
    found_by = moved.found_by if BRIDGE_FOUND_BY in moved.found_by else (*moved.found_by, BRIDGE_FOUND_BY)
    moved = dataclasses.replace(moved, score=max(moved.score, items[1].score), found_by=found_by)
    return [items[0], moved] + items[1:position] + items[position + 1:]
