"""Second hops without the graph, and other fusions of BM25 and dense, on a bench index (docs/benchmarks.md,
"Tried and not kept"). Scores every question of the set with variants built from the index's own passage vectors
and BM25 (the lexical channel of ``prism``/``hipporag``), no mode run:

* ``bm25``, ``dense``, ``fusion`` (RRF k = 60, what the thin-graph fallback ranks by);
* ``hop2 <anchor>``: the anchor's top passage A first, the rest by RRF of BM25 and BM25 of question + A's text;
* ``words <anchor>``: the same with only A's words the question lacks;
* ``names <anchor>``: question + the names of the graph's entities in A;
* ``entities <anchor>``: passages sharing A's graph entities, weighted by 1 / log(1 + their passages);
* ``rrf10``, ``rrf bm25x2``, ``combsum z``: other fusions.

    python benchmarks/explore_second_hop.py notes /tmp/bench-docs/notes-40-text
    python benchmarks/explore_second_hop.py pgdocs /tmp/bench-docs/pgdocs-979-text

Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lightrag_prism.eval.bench import load_dataset, open_index  # noqa: E402
from lightrag_prism.eval.index import passage_lookup  # noqa: E402
from lightrag_prism.retrievers.views.lexical import fused_scores, terms  # noqa: E402
from lightrag_prism.retrievers.views.passage_graph import hipporag_graph, passage_incidence  # noqa: E402


def rrf(parts: list[np.ndarray], k: int = 60, weights: list[float] | None = None) -> np.ndarray:
    out = np.zeros(len(parts[0]))
    for i, scores in enumerate(parts):
        weight = weights[i] if weights else 1.0
        out[np.argsort(-scores, kind="stable")] += weight / (k + np.arange(1, len(scores) + 1))
    return out


def z(scores: np.ndarray) -> np.ndarray:
    return (scores - scores.mean()) / scores.std() if scores.std() > 0 else scores * 0


async def main(name: str, working_dir: str) -> None:
    dataset = load_dataset(name, None)
    rag = await open_index(dataset, Path(working_dir), progress=False, text_only=True)
    snapshot = await rag.graph_snapshot()
    graph = await hipporag_graph(rag, snapshot)
    lookup = passage_lookup(dataset)
    pid = [lookup.get(d["content"].strip(), "?") for d in graph.passage_data]
    texts = [d["content"] for d in graph.passage_data]
    entities = passage_incidence(snapshot, len(pid))
    by_entity, names = entities.tocsr(), list(snapshot.node_ids)
    spread = np.asarray(by_entity.sum(axis=1)).ravel()
    vectors = np.asarray(await rag.embedding_func([q.text for q in dataset.questions]), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    passages = graph.passage_vectors / np.linalg.norm(graph.passage_vectors, axis=1, keepdims=True)
    recall: dict[str, list[tuple[float, float]]] = {}
    for question, vector in zip(dataset.questions, vectors):
        gold = set(question.gold_passage_ids)

        def add(variant: str, scores: np.ndarray) -> None:
            ranked = [pid[i] for i in np.argsort(-scores, kind="stable")]
            recall.setdefault(variant, []).append((len(gold & set(ranked[:2])) / len(gold),
                                                   len(gold & set(ranked[:5])) / len(gold)))

        dense, lexical = passages @ vector, graph.lexical.scores(question.text)
        fusion = fused_scores(dense, lexical, 1.0)
        fusions = {"bm25": lexical, "dense": dense, "fusion": fusion, "rrf10": rrf([dense, lexical], 10),
                   "rrf bm25x2": rrf([dense, lexical], 60, [1, 2]), "combsum z": z(dense) + z(lexical)}
        for variant, scores in fusions.items():
            add(variant, scores)
        asked = set(terms(question.text))
        for anchor_name, anchor_scores in (("bm25", lexical), ("fusion", fusion)):
            a = int(np.argmax(anchor_scores))
            bridge = [e for e in entities.tocsc()[:, a].indices if not set(terms(names[e])) <= asked]
            shared = np.zeros(len(pid))
            for e in bridge:
                shared[by_entity[e].indices] += 1.0 / np.log1p(max(spread[e], 1))
            hops = {"hop2": graph.lexical.scores(question.text + "\n" + texts[a]),
                    "words": graph.lexical.scores(" ".join([question.text] + [t for t in dict.fromkeys(terms(texts[a]))
                                                                               if t not in asked])),
                    "names": graph.lexical.scores(question.text + " " + " ".join(names[e] for e in bridge)),
                    "entities": shared}
            for variant, second in hops.items():
                scores = rrf([lexical, second])
                scores[a] = np.inf
                add(f"{variant} {anchor_name}", scores)
    for variant, pairs in recall.items():
        r2, r5 = np.mean(pairs, axis=0) * 100
        print(f"{name:8s} {variant:16s} R@2 {r2:5.1f}  R@5 {r5:5.1f}")
    await rag.finalize_storages()


if __name__ == "__main__":
    logging.getLogger("lightrag").setLevel(logging.WARNING)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
