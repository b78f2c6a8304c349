"""prism_rank: seed linking with node specificity and the dense + graph chunk fusion, against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from lightrag_prism.retrievers import prism_rank as pr
from lightrag_prism.snapshot import build_snapshot


def _snap():
    nodes = [{"id": "A", "source_id": "c1<SEP>c2<SEP>c3"}, {"id": "B", "source_id": "c2"},
             {"id": "C", "source_id": "c3"}, {"id": "D", "source_id": "c4"}]
    edges = [{"source": "A", "target": "B", "weight": 1.0, "source_id": "c2"},
             {"source": "C", "target": "D", "weight": 1.0, "source_id": "c4"}]
    return build_snapshot(nodes, edges)


def test_link_seeds_unions_entities_and_fact_endpoints_with_specificity():
    snap = _snap()
    order = {n: i for i, n in enumerate(snap.node_ids)}
    ent_sim = np.zeros(4)
    ent_sim[order["A"]], ent_sim[order["D"]] = 0.9, 0.1
    e_cd = snap.edge_index()[("C", "D")] if ("C", "D") in snap.edge_index() else snap.edge_index()[("D", "C")]
    fact_sim = np.zeros(snap.num_edges)
    fact_sim[e_cd] = 0.6
    seeds, weights, facts = pr.link_seeds(snap, ent_sim, fact_sim, n_entities=1, n_facts=1)
    assert facts.tolist() == [e_cd]
    got = dict(zip((snap.node_ids[s] for s in seeds.tolist()), weights.tolist()))
    assert set(got) == {"A", "C", "D"}
    raw = {"A": 0.9 / 3, "C": 0.6, "D": 0.6}  # A is in 3 chunks
    total = sum(raw.values())
    assert got == pytest.approx({k: v / total for k, v in raw.items()})
    assert [snap.node_ids[s] for s in seeds.tolist()][0] in ("C", "D")


def test_graph_chunk_scores_divide_by_entity_chunk_count():
    snap = _snap()
    score = np.zeros(4)
    score[snap.node_index["A"]] = 3.0
    chunks = dict(zip(snap.chunk_ids, pr.graph_chunk_scores(snap, score).tolist()))
    assert chunks == pytest.approx({"c1": 1.0, "c2": 1.0, "c3": 1.0, "c4": 0.0})


def test_fuse_chunk_scores_weights_and_dense_head():
    dense = {"x": 0.9, "y": 0.5, "z": 0.1}
    graph = {"y": 1.0, "w": 0.8, "z": 0.0}
    ranked = pr.fuse_chunk_scores(dense, graph, graph_weight=0.5, dense_head=0)
    # minmax dense x1 y.5 z0 w0 (missing = min); graph y1 w.8 x0 z0 (missing = min)
    assert [r[0] for r in ranked] == ["y", "x", "w", "z"]
    assert dict((r[0], r[2]) for r in ranked) == {"y": ("dense", "graph"), "x": ("dense",), "w": ("graph",),
                                                  "z": ("dense", "graph")}
    head = pr.fuse_chunk_scores(dense, graph, graph_weight=1.0, dense_head=1)
    assert [r[0] for r in head] == ["x", "y", "w", "z"]
    assert [r[0] for r in pr.fuse_chunk_scores(dense, graph, 0.0, 0)][:1] == ["x"]
    assert pr.fuse_chunk_scores({}, {}, 0.5, 1) == []
