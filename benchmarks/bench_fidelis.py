"""Benchmark the ``fidelis`` mode (offline unless stated; MiniLM embeddings).

1. CR-LT-KGQA: one LightRAG graph from all questions' Wikidata triples (``ainsert_custom_kg``), then per question
   ``topic_entities=q_entity``: hits@paths (a gold answer entity among the returned path entities), restricted to
   questions whose answer entity is a node of the graph; median per-step time; vectorised vs per-edge Python
   scoring of the first expansion (same run); LLM calls per query with the scripted OpenAI-compatible server.
2. MuSiQue (musique_train_100, OpenIE replay graph): passage recall@5 of ``fidelis`` vs ``naive``.

Usage: python benchmarks/bench_fidelis.py [--part crlt|musique|all] [--llm-questions 30] [--musique-questions 100]
Writes benchmarks/results/fidelis.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from lightrag.utils import normalize_entity_name

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lightrag_prism import PrismRAG  # noqa: E402
from lightrag_prism.backends import local_embedding_func  # noqa: E402
from lightrag_prism.eval.datasets import load_cr_lt_kgqa  # noqa: E402
from lightrag_prism.eval.bench import evaluate_mode, load_dataset, open_index  # noqa: E402
from lightrag_prism.param import PrismQueryParam  # noqa: E402
from lightrag_prism.retrievers.fidelis.scoring import HopScorer  # noqa: E402
from lightrag_prism.vectors import entity_and_relation_matrices  # noqa: E402

CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = ROOT / "benchmarks" / "results"
log = logging.getLogger("bench_fidelis")


def norm(name: str) -> str:
    """Entity names as LightRAG stores them (ainsert_custom_kg normalises them the same way)."""
    return normalize_entity_name(str(name)) or ""


# --- CR-LT-KGQA -----------------------------------------------------------------------------------------------------
def crlt_custom_kg(questions) -> dict:
    chunks, entities, relations, first_src = [], {}, {}, {}
    for q in questions:
        src = f"crlt-{q.id}"
        chunks.append({"content": "\n".join(f"{s} {p} {o}." for s, p, o in q.graph) or q.question, "source_id": src})
        for s, p, o in q.graph:
            s, o = norm(s), norm(o)
            if not s or not o or s == o:
                continue
            for name in (s, o):
                first_src.setdefault(name, src)
            key = (s, o) if s < o else (o, s)
            rel = relations.setdefault(key, {"src_id": s, "tgt_id": o, "keywords": p, "description": f"{s} {p} {o}",
                                             "weight": 1.0, "source_id": src})
            if p not in rel["keywords"].split(", "):
                rel["keywords"] += f", {p}"
                rel["description"] += f"; {s} {p} {o}"
    for name, src in first_src.items():
        entities[name] = {"entity_name": name, "entity_type": "wikidata", "description": name, "source_id": src}
    return {"chunks": chunks, "entities": list(entities.values()), "relationships": list(relations.values())}


async def crlt_rag(questions, **kwargs) -> PrismRAG:
    """The CR-LT graph in benchmarks/.cache/crlt (built on first use, reused afterwards)."""
    rag = PrismRAG(working_dir=str(CACHE / "crlt"), workspace="crlt",
                   embedding_func=local_embedding_func(), embedding_batch_num=128,
                   embedding_func_max_async=1, default_embedding_timeout=900, **kwargs)
    await rag.initialize_storages()
    if (await rag.graph_snapshot()).num_nodes == 0:
        await rag.ainsert_custom_kg(crlt_custom_kg(questions))
    return rag


def evidence(q, nodes: dict) -> tuple[set[str], set[frozenset]]:
    """Gold evidence of a question: the graph triples its reasoning steps cite ("facts used in this step").

    Returns the evidence entities (topic entities removed) that are graph nodes, and the evidence entity pairs.
    """
    facts = " ".join(str(step.get("facts used in this step", "")) for step in q.reasoning_steps
                     if isinstance(step, dict))
    used = [(norm(s), norm(o)) for s, p, o in q.graph if f"({s}, {p}, {o})" in facts]
    topics = {norm(e) for e in q.q_entity}
    entities = {x for pair in used for x in pair if x in nodes} - topics
    return entities, {frozenset(pair) for pair in used if pair[0] != pair[1]}


def _brute_force_expand(snap, scorer, f: int, alpha: float) -> int:
    """Per-edge Python scoring of node f's relations (the reference of the unit tests), for timing."""
    rows = snap.adj
    kw = scorer.keywords
    sim = lambda v: float(np.max(kw @ v))  # noqa: E731
    n = 0
    for p in range(rows.indptr[f], rows.indptr[f + 1]):
        u, e = rows.indices[p], snap.entry_edge[p]
        best = 0.0
        nxt = [sim(scorer.relation_vecs[snap.entry_edge[q]]) + sim(scorer.entity_vecs[rows.indices[q]])
               for q in range(rows.indptr[u], rows.indptr[u + 1]) if rows.indices[q] != f]
        best = max(nxt) if nxt else 0.0
        _ = sim(scorer.relation_vecs[e]) + sim(scorer.entity_vecs[u]) + alpha * best
        n += 1
    return n


