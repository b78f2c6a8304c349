"""Agentic entity merging: ANN candidates for new entities, LLM judgement, union-find clusters, journalled merges.

Pipeline (:func:`agentic_merge`):

1. candidates: for each entity to check (by default the entities created by the last insert), its
   ``agentic_merging_top_k`` nearest entities by cosine over the entity vectors (fetched by id,
   :mod:`lightrag_prism.vectors`), blocked exact top-k (:func:`lightrag_prism.graph.knn.topk_cosine`), kept when
   cosine ≥ ``threshold``. Memory is O(block × N), never an N×N matrix;
2. pairs refused before are skipped unless a description changed (:class:`MergeLog` decision log);
3. the LLM judges each remaining pair: JSON ``{"merge": bool, "confidence": 0..1, "canonical_name": str}``;
   unparsable answers or LLM errors are counted and skipped (asked again next time), never merged;
4. accepted pairs (``merge`` and confidence ≥ ``agentic_merging_min_confidence``) are clustered with union-find,
   so chains merge into one entity; the canonical name is the most-voted proposed member name;
5. each cluster is planned (:func:`plan_merge`), the plan saved, the merge journalled (``MergeLog.begin``), applied
   (:func:`apply_merge`) and marked complete. :func:`roll_forward` finishes journalled merges after a crash.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

import numpy as np

from ...graph.knn import topk_cosine
from ...plugin_state import plugin_state
from ...llm import cached_llm_call, parse_json_answer, total_parser
from ...vectors import entity_matrix
from .ann import ivf_topk_cosine
from .apply import apply_merge, plan_merge
from .log import LOG_DOCUMENT, MergeLog, description_hash
from .union_find import merge_clusters

logger = logging.getLogger(__name__)

PLANS_DOCUMENT = "merge_plans"
_DESC_CHARS = 600

MERGE_PROMPT = """You deduplicate entities of a knowledge graph. Decide whether A and B denote the SAME real-world
entity (same person, organisation, product, metric, ...), not merely related ones: a parent and its subsidiary,
two products of one family, two periods of one metric, or a person and their role are NOT the same entity.

Entity A: {name_a} (type: {type_a})
Description: {desc_a}

Entity B: {name_b} (type: {type_b})
Description: {desc_b}

Answer with JSON only:
{{"merge": true or false, "confidence": a number from 0 to 1,
 "canonical_name": "the better name for the merged entity, one of the two names"}}
