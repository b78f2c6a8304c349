"""The prism mode and the perspectives inside stock modes, on a small constructed graph (hash embedder, no LLM)."""

from __future__ import annotations

import os
import random
import threading

import numpy as np
import pytest
import pytest_asyncio
from lightrag import LightRAG

from lightrag_prism import QueryParam
from lightrag_prism.graph import FastRPState, fastrp_similarity
from lightrag_prism.retrievers.prism import expand as prism_expand, mode as prism
from lightrag_prism.retrievers.views import fastrp as fastrp_view
from lightrag_prism.snapshot import SnapshotCache, build_snapshot, patch_snapshot
from lightrag_prism.vectors import entity_vdb_id
from tests.helpers import without_citations
from tests.retrievers._kg import CHUNKS, ENTITIES, HL, LL, QUERY, chunk_id_of, hash_vector, make_rag

pytestmark = pytest.mark.asyncio


def qp(mode: str, **kw) -> QueryParam:
    """These tests walk a graph of a few passages, far thinner than ``thin_graph_relations``: the check is off."""
    return QueryParam(**{"mode": mode, "ll_keywords": LL, "hl_keywords": HL, "top_k": 2, "enable_rerank": False,
                         "thin_graph_relations": 0, **kw})


def qp_one_seed(**kw) -> QueryParam:
    """The prism mode seeded by name linking only (the query names Alice Vance): what it finds beyond is expansion.
    ``top_k`` 10: room for every entity the expansion finds (prism returns at most ``top_k``)."""
    return qp("prism", **{"prism_seed_facts": 0, "top_k": 10, **kw})


def names(result: dict) -> list[str]:
    return [e["entity_name"] for e in result["data"]["entities"]]


def chunk_ids(result: dict) -> list[str]:
    return [c["chunk_id"] for c in result["data"]["chunks"]]


@pytest_asyncio.fixture
async def rag(tmp_path):
    instance = await make_rag(tmp_path)
    yield instance
    await instance.finalize_storages()


async def test_knobs_off_is_stock_lightrag(rag, monkeypatch):
    async def boom(*_):
        raise AssertionError("augment must not run when the knobs are off")

    monkeypatch.setattr(prism, "augment", boom)
    ours = await rag.aquery_data(QUERY, qp("hybrid"))
    stock = await LightRAG.aquery_data(rag, QUERY, qp("hybrid"))
    assert without_citations(ours)["data"] == stock["data"]  # plus the citations every mode carries
    assert "prism" not in ours["metadata"]


async def test_prism_finds_two_hop_entity_and_its_chunk_that_hybrid_misses(rag):
    hybrid = await rag.aquery_data(QUERY, qp("hybrid", top_k=4))
    result = await rag.aquery_data(QUERY, qp_one_seed(top_k=4))
    assert "Blue River" not in names(hybrid) and chunk_id_of("c_blue") not in chunk_ids(hybrid)
    assert "Blue River" in names(result)
    assert chunk_id_of("c_blue") in chunk_ids(result)
    rels = {(r["src_id"], r["tgt_id"]) for r in result["data"]["relationships"]}
    assert ("Townsville", "Blue River") in rels or ("Blue River", "Townsville") in rels


async def test_every_item_has_score_and_found_by(rag):
    result = await rag.aquery_data(QUERY, qp_one_seed())
    data = result["data"]
    for row in data["entities"] + data["relationships"] + data["chunks"]:
        assert isinstance(row["score"], float) and row["found_by"], row
    blue = next(e for e in data["entities"] if e["entity_name"] == "Blue River")
    assert set(blue["found_by"].split("+")) <= {"multihop", "ppr", "fastrp"}
    assert [e["entity_name"] for e in data["entities"] if e["found_by"] == "seed"] == ["Alice Vance"]
    assert result["metadata"]["prism"]["expansion"]["found"]["ppr"] > 0


async def test_multihop_paths_lead_back_to_a_seed_along_graph_edges(rag):
    result = await rag.aquery_data(QUERY, qp_one_seed(multi_hop_relevance_threshold=0.0, top_ppr_nodes=0,
                                                      top_fastrp_nodes=0))
    snap = await rag.graph_snapshot()
    edges = snap.edge_index()
    seeds = {"Alice Vance"}
    with_path = [e for e in result["data"]["entities"] if e.get("path")]
    assert with_path
    for row in with_path:
        path = row["path"]
        assert path[0] in seeds and path[-1] == row["entity_name"] and len(path) <= 3
        assert all((a, b) in edges for a, b in zip(path, path[1:]))
        assert row["found_by"] == "multihop"
    blue = next(e for e in with_path if e["entity_name"] == "Blue River")
    assert blue["path"] == ["Alice Vance", "Townsville", "Blue River"]


