"""hipporag vs naive (dense) vs BM25 on musique_train_100 (offline: no LLM, fact filter off, MiniLM).

    python benchmarks/bench_hipporag.py [--questions 100] [--workdir /tmp/prism_musique_kg] [--heads 0,1]
        [--passage-weights 0.05]

Prints passage recall@1/2/5/10 per mode and the median latency ratio hipporag/naive (both through
``aquery_data``, measured in the same run after one warm-up query each), the graph-view build time, and writes
JSON to benchmarks/results/bench_hipporag.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from musique_kg import musique_rag  # noqa: E402

from lightrag_prism import QueryParam  # noqa: E402
from lightrag_prism.eval.bm25 import BM25Index  # noqa: E402
from lightrag_prism.eval.metrics import recall_at_ks  # noqa: E402

K = 10


async def run_mode(rag, questions, chunk_to_passage, **param_kwargs):
    ranked, latencies, metas = [], [], []
    base = dict(chunk_top_k=K, top_k=K, max_total_tokens=120_000, enable_rerank=False)
    await rag.aquery_data(questions[0].text, param=QueryParam(**{**base, **param_kwargs}))  # warm-up (graph build)
    for q in questions:
        start = time.perf_counter()
        data = await rag.aquery_data(q.text, param=QueryParam(**{**base, **param_kwargs}))
        latencies.append(time.perf_counter() - start)
        chunks = (data.get("data") or {}).get("chunks", [])
        ranked.append([chunk_to_passage.get(c.get("chunk_id"), c.get("chunk_id")) for c in chunks])
        metas.append(((data.get("metadata") or {}).get("prism") or {}).get("hipporag", {}))
    return ranked, latencies, metas


def report(name, gold, ranked, latencies=None, results=None):
    recall = {k: round(100 * v, 1) for k, v in recall_at_ks(gold, ranked).items()}
    median = statistics.median(latencies) * 1000 if latencies else float("nan")
    print(f"{name:>24}  R@1 {recall[1]:5.1f}  R@2 {recall[2]:5.1f}  R@5 {recall[5]:5.1f}  R@10 {recall[10]:5.1f}"
          f"  median {median:7.1f} ms")
    if results is not None:
        results[name] = {"recall": recall, "median_ms": median}
    return median


async def main(args) -> None:
    logging.basicConfig(level=logging.WARNING)
    start = time.perf_counter()
    rag, dataset, chunk_to_passage = await musique_rag(args.workdir)
    print(f"graph ready in {time.perf_counter() - start:.1f} s")
    questions = dataset.questions[:args.questions]
    gold = [q.gold_passage_ids for q in questions]
    results = {}
    start = time.perf_counter()
    snapshot = await rag.graph_snapshot()
    from lightrag_prism.retrievers.hipporag_facts import fact_view
    from lightrag_prism.retrievers.hipporag_graph import hipporag_graph
    view = await hipporag_graph(rag, snapshot)
    await fact_view(rag, snapshot)
    print(f"hipporag view: {snapshot.num_nodes} entities, {snapshot.num_edges} facts, {len(view.passage_ids)} "
          f"passages, {view.n_synonym_edges} synonym edges; build {time.perf_counter() - start:.1f} s "
          f"(synonym kNN {view.build_seconds['synonyms']:.2f} s, name embeddings "
          f"{view.build_seconds['name_embeddings']:.1f} s)")
    results["graph"] = {"entities": snapshot.num_nodes, "facts": snapshot.num_edges, "synonym_edges":
                        view.n_synonym_edges, "synonym_knn_seconds": view.build_seconds["synonyms"]}
    naive_ranked, naive_lat, _ = await run_mode(rag, questions, chunk_to_passage, mode="naive")
    naive_median = report("naive (dense)", gold, naive_ranked, naive_lat, results)
    bm25 = BM25Index(dataset.passages)
    report("bm25", gold, [[pid for pid, _ in bm25.search(q.text, K)] for q in questions], None, results)
    for head in [int(x) for x in args.heads.split(",")]:
        for pnw in [float(x) for x in args.passage_weights.split(",")]:
            ranked, lat, _ = await run_mode(rag, questions, chunk_to_passage, mode="hipporag",
                                            enable_fact_filter=False, hipporag_dense_head=head,
                                            passage_node_weight=pnw)
            median = report(f"hipporag head={head} w={pnw}", gold, ranked, lat, results)
            print(f"{'':>24}  latency ratio hipporag/naive (median) {median / naive_median:.2f}x")
            results[f"hipporag head={head} w={pnw}"]["latency_ratio"] = median / naive_median
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "bench_hipporag.json"), "w") as handle:
        json.dump(results, handle, indent=2)
    await rag.finalize_storages()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--workdir", default="/tmp/prism_musique_kg")
    parser.add_argument("--heads", default="0,1", help="hipporag_dense_head values (0 = HippoRAG 2)")
    parser.add_argument("--passage-weights", default="0.05")
    asyncio.run(main(parser.parse_args()))
