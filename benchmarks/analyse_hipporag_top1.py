"""Why does HippoRAG 2 lose R@1/R@2 to dense retrieval? Per-query diagnosis on musique_train_100 (offline).

    python benchmarks/analyse_hipporag_top1.py --working-dir /work/runs/bench [--questions 100]

Runs on the benchmark index (``lightrag_prism.eval.bench.open_index``, the one ``python -m lightrag_prism.eval.bench``
builds).

For each question where dense ranks a gold passage first and hipporag (HippoRAG 2 defaults, filter off) does not,
reports how many graph entities the hipporag top-1 passage holds vs the gold passage (PPR mass grows with a
passage's degree), and whether the top-1 passage contains a seed entity.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from pathlib import Path

import numpy as np

from lightrag_prism import QueryParam
from lightrag_prism.context import QueryContext
from lightrag_prism.eval.bench import load_dataset, open_index
from lightrag_prism.eval.index import passage_lookup
from lightrag_prism.retrievers.hipporag import mode as hipporag
from lightrag_prism.retrievers.views.passage_graph import hipporag_graph


async def main(args) -> None:
    dataset = load_dataset("musique", args.questions)
    rag = await open_index(dataset, Path(args.working_dir) / f"{dataset.name}-{len(dataset.passages)}", progress=False)
    snapshot = await rag.graph_snapshot()
    graph = await hipporag_graph(rag, snapshot)
    lookup = passage_lookup(dataset)
    passage_of = {cid: lookup.get(d["content"].strip()) for cid, d in zip(graph.passage_ids, graph.passage_data)}
    degree = np.asarray((graph.adj[graph.n_entities:, :graph.n_entities] > 0).sum(axis=1)).ravel()
    position = {cid: i for i, cid in enumerate(graph.passage_ids)}
    lost, top_deg, gold_deg, seeded = 0, [], [], 0
    for q in dataset.questions:
        param = QueryParam(mode="hipporag", enable_fact_filter=False, hipporag_dense_head=0, linking_top_k=5,
                           passage_node_weight=0.05, chunk_top_k=10)  # HippoRAG 2's settings
        ctx = QueryContext(rag=rag, query=q.text, param=param)
        result = await hipporag.retrieve(ctx)
        q_vec = (await ctx.embed([q.text]))[0]
        dense_top = graph.passage_ids[int(np.argmax(graph.passage_vectors @ q_vec))]
        gold = set(q.gold_passage_ids)
        top = result.chunks[0].id
        if passage_of[dense_top] in gold and passage_of[top] not in gold:
            lost += 1
            top_deg.append(degree[position[top]])
            gold_deg.append(degree[position[dense_top]])
            seeds = {snapshot.node_index[e.id] for e in result.entities}
            entities_of_top = set(graph.adj[graph.n_entities + position[top]].indices.tolist())
            seeded += bool(seeds & entities_of_top)
    print(f"questions where dense top-1 is gold but hipporag top-1 is not: {lost}")
    if lost:
        print(f"median #entities of hipporag's top-1 passage {statistics.median(top_deg)} vs the gold passage "
              f"{statistics.median(gold_deg)}; top-1 contains a seed entity in {seeded}/{lost}")
    print(f"median #entities per passage overall: {statistics.median(degree.tolist())}")
    await rag.finalize_storages()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--working-dir", default="prism_storage/bench")
    parser.add_argument("--questions", type=int, default=None, help="first N questions (default: all 100)")
    asyncio.run(main(parser.parse_args()))
