"""The hipporag mode: seed weights, PPR ranking, fallbacks and the LLM filter through the scripted server."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lightrag_prism import LightRAG, QueryParam
from lightrag_prism.retrievers import valid_modes
from lightrag_prism.retrievers.hipporag.mode import rank_passages
from lightrag_prism.retrievers.views.ranking import dense_head, seed_weights
from lightrag_prism.retrievers.views.passage_graph import hipporag_graph
from tests.helpers import lightrag_kwargs
from tests.retrievers._hippo import fake_rag, snapshot_of

QUESTION = "alpha beta gamma delta?"
Y_FACTS = [("alpha one", "beta", "gamma three"), ("beta two", "gamma", "delta four"),
           ("alpha one", "delta", "beta two"), ("gamma three", "alpha", "delta four")]
X_FACT = ("Thomas C. Südhof", "beta", "東京")  # the gold fact: non-ASCII names, one query word
Z_FACTS = [("omega", "near", "sigma"), ("kappa", "far from", "lambda"), ("sigma", "orbits", "kappa")]  # no query word
PASSAGES = {"y": "Alpha beta gamma delta all together in passage Y.", "x": "Thomas C. Südhof visited 東京.",
            "z": "An unrelated passage about omega."}
KEEP_X = '[[ ## fact_after_filter ## ]]\n{"fact": [["Thomas C. Südhof", "beta", "東京"]]}\n\n[[ ## completed ## ]]'


def custom_kg() -> dict:
    facts = [(f, "y") for f in Y_FACTS] + [(X_FACT, "x")] + [(f, "z") for f in Z_FACTS]
    names = {}
    for (s, _, o), src in facts:
        names.setdefault(s, src)
        names.setdefault(o, src)
    return {
        "chunks": [{"content": text, "source_id": key, "file_path": f"{key}.txt"} for key, text in PASSAGES.items()],
        "entities": [{"entity_name": n, "entity_type": "thing", "description": n, "source_id": src}
                     for n, src in names.items()],
        "relationships": [{"src_id": s, "tgt_id": o, "keywords": p, "description": f"{s} {p} {o}", "weight": 1.0,
                           "source_id": src} for (s, p, o), src in facts],
    }


async def make_rag(server, tmp_path, llm: bool = True):
    kwargs = lightrag_kwargs(server, tmp_path, dim=256)
    if not llm:
        kwargs.pop("llm_model_func")
    rag = LightRAG(**kwargs)
    await rag.initialize_storages()
    await rag.ainsert_custom_kg(custom_kg())
    return rag


HIPPORAG2_LINKING = {"linking_top_k": 5, "passage_node_weight": 0.05}  # HippoRAG 2's values (defaults: 10, 0.1)
# these tests walk a graph of a few passages, far thinner than thin_graph_relations: the check is off, so the walk ranks
WALK = {"thin_graph_relations": 0}


async def query(rag, **param) -> tuple[list[dict], dict]:
    param = {**HIPPORAG2_LINKING, **WALK, **param}
    data = await rag.aquery_data(QUESTION, param=QueryParam(mode="hipporag", **param))
    return data["data"]["chunks"], data["metadata"]["prism"]


def top_content(chunks) -> str:
    return chunks[0]["content"]


def fallback_steps(meta) -> dict:
    return {f["step"]: f["reason"] for f in meta["fallbacks"]}


def test_mode_is_registered():
    assert "hipporag" in valid_modes()


def test_seed_weights_formula():
    # facts 0: (0, 1) score 1.0; 1: (1, 2) score 0.5 -- entity 1 is in 2 passages, the others in 1 and 4
    src, tgt = np.array([0, 1]), np.array([1, 2])
    num_chunks = np.array([1.0, 2.0, 4.0, 1.0])
    weights = seed_weights(np.array([0, 1]), np.array([1.0, 0.5]), src, tgt, num_chunks, top_n=5)
    np.testing.assert_allclose(weights, [1.0, (1.0 / 2 + 0.5 / 2) / 2, 0.5 / 4, 0.0])
    # top_n=2 keeps the phrases with the best MEAN fact score (0: 1.0, 1: 0.75), not the best weight
    np.testing.assert_allclose(seed_weights(np.array([0, 1]), np.array([1.0, 0.5]), src, tgt, num_chunks, 2),
                               [1.0, 0.375, 0.0, 0.0])
    zero = seed_weights(np.array([0]), np.array([0.8]), src, tgt, np.array([0.0, 0.0, 1.0, 1.0]), 5)
    np.testing.assert_allclose(zero, [0.8, 0.8, 0.0, 0.0])  # an entity in no passage is divided by 1


def _seed_weights_by_loops(fact_rows, fact_scores, src, tgt, num_chunks, top_n):
    """HippoRAG 2's phrase weights written out entity by entity: the reference of the vectorised kernel."""
    named = {}
    for row, score in zip(fact_rows.tolist(), fact_scores.tolist()):
        for entity in (int(src[row]), int(tgt[row])):
            named.setdefault(entity, []).append(score)
    weight = {e: sum(s / (num_chunks[e] if num_chunks[e] > 0 else 1.0) for s in ss) / len(ss) for e, ss in named.items()}
    if 0 < top_n < len(named):  # the best mean scores, ties to the lower entity
        kept = sorted(named, key=lambda e: (-sum(named[e]) / len(named[e]), e))[:top_n]
        weight = {e: weight[e] for e in kept}
    out = np.zeros(len(num_chunks))
    for entity, w in weight.items():
        out[entity] = w
    return out


