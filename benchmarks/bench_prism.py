"""Passage recall of the prism mode vs hybrid (with each perspective alone and without) and naive on MuSiQue.

musique_train_100: all 100 questions over the 1,890-passage corpus; graph from HippoRAG's published OpenIE triples
(written through the public storage APIs, ``musique_graph.py``), local all-MiniLM-L6-v2 embeddings, no LLM (offline
keywords). Recall counts the passages of ``aquery_data``'s ``data.chunks`` in order. Latency: median per query of
``prism`` as a ratio to ``naive``, measured in the same run (the prism run comes after a warm-up query so the
snapshot, vectors and FastRP are cached as in a long-running instance).

Run from the repository root:  .venv/bin/python benchmarks/bench_prism.py [--questions N] [--workdir DIR]
Writes benchmarks/results/prism.json. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import time
from pathlib import Path

from musique_graph import CachedEmbedder, write_graph

from lightrag_prism import PrismRAG, QueryParam
from lightrag_prism.eval.datasets import load_musique
from lightrag_prism.eval.index import passage_lookup
from lightrag_prism.eval.metrics import recall_at_k

RESULTS = Path(__file__).parent / "results" / "prism.json"
CONFIGS = {
    "prism": dict(mode="prism"),
    "hybrid+multihop": dict(mode="hybrid", max_hop=2),
    "hybrid+ppr": dict(mode="hybrid", top_ppr_nodes=5),
    "hybrid+fastrp": dict(mode="hybrid", top_fastrp_nodes=5),
    "hybrid": dict(mode="hybrid"),
    "naive": dict(mode="naive"),
}


async def build(workdir: Path, dataset) -> PrismRAG:
    """The OpenIE graph (written once, reused from ``workdir`` afterwards; see musique_graph.py)."""
    workdir.mkdir(parents=True, exist_ok=True)
    embedder = CachedEmbedder(workdir / "embeddings.npz")
    rag = PrismRAG(working_dir=str(workdir), workspace="bench_prism", embedding_func=embedder.embedding_func(),
                   embedding_batch_num=256)
    await rag.initialize_storages()
    if not (workdir / "graph.done").exists():
        await write_graph(rag, dataset, embedder)
        (workdir / "graph.done").write_text("ok")
    return rag


async def run_config(rag, dataset, lookup, name: str, knobs: dict, n: int) -> dict:
    retrieved, latencies = [], []
    await rag.aquery_data(dataset.questions[0].text, QueryParam(enable_rerank=False, **knobs))  # warm-up
    for q in dataset.questions[:n]:
        start = time.perf_counter()
        result = await rag.aquery_data(q.text, QueryParam(enable_rerank=False, **knobs))
        latencies.append((time.perf_counter() - start) * 1000)
        chunks = (result.get("data") or {}).get("chunks", [])
        retrieved.append([lookup.get(c["content"].strip(), c["content"][:40]) for c in chunks])
    gold = [q.gold_passage_ids for q in dataset.questions[:n]]
    row = {k: recall_at_k(gold, retrieved, k) for k in (2, 5)}
    row.update(median_ms=statistics.median(latencies), chunks=statistics.mean(len(r) for r in retrieved))
    logging.getLogger("bench").warning("%-16s R@2 %.3f  R@5 %.3f  median %.0f ms  chunks %.1f",
                                       name, row[2], row[5], row["median_ms"], row["chunks"])
    return row


async def main(n: int, workdir: Path, only: list[str] | None) -> dict:
    dataset = load_musique()
    rag = await build(workdir, dataset)
    lookup = passage_lookup(dataset)
    rows = {name: await run_config(rag, dataset, lookup, name, knobs, n)
            for name, knobs in CONFIGS.items() if not only or name in only}
    await rag.finalize_storages()
    out = {"questions": n, "results": rows}
    if "prism" in rows and "naive" in rows:
        out["prism_latency_ratio_to_naive"] = rows["prism"]["median_ms"] / rows["naive"]["median_ms"]
    if "prism" in rows and "hybrid" in rows:
        out["prism_minus_hybrid_R@5_points"] = 100 * (rows["prism"][5] - rows["hybrid"][5])
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/lightrag_prism_bench/musique"))
    parser.add_argument("--only", nargs="*", help="run only these configurations")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for noisy in ("lightrag", "nano-vectordb", "httpx"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    result = asyncio.run(main(args.questions, args.workdir, args.only))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