async def test_augment_keeps_stock_items_first_and_adds_expanded_chunks(rag):
    stock = await rag.aquery_data(QUERY, qp("hybrid"))
    augmented = await rag.aquery_data(QUERY, qp("hybrid", top_ppr_nodes=5))
    got = names(augmented)
    assert got[: len(names(stock))] == names(stock)
    assert "Blue River" in got[len(names(stock)):]
    assert chunk_id_of("c_blue") in chunk_ids(augmented)
    stock_rels = [(r["src_id"], r["tgt_id"]) for r in stock["data"]["relationships"]]
    aug_rels = [(r["src_id"], r["tgt_id"]) for r in augmented["data"]["relationships"]]
    assert aug_rels[: len(stock_rels)] == stock_rels
    row = next(e for e in augmented["data"]["entities"] if e["entity_name"] == "Blue River")
    assert row["found_by"] == "ppr" and row["score"] > 0


async def test_score_fusion_and_single_perspectives(rag):
    for knobs in ({"top_ppr_nodes": 3}, {"top_fastrp_nodes": 3}, {"max_hop": 2}):
        result = await rag.aquery_data(QUERY, qp("hybrid", multi_hop_relevance_threshold=0.0, **knobs))
        perspective = {"top_ppr_nodes": "ppr", "top_fastrp_nodes": "fastrp", "max_hop": "multihop"}[next(iter(knobs))]
        expanded = [e for e in result["data"]["entities"] if e["found_by"] != "stock"]
        assert expanded and all(e["found_by"] == perspective for e in expanded)
    fused = await rag.aquery_data(QUERY, qp_one_seed(fusion_method="score"))
    scores = [e["score"] for e in fused["data"]["entities"] if e["found_by"] != "seed"]
    assert scores == sorted(scores, reverse=True) and max(scores) <= 3.0 + 1e-9


async def test_entity_similarities_use_vectors_by_id(rag, monkeypatch):
    snap = await rag.graph_snapshot()
    original = rag.entities_vdb.get_vectors_by_ids

    async def shuffled_and_partial(ids):
        found = await original(ids)
        keys = [k for k in found if k != entity_vdb_id("Blue River")]  # the store lacks one vector
        random.Random(0).shuffle(keys)
        return {k: found[k] for k in keys[::-1]}

    monkeypatch.setattr(rag.entities_vdb, "get_vectors_by_ids", shuffled_and_partial)
    from lightrag_prism.context import QueryContext

    ctx = QueryContext(rag=rag, query=QUERY, param=qp("prism"), ll_keywords="Alice Vance", hl_keywords="x")
    sig = await prism_expand.query_signals(ctx, snap)
    description = {n: d for n, _, d, _ in ENTITIES}
    expected = [hash_vector(f"{n}\n{description[n]}") @ hash_vector("Alice Vance") for n in snap.node_ids]
    rows = np.array([3, 0, 3])  # computed for the rows asked, then for every row
    assert np.allclose(sig.ent_sim(rows), np.asarray(expected)[rows], atol=1e-5)
    assert np.allclose(sig.ent_sim.values(), expected, atol=1e-5)
    assert snap.node_ids[int(np.argmax(sig.ent_sim.values()))] == "Alice Vance"


