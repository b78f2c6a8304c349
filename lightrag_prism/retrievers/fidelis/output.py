"""Turn the ``fidelis`` mode's reasoning paths into ranked relations, entities and chunks."""

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
                   label: Callable) -> None:
    """Fill ``ctx.retrieval`` from ``paths`` (already best first and reduced to paths with at least one relation)."""
    retrieval = ctx.retrieval
    if not paths:
        return
    retrieval.relations = _relations(snapshot, paths, label)
    nodes, best_node, retrieval.entities = _entities(snapshot, scorer, paths)
    retrieval.chunks = await _chunks(ctx, snapshot, _chunk_scores(snapshot, paths, best_node, nodes))
    retrieval.chunks += await _dense_fill(ctx, {c.id for c in retrieval.chunks})


async def _dense_fill(ctx: "QueryContext", taken: set[str]) -> list[ScoredItem]:
    """Dense passages for the chunk slots the paths left empty (after every path chunk, never before).

    Paths cite few passages; filling the rest of ``chunk_top_k`` keeps the answer context at least as broad as
    ``naive`` instead of leaving it short.
    """
    limit = getattr(ctx.param, "chunk_top_k", None) or 0
    if len(taken) >= limit:
        return []
    query_vec = (await ctx.embed([ctx.query]))[0]
    rows = await ctx.rag.chunks_vdb.query(ctx.query, top_k=limit, query_embedding=query_vec.tolist())
    fill = [r for r in rows if r.get("id") not in taken][: limit - len(taken)]
    return [ScoredItem("chunk", r["id"], 0.0, ("dense",), {k: r[k] for k in CHUNK_FIELDS if k in r}) for r in fill]
