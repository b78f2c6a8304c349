"""Turn the ``fidelis`` mode's reasoning paths into ranked relations, entities and chunks.

Chunks: with an LLM (it planned, chose the beams and judged when to stop) the chunks the paths cite come first,
best path first, and dense passages fill the slots left. Without one the paths were chosen by embedding scores
alone, which put the mode 8 points of R@5 below dense retrieval on MuSiQue: the chunks are then the dense ranking
whose first :data:`DENSE_HEAD` places are kept, then the rest of it fused with the path ranking by reciprocal rank
(:func:`fuse`), so below the head a passage both find moves up and a passage only the paths found gets in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import scipy.sparse as sp

from ...result import ScoredItem, relation_id
from ...snapshot import GraphSnapshot
from ...vectors import chunk_matrix

if TYPE_CHECKING:
    from ...context import QueryContext
    from .scoring import HopScorer, Path

FOUND_BY = ("fidelis",)
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.), as the ensemble mode uses it
# Without an LLM the dense ranking keeps its first five places: any boost of path-cited passages above them cost
# 3 to 8 points of R@1/R@2 on HotpotQA (the beams, chosen by embedding score alone, cite the wrong neighbours
# there), while fusing below them gains on both bench sets (docs/fidelis.md).
DENSE_HEAD = 5
CHUNK_FIELDS = ("content", "file_path", "full_doc_id", "chunk_order_index", "created_at")


def _relations(snapshot: GraphSnapshot, paths: list["Path"], label: Callable) -> list[ScoredItem]:
    """Each path's relations in path order, paths best first; a relation on several paths is listed once."""
    out, seen = [], set()
    for path in paths:
        names = tuple(snapshot.node_ids[n] for n in path.nodes)
        for i, e in enumerate(path.edges):
            if e in seen:
                continue
            seen.add(e)
            src, tgt = names[i], names[i + 1]
            data = {**snapshot.edge_data[e], "src_id": src, "tgt_id": tgt, "relation": label(snapshot, e)}
            out.append(ScoredItem("relation", relation_id(src, tgt), path.score, FOUND_BY, data, names))
    return out


def _entities(snapshot: GraphSnapshot, scorer: "HopScorer", paths: list["Path"]) -> tuple[np.ndarray, np.ndarray,
                                                                                           list[ScoredItem]]:
    nodes = np.array([n for p in paths for n in p.nodes], dtype=np.int64)
    scores = np.array([p.score for p in paths for _ in p.nodes], dtype=np.float64)
    best = np.full(snapshot.num_nodes, -np.inf)
    np.maximum.at(best, nodes, scores)
    unique = np.unique(nodes)
    sim = scorer.ent_sim(unique)
    order = unique[np.lexsort((-sim, -best[unique]))]
    path_of = {}
    for p in paths:  # the best path through each entity (paths are best first)
        for n in p.nodes:
            path_of.setdefault(n, tuple(snapshot.node_ids[m] for m in p.nodes))
    items = [ScoredItem("entity", snapshot.node_ids[n], float(best[n]), FOUND_BY,
                        dict(snapshot.node_data[n]), path_of[n]) for n in order.tolist()]
    return unique, best, items


def _chunk_scores(snapshot: GraphSnapshot, paths: list["Path"], best_node: np.ndarray,
                  nodes: np.ndarray) -> np.ndarray:
    """Per chunk: the best path score of a path relation or entity citing it (-inf when none)."""
    edges = np.array([e for p in paths for e in p.edges], dtype=np.int64)
    edge_scores = np.array([p.score for p in paths for _ in p.edges], dtype=np.float64)
    n_chunks = len(snapshot.chunk_ids)
    best = np.full(n_chunks, -np.inf)
    for incidence, rows, row_scores in ((snapshot.relation_chunks, edges, edge_scores),
                                        (snapshot.entity_chunks, nodes, best_node[nodes])):
        if len(rows) and n_chunks:
            coo = sp.coo_matrix(incidence[rows])
            np.maximum.at(best, coo.col, row_scores[coo.row])
    return best