async def test_fastrp_is_cached_and_updated_incrementally_when_the_graph_grows(rag, monkeypatch):
    await rag.aquery_data(QUERY, qp("prism"))
    first = await rag.graph_snapshot()
    assert fastrp_view.FASTRP_KEY in first.derived and not first.derived[fastrp_view.FASTRP_KEY].incremental
    await rag.ainsert_custom_kg({
        "chunks": [{"content": "Gina Hale swam in the Blue River.", "source_id": "c_gina"}],
        "entities": [{"entity_name": "Gina Hale", "entity_type": "person", "description": "A swimmer.",
                      "source_id": "c_gina"}],
        "relationships": [{"src_id": "Gina Hale", "tgt_id": "Blue River", "description": "Gina swam there.",
                           "keywords": "swim", "weight": 1.0, "source_id": "c_gina"}],
    })
    await rag.aquery_data(QUERY, qp("prism"))
    second = await rag.graph_snapshot()
    cache = second.derived[fastrp_view.FASTRP_KEY]
    assert second is not first and cache.incremental and "Gina Hale" in cache.order
    perm = np.array([second.node_index[n] for n in cache.order])
    rebuilt = FastRPState.build(second.adj[perm][:, perm]).embedding
    assert np.allclose(cache.embedding[perm], rebuilt, atol=1e-5)

    # A deleted entity keeps its row as an isolated tombstone: still incremental, and equal to a full build of
    # the graph laid out in the state's order with that row empty.
    await rag.adelete_by_entity("Gina Hale")
    await rag.aquery_data(QUERY, qp("prism"))
    third = await rag.graph_snapshot()
    cache = third.derived[fastrp_view.FASTRP_KEY]
    assert "Gina Hale" not in third.node_index and cache.incremental and "Gina Hale" in cache.order
    rows = np.array([third.node_index.get(n, -1) for n in cache.order])
    live = np.flatnonzero(rows >= 0)
    laid_out = np.zeros((len(rows), len(rows)))
    laid_out[np.ix_(live, live)] = third.adj.toarray()[np.ix_(rows[live], rows[live])]
    rebuilt = FastRPState.build(laid_out).embedding
    assert np.allclose(cache.embedding[rows[live]], rebuilt[live], atol=1e-5)
    assert not rebuilt[cache.order.index("Gina Hale")].any()  # the tombstone is isolated
    # Queries score the state's rows in place: the same scores as the embeddings laid out in snapshot order.
    seeds, weights = np.array([third.node_index["Alice Vance"], 0]), np.array([0.7, 0.3])
    scores = prism_expand.fastrp_scores(third, second, seeds, weights)
    assert scores.shape == (third.num_nodes,)
    assert np.allclose(scores, fastrp_similarity(cache.embedding, seeds, weights), atol=1e-6)
    # The prism mode scores them on FastRP's own thread, beside multi-hop and the PPR: the same top nodes.
    threads = []
    score_here = prism_expand.fastrp_top

    def recorded(*args):
        threads.append(threading.current_thread().name)
        return score_here(*args)

    monkeypatch.setattr(prism_expand, "fastrp_top", recorded)
    found, found_scores = prism_expand.start_fastrp(third, second, seeds, weights, 3).result()
    expected, expected_scores = prism_expand.top_non_seed(scores, seeds, 3)
    assert found.tolist() == expected.tolist() and len(found) and np.allclose(found_scores, expected_scores)
    assert len(threads) == 1 and threads[0].startswith("prism-fastrp")


def chain_node(name):
    return {"id": name, "entity_type": "person", "description": name, "source_id": "c1"}


def chain_edge(a, b):
    return {"source": a, "target": b, "weight": 1.0, "description": f"{a} knows {b}", "keywords": "knows",
            "source_id": "c1"}


async def test_fastrp_of_a_second_successor_of_one_snapshot_is_built_not_updated_from_powers_written_over():
    names = [f"N{i}" for i in range(12)]
    pairs = [(names[i], names[i + 1]) for i in range(11)] + [("N0", "N5"), ("N3", "N9")]
    base = build_snapshot([chain_node(n) for n in names], [chain_edge(a, b) for a, b in pairs])
    fastrp_view.fastrp_cache(base, None)
    first = patch_snapshot(base, {}, {("N0", "N5"): None}, version=1)  # each drops one edge of ``base``
    second = patch_snapshot(base, {}, {("N3", "N9"): None}, version=2)
    assert fastrp_view.fastrp_cache(first, base).incremental  # it took base's powers and wrote over them
    cache = fastrp_view.fastrp_cache(second, base)
    assert not cache.incremental
    for snap in (first, second):
        rebuilt = FastRPState.build(snap.adj).embedding
        assert np.allclose(fastrp_view.fastrp_cache(snap, base).embedding, rebuilt, atol=1e-5)


class PublicGraphOnly:
    """A graph storage exposing only BaseGraphStorage's public methods, delegating to another storage."""

    PUBLIC = ("get_all_nodes", "get_all_edges", "get_node", "get_edge", "has_node", "has_edge", "node_degree",
              "edge_degree", "get_node_edges", "get_nodes_batch", "node_degrees_batch", "edge_degrees_batch",
              "get_edges_batch", "get_nodes_edges_batch", "index_done_callback", "get_all_labels",
              "get_knowledge_graph", "upsert_node", "upsert_edge", "delete_node", "remove_nodes", "remove_edges")

    def __init__(self, inner):
        self._inner = inner
        self.calls: set[str] = set()

    def __getattr__(self, name):
        if name not in self.PUBLIC:
            raise AttributeError(f"{name} is not public BaseGraphStorage API")
        self.calls.add(name)
        return getattr(self._inner, name)


