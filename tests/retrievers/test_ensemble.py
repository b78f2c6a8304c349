"""ensemble mode: expansion parsing, dedupe and retrieval scores, fusion, top-k, fallbacks, cache (scripted server)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from lightrag_prism import QueryParam
from lightrag_prism.retrievers.ensemble.mode import assemble_queries, merge_results, parse_expansion, rank_scores
from tests.retrievers.support import (
    EXPANSION_MARK, LISTWISE_MARK, QUERY, build_rag, chunk_numbers, doc_number, listwise_judge, listwise_llm_score,
)

EXPANSIONS = ["red river", "blue river Beta valley", "green river Gamma", "town number 3", "not the grey river"]


@pytest.fixture(autouse=True)
def _cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


# --- pure parts ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("answer, expected", [
    ('{"queries": ["a b", "c"]}', ["a b", "c"]),
    ('["a b", "c"]', ["a b", "c"]),
    ('Sure:\n```json\n{"queries": [{"query": "a b"}, {"text": "c"}]}\n```', ["a b", "c"]),
    ('{"expanded": ["a  b", "", 3, "c"]}', ["a b", "c"]),
    ("1. a b\n2) c\n- d", ["a b", "c", "d"]),
])
def test_parse_expansion_formats(answer, expected):
    assert parse_expansion(answer) == expected


@pytest.mark.parametrize("answer", [None, "", "}}{{ lorem ipsum <|#|> not-json ]][[", '{"queries": []}', "42"])
def test_parse_expansion_garbage_is_none(answer):
    assert parse_expansion(answer) is None


def test_assemble_queries_keeps_original_first_dedupes_and_clamps():
    got = assemble_queries("Who is X?", ["who is  x?", "A", "a", "B", "C", "D", "E", "F"], max_n=5)
    assert got == ["Who is X?", "A", "B", "C", "D"]
    assert assemble_queries("Q", None, 7) == ["Q"]


def test_rank_scores_linear_100_to_50():
    assert np.allclose(rank_scores(5, 100, 50), [100, 87.5, 75, 62.5, 50])
    assert np.allclose(rank_scores(1, 100, 50), [100])


def test_merge_results_dedupes_keeping_best_rank_score():
    def chunks(*ids):
        return [{"chunk_id": i, "content": i} for i in ids]

    merged, scores, sources = merge_results([chunks("a", "b", "c"), chunks("c", "d", "a")], k=3, high=100, low=50)
    assert [c["chunk_id"] for c in merged] == ["a", "c", "b", "d"]  # a and c tie at 100: first appearance first
    assert np.allclose(scores, [100, 100, 75, 75])
    assert sources == [[0, 1], [0, 1], [0], [1]]


# --- through PrismRAG and the scripted server -----------------------------------------------------------
async def _query(server, tmp_path, param: QueryParam, repeat: int = 1, script=None, **rag_overrides):
    rag = await build_rag(server, tmp_path / "store", **rag_overrides)
    (script or _script_llm)(server)
    try:
        results = []
        for _ in range(repeat):
            results.append(await rag.aquery_data(QUERY, param=param))
            results[-1]["_chat_requests"] = len(server.chat_requests())
        return results
    finally:
        await rag.finalize_storages()


def _script_llm(server):
    server.script(EXPANSION_MARK, json.dumps({"queries": EXPANSIONS}))
    server.script(LISTWISE_MARK, listwise_judge)


def _garbage_expansion(server):
    server.garbage(EXPANSION_MARK)
    server.script(LISTWISE_MARK, listwise_judge)


def _garbage_listwise(server):
    server.script(EXPANSION_MARK, json.dumps({"queries": EXPANSIONS}))
    server.garbage(LISTWISE_MARK)


def test_fusion_formula_order_and_top_k(scripted_server, tmp_path):
    param = QueryParam(mode="ensemble", ensemble_top_k=7)
    (result,) = asyncio.run(_query(scripted_server, tmp_path, param))
    meta = result["metadata"]["prism"]
    assert meta["expanded_queries"] == [QUERY] + EXPANSIONS
    assert meta["per_query_k"] == 5 and meta["fallbacks"] == []
    rows = meta["score_breakdown"]
    assert len(rows) == 7 == len(result["data"]["chunks"])
    allowed = set(rank_scores(5, 100, 50))
    numbers = chunk_numbers(result)
    for row, number, chunk in zip(rows, numbers, result["data"]["chunks"]):
        assert row["chunk_id"] == chunk["chunk_id"] and chunk["found_by"] == "dense+listwise"
        assert row["llm"] == listwise_llm_score(number)  # one window holds all candidates: the judge's score
        assert row["retrieval"] in allowed
        assert row["final"] == pytest.approx(0.6 * row["llm"] + 0.4 * row["retrieval"])
        assert chunk["score"] == pytest.approx(row["final"])
    finals = [row["final"] for row in rows]
    assert finals == sorted(finals, reverse=True)
    assert meta["candidates"] >= 7
    # the LLM calls the server saw: 1 expansion + ceil((candidates - 3) / 7) windows
    windows = max(1, -(-(meta["candidates"] - 3) // 7))
    assert result["_chat_requests"] == meta["llm_calls"] == 1 + windows


def test_weights_change_the_order(scripted_server, tmp_path):
    llm_only = QueryParam(mode="ensemble", llm_score_weight=1.0, retrieval_score_weight=0.0, ensemble_top_k=12)
    (result,) = asyncio.run(_query(scripted_server, tmp_path, llm_only))
    numbers = chunk_numbers(result)
    assert numbers == sorted(numbers, reverse=True)  # the judge prefers higher document numbers


def test_garbage_expansion_uses_the_original_query_alone(scripted_server, tmp_path):
    param = QueryParam(mode="ensemble", ensemble_top_k=6)
    (result,) = asyncio.run(_query(scripted_server, tmp_path, param, script=_garbage_expansion))
    meta = result["metadata"]["prism"]
    assert meta["expanded_queries"] == [QUERY]
    assert meta["per_query_k"] == 6  # max(per_query_k=5, ceil(ensemble_top_k=6 / 1 query))
    assert len(result["data"]["chunks"]) == 6
    assert any(f["step"] == "query_expansion" and "unparseable" in f["reason"] for f in meta["fallbacks"])


def test_garbage_listwise_window_falls_back_to_retrieval_order(scripted_server, tmp_path):
    param = QueryParam(mode="ensemble", ensemble_top_k=12)
    (result,) = asyncio.run(_query(scripted_server, tmp_path, param, script=_garbage_listwise))
    meta = result["metadata"]["prism"]
    assert any(f["step"] == "listwise_rerank" and "retrieval order" in f["reason"] for f in meta["fallbacks"])
    retrieval = [row["retrieval"] for row in meta["score_breakdown"]]
    assert retrieval == sorted(retrieval, reverse=True)


def test_no_llm_equals_dense_retrieval_order(scripted_server, tmp_path):
    async def run():
        rag = await build_rag(scripted_server, tmp_path / "store", llm_model_func=None)
        _script_llm(scripted_server)  # must not be asked
        try:
            ensemble = await rag.aquery_data(QUERY, param=QueryParam(mode="ensemble", ensemble_top_k=4))
            naive = await rag.aquery_data(QUERY, param=QueryParam(mode="naive", chunk_top_k=4))
            return ensemble, naive
        finally:
            await rag.finalize_storages()

    ensemble, naive = asyncio.run(run())
    assert [c["chunk_id"] for c in ensemble["data"]["chunks"]] == [c["chunk_id"] for c in naive["data"]["chunks"]]
    meta = ensemble["metadata"]["prism"]
    assert meta["expanded_queries"] == [QUERY] and meta["llm_calls"] == 0
    steps = {f["step"] for f in meta["fallbacks"]}
    assert {"query_expansion", "listwise_rerank"} <= steps
    assert scripted_server.chat_requests() == []


def test_repeated_query_is_served_by_lightrag_cache(scripted_server, tmp_path):
    first, second = asyncio.run(_query(scripted_server, tmp_path, QueryParam(mode="ensemble"), repeat=2))
    assert first["_chat_requests"] > 0 and second["_chat_requests"] == first["_chat_requests"]
    assert second["metadata"]["prism"]["llm_calls"] == 0
    assert second["metadata"]["prism"]["llm_cache_hits"] == first["metadata"]["prism"]["llm_calls"]
    assert chunk_numbers(first) == chunk_numbers(second)


def test_one_embedding_call_for_all_expanded_queries(scripted_server, tmp_path):
    (result,) = asyncio.run(_query(scripted_server, tmp_path, QueryParam(mode="ensemble")))
    embeds = scripted_server.embedding_requests()
    assert len(embeds) == 1 and embeds[0].body["input"] == result["metadata"]["prism"]["expanded_queries"]


def test_default_top_k_is_21_and_not_cut_by_chunk_top_k(scripted_server, tmp_path):
    docs = [f"Document {i}: the river number {i} flows through valley {i} near the Alpha hills." for i in range(30)]

    async def run():
        rag = await build_rag(scripted_server, tmp_path / "store", docs=docs)
        _garbage_expansion(scripted_server)  # the query alone, k = max(per_query_k, 21) = 21
        try:
            return await rag.aquery_data(QUERY, param=QueryParam(mode="ensemble", chunk_top_k=20))
        finally:
            await rag.finalize_storages()

    result = asyncio.run(run())
    assert len(result["data"]["chunks"]) == 21
    assert len({doc_number(c["content"]) for c in result["data"]["chunks"]}) == 21


def test_windows_run_concurrently_within_llm_model_max_async(scripted_server, tmp_path):
    docs = [f"Document {i}: the river number {i} flows through valley {i} near the Alpha hills." for i in range(24)]

    async def run():
        rag = await build_rag(scripted_server, tmp_path / "store", docs=docs, llm_model_max_async=2)
        _garbage_expansion(scripted_server)  # query alone: 21 candidates, windows [0,10) [7,17) [14,21)
        scripted_server.delay = 0.2  # long enough to overlap even on a loaded machine
        try:
            return await rag.aquery_data(QUERY, param=QueryParam(mode="ensemble"))
        finally:
            await rag.finalize_storages()

    result = asyncio.run(run())
    assert result["metadata"]["prism"]["candidates"] == 21
    assert scripted_server.count(LISTWISE_MARK) == 3
    assert scripted_server.max_in_flight == 2