async def _chunks(ctx: "QueryContext", snapshot: GraphSnapshot, best: np.ndarray) -> list[ScoredItem]:
    cited = np.flatnonzero(np.isfinite(best))
    if not len(cited):
        return []
    ids = [snapshot.chunk_ids[c] for c in cited.tolist()]
    query_vec = (await ctx.embed([ctx.query]))[0]
    sims = (await chunk_matrix(ctx.rag, snapshot))[cited] @ query_vec  # cached per snapshot
    order = np.lexsort((-sims, -best[cited]))
    limit = getattr(ctx.param, "chunk_top_k", None) or len(order)
    order = order[:limit]
    records = await ctx.rag.text_chunks.get_by_ids([ids[i] for i in order.tolist()])
    out = []
    for i, record in zip(order.tolist(), records):
        if record:
            data = {k: record[k] for k in CHUNK_FIELDS if k in record}
            out.append(ScoredItem("chunk", ids[i], float(best[cited[i]]), FOUND_BY, data))
    return out


async def assemble(ctx: "QueryContext", snapshot: GraphSnapshot, scorer: "HopScorer", paths: list["Path"],
                   label: Callable, topics: list[int]) -> None:
    """Fill ``ctx.retrieval`` from ``paths`` (already best first and reduced to paths with at least one relation);
    with no path, the ``topics`` the search started from are the entities (LightRAG answers a KG mode only when
    it has entities or relations)."""
    retrieval = ctx.retrieval
    path_chunks = []
    if paths:
        retrieval.relations = _relations(snapshot, paths, label)
        nodes, best_node, retrieval.entities = _entities(snapshot, scorer, paths)
        path_chunks = await _chunks(ctx, snapshot, _chunk_scores(snapshot, paths, best_node, nodes))
    elif topics:
        sims = scorer.ent_sim(np.asarray(topics, dtype=np.int64))
        retrieval.entities = [ScoredItem("entity", snapshot.node_ids[t], float(sim), FOUND_BY,
                                         dict(snapshot.node_data[t])) for t, sim in zip(topics, sims.tolist())]
    limit = getattr(ctx.param, "chunk_top_k", None) or len(path_chunks)
    if ctx.llm_configured:
        taken = {c.id for c in path_chunks}
        fill = [c for c in await _dense(ctx, limit) if c.id not in taken] if len(taken) < limit else []
        retrieval.chunks = path_chunks + fill[:limit - len(taken)]
    else:
        retrieval.chunks = fuse(await _dense(ctx, limit), path_chunks)[:limit]


async def _dense(ctx: "QueryContext", limit: int) -> list[ScoredItem]:
    """The ``limit`` passages closest to the query (``naive``'s ranking)."""
    if limit <= 0:
        return []
    query_vec = (await ctx.embed([ctx.query]))[0]
    rows = await ctx.rag.chunks_vdb.query(ctx.query, top_k=limit, query_embedding=query_vec.tolist())
    return [ScoredItem("chunk", r["id"], 0.0, ("dense",), {k: r[k] for k in CHUNK_FIELDS if k in r}) for r in rows]


def fuse(dense: list[ScoredItem], path: list[ScoredItem], head: int = DENSE_HEAD) -> list[ScoredItem]:
    """The first ``head`` dense chunks, then the other dense chunks and the path chunks by reciprocal rank fusion
    (score = sum of 1 / (RRF_K + rank) over the two rankings; ties keep the dense order). A chunk in both is
    credited to both."""
    kept = dense[:head]
    taken = {item.id for item in kept}
    scores: dict[str, float] = {}
    items: dict[str, ScoredItem] = {}
    for ranking in (dense[head:], [item for item in path if item.id not in taken]):
        for rank, item in enumerate(ranking, start=1):
            scores[item.id] = scores.get(item.id, 0.0) + 1.0 / (RRF_K + rank)
            known = items.get(item.id)
            items[item.id] = item if known is None else ScoredItem(
                "chunk", item.id, item.score, tuple(dict.fromkeys(known.found_by + item.found_by)),
                {**known.data, **item.data})
    order = sorted(scores, key=lambda cid: -scores[cid])  # stable: dense first among equals
    return kept + [ScoredItem("chunk", cid, scores[cid], items[cid].found_by, items[cid].data) for cid in order]