async def test_prism_runs_on_a_storage_with_only_the_public_graph_api(rag):
    expected = await rag.aquery_data(QUERY, qp("prism"))
    double = PublicGraphOnly(rag.chunk_entity_relation_graph)
    rag.chunk_entity_relation_graph = double
    rag._snapshots = SnapshotCache(double)
    result = await rag.aquery_data(QUERY, qp("prism"))
    assert {"get_all_nodes", "get_all_edges"} <= double.calls
    assert names(result) == names(expected) and chunk_ids(result) == chunk_ids(expected)


async def test_prism_mode_runs_no_stock_search_and_embeds_once(rag, monkeypatch):
    async def no_vdb_search(*_, **__):
        raise AssertionError("the prism mode must not run LightRAG's entity/relation vector search")

    monkeypatch.setattr(rag.entities_vdb, "query", no_vdb_search)
    monkeypatch.setattr(rag.relationships_vdb, "query", no_vdb_search)
    from lightrag_prism.context import QueryContext

    calls = []
    original = QueryContext.embed

    async def counting(self, texts):
        calls.append(list(texts))
        return await original(self, texts)

    monkeypatch.setattr(QueryContext, "embed", counting)
    embedded = []
    inner = rag.embedding_func.func

    async def recording(texts, **kw):
        embedded.append(list(texts))
        return await inner(texts, **kw)

    monkeypatch.setattr(rag.embedding_func, "func", recording)
    await rag.aquery_data(QUERY, qp("prism"))  # the first query builds the passage graph and the fact index
    calls.clear()
    embedded.clear()
    result = await rag.aquery_data(QUERY, qp("prism"))
    assert result["data"]["chunks"]
    assert len(calls) == 1 and calls[0][0] == QUERY
    assert embedded == [[QUERY]]  # default: the query vector stands in for the keywords
    embedded.clear()
    await rag.aquery_data(QUERY, qp("prism", prism_keyword_vectors=True))
    assert embedded == [[QUERY, "Alice Vance", "painting exhibition"]]  # still one model call


async def test_prism_chunk_order_survives_lightrag_and_source_ids_are_restored(rag):
    result = await rag.aquery_data(QUERY, qp("prism", chunk_top_k=5))
    chunks = result["data"]["chunks"]
    assert [c["found_by"] for c in chunks] == ["dense"] * 2 + ["ppr"] * (len(chunks) - 2)  # prism_dense_head=2
    scores = [c["score"] for c in chunks]
    assert scores == sorted(scores, reverse=True)  # prism's order, not LightRAG's round robin
    snap = await rag.graph_snapshot()
    for row in result["data"]["entities"]:
        expected = snap.node_data[snap.node_index[row["entity_name"]]]["source_id"]
        assert row["source_id"] == expected
    assert all(r["source_id"] for r in result["data"]["relationships"])


def dense_order(query: str) -> list[str]:
    """Chunk ids by cosine to ``query`` under the test embedder (what a dense ranking gives)."""
    return [chunk_id_of(a) for a in sorted(CHUNKS, key=lambda a: -float(hash_vector(CHUNKS[a]) @ hash_vector(query)))]


async def test_passage_aware_ppr_lifts_the_two_hop_chunk_above_dense(rag):
    query = "What stream passes Alice Vance's birthplace?"  # c_blue is only third by dense similarity
    # a weak dense prior (prism_passage_weight) lets the walk from the seed decide past the first chunk
    result = await rag.aquery_data(query, qp_one_seed(prism_dense_head=0, chunk_top_k=5, prism_passage_weight=0.01))
    blue = chunk_id_of("c_blue")
    assert dense_order(query).index(blue) == 2
    assert chunk_ids(result)[:2] == [chunk_id_of("c_alice"), blue]
    scores = [c["score"] for c in result["data"]["chunks"]]
    assert scores[1] > max(scores[2:])
    assert result["metadata"]["prism"]["name_links"] == ["Alice Vance"]