@pytest.mark.parametrize("seed", range(40))
def test_seed_weights_equal_the_entity_by_entity_reference(seed):
    rng = np.random.default_rng(seed)
    n, e = int(rng.integers(2, 60)), int(rng.integers(1, 80))
    src, tgt = rng.integers(0, n, e), rng.integers(0, n, e)
    rows = rng.choice(e, int(rng.integers(0, min(e, 25) + 1)), replace=False)
    scores = rng.choice([0.25, 0.5, 1.0], rows.size) if seed % 2 else rng.uniform(0.0, 1.0, rows.size)  # ties too
    num_chunks = rng.integers(0, 4, n).astype(np.float64)
    top_n = int(rng.integers(0, 8))
    np.testing.assert_allclose(seed_weights(rows, scores, src, tgt, num_chunks, top_n),
                               _seed_weights_by_loops(rows, scores, src, tgt, num_chunks, top_n), rtol=1e-12)


@pytest.mark.asyncio
async def test_ppr_ranks_the_seed_passages_first(tmp_path):
    entities = {"a": ["c1"], "b": ["c1", "c2"], "c": ["c3"], "d": ["c3"]}
    relations = [("a", "b", "r", 1.0, ["c1"]), ("c", "d", "r", 1.0, ["c3"])]
    rag = fake_rag(tmp_path, {"c1": "one", "c2": "two", "c3": "three"})
    snapshot = snapshot_of(entities, relations)
    graph = await hipporag_graph(rag, snapshot)
    param = QueryParam(mode="hipporag")
    seeds = np.zeros(4)
    seeds[snapshot.node_index["c"]] = 1.0
    dense = np.array([0.9, 0.5, 0.1])  # dense prefers c1, the seed sits in c3
    param = QueryParam(mode="hipporag", hipporag_dense_head=0)  # HippoRAG 2's pure PPR order
    scores = rank_passages(graph, seeds, dense, param)
    assert np.argmax(scores) == 2
    assert scores[0] > scores[1]  # without graph support the dense teleport decides the rest
    seeds[:] = 0
    seeds[snapshot.node_index["b"]] = 1.0  # b is in c1 and c2
    scores = rank_passages(graph, seeds, dense, param)
    assert set(np.argsort(-scores)[:2]) == {0, 1} and scores[2] < scores[1]
    pure = rank_passages(graph, seeds, dense, QueryParam(mode="hipporag", hipporag_dense_head=0))
    headed = rank_passages(graph, seeds, dense, QueryParam(mode="hipporag", hipporag_dense_head=1))
    assert headed[0] > 1.0 and np.argmax(headed) == 0  # c1 is dense's best: it goes first ...
    np.testing.assert_allclose(headed[1:], pure[1:])  # ... and the rest keeps its PPR order and scores
    top3 = np.array([0, 1, 2])
    assert (dense_head(pure, top3) > 1.0).all() and list(np.argsort(-dense_head(pure, top3))) == [0, 1, 2]
    np.testing.assert_array_equal(dense_head(pure, top3[:0]), pure)


@pytest.mark.asyncio
async def test_scripted_filter_keeping_the_gold_fact_changes_the_ranking(scripted_server, tmp_path):
    rag = await make_rag(scripted_server, tmp_path)
    unfiltered, meta = await query(rag, enable_fact_filter=False, hipporag_dense_head=0)
    assert top_content(unfiltered) == PASSAGES["y"]
    assert "hipporag_filter" in fallback_steps(meta)
    assert scripted_server.count(QUESTION) == 0  # filter off: no LLM call
    scripted_server.script(QUESTION, KEEP_X)
    chunks, meta = await query(rag, hipporag_dense_head=0)
    assert top_content(chunks) == PASSAGES["x"]
    assert chunks[0]["found_by"] == "ppr" and chunks[0]["score"] > chunks[1]["score"]
    headed, _ = await query(rag, hipporag_dense_head=1)  # dense's best first (Y), then the PPR order (X first)
    assert [c["content"] for c in headed[:2]] == [PASSAGES["y"], PASSAGES["x"]]
    assert [c["found_by"] for c in headed[:2]] == ["dense", "ppr"]
    assert meta["hipporag"]["facts"][0]["fact"] == list(X_FACT)
    assert {s["entity"] for s in meta["hipporag"]["seeds"]} == {"Thomas C. Südhof", "東京"}
    assert len(meta["hipporag"]["candidate_facts"]) == 5
    request = [r for r in scripted_server.chat_requests() if QUESTION in r.text][0]
    messages = request.body["messages"]
    assert len(messages) == 10 and messages[0]["role"] == "system"  # system, 4 few-shot pairs, the question
    assert json.loads(messages[-1]["content"].split("[[ ## fact_before_filter ## ]]\n")[1].split("\n\n")[0])["fact"]
    await rag.finalize_storages()


