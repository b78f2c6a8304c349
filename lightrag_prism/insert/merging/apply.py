"""Applying one merge cluster to a LightRAG instance, idempotently (so a crashed merge can be rolled forward).

A merge is planned first (:func:`plan_merge`, read-only) and the plan is journalled; :func:`apply_merge` then

1. calls LightRAG's public ``amerge_entities(sources → canonical)`` for the sources that still exist (it moves
   relations, descriptions, source ids, chunk tracking and vectors, and drops intra-cluster edges, which would
   become self-loops);
2. sets each redirected edge's weight to the planned SUM of the parallel edges' weights (LightRAG keeps the max);
3. renames the merged entities in the ``full_entities``/``full_relations`` rows of every document that
   mentioned them (LightRAG's merge leaves them stale, which breaks ``adelete_by_doc_id`` afterwards);
4. flushes the touched storages.

Every step reads the current state and the plan only, so running it again after a crash at any point finishes
the merge without double counting (weights are assigned from the plan, not added).
"""

from __future__ import annotations

import logging
from typing import Any

from lightrag.constants import GRAPH_FIELD_SEP

from .rebuild import add_aliases

logger = logging.getLogger(__name__)


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


async def _entity_chunk_ids(rag, name: str, node: dict) -> set[str]:
    ids = {c for c in (node.get("source_id") or "").split(GRAPH_FIELD_SEP) if c}
    tracked = await rag.entity_chunks.get_by_id(name) if rag.entity_chunks is not None else None
    if isinstance(tracked, dict):
        ids |= {c for c in tracked.get("chunk_ids") or [] if c}
    return ids


async def _doc_ids(rag, chunk_ids: set[str]) -> list[str]:
    ordered = sorted(chunk_ids)
    rows = await rag.text_chunks.get_by_ids(ordered) if ordered else []
    docs = {row.get("full_doc_id") for row in rows if isinstance(row, dict)}
    docs |= {c.split("-chunk-")[0] for c in ordered if "-chunk-" in c}  # chunk id = f"{doc_id}-chunk-{n:03d}"
    return sorted(d for d in docs if d)


async def plan_merge(rag, members: list[str], canonical: str) -> dict[str, Any]:
    """Everything :func:`apply_merge` needs, computed from the graph before anything changes."""
    graph = rag.chunk_entity_relation_graph
    members = sorted(set(members) | {canonical})
    present = [m for m in members if await graph.has_node(m)]
    weights: dict[tuple[str, str], float] = {}
    chunk_ids: set[str] = set()
    for name in present:
        node = await graph.get_node(name) or {}
        chunk_ids |= await _entity_chunk_ids(rag, name, node)
        for src, tgt in await graph.get_node_edges(name) or []:
            other = tgt if src == name else src
            if other in members:
                continue
            edge = await graph.get_edge(src, tgt) or {}
            key = _pair(canonical, other)
            weights[key] = weights.get(key, 0.0) + float(edge.get("weight", 1.0) or 1.0)
    # each edge between a member and an outside node is seen once (from its member endpoint)
    return {"members": members, "canonical": canonical,
            "weights": [[a, b, w] for (a, b), w in sorted(weights.items())],
            "doc_ids": await _doc_ids(rag, chunk_ids)}


def _rename_entities(row: dict, rename: dict[str, str]) -> dict:
    names = list(dict.fromkeys(rename.get(n, n) for n in row.get("entity_names") or []))
    return {**row, "entity_names": sorted(names), "count": len(names)}


def _rename_relations(row: dict, rename: dict[str, str]) -> dict:
    seen, pairs = set(), []
    for pair in row.get("relation_pairs") or []:
        a, b = (rename.get(x, x) for x in pair)
        if a != b and _pair(a, b) not in seen:
            seen.add(_pair(a, b))
            pairs.append([a, b])
    return {**row, "relation_pairs": pairs, "count": len(pairs)}


async def _fix_document_rows(rag, doc_ids: list[str], rename: dict[str, str]) -> int:
    fixed = 0
    for storage, fix in ((rag.full_entities, _rename_entities), (rag.full_relations, _rename_relations)):
        rows = await storage.get_by_ids(doc_ids) if doc_ids else []
        updates = {d: fix(row, rename) for d, row in zip(doc_ids, rows) if isinstance(row, dict)}
        updates = {d: row for d, row in updates.items() if row != rows[doc_ids.index(d)]}
        if updates:
            await storage.upsert(updates)
            fixed += len(updates)
    return fixed


async def _set_weights(rag, weights: list[list]) -> int:
    graph, changed = rag.chunk_entity_relation_graph, 0
    for a, b, weight in weights:
        edge = await graph.get_edge(a, b)
        if edge is not None and float(edge.get("weight", 0.0) or 0.0) != float(weight):
            await graph.upsert_edge(a, b, {**edge, "weight": float(weight)})
            changed += 1
    return changed


async def apply_merge(rag, plan: dict[str, Any], *, crash_hook=None) -> dict[str, Any]:
    """Carry out (or finish) a planned merge; safe to call again on the same plan."""
    graph, canonical = rag.chunk_entity_relation_graph, plan["canonical"]
    await add_aliases(rag, plan["members"], canonical)  # first: a later delete-by-document rebuild needs it
    sources = [m for m in plan["members"] if m != canonical and await graph.has_node(m)]
    if sources:
        await rag.amerge_entities(source_entities=sources, target_entity=canonical)
    if crash_hook is not None:
        crash_hook("after_amerge")
    rename = {m: canonical for m in plan["members"] if m != canonical}
    weights_changed = await _set_weights(rag, plan["weights"])
    rows_fixed = await _fix_document_rows(rag, plan["doc_ids"], rename)
    for storage in (rag.chunk_entity_relation_graph, rag.full_entities, rag.full_relations):
        await storage.index_done_callback()
    await rag.publish_graph_change()
    return {"canonical": canonical, "merged": sources, "weights_changed": weights_changed, "rows_fixed": rows_fixed}
