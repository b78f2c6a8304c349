"""The fidelis mode: vectorised scoring vs a brute-force reference, LLM-answer validation, offline and LLM paths."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
from lightrag.utils import EmbeddingFunc

from lightrag_prism import PrismRAG
from lightrag_prism.param import PrismQueryParam
from lightrag_prism.result import ScoredItem
from lightrag_prism.retrievers.fidelis import prompts
from lightrag_prism.retrievers.fidelis.output import DENSE_HEAD, fuse
from lightrag_prism.retrievers.fidelis.scoring import HopScorer, top_candidates
from lightrag_prism.snapshot import build_snapshot
from tests.helpers import make_embedding_func, make_llm_func, offline_tokenizer
from tests.scripted_responder import CANNED_PREFIX
from tests.scripted_server import hashed_bow

DIM = 64


# ---------------------------------------------------------------------------- scoring kernel
def _random_graph(seed: int, n: int = 40, m: int = 120, d: int = 16):
    rng = np.random.default_rng(seed)
    pairs = {tuple(sorted(rng.choice(n, 2, replace=False).tolist())) for _ in range(m)}
    nodes = [{"id": f"n{i}"} for i in range(n)]
    edges = [{"source": f"n{a}", "target": f"n{b}"} for a, b in sorted(pairs)]
    snap = build_snapshot(nodes, edges)
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    return snap, unit(rng.normal(size=(n, d))), unit(rng.normal(size=(snap.num_edges, d))), unit(rng.normal(size=(3, d)))


def _brute_force(snap, ent, rel, kw, frontier, visited, alpha):
    """Per-edge Python reference: sim = max over keywords of the cosine; look-ahead excludes the way back."""
    sim = lambda v: max(float(v @ k) for k in kw)  # noqa: E731
    neighbours = {i: [] for i in range(snap.num_nodes)}
    for e, (a, b) in enumerate(zip(snap.edge_src.tolist(), snap.edge_tgt.tolist())):
        neighbours[a].append((e, b))
        neighbours[b].append((e, a))
    out = {}
    for beam, f in enumerate(frontier):
        for e, u in neighbours[f]:
            if u in visited[beam]:
                continue
            nxt = [sim(rel[e2]) + sim(ent[w]) for e2, w in neighbours[u] if w != f]
            out[(beam, e, u)] = sim(rel[e]) + sim(ent[u]) + alpha * (max(nxt) if nxt else 0.0)
    return out


@pytest.mark.parametrize("seed,alpha", [(0, 0.3), (1, 0.0), (2, 0.7)])
def test_vectorised_scores_equal_brute_force(seed, alpha):
    snap, ent, rel, kw = _random_graph(seed)
    frontier = [0, 5, 5, 11]
    visited = [[0], [5, 3], [5], [11, 2, 7]]
    scorer = HopScorer(snap.adj, snap.entry_edge, ent, rel, kw, alpha)
    cands = scorer.expand(np.array(frontier), [np.array(v) for v in visited])
    got = {(b, e, u): s for b, e, u, s in zip(cands["beam"].tolist(), cands["edge"].tolist(),
                                               cands["node"].tolist(), cands["score"].tolist())}
    want = _brute_force(snap, ent, rel, kw, frontier, visited, alpha)
    assert got.keys() == want.keys() and len(got) > 10
    assert np.allclose([got[k] for k in want], [want[k] for k in want])
    # The second expansion reuses the caches and gives the same numbers.
    again = scorer.expand(np.array(frontier), [np.array(v) for v in visited])
    assert np.allclose(again["score"], cands["score"])


def test_lookahead_promotes_a_relation_leading_somewhere_relevant():
    # f -- a (dead end) and f -- b -- t; a and b look equally relevant, only b leads to the relevant t.
    nodes = [{"id": x} for x in ("f", "a", "b", "t")]
    snap = build_snapshot(nodes, [{"source": "f", "target": "a"}, {"source": "f", "target": "b"},
                                  {"source": "b", "target": "t"}])
    kw = np.eye(4)[:1]
    rows = {"f": [0, 1, 0, 0], "a": [0.6, 0.8, 0, 0], "b": [0.6, 0, 0.8, 0], "t": [1.0, 0, 0, 0]}
    ent = np.array([rows[name] for name in snap.node_ids])  # the snapshot orders nodes by name
    rel = np.array([[0, 0, 0, 1.0]] * 3)
    start = snap.node_index["f"]
    for alpha, expected_best in ((0.0, None), (0.3, "b")):
        scorer = HopScorer(snap.adj, snap.entry_edge, ent, rel, kw, alpha)
        cands = scorer.expand(np.array([start]), [np.array([start])])
        scores = dict(zip((snap.node_ids[u] for u in cands["node"]), cands["score"]))
        if expected_best is None:
            assert scores["a"] == pytest.approx(scores["b"])
        else:
            assert scores["b"] - scores["a"] == pytest.approx(alpha * 1.0)
            assert snap.node_ids[cands["node"][top_candidates(cands, 1)[0]]] == "b"


# ---------------------------------------------------------------------------- LLM answer validation
@pytest.mark.parametrize("answer,expected,source", [
    ("[0, 2, 4]", [0, 2, 4], "llm"),
    ("[2, 0]", [2, 0], "llm+filled"),
    ("I pick 2 of the 3: [4, 1]", [4, 1], "llm+filled"),
    ("Candidates [0] and [1] look weak. Final answer: [3, 1, 2]", [3, 1, 2], "llm"),
    ('{"indices": [2, "0", 1]}', [2, 0, 1], "llm"),
    ("[9, 2, 2, -1, 0, 1]", [2, 0, 1], "llm"),
    ("[7, 8]", [0, 1, 2], "score"),
    ("}}{{ no list here", [0, 1, 2], "score"),
    (None, [0, 1, 2], "score"),
])
def test_beam_choice_validation(answer, expected, source):
    choice = prompts.validate_beam_choice(answer, n_candidates=5, width=3)
    if source == "llm+filled":  # filled up from score order
        expected = expected + [i for i in range(5) if i not in expected][:3 - len(expected)]
    assert choice.indices == expected and choice.source == source
    assert len(set(choice.indices)) == len(choice.indices) and all(0 <= i < 5 for i in choice.indices)


def test_beam_choice_reports_dropped_indices():
    choice = prompts.validate_beam_choice("[9, 2, 2, -1]", n_candidates=5, width=2)
    assert choice.indices == [2, 0] and choice.dropped == [9, 2, -1]


@pytest.mark.parametrize("answer,expected", [
    ("Yes", True), ("yes.", True), ("**YES**", True), ("The answer is yes", True), ("YES, it follows.", True),
    ("no", False), ("No.", False), ("not deducible", False), ("It cannot be deduced.", False),
    ("yes or no? no", False), ("maybe", False), ("", False), (None, False), ("eyes", False),
])
def test_termination_parsing(answer, expected):
    assert prompts.parse_yes_no(answer) is expected


def test_plan_parsing_json_tolerant_and_garbage():
    plan = prompts.parse_plan('```json\n{"planning_steps": ["find employer"], "keywords": ["works at", "country"],'
                              ' "declarative_statement": "Alice works in *placeholder*."}\n```')
    assert plan.keywords == ["works at", "country"] and plan.parsed == "json"
    tolerant = prompts.parse_plan("{'keywords': ['capital', 'country'], 'declarative_statement': 'X is Y.',}")
    assert tolerant.keywords == ["capital", "country"] and tolerant.parsed == "tolerant"
    assert tolerant.declarative_statement == "X is Y."
    assert prompts.parse_plan("}}{{ lorem ipsum") is None and prompts.parse_plan(None) is None


# ---------------------------------------------------------------------------- end to end on a small KG
KG_TRIPLES = [
    ("Alice", "works at", "Acme Corp"), ("Acme Corp", "located in", "Berlin"),
    ("Berlin", "city in country", "Germany"), ("Alice", "friend of", "Bob"), ("Bob", "lives in", "Paris"),
    ("Paris", "city in country", "France"), ("Acme Corp", "supplies", "Nimbus"),
]
QUESTION = "In which country is the company located where Alice works?"


def _custom_kg():
    chunks = [{"content": f"{s} {p} {o}.", "source_id": f"src-{i}"} for i, (s, p, o) in enumerate(KG_TRIPLES)]
    names = sorted({x for s, _, o in KG_TRIPLES for x in (s, o)})
    entities = [{"entity_name": n, "entity_type": "thing", "description": n,
                 "source_id": next(f"src-{i}" for i, t in enumerate(KG_TRIPLES) if n in (t[0], t[2]))}
                for n in names]
    relations = [{"src_id": s, "tgt_id": o, "keywords": p, "description": f"{s} {p} {o}", "weight": 1.0,
                  "source_id": f"src-{i}"} for i, (s, p, o) in enumerate(KG_TRIPLES)]
    return {"chunks": chunks, "entities": entities, "relationships": relations}


def _hash_embedder() -> EmbeddingFunc:
    async def embed(texts, **_):
        return np.stack([hashed_bow(t, DIM) for t in texts])
    return EmbeddingFunc(embedding_dim=DIM, max_token_size=8192, func=embed, model_name="hash-bow")


async def _rag(tmp_path, **kwargs) -> PrismRAG:
    rag = PrismRAG(working_dir=str(tmp_path), workspace=f"t_{uuid.uuid4().hex[:10]}",
                   tokenizer=offline_tokenizer(), **kwargs)
    await rag.initialize_storages()
    await rag.ainsert_custom_kg(_custom_kg())
    return rag


@pytest.mark.asyncio
async def test_offline_search_stops_at_max_length_and_returns_paths(tmp_path):
    rag = await _rag(tmp_path, embedding_func=_hash_embedder())
    param = PrismQueryParam(mode="fidelis", topic_entities=["Alice"], max_path_length=2, beam_width=2)
    out = await rag.aquery_data(QUESTION, param)
    meta = out["metadata"]["prism"]
    assert meta["stopped_by"] == "max_length" and meta["steps"] == 2 and meta["llm_calls"] == 0
    assert any(f["step"] == "fidelis" and "no LLM" in f["reason"] for f in meta["fallbacks"])
    assert all(c["source"] in ("score", "all") for c in meta["beam_choices"])
    assert meta["paths"] and all(len(p) == 2 for p in meta["paths"])
    assert all(p[0][0] == "Alice" and p[0][2] == p[1][0] for p in meta["paths"])  # traversal order
    data = out["data"]
    path_entities = {n for p in meta["paths"] for t in p for n in (t[0], t[2])}
    assert path_entities <= {e["entity_name"] for e in data["entities"]}
    assert {r.get("found_by") for r in data["relationships"] if r.get("path")} == {"fidelis"}
    assert data["chunks"] and all(c["content"] for c in data["chunks"])
    # no LLM: the dense ranking keeps its head, the path chunks are fused in below it
    dense = [c["chunk_id"] for c in (await rag.aquery_data(QUESTION, PrismQueryParam(mode="naive")))["data"]["chunks"]]
    ours = [c["chunk_id"] for c in data["chunks"]]
    assert ours[:DENSE_HEAD] == dense[:DENSE_HEAD]
    assert any("fidelis" in c["found_by"] for c in data["chunks"])
    await rag.finalize_storages()


def _chunks(*ids: str, by: str) -> list[ScoredItem]:
    return [ScoredItem("chunk", i, 0.0, (by,), {"content": i}) for i in ids]


def test_fusion_keeps_the_dense_head_then_ranks_the_rest_by_reciprocal_rank():
    fused = fuse(_chunks("a", "b", "c", "d", "e", "f", "g", by="dense"), _chunks("x", "f", "a", by="fidelis"), head=2)
    # c, d, e, f, g (dense ranks 1-5 below the head) against x, f (a is in the head): f is in both
    assert [c.id for c in fused] == ["a", "b", "f", "c", "x", "d", "e", "g"]
    assert fused[2].found_by == ("dense", "fidelis") and fused[4].found_by == ("fidelis",)
    assert [c.id for c in fuse(_chunks("a", by="dense"), [], head=5)] == ["a"]


@pytest.mark.asyncio
async def test_unknown_topic_entity_is_reported_not_fatal(tmp_path):
    rag = await _rag(tmp_path, embedding_func=_hash_embedder())
    param = PrismQueryParam(mode="fidelis", topic_entities=["Atlantis", "bob"], max_path_length=1)
    meta = (await rag.aquery_data(QUESTION, param))["metadata"]["prism"]
    assert meta["unknown_topic_entities"] == ["Atlantis"]
    assert meta["topic_entities"] == ["Bob"]  # matched case-insensitively
    only_unknown = PrismQueryParam(mode="fidelis", topic_entities=["Atlantis"], max_path_length=1)
    meta = (await rag.aquery_data(QUESTION, only_unknown))["metadata"]["prism"]
    assert meta["unknown_topic_entities"] == ["Atlantis"] and meta["topic_entities_linked"]
    assert meta["topic_entities"] and meta["paths"]
    await rag.finalize_storages()


def _plan_reply(body):
    return json.dumps({"planning_steps": ["find where Alice works", "find the country of that company"],
                       "keywords": ["works at", "located in", "country"],
                       "declarative_statement": "The company where Alice works is located in *placeholder*."})


@pytest.mark.asyncio
async def test_llm_path_plan_choice_and_termination(tmp_path, scripted_server):
    scripted_server.script("declarative_statement", _plan_reply)
    scripted_server.script("choose the best", "I pick 1 of the 3: [0]")
    scripted_server.script("can be deduced", "**YES**")
    rag = await _rag(tmp_path, embedding_func=make_embedding_func(scripted_server, dim=DIM),
                     llm_model_func=make_llm_func(scripted_server))
    before = scripted_server.count()
    param = PrismQueryParam(mode="fidelis", topic_entities=["Alice"], beam_width=1, beam_top_n=3)
    out = await rag.aquery_data(QUESTION, param)
    meta = out["metadata"]["prism"]
    assert meta["stopped_by"] == "termination" and meta["steps"] == 1
    assert meta["keywords"] == ["works at", "located in", "country"]
    assert meta["beam_choices"][0] == {"step": 0, "source": "llm", "indices": [0], "dropped": []}
    # plan + beam choice + verifier, and no other chat request: LightRAG's keywords are not asked for (the plan
    # gives fidelis its own)
    assert meta["llm_calls"] == 3
    assert scripted_server.count("declarative_statement") == 1
    assert scripted_server.count("choose the best") == 1 and scripted_server.count("can be deduced") == 1
    assert scripted_server.count() - before == 3
    verifier = [r for r in scripted_server.chat_requests() if "can be deduced" in r.text][0]
    assert "The company where Alice works" in verifier.text and meta["paths"][0][0][0] == "Alice"
    assert "0: Alice -> " in verifier.text
    assert out["data"]["relationships"][0]["found_by"] == "fidelis"
    sources = [c["found_by"] for c in out["data"]["chunks"]]
    assert sources[0] == "fidelis"  # with an LLM: the paths' chunks first, dense ones fill the free slots
    assert sources == sorted(sources, key=lambda source: source != "fidelis")
    # Keywords are embedded once per query, one vector each, and reused at every step.
    keyword_batches = [r.body["input"] for r in scripted_server.embedding_requests() if "works at" in r.body["input"]]
    assert keyword_batches == [["works at", "located in", "country"]]
    # aquery answers through LightRAG's KG path from the paths' context (fidelis steps come from the LLM cache).
    answer = await rag.aquery(QUESTION, param)
    assert isinstance(answer, str) and answer.startswith(CANNED_PREFIX)
    answer_prompt = scripted_server.chat_requests()[-1].text
    assert "Acme Corp" in answer_prompt and scripted_server.count("choose the best") == 1


@pytest.mark.asyncio
async def test_llm_garbage_falls_back_and_is_recorded(tmp_path, scripted_server):
    scripted_server.garbage("declarative_statement")
    scripted_server.garbage("choose the best")
    scripted_server.script("can be deduced", "not deducible")
    rag = await _rag(tmp_path, embedding_func=make_embedding_func(scripted_server, dim=DIM),
                     llm_model_func=make_llm_func(scripted_server))
    param = PrismQueryParam(mode="fidelis", topic_entities=["Alice"], beam_width=1, beam_top_n=3, max_path_length=2)
    meta = (await rag.aquery_data(QUESTION, param))["metadata"]["prism"]
    steps = {f["step"] for f in meta["fallbacks"]}
    assert {prompts.PLAN_STEP, prompts.BEAM_STEP} <= steps
    assert meta["plan_parsed"] == "fallback" and meta["stopped_by"] == "max_length"
    assert [c["source"] for c in meta["beam_choices"]] == ["score", "score"]
    assert meta["llm_calls"] == 1 + 2 + 1  # plan, two beam choices, one verifier (from step 2 on)


@pytest.mark.asyncio
async def test_paths_never_revisit_a_node_and_dead_ends_stop(tmp_path):
    rag = await _rag(tmp_path, embedding_func=_hash_embedder())
    param = PrismQueryParam(mode="fidelis", topic_entities=["Nimbus"], max_path_length=10, beam_width=1)
    meta = (await rag.aquery_data("Which country is Nimbus connected to?", param))["metadata"]["prism"]
    # 8 nodes: a simple path has at most 7 hops, so the search must end on a dead end before 10 steps.
    assert meta["stopped_by"] == "dead_end" and meta["steps"] < 8
    for path in meta["paths"]:
        nodes = [path[0][0]] + [t[2] for t in path]
        assert len(nodes) == len(set(nodes)) and all(a[2] == b[0] for a, b in zip(path, path[1:]))
    await rag.finalize_storages()


@pytest.mark.parametrize("knob,value", [("beam_width", 0), ("beam_top_n", -1), ("max_path_length", 0),
                                        ("lookahead_alpha", -0.1)])
def test_invalid_knobs_are_rejected(knob, value):
    with pytest.raises(ValueError, match=knob):
        PrismQueryParam(mode="fidelis", **{knob: value})
