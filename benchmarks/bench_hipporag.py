"""hipporag knob ablation on the benchmark index (offline: no LLM, fact filter off, MiniLM).

    python benchmarks/bench_hipporag.py --working-dir /work/runs/bench [--questions 100]
        [--variants "hipporag:hipporag_dense_head=0,hipporag"]

Uses the project's benchmark (:mod:`lightrag_prism.eval.bench`): the same index (LightRAG's insert pipeline
replaying the bundled OpenIE triples, built once per working dir and reused), the same recall and latency
measurement. Runs naive (dense) first, then every variant (a mode spec: ``mode:knob=value:...``), and prints
R@1/2/5/10, the median latency and its ratio to naive measured in the same run, plus the hipporag graph view size.
Writes JSON to ``--out``/bench_hipporag.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path

from lightrag_prism.eval.bench import evaluate_mode, load_dataset, open_index

HIPPORAG2 = "hipporag:linking_top_k=5:passage_node_weight=0.05:hipporag_dense_head=0"  # HippoRAG 2's settings
DEFAULT_VARIANTS = ",".join([
    HIPPORAG2,
    "hipporag:linking_top_k=5:passage_node_weight=0.05:hipporag_dense_head=1",  # + dense head only
    "hipporag:linking_top_k=10:passage_node_weight=0.05",  # + more linked facts only
    "hipporag:linking_top_k=5:passage_node_weight=0.1",  # + stronger passage nodes only
    "hipporag:hipporag_dense_head=0",  # default without the dense head
    "hipporag",  # default: linking_top_k=10, passage_node_weight=0.1, hipporag_dense_head=1
])


async def graph_summary(rag) -> dict:
    from lightrag_prism.retrievers.views.passage_graph import hipporag_graph

    snapshot = await rag.graph_snapshot()
    view = await hipporag_graph(rag, snapshot)
    return {"entities": snapshot.num_nodes, "facts": snapshot.num_edges, "passages": len(view.passage_ids),
            "synonym_edges": view.n_synonym_edges, "synonym_knn_seconds": round(view.build_seconds["synonyms"], 2)}


def line(name: str, summary: dict, naive_median: float) -> str:
    r, median = summary["recall"], summary["latency_ms"]["median"]
    return (f"| {name} | {r['1']} | {r['2']} | {r['5']} | {r['10']} | {median} | "
            f"{median / naive_median:.2f}x |")


async def main(args) -> None:
    logging.basicConfig(level=logging.WARNING)
    dataset = load_dataset("musique", args.questions)
    work = Path(args.working_dir) / f"{dataset.name}-{len(dataset.passages)}"
    rag = await open_index(dataset, work, progress=False)
    results = {"graph": await graph_summary(rag)}
    print(results["graph"])
    try:
        results["naive"], _ = await evaluate_mode(rag, "naive", dataset, None, progress=False)
        naive_median = results["naive"]["latency_ms"]["median"]
        print("| mode | R@1 | R@2 | R@5 | R@10 | median ms | vs naive |\n|---|---|---|---|---|---|---|")
        print(line("naive", results["naive"], naive_median), flush=True)
        for spec in [v.strip() for v in args.variants.split(",") if v.strip()]:
            results[spec], _ = await evaluate_mode(rag, spec, dataset, None, progress=False)
            print(line(spec, results[spec], naive_median), flush=True)
    finally:
        await rag.finalize_storages()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_hipporag.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=None, help="first N questions (default: all 100)")
    parser.add_argument("--working-dir", default="prism_storage/bench")
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help="comma-separated mode specs")
    parser.add_argument("--out", default="benchmarks/results")
    asyncio.run(main(parser.parse_args()))