@pytest.mark.asyncio
@pytest.mark.parametrize("scenario", ["garbage", "error"])
async def test_llm_garbage_or_error_passes_top_facts_unfiltered(scripted_server, tmp_path, scenario):
    rag = await make_rag(scripted_server, tmp_path)
    if scenario == "garbage":
        scripted_server.garbage(QUESTION)
    else:
        scripted_server.error(QUESTION, status=500)
    chunks, meta = await query(rag)
    reason = fallback_steps(meta)["hipporag_filter"]
    assert ("unparseable" in reason) if scenario == "garbage" else reason.startswith("LLM error")
    assert len(meta["hipporag"]["facts"]) == 5 and top_content(chunks) == PASSAGES["y"]
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_no_llm_passes_top_facts_unfiltered(scripted_server, tmp_path):
    rag = await make_rag(scripted_server, tmp_path, llm=False)
    chunks, meta = await query(rag)
    assert fallback_steps(meta)["hipporag_filter"] == "no LLM configured"
    assert len(meta["hipporag"]["facts"]) == 5 and meta["hipporag"]["ranking"] == "ppr"
    assert top_content(chunks) == PASSAGES["y"]
    await rag.finalize_storages()


@pytest.mark.asyncio
async def test_no_surviving_fact_falls_back_to_dense(scripted_server, tmp_path):
    rag = await make_rag(scripted_server, tmp_path)
    scripted_server.script(QUESTION, '[[ ## fact_after_filter ## ]]\n{"fact": [["Paris", "in", "France"]]}')
    chunks, meta = await query(rag)
    assert "no fact survived" in fallback_steps(meta)["hipporag_ppr"]
    assert meta["hipporag"]["ranking"] == "dense" and meta["hipporag_invented_facts"] == 1
    assert "first-stage ranking (dense)" in fallback_steps(meta)["hipporag_ppr"]
    assert all(c["found_by"] == "dense" for c in chunks) and top_content(chunks) == PASSAGES["y"]
    await rag.finalize_storages()


NEAR_COPY = "Alpha beta gamma delta all together in passage Y, once more."  # passage Y said again
OTHER_HOP = "Alpha, beta and delta by way of W."  # shares fewer words with Y


@pytest.mark.asyncio
@pytest.mark.parametrize("mode, head_knob", [("hipporag", "hipporag_dense_head"), ("prism", "prism_dense_head")])
async def test_the_head_takes_a_novel_passage_over_a_near_copy_of_the_first(scripted_server, tmp_path, mode,
                                                                             head_knob):
    """The dense head of two is dense's best passage, then maximal marginal relevance among the dense top ten
    (``dense_head_novelty``): a near copy of the first passage gives way to the other hop; with novelty 0 the head
    is dense's first two, as before. The expectation is computed from the store's own vectors (``lexical_weight=0``,
    the default: the first stage is the dense scores)."""
    kwargs = lightrag_kwargs(scripted_server, tmp_path, dim=256)
    kwargs.pop("llm_model_func")
    rag = LightRAG(**kwargs)
    await rag.initialize_storages()
    kg = custom_kg()
    kg["chunks"] += [{"content": NEAR_COPY, "source_id": "y2", "file_path": "y2.txt"},
                     {"content": OTHER_HOP, "source_id": "w", "file_path": "w.txt"}]
    kg["entities"] += [{"entity_name": name, "entity_type": "thing", "description": name, "source_id": src}
                       for name, src in (("Passage Y again", "y2"), ("W", "w"))]
    await rag.ainsert_custom_kg(kg)
    texts = [c["content"] for c in custom_kg()["chunks"]] + [NEAR_COPY, OTHER_HOP]
    vectors = np.asarray(await rag.embedding_func(texts))
    query_vector = np.asarray(await rag.embedding_func([QUESTION]))[0]
    vectors_unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    dense = vectors_unit @ (query_vector / np.linalg.norm(query_vector))
    from lightrag_prism.retrievers.views.passage_rank import dense_head_rows
    heads = {nov: [texts[i] for i in dense_head_rows(dense, vectors_unit, 2, nov).tolist()] for nov in (0.0, 0.3)}
    assert heads[0.0] == [PASSAGES["y"], NEAR_COPY] and heads[0.3][0] == PASSAGES["y"]
    assert heads[0.3][1] != NEAR_COPY  # the case this test is about
    for novelty, expected in heads.items():
        data = await rag.aquery_data(QUESTION, param=QueryParam(mode=mode, chunk_top_k=5, dense_head_novelty=novelty,
                                                                lexical_weight=0, **WALK, **{head_knob: 2}))
        chunks = data["data"]["chunks"]
        assert [c["content"] for c in chunks[:2]] == expected
        assert [c["found_by"] for c in chunks[:2]] == ["dense", "dense"]
        assert NEAR_COPY in [c["content"] for c in chunks]  # moved below the head, not dropped
    await rag.finalize_storages()