async def test_nothing_linked_seeds_the_nearest_entity_and_records_it(rag):
    query = "what flows through the town"
    result = await rag.aquery_data(query, QueryParam(mode="prism", prism_seed_facts=0, chunk_top_k=5))
    seeds = [e["entity_name"] for e in result["data"]["entities"] if e["found_by"] == "seed"]
    nearest = max((n for n, *_ in ENTITIES), key=lambda n: float(
        hash_vector(f"{n}\n{next(d for m, _, d, _ in ENTITIES if m == n)}") @ hash_vector(query)))
    assert seeds == [nearest]
    steps = [f["step"] for f in result["metadata"]["prism"]["fallbacks"]]
    assert "prism_seeds" in steps and steps[-1] == "thin_graph"  # a graph of a few passages: the fusion ranks
    assert len(chunk_ids(result)) == len(CHUNKS)


async def test_prism_on_a_graph_without_relations(tmp_path):
    rag = await make_rag(tmp_path, kg={"chunks": [{"content": "Alice Vance paints.", "source_id": "c1"}],
                                       "entities": [{"entity_name": "Alice Vance", "entity_type": "person",
                                                     "description": "A painter.", "source_id": "c1"}],
                                       "relationships": []})
    try:
        result = await rag.aquery_data("What does Alice Vance do?", QueryParam(mode="prism"))
        assert [e["entity_name"] for e in result["data"]["entities"]] == ["Alice Vance"]
        assert [c["content"] for c in result["data"]["chunks"]] == ["Alice Vance paints."]
    finally:
        await rag.finalize_storages()


async def test_the_dense_head_seeds_the_walk_with_the_entity_seeds_mass(rag, monkeypatch):
    query = "What stream passes Alice Vance's birthplace?"
    calls = []
    real = prism.pr.passage_ppr

    def spy(graph, entity_weights, passage_weights, edge_factor, damping):
        calls.append((entity_weights.copy(), passage_weights.copy()))
        return real(graph, entity_weights, passage_weights, edge_factor, damping)

    monkeypatch.setattr(prism.pr, "passage_ppr", spy)
    result = await rag.aquery_data(query, qp_one_seed(chunk_top_k=5, lexical_weight=0))  # a dense head
    off = await rag.aquery_data(query, qp_one_seed(chunk_top_k=5, prism_head_seed_weight=0.0, lexical_weight=0))
    (entities, passages), (_, passages_off) = calls
    head = {chunk_ids(result)[0], chunk_ids(result)[1]}  # prism_dense_head=2: the two best dense chunks go first
    assert head == set(dense_order(query)[:2]) and chunk_ids(off)[:2] == chunk_ids(result)[:2]
    extra = passages - passages_off
    hippo = await prism.hipporag_graph(rag, await rag.graph_snapshot())
    extra_by_id = dict(zip(hippo.passage_ids, extra))
    assert {cid for cid, mass in extra_by_id.items() if mass > 0} == head
    assert sum(extra_by_id[c] for c in head) == pytest.approx(entities.sum())


async def test_prism_returns_at_most_top_k_entities_and_relations_seeds_and_facts_first(rag):
    wide = await rag.aquery_data(QUERY, qp("prism", top_k=20, chunk_top_k=5))
    narrow = await rag.aquery_data(QUERY, qp("prism", top_k=3, chunk_top_k=5))
    wide_entities, narrow_entities = names(wide), names(narrow)
    wide_relations = [(r["src_id"], r["tgt_id"]) for r in wide["data"]["relationships"]]
    narrow_relations = [(r["src_id"], r["tgt_id"]) for r in narrow["data"]["relationships"]]
    assert len(wide_entities) > 3 and len(wide_relations) > 3  # the cap below takes something away
    assert narrow_entities == wide_entities[:3] and narrow_relations == wide_relations[:3]
    found_by = [e["found_by"] for e in wide["data"]["entities"]]
    seeds = found_by.count("seed")
    assert seeds and found_by[:seeds] == ["seed"] * seeds  # seeds lead, then the expansion in fused order
    assert wide["data"]["relationships"][0]["found_by"] == "fact"
    assert chunk_ids(narrow) == chunk_ids(wide)  # passages are ranked by the walk, not by the items kept


