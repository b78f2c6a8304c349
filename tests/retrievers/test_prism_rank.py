"""prism_rank: name linking, seed weights and the re-weightable passage graph, against independent constructions
(scipy block matrices, networkx PageRank)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from lightrag_prism.retrievers.views import passage_rank as pr
from lightrag_prism.retrievers.prism.expand import top_non_seed
from lightrag_prism.snapshot import build_snapshot


def _snap():
    nodes = [{"id": "A", "source_id": "c1<SEP>c2<SEP>c3"}, {"id": "B", "source_id": "c2"},
             {"id": "C", "source_id": "c3"}, {"id": "D", "source_id": "c4"}, {"id": "Hello Love", "source_id": "c4"}]
    edges = [{"source": "A", "target": "B", "weight": 2.0, "source_id": "c2"},
             {"source": "C", "target": "D", "weight": 1.0, "source_id": "c4"},
             {"source": "A", "target": "C", "weight": 3.0, "source_id": "c3"}]
    return build_snapshot(nodes, edges)


def _random_snap(rng, n=30, m=60, chunks=12):
    names = [f"e{i}" for i in range(n)]
    nodes = [{"id": x, "source_id": "<SEP>".join(f"c{c}" for c in rng.choice(chunks, rng.integers(1, 4), replace=False))}
             for x in names]
    pairs = {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(m)}
    edges = [{"source": names[a], "target": names[b], "weight": float(rng.uniform(0.5, 3)), "source_id": "c0"}
             for a, b in sorted(pairs)]
    return build_snapshot(nodes, edges)


def test_name_links_fold_case_and_possessives():
    snap = _snap()
    got = pr.name_links(snap, ["hello love's", "a", "Nobody", "HELLO LOVE"])
    assert [snap.node_ids[i] for i in got.tolist()] == sorted(["A", "Hello Love"], key=snap.node_index.get)
    assert pr.name_links(snap, []).size == 0
    assert pr.name_key("  Hello Love’s ") == "hello love"


def test_seed_vector_adds_inverse_passage_count_for_linked_names():
    snap = _snap()
    counts = pr.entity_num_chunks(snap)
    a, b = snap.node_index["A"], snap.node_index["B"]
    facts = np.zeros(snap.num_nodes)
    facts[b] = 0.25
    seeds = pr.seed_vector(facts, np.array([a, b]), counts)
    assert seeds[a] == pytest.approx(1 / 3) and seeds[b] == pytest.approx(0.25 + 1.0)
    assert facts[b] == 0.25  # the input is not modified


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_passage_graph_equals_the_block_matrix_built_independently(seed):
    rng = np.random.default_rng(seed)
    snap = _random_snap(rng)
    n, p = snap.num_nodes, len(snap.chunk_ids) + 2  # two passages with no entity
    syn_pairs = [(0, 1, 0.9), (2, 3, 0.85)] + [(int(snap.edge_src[0]), int(snap.edge_tgt[0]), 0.8)]  # one overlaps
    rows, cols, w = zip(*syn_pairs)
    syn = sp.coo_matrix((w + w, (rows + cols, cols + rows)), shape=(n, n)).tocsr()
    inc = sp.csr_matrix((np.ones(snap.entity_chunks.nnz), snap.entity_chunks.indices, snap.entity_chunks.indptr),
                        shape=(n, p))
    graph = pr.build_passage_graph(snap, syn, inc)
    factor = rng.uniform(0.0, 2.0, snap.num_edges)
    fact = sp.coo_matrix((np.concatenate([factor * [d["weight"] for d in snap.edge_data]] * 2),
                          (np.concatenate([snap.edge_src, snap.edge_tgt]), np.concatenate([snap.edge_tgt, snap.edge_src]))),
                         shape=(n, n))
    expected = sp.bmat([[fact + syn, inc], [inc.T, None]]).toarray()
    assert np.allclose(graph.adjacency(factor).toarray(), expected)
    # weighted() is in solve order: node order[k] is row k, rows by entries longest first, counted before the blocks
    # merge (the synonym pair that is also a fact counts twice)
    count = lambda m, axis: np.count_nonzero(m.toarray(), axis=axis)
    lengths = np.concatenate([count(fact, 1) + count(syn, 1) + count(inc, 1), count(inc, 0)])
    assert graph.order.tolist() == sorted(range(n + p), key=lambda v: (-lengths[v], v))
    assert (graph.position[graph.order] == np.arange(n + p)).all()
    adjacency, out_weight = graph.weighted(factor)  # out-weights from the static part plus the scaled fact entries
    assert adjacency.dtype == pr.PASSAGE_PPR_DTYPE == np.float32 and out_weight.dtype == np.float64
    assert np.allclose(adjacency.toarray(), expected[graph.order][:, graph.order])
    assert np.allclose(out_weight, expected.sum(axis=1)[graph.order])


def test_passage_ppr_matches_networkx_on_the_weighted_graph():
    rng = np.random.default_rng(7)
    snap = _random_snap(rng)
    n, p = snap.num_nodes, len(snap.chunk_ids)
    inc = sp.csr_matrix((np.ones(snap.entity_chunks.nnz), snap.entity_chunks.indices, snap.entity_chunks.indptr),
                        shape=(n, p))
    graph = pr.build_passage_graph(snap, sp.csr_matrix((n, n)), inc)
    factor = rng.uniform(0.05, 1.0, snap.num_edges)
    ent, pas = np.zeros(n), rng.uniform(0, 0.1, p)
    ent[[0, 5]] = [1.0, 0.5]
    got_e, got_p = pr.passage_ppr(graph, ent, pas, factor, damping=0.5)
    g = nx.from_scipy_sparse_array(graph.adjacency(factor), create_using=nx.Graph)
    pers = dict(enumerate(np.concatenate([ent, pas]) / (ent.sum() + pas.sum())))
    ref = nx.pagerank(g, alpha=0.5, personalization=pers, weight="weight", tol=1e-13, max_iter=1000)
    ref = np.array([ref[i] for i in range(n + p)])
    assert np.abs(np.concatenate([got_e, got_p]) - ref).sum() < 1e-5


def test_top_k_and_minmax():
    scores = np.array([0.2, np.nan, 0.9, 0.2, -np.inf])
    assert pr.top_k(scores, 2).tolist() == [2, 0]
    assert pr.top_k(scores, 0).size == 0
    assert pr.minmax(np.array([1.0, 3.0])).tolist() == [0.0, 1.0]
    assert pr.minmax(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]


def test_passage_personalization_adds_the_head_mass_to_the_best_dense_passages():
    dense = np.array([0.2, 0.9, 0.5, 0.7])
    got = pr.passage_personalization(dense, 0.1, pr.top_k(dense, 2), 3.0)
    prior = 0.1 * (dense - 0.2) / 0.7
    assert np.allclose(got, prior + np.array([0.0, 1.5, 0.0, 1.5]))
    no_head = pr.top_k(dense, 0)
    assert np.allclose(pr.passage_personalization(dense, 0.1, no_head, 3.0), prior)  # no head: the dense prior only
    everything = pr.top_k(dense, 9)  # head larger than the corpus
    assert np.allclose(pr.passage_personalization(dense, 0.1, everything, 4.0), prior + 1.0)


def _mmr_reference(dense, vectors, head, novelty, pool):
    """Maximal marginal relevance written out from its definition, loop by loop (independent of the vectorised
    kernel): the dense best first, then argmax of dense - novelty * max cosine to the chosen, among the dense top
    ``pool``, ties to the better dense rank."""
    order = sorted(range(len(dense)), key=lambda i: (-dense[i], i))[:max(pool, head)]
    cos = lambda a, b: float(np.dot(vectors[a], vectors[b]) / (np.linalg.norm(vectors[a]) * np.linalg.norm(vectors[b])))
    chosen = [order[0]]
    while len(chosen) < min(head, len(order)):
        best, best_score = None, -np.inf
        for i in order:
            if i in chosen:
                continue
            score = dense[i] - novelty * max(cos(i, j) for j in chosen)
            if score > best_score + 1e-12:
                best, best_score = i, score
        chosen.append(best)
    return chosen


@pytest.mark.parametrize("seed", range(20))
def test_dense_head_rows_is_maximal_marginal_relevance(seed):
    rng = np.random.default_rng(seed)
    n, head = int(rng.integers(1, 30)), int(rng.integers(1, 5))
    vectors = rng.normal(size=(n, 8)) * rng.uniform(0.5, 2.0, size=(n, 1))  # not unit length: cosine is normalised
    dense = rng.normal(size=n)
    novelty = float(rng.choice([0.1, 0.3, 1.0]))
    got = pr.dense_head_rows(dense, vectors, head, novelty, pool=10)
    assert got.tolist() == _mmr_reference(dense, vectors, head, novelty, 10)
    # novelty 0 is the dense order, as is a head of one
    assert pr.dense_head_rows(dense, vectors, head, 0.0).tolist() == pr.top_k(dense, head).tolist()
    assert pr.dense_head_rows(dense, vectors, 1, novelty).tolist() == pr.top_k(dense, 1).tolist()
    assert pr.dense_head_rows(dense, vectors, 0, novelty).size == 0
    assert pr.dense_head_rows(dense[:0], vectors[:0], head, novelty).size == 0  # no passage at all


def test_dense_head_skips_a_near_copy_of_the_first_passage():
    """p1 says p0 again (cosine 0.99) and scores just below it; p2 is the other hop. The head of two is p0, p2;
    below the pool nothing is picked, however novel."""
    vectors = np.array([[1.0, 0.0, 0.0], [0.99, 0.14, 0.0], [0.3, 0.95, 0.0], [0.0, 0.0, 1.0]])
    dense = np.array([0.80, 0.78, 0.70, 0.30])
    assert pr.dense_head_rows(dense, vectors, 2, 0.3).tolist() == [0, 2]
    assert pr.dense_head_rows(dense, vectors, 2, 0.0).tolist() == [0, 1]
    assert pr.dense_head_rows(dense, vectors, 2, 5.0, pool=2).tolist() == [0, 1]  # p2 and p3 are outside the pool
    assert pr.dense_head_rows(dense, vectors, 3, 0.3).tolist() == [0, 2, 1]  # all three from the pool
    gone = np.array([0.80, 0.78, -np.inf, 0.30])  # p2's text is gone (HippoGraph.head_rows masks it so)
    assert pr.dense_head_rows(gone, vectors, 2, 5.0).tolist() == [0, 3]  # never picked, however novel


def test_head_seeds_let_the_walk_reach_the_passage_behind_the_best_one():
    """p0 (best dense) names Kathi; Kathi -> Harbor is a fact; Harbor's passage p1 has a weak dense score and no
    other link. The seed entity is elsewhere. Without head seeds the decoy p2 (dense 0.45, no links) outranks p1;
    with them, p1 does: the bridge of a two-hop question."""
    nodes = [{"id": "Seed", "source_id": "p3"}, {"id": "Kathi", "source_id": "p0"},
             {"id": "Harbor", "source_id": "p1"}, {"id": "Decoy", "source_id": "p2"}]
    snap = build_snapshot(nodes, [{"source": "Kathi", "target": "Harbor", "weight": 1.0, "source_id": "p0"}])
    n, p = snap.num_nodes, len(snap.chunk_ids)
    inc = sp.csr_matrix((np.ones(snap.entity_chunks.nnz), snap.entity_chunks.indices, snap.entity_chunks.indptr),
                        shape=(n, p))
    graph = pr.build_passage_graph(snap, sp.csr_matrix((n, n)), inc)
    dense = np.array([{"p0": 1.0, "p1": 0.2, "p2": 0.45, "p3": 0.0}[c] for c in snap.chunk_ids])
    seeds = np.zeros(n)
    seeds[snap.node_index["Seed"]] = 1.0
    ranks = {}
    for head_mass in (0.0, 1.0):
        passages = pr.passage_personalization(dense, 0.1, pr.top_k(dense, 1), head_mass)
        _, scores = pr.passage_ppr(graph, seeds, passages, np.ones(snap.num_edges), damping=0.5)
        ranks[head_mass] = dict(zip(snap.chunk_ids, scores))
    assert ranks[0.0]["p2"] > ranks[0.0]["p1"]
    assert ranks[1.0]["p1"] > ranks[1.0]["p2"]


@pytest.mark.parametrize("seed", range(40))
def test_top_non_seed_equals_sorting_the_non_seeds(seed):
    """The best k positive non-seed nodes (ties: lower index), as a plain sort of the non-seeds gives them."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    dtype = np.float32 if seed % 2 else np.float64  # FastRP's similarities are float32, PPR's float64
    values = rng.choice([-1.0, 0.0, 0.5, 1.0], n) if seed % 3 == 0 else rng.normal(size=n)  # ties, zeros too
    scores = values.astype(dtype)
    seeds = rng.choice(n, int(rng.integers(0, min(n, 15) + 1)), replace=False)
    k = int(rng.integers(0, 25))
    expected = sorted((v for v in range(n) if v not in set(seeds.tolist()) and scores[v] > 0),
                      key=lambda v: (-float(scores[v]), v))[:k]
    best, best_scores = top_non_seed(scores, seeds, k)
    assert best.tolist() == expected
    assert best_scores.dtype == np.float64 and best_scores.tolist() == [float(scores[v]) for v in expected]
