"""Passage recall of the ``ensemble`` and ``tournament`` modes next to ``naive`` on MuSiQue (offline fallback).

No LLM is configured (the index is built by replaying the dataset's OpenIE triples, ``eval.index``), so both
LLM-rerank modes run their documented fallback: ``ensemble`` = the query alone, dense top ``ensemble_top_k``
(k = max(per_query_k, 21) = 21) in retrieval order; ``tournament`` = dense top ``rerank_top_k`` in retrieval
order, cut to ``return_top_k``. The numbers therefore check the fallback plumbing end to end (they should equal
``naive`` at the same depth), not the value of the LLM rerankers.

Run from the repository root (first run indexes ~1,000 passages with the local MiniLM embedder, a few minutes):
    .venv/bin/python benchmarks/bench_llm_rerank_musique.py --questions 100
Writes benchmarks/results/llm_rerank_musique.json. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import time
from pathlib import Path

from lightrag_prism import LightRAG, QueryParam, local_embedding_func
from lightrag_prism.eval.datasets import load_musique
from lightrag_prism.eval.index import index_passages, openie_replay_llm, passage_lookup
from lightrag_prism.eval.metrics import all_in_top_k, recall_at_ks

RESULTS = Path(__file__).parent / "results"
MODES = {
    "naive": dict(mode="naive", chunk_top_k=21),
    "ensemble": dict(mode="ensemble"),
    "tournament": dict(mode="tournament"),
}


async def build(dataset, workdir: Path) -> LightRAG:
    rag = LightRAG(working_dir=str(workdir), workspace="musique_bench", llm_model_func=openie_replay_llm(dataset),
                   embedding_func=local_embedding_func(max_token_size=4096), embedding_batch_num=64,
                   embedding_func_max_async=1, default_embedding_timeout=900,  # MiniLM on a small CPU
                   chunk_token_size=4096, enable_llm_cache_for_entity_extract=False)
    await rag.initialize_storages()
    inserted = await index_passages(rag, dataset, progress=False)
    logging.getLogger(__name__).info("indexed %d new passages", inserted)
    return rag


async def run_mode(rag, dataset, lookup, params: dict) -> dict:
    retrieved, latencies, fallbacks = [], [], 0
    for question in dataset.questions:
        start = time.perf_counter()
        data = await rag.aquery_data(question.text, param=QueryParam(enable_rerank=False, **params))
        latencies.append((time.perf_counter() - start) * 1000)
        chunks = (data.get("data") or {}).get("chunks", [])
        retrieved.append([lookup.get(c["content"].strip(), c.get("chunk_id")) for c in chunks])
        fallbacks += bool(((data.get("metadata") or {}).get("prism") or {}).get("fallbacks"))
    gold = [q.gold_passage_ids for q in dataset.questions]
    recall = recall_at_ks(gold, retrieved, ks=(1, 2, 5, 10))
    return {"recall": {f"@{k}": round(v, 4) for k, v in recall.items()},
            "all_in_top_21": round(all_in_top_k(gold, retrieved, 21), 4),
            "mean_returned": round(statistics.mean(len(r) for r in retrieved), 2),
            "queries_with_fallback": fallbacks, "latency_ms_median": round(statistics.median(latencies), 1)}


async def main(n_questions: int) -> dict:
    dataset = load_musique()
    dataset = dataset.subset(n_questions) if n_questions < len(dataset.questions) else dataset
    RESULTS.mkdir(parents=True, exist_ok=True)
    rag = await build(dataset, RESULTS / "musique_store")
    lookup = passage_lookup(dataset)
    try:
        report = {"questions": len(dataset.questions), "passages": len(dataset.passages), "llm": "none (fallback)",
                  "modes": {name: await run_mode(rag, dataset, lookup, params) for name, params in MODES.items()}}
    finally:
        await rag.finalize_storages()
    return report


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args()
    result = asyncio.run(main(args.questions))
    (RESULTS / "llm_rerank_musique.json").write_text(json.dumps(result, indent=2))
    print(f"{'mode':<12}{'R@1':>8}{'R@2':>8}{'R@5':>8}{'R@10':>8}{'all@21':>8}{'returned':>10}{'ms':>8}")
    for name, row in result["modes"].items():
        r = row["recall"]
        print(f"{name:<12}{r['@1']:>8.3f}{r['@2']:>8.3f}{r['@5']:>8.3f}{r['@10']:>8.3f}"
              f"{row['all_in_top_21']:>8.3f}{row['mean_returned']:>10.1f}{row['latency_ms_median']:>8.1f}")