async def test_fastrp_thread_runs_tasks_in_a_child_forked_after_it_ran():
    """A server that forks its workers after a query: the child gets a FastRP thread of its own, not a dead copy."""
    assert prism_expand._BESIDE.submit(threading.current_thread).result() is not threading.current_thread()
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if its FastRP thread runs a task
        try:
            code = 0 if prism_expand._BESIDE.submit(lambda: 2).result(timeout=10) == 2 else 1
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("mode", ["prism", "hipporag"])
async def test_a_thin_graph_ranks_the_passages_by_the_bm25_dense_fusion(rag, mode):
    """This graph has fewer relations per passage than ``thin_graph_relations``: the passages come in the order of
    the BM25 + dense reciprocal-rank fusion (computed here with bm25s and the test embedder), the fallback says why,
    and the entities the walk found still make the context. With the check off, the walk ranks them."""
    from lightrag_prism.eval.bm25 import BM25Index
    from lightrag_prism.eval.datasets import Passage
    from lightrag_prism.eval.metrics import reciprocal_rank_fusion

    query = "What stream passes Alice Vance's birthplace?"
    result = await rag.aquery_data(query, QueryParam(mode=mode, chunk_top_k=len(CHUNKS)))
    fallbacks = {f["step"]: f["reason"] for f in result["metadata"]["prism"]["fallbacks"]}
    snap = await rag.graph_snapshot()
    assert snap.num_edges / len(CHUNKS) < 4 and "relations per passage" in fallbacks["thin_graph"]
    bm25 = BM25Index([Passage(chunk_id_of(a), "", text) for a, text in CHUNKS.items()])
    lexical = [pid for pid, _ in bm25.search(query, k=len(CHUNKS))]
    expected = reciprocal_rank_fusion([dense_order(query), lexical])
    # the last two tie (cosine 0 to the query, no word in common): their order is the index's
    assert chunk_ids(result)[:3] == expected[:3] and set(chunk_ids(result)) == set(expected)
    assert {c["found_by"] for c in result["data"]["chunks"]} == {"dense+bm25"}
    if mode == "prism":
        assert result["data"]["entities"]  # the context still has the entities the walk found
    walked = await rag.aquery_data(query, QueryParam(mode=mode, chunk_top_k=len(CHUNKS), thin_graph_relations=0))
    assert "thin_graph" not in {f["step"] for f in walked["metadata"]["prism"]["fallbacks"]}
    assert "ppr" in {c["found_by"] for c in walked["data"]["chunks"]}


async def test_a_state_without_powers_scores_as_the_full_state_and_its_successor_is_built_whole():
    names = [f"N{i}" for i in range(12)]
    pairs = [(names[i], names[i + 1]) for i in range(11)] + [("N0", "N5")]
    base = build_snapshot([chain_node(n) for n in names], [chain_edge(a, b) for a, b in pairs])
    light = fastrp_view.fastrp_cache(base, None, keep_powers=False)
    full = FastRPState.build(base.adj)
    assert light.state.powers == () and full.powers
    assert np.array_equal(light.state.embedding, full.embedding)
    with pytest.raises(ValueError, match="no powers"):
        light.state.update(base.adj)
    grown = patch_snapshot(base, {}, {("N3", "N9"): chain_edge("N3", "N9")}, version=1)
    cache = fastrp_view.fastrp_cache(grown, base)
    assert not cache.incremental and cache.state.powers  # built whole, and it keeps its powers by default
    assert np.array_equal(cache.embedding, FastRPState.build(grown.adj).embedding)


async def test_an_instance_that_only_queries_keeps_no_fastrp_powers_until_it_changes_the_graph(tmp_path):
    from lightrag_prism import LightRAG as PrismRAG
    from tests.helpers import hash_embedding_func

    def open_rag():
        return PrismRAG(working_dir=str(tmp_path), workspace="powers", embedding_func=hash_embedding_func(32))

    writer = open_rag()
    await writer.initialize_storages()
    await writer.ainsert(["Ada Lovelace worked with Charles Babbage in London on the Analytical Engine.",
                          "Charles Babbage designed the Difference Engine in London."], ids=["d1", "d2"])
    await writer.aquery_data("Who worked with Babbage?", qp("prism"))
    assert writer.prism_seam.changes_graph
    assert (await writer.graph_snapshot()).derived[fastrp_view.FASTRP_KEY].state.powers
    await writer.finalize_storages()

    reader = open_rag()
    await reader.initialize_storages()
    try:
        answer = await reader.aquery_data("Who worked with Babbage?", qp("prism"))
        assert answer["data"]["chunks"] and not reader.prism_seam.changes_graph
        assert (await reader.graph_snapshot()).derived[fastrp_view.FASTRP_KEY].state.powers == ()
        await reader.ainsert("Ada Lovelace wrote notes on the Analytical Engine in 1843.", ids=["d3"])
        await reader.aquery_data("Who worked with Babbage?", qp("prism"))
        assert reader.prism_seam.changes_graph
        assert (await reader.graph_snapshot()).derived[fastrp_view.FASTRP_KEY].state.powers
    finally:
        await reader.finalize_storages()