"""


@total_parser()
def parse_decision(text: str | None) -> dict[str, Any] | None:
    """``{"merge", "confidence", "canonical_name"}`` from an LLM answer, or ``None`` if unusable."""
    data = parse_json_answer(text)
    if not isinstance(data, dict) or "merge" not in data:
        return None
    merge = data["merge"]
    if isinstance(merge, str):
        merge = {"true": True, "yes": True, "false": False, "no": False}.get(merge.strip().lower())
    try:
        confidence = float(data.get("confidence", 0.0))
    except (TypeError, ValueError):
        return None
    if not isinstance(merge, bool) or not np.isfinite(confidence):
        return None
    canonical = data.get("canonical_name")
    return {"merge": merge, "confidence": min(max(confidence, 0.0), 1.0),
            "canonical_name": canonical if isinstance(canonical, str) else None}


#: Above this many query × entity comparisons the candidate search switches from exact top-k to the IVF index.
EXACT_PAIR_LIMIT = 2_000_000_000
CANDIDATE_METHODS = ("auto", "exact", "ivf")


def _raw_candidates(vectors, query_rows, k, threshold, method, block_size):
    if method == "auto":
        method = "ivf" if len(query_rows) * len(vectors) > EXACT_PAIR_LIMIT else "exact"
    if method == "ivf":
        return ivf_topk_cosine(query_rows, vectors, k, threshold)
    idx, score = topk_cosine(vectors[query_rows], vectors, k, threshold, block_size=block_size,
                             exclude_self_ids=query_rows)
    rows, cols = np.nonzero(idx >= 0)
    return query_rows[rows], idx[rows, cols], score[rows, cols]


def candidate_pairs(vectors: np.ndarray, query_rows: np.ndarray, k: int, threshold: float,
                    block_size: int = 256, method: str = "auto") -> list[tuple[int, int, float]]:
    """Distinct pairs ``(i, j, cosine)`` (i < j) among each query row's top-``k`` neighbours with cosine ≥ threshold.

    ``method``: ``"exact"`` (blocked exact top-k), ``"ivf"`` (approximate, :mod:`.ann`) or ``"auto"`` (exact up
    to :data:`EXACT_PAIR_LIMIT` comparisons). Sorted by cosine, best first.
    """
    if method not in CANDIDATE_METHODS:
        raise ValueError(f"unknown candidate method {method!r}; valid: {', '.join(CANDIDATE_METHODS)}")
    query_rows = np.asarray(query_rows, dtype=np.int64)
    if len(query_rows) == 0 or len(vectors) < 2:
        return []
    a, b, s = _raw_candidates(vectors, query_rows, k, threshold, method, block_size)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keys = lo * len(vectors) + hi
    order = np.lexsort((-s, keys))
    first = np.ones(len(order), dtype=bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    keep = order[first]
    keep = keep[np.argsort(-s[keep], kind="stable")]
    return [(int(lo[i]), int(hi[i]), float(s[i])) for i in keep]


def _node_text(data: dict) -> tuple[str, str]:
    description = " ".join(str(data.get("description", "")).replace("<SEP>", " | ").split())
    return str(data.get("entity_type", "unknown")), description[:_DESC_CHARS]


async def judge_pair(rag, name_a: str, data_a: dict, name_b: str, data_b: dict) -> dict | None:
    (type_a, desc_a), (type_b, desc_b) = _node_text(data_a), _node_text(data_b)
    prompt = MERGE_PROMPT.format(name_a=name_a, type_a=type_a, desc_a=desc_a, name_b=name_b, type_b=type_b,
                                 desc_b=desc_b)
    try:
        answer = await cached_llm_call(rag, prompt, cache_type="entity_merge")
    except Exception as exc:  # noqa: BLE001 - LLM failure: skip the pair, ask again next time
        logger.warning("agentic merging: LLM call failed for %r / %r: %s", name_a, name_b, exc)
        return None
    decision = parse_decision(answer)
    if decision is None:
        logger.warning("agentic merging: unparsable answer for %r / %r", name_a, name_b)
    return decision


class PlanStore:
    """Merge plans by cluster id, in their own document next to the merge log (needed to roll a merge forward)."""

    def __init__(self, document):
        self.document = document

    async def load(self) -> dict[str, Any]:
        return await self.document.load({})

    async def put(self, cluster_id: str, plan: dict) -> None:
        await self.document.save({**await self.load(), cluster_id: plan})

    async def drop(self, cluster_id: str) -> None:
        plans = await self.load()
        if plans.pop(cluster_id, None) is not None:
            await self.document.save(plans)


async def open_merge_state(rag) -> tuple[MergeLog, PlanStore]:
    state = plugin_state(rag)
    return await MergeLog.open(state.document(LOG_DOCUMENT)), PlanStore(state.document(PLANS_DOCUMENT))


async def run_cluster(rag, log: MergeLog, plans: PlanStore, cluster, crash_hook: Callable | None = None) -> dict:
    plan = await plan_merge(rag, list(cluster.members), cluster.canonical)
    await plans.put(cluster.cluster_id, plan)
    await log.begin(cluster)
    if crash_hook is not None:
        crash_hook("after_begin")
    outcome = await apply_merge(rag, plan, crash_hook=crash_hook)
    await log.complete(cluster.cluster_id)
    await plans.drop(cluster.cluster_id)
    return outcome


MERGE_LOCK = "agentic_merge"  # held by one process at a time on shared storages (the log and journal are one record)


async def roll_forward(rag) -> list[dict]:
    """Finish merges journalled but not completed (a crash mid-merge); returns their outcomes. Under the merge
    lock: a replica starting while another merges waits, and then finds that merge completed, not pending."""
    async with plugin_state(rag).lock(MERGE_LOCK):
        return await _roll_forward(rag)


async def _roll_forward(rag) -> list[dict]:
    log, plans = await open_merge_state(rag)
    if not log.pending():
        return []
    stored, outcomes = await plans.load(), []
    for entry in log.pending():
        plan = stored.get(entry.cluster_id) or await plan_merge(rag, entry.members, entry.canonical)
        logger.warning("rolling forward interrupted merge of %s into %r", entry.members, entry.canonical)
        outcomes.append(await apply_merge(rag, plan))
        await log.complete(entry.cluster_id)
        await plans.drop(entry.cluster_id)
    return outcomes


async def _judge_all(rag, log: MergeLog, snapshot, pairs, min_confidence: float, report: dict) -> list:
    names, data = snapshot.node_ids, snapshot.node_data
    hashes = {i: description_hash(data[i].get("description", "")) for p in pairs for i in p[:2]}
    todo = [(i, j, s) for i, j, s in pairs if not log.was_refused(names[i], names[j], hashes[i], hashes[j])]
    report["skipped_refused"] = len(pairs) - len(todo)
    decisions = await asyncio.gather(*(judge_pair(rag, names[i], data[i], names[j], data[j]) for i, j, _ in todo))
    accepted = []
    for (i, j, score), decision in zip(todo, decisions):
        if decision is None:
            report["unparsed"] += 1
            continue
        ok = decision["merge"] and decision["confidence"] >= min_confidence
        canonical = decision["canonical_name"] if decision["canonical_name"] in (names[i], names[j]) else None
        await log.record(names[i], names[j], "merge" if ok else "refuse", decision["confidence"], canonical,
                         hashes[i], hashes[j], save=False)
        if ok:
            accepted.append((names[i], names[j], decision["confidence"], canonical))
    if todo:
        await log.save()  # one write for all the decisions (each write stores the whole log)
    report["judged"] = len(todo)
    return accepted


async def agentic_merge(rag, entities: list[str] | None, threshold: float, *, crash_hook: Callable | None = None
                        ) -> dict[str, Any]:
    """Find, judge and merge duplicates of ``entities`` (``None`` = every entity); returns a report dict.

    One merging process at a time among those sharing the storages (:data:`MERGE_LOCK`); the one that waited
    reads the graph as the other left it."""
    report: dict[str, Any] = {"checked": 0, "candidates": 0, "judged": 0, "unparsed": 0, "skipped_refused": 0,
                              "clusters": [], "fallback": None}
    if not rag.llm_configured:
        report["fallback"] = "no LLM configured: agentic merging skipped"
        logger.warning("agentic merging: %s", report["fallback"])
        return report
    async with plugin_state(rag).lock(MERGE_LOCK):
        await rag.version_watcher.check()  # another process's merge may have just changed the graph
        return await _merge(rag, entities, threshold, crash_hook, report)


async def _merge(rag, entities: list[str] | None, threshold: float, crash_hook: Callable | None,
                 report: dict[str, Any]) -> dict[str, Any]:
    snapshot = await rag.graph_snapshot()
    names = snapshot.node_ids if entities is None else entities
    rows = np.array([snapshot.node_index[n] for n in names if n in snapshot.node_index], dtype=np.int64)
    report["checked"] = len(rows)
    if len(rows) == 0:
        return report
    vectors = await entity_matrix(rag, snapshot)
    pairs = candidate_pairs(vectors, rows, rag.agentic_merging_top_k, threshold)
    report["candidates"] = len(pairs)
    log, plans = await open_merge_state(rag)
    accepted = await _judge_all(rag, log, snapshot, pairs, rag.agentic_merging_min_confidence, report)
    involved = {name for pair in accepted for name in pair[:2]}
    counts = {n: len(snapshot.chunks_of_entity(snapshot.node_index[n])) for n in involved}
    for cluster in merge_clusters(accepted, source_counts=counts):
        outcome = await run_cluster(rag, log, plans, cluster, crash_hook)
        report["clusters"].append({"members": list(cluster.members), **outcome})
    return report