async def crlt_offline(questions, rag, **overrides) -> dict:
    snap = await rag.graph_snapshot()
    answer_in_graph = sum(any(norm(a) in snap.node_index for a in q.a_entity) for q in questions)
    rows = [(q, *evidence(q, snap.node_index)) for q in questions]
    rows = [r for r in rows if r[1]]
    hit, ent_recall, pair_recall, step_times, seconds, stopped = [], [], [], [], [], {}
    for i, (q, gold_entities, gold_pairs) in enumerate(rows):
        t0 = time.perf_counter()
        out = await rag.aquery_data(q.question, PrismQueryParam(mode="fidelis", topic_entities=list(q.q_entity),
                                                                **overrides))
        seconds.append(time.perf_counter() - t0)
        meta = out["metadata"]["prism"]
        names = {n for path in meta["paths"] for t in path for n in (t[0], t[2])}
        pairs = {frozenset((t[0], t[2])) for path in meta["paths"] for t in path}
        hit.append(bool(gold_entities & names))
        ent_recall.append(len(gold_entities & names) / len(gold_entities))
        pair_recall.append(len(gold_pairs & pairs) / len(gold_pairs))
        step_times += meta["step_seconds"]
        stopped[meta["stopped_by"]] = stopped.get(meta["stopped_by"], 0) + 1
        if i % 25 == 0:
            log.warning("crlt %s: %d/%d", overrides or "defaults", i, len(rows))
    return {"questions": len(questions), "answer_entity_in_graph": answer_in_graph, "evidence_questions": len(rows),
            "evidence_hits_at_paths": float(np.mean(hit)), "evidence_entity_recall": float(np.mean(ent_recall)),
            "evidence_triple_recall": float(np.mean(pair_recall)), "stopped_by": stopped,
            "median_step_ms": 1000 * statistics.median(step_times), "median_query_ms": 1000 * statistics.median(seconds),
            "nodes": snap.num_nodes, "edges": snap.num_edges}


async def crlt_scoring_speed(rag, snap, questions) -> dict:
    """First expansion of each question's topic entities: vectorised (cold cache) vs per-edge Python."""
    ent, rel = await entity_and_relation_matrices(rag, snap)
    kw = np.asarray(await rag.embedding_func(["population", "located in", "country"]), dtype=np.float32)
    kw /= np.linalg.norm(kw, axis=1, keepdims=True)
    fronts = [np.array([snap.node_index[norm(e)] for e in q.q_entity if norm(e) in snap.node_index])
              for q in questions]
    fronts = [f for f in fronts if len(f)]
    t0 = time.perf_counter()
    for f in fronts:
        HopScorer(snap.adj, snap.entry_edge, ent, rel, kw, 0.3).expand(f, [np.array([x]) for x in f])
    vec = time.perf_counter() - t0
    scorer = HopScorer(snap.adj, snap.entry_edge, ent, rel, kw, 0.3)
    t0 = time.perf_counter()
    edges = sum(_brute_force_expand(snap, scorer, int(x), 0.3) for f in fronts for x in f)
    brute = time.perf_counter() - t0
    return {"first_step_vectorised_ms": 1000 * vec / len(fronts), "first_step_python_ms": 1000 * brute / len(fronts),
            "first_step_speedup": brute / vec, "first_step_edges_scored": edges}


