"""Why does HippoRAG 2 lose R@1/R@2 to dense retrieval? Per-query diagnosis on musique_train_100 (offline).

    python benchmarks/analyse_hipporag_top1.py [--workdir /tmp/prism_musique_kg]

For each question where dense ranks a gold passage first and hipporag (HippoRAG 2 defaults, filter off) does not,
reports how many graph entities the hipporag top-1 passage holds vs the gold passage (PPR mass grows with a
passage's degree), and whether the top-1 passage contains a seed entity.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from musique_kg import musique_rag  # noqa: E402

from lightrag_prism import QueryParam  # noqa: E402
from lightrag_prism.context import QueryContext  # noqa: E402
from lightrag_prism.retrievers import hipporag  # noqa: E402
from lightrag_prism.retrievers.hipporag_graph import hipporag_graph  # noqa: E402


async def main(args) -> None:
    rag, dataset, chunk_to_passage = await musique_rag(args.workdir)
    passage_to_chunk = {v: k for k, v in chunk_to_passage.items()}
    snapshot = await rag.graph_snapshot()
    graph = await hipporag_graph(rag, snapshot)
    degree = np.asarray((graph.adj[graph.n_entities:, :graph.n_entities] > 0).sum(axis=1)).ravel()
    position = {cid: i for i, cid in enumerate(graph.passage_ids)}
    lost, top_deg, gold_deg, seeded = 0, [], [], 0
    for q in dataset.questions[:args.questions]:
        param = QueryParam(mode="hipporag", enable_fact_filter=False, hipporag_dense_head=0, chunk_top_k=10)
        ctx = QueryContext(rag=rag, query=q.text, param=param)
        result = await hipporag.retrieve(ctx)
        q_vec = (await ctx.embed([q.text]))[0]
        dense_top = graph.passage_ids[int(np.argmax(graph.passage_vectors @ q_vec))]
        gold = {passage_to_chunk[g] for g in q.gold_passage_ids}
        top = result.chunks[0].id
        if dense_top in gold and top not in gold:
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
    parser.add_argument("--workdir", default="/tmp/prism_musique_kg")
    parser.add_argument("--questions", type=int, default=100)
    asyncio.run(main(parser.parse_args()))