def scripted_reply(current: dict):
    def reply(body: dict) -> str:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        if "declarative_statement" in text:
            words = [w for w in re.findall(r"[A-Za-z]+", current["question"]) if len(w) > 3]
            return json.dumps({"planning_steps": ["follow the relations of the topic entities"],
                               "keywords": words[:6], "declarative_statement": current["question"]})
        if "choose the best" in text:
            return "[0, 1, 2]"
        if "can be deduced" in text:  # an oracle verifier: yes once a gold evidence entity is on a path
            return "yes" if any(a in text.split("Reasoning paths:")[-1] for a in current["answers"]) else "no"
        return '{"high_level_keywords": ["x"], "low_level_keywords": ["y"]}'
    return reply


async def crlt_llm_calls(questions, n: int) -> dict:
    from tests.helpers import make_llm_func
    from tests.scripted_server import ScriptedServer

    current: dict = {}
    with ScriptedServer() as server:
        server.script(None, scripted_reply(current))
        rag = await crlt_rag(questions, llm_model_func=make_llm_func(server), enable_llm_cache=False)
        snap = await rag.graph_snapshot()
        sample = [(q, ev) for q in questions if (ev := evidence(q, snap.node_index)[0])][:n]
        calls, server_calls, stopped = [], [], {}
        for q, ev in sample:
            current.update(question=q.question, answers=sorted(ev))
            before = server.count()
            out = await rag.aquery_data(q.question, PrismQueryParam(mode="fidelis", topic_entities=list(q.q_entity)))
            meta = out["metadata"]["prism"]
            calls.append(meta["llm_calls"])
            server_calls.append(server.count() - before)
            stopped[meta["stopped_by"]] = stopped.get(meta["stopped_by"], 0) + 1
        await rag.finalize_storages()
    return {"llm_questions": len(sample), "llm_calls_per_query_mean": float(np.mean(calls)),
            "llm_calls_per_query_median": float(np.median(calls)),
            "server_chat_requests_per_query_mean": float(np.mean(server_calls)), "llm_stopped_by": stopped}


# --- MuSiQue --------------------------------------------------------------------------------------------------------
async def musique(n_questions: int, working_dir: str) -> dict:
    """Recall of fidelis vs naive (the bench's index and evaluation) and fidelis's median beam-step time."""
    dataset = load_dataset("musique", n_questions)
    rag = await open_index(dataset, Path(working_dir) / f"{dataset.name}-{len(dataset.passages)}", progress=False)
    out: dict = {"questions": len(dataset.questions), "passages": len(dataset.passages)}
    for mode in ("naive", "fidelis"):
        out[mode], _ = await evaluate_mode(rag, mode, dataset, None, progress=False)
    steps = []
    for q in dataset.questions:
        data = await rag.aquery_data(q.text, PrismQueryParam(mode="fidelis", enable_rerank=False))
        steps += data.get("metadata", {}).get("prism", {}).get("step_seconds", [])
    out["fidelis_median_step_ms"] = 1000 * statistics.median(steps) if steps else None
    await rag.finalize_storages()
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("crlt", "musique", "all"), default="all")
    parser.add_argument("--llm-questions", type=int, default=30)
    parser.add_argument("--musique-questions", type=int, default=100)
    parser.add_argument("--working-dir", default="prism_storage/bench", help="the index lightrag-prism bench uses")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    results: dict = {}
    if args.part in ("crlt", "all"):
        questions = load_cr_lt_kgqa()
        rag = await crlt_rag(questions)
        snap = await rag.graph_snapshot()
        rows = [q for q in questions if evidence(q, snap.node_index)[0]]
        results["cr_lt_kgqa"] = await crlt_offline(questions, rag)
        results["cr_lt_kgqa_no_lookahead"] = await crlt_offline(questions, rag, lookahead_alpha=0.0)
        results["cr_lt_kgqa"].update(await crlt_scoring_speed(rag, snap, rows))
        await rag.finalize_storages()
        results["cr_lt_kgqa"].update(await crlt_llm_calls(questions, args.llm_questions))
    if args.part in ("musique", "all"):
        results["musique_train_100"] = await musique(args.musique_questions, args.working_dir)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"fidelis_{args.part}.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
