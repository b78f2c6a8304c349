"""tournament mode and rerank_model_func_for(rag): call counts, order, cache and concurrency as the server sees them."""

from __future__ import annotations

import asyncio

import pytest

from lightrag_prism import QueryParam
from lightrag_prism.rerankers import tournament_call_count
from lightrag_prism.rerankers.lightrag_adapter import (
    DeferredRerankFunc, install_rerank_model_func, rerank_model_func_for,
)
from tests.retrievers.support import DOCS, PAIRWISE_MARK, QUERY, build_rag, chunk_numbers, prefer_higher_number


@pytest.fixture(autouse=True)
def _cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


async def _queries(server, tmp_path, params, delay=0.0, **rag_overrides):
    rag = await build_rag(server, tmp_path / "store", **rag_overrides)
    server.script(PAIRWISE_MARK, prefer_higher_number)
    server.delay = delay
    try:
        out = []
        for param in params:
            before = len(server.chat_requests())
            result = await rag.aquery_data(QUERY, param=param)
            out.append((result, len(server.chat_requests()) - before))
        return out
    finally:
        await rag.finalize_storages()


@pytest.mark.parametrize("n", [5, 10])
def test_call_counts_seen_by_the_server_and_judge_order(scripted_server, tmp_path, n):
    dense = QueryParam(mode="naive", chunk_top_k=n, enable_rerank=False)
    tour = QueryParam(mode="tournament", rerank_top_k=n, return_top_k=n)
    (naive, _), (result, calls) = asyncio.run(_queries(scripted_server, tmp_path, [dense, tour]))
    assert calls == tournament_call_count(n) == result["metadata"]["prism"]["llm_calls"]
    numbers = chunk_numbers(result)
    assert sorted(numbers) == sorted(chunk_numbers(naive))  # same candidates, reranked
    if n < 10:  # all pairs with a consistent judge: a total order
        assert numbers == sorted(numbers, reverse=True)
    else:  # knockout: the best document wins its matches and every later round
        assert numbers[0] == max(numbers)
    assert all(c["found_by"] == "dense+tournament" for c in result["data"]["chunks"])
    assert result["metadata"]["prism"]["tournament_ranking"] == [c["chunk_id"] for c in result["data"]["chunks"]]


def test_return_top_k_cuts_the_ranking(scripted_server, tmp_path):
    tour = QueryParam(mode="tournament", rerank_top_k=5, return_top_k=3)
    ((result, _),) = asyncio.run(_queries(scripted_server, tmp_path, [tour]))
    assert len(result["data"]["chunks"]) == 3
    assert len(result["metadata"]["prism"]["tournament_ranking"]) == 5
    scores = [c["score"] for c in result["data"]["chunks"]]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0  # won every match


def test_repeat_query_makes_zero_llm_calls(scripted_server, tmp_path):
    tour = QueryParam(mode="tournament", rerank_top_k=4, return_top_k=4)
    (first, calls1), (second, calls2) = asyncio.run(_queries(scripted_server, tmp_path, [tour, tour]))
    assert calls1 == tournament_call_count(4) and calls2 == 0
    assert second["metadata"]["prism"]["llm_cache_hits"] == calls1
    assert chunk_numbers(first) == chunk_numbers(second)


@pytest.mark.parametrize("max_async", [1, 3])
def test_concurrency_bounded_by_llm_model_max_async(scripted_server, tmp_path, max_async):
    tour = QueryParam(mode="tournament", rerank_top_k=4, return_top_k=4)
    asyncio.run(_queries(scripted_server, tmp_path, [tour], delay=0.15, llm_model_max_async=max_async))
    assert scripted_server.max_in_flight == max_async


def test_no_llm_keeps_retrieval_order(scripted_server, tmp_path):
    dense = QueryParam(mode="naive", chunk_top_k=4, enable_rerank=False)
    tour = QueryParam(mode="tournament", rerank_top_k=10, return_top_k=4)
    (naive, _), (result, calls) = asyncio.run(
        _queries(scripted_server, tmp_path, [dense, tour], llm_model_func=None))
    assert calls == 0 and scripted_server.chat_requests() == []
    assert [c["chunk_id"] for c in result["data"]["chunks"]] == [c["chunk_id"] for c in naive["data"]["chunks"]]
    meta = result["metadata"]["prism"]
    assert meta["fallbacks"] == [{"step": "tournament_rerank", "reason": "no LLM configured: retrieval order"}]


# --- the reranker as LightRAG's rerank_model_func, inside stock modes ---------------------------------------
async def _stock_with_rerank(server, tmp_path, mode, strategy, route):
    overrides = {}
    deferred = DeferredRerankFunc(strategy) if route == "constructor" else None
    if deferred is not None:
        overrides.update(rerank_model_func=deferred, default_rerank_timeout=120)
    rag = await build_rag(server, tmp_path / "store", **overrides)
    if deferred is not None:
        deferred.bind(rag)
    elif route == "install":
        install_rerank_model_func(rag, strategy)
    else:  # plain attribute assignment: enough for naive only
        rag.rerank_model_func = rerank_model_func_for(rag, strategy)
    server.script(PAIRWISE_MARK, prefer_higher_number)
    try:
        plain = await rag.aquery_data(QUERY, param=QueryParam(mode=mode, chunk_top_k=4, enable_rerank=False))
        assert server.count(PAIRWISE_MARK) == 0
        reranked = await rag.aquery_data(QUERY, param=QueryParam(mode=mode, chunk_top_k=4, enable_rerank=True))
        return plain, reranked, server.count(PAIRWISE_MARK)
    finally:
        await rag.finalize_storages()


@pytest.mark.parametrize("mode, route", [("naive", "assign"), ("naive", "install"), ("mix", "install"),
                                         ("naive", "constructor"), ("mix", "constructor")])
def test_tournament_rerank_func_reorders_stock_mode_chunks(scripted_server, tmp_path, mode, route):
    plain, reranked, judged = asyncio.run(_stock_with_rerank(scripted_server, tmp_path, mode, "tournament", route))
    before, after = chunk_numbers(plain), chunk_numbers(reranked)
    assert sorted(before) == sorted(after) and len(after) == 4
    assert after == sorted(after, reverse=True) != before  # the scripted judge's order, not the dense one
    assert judged == tournament_call_count(4)


def test_plain_assignment_does_not_reach_kg_modes(scripted_server, tmp_path):
    """Documents LightRAG 1.5.7: mix reads the storages' construction-time config, hence install_rerank_model_func."""
    plain, reranked, judged = asyncio.run(_stock_with_rerank(scripted_server, tmp_path, "mix", "tournament", "assign"))
    assert judged == 0 and chunk_numbers(plain) == chunk_numbers(reranked)


def test_rerank_func_without_llm_keeps_order_and_calls_nothing(scripted_server, tmp_path):
    async def run():
        rag = await build_rag(scripted_server, tmp_path / "store", llm_model_func=None)
        rag.rerank_model_func = rerank_model_func_for(rag, "tournament")
        try:
            return await rag.rerank_model_func(query=QUERY, documents=["a", "b", "c"], top_n=2)
        finally:
            await rag.finalize_storages()

    assert asyncio.run(run()) == [{"index": 0, "relevance_score": 1.0},
                                  {"index": 1, "relevance_score": pytest.approx(2 / 3)}]
    assert scripted_server.chat_requests() == []



def test_rerank_func_builds_one_reranker_and_repeats_come_from_lightrag_cache(scripted_server, tmp_path, monkeypatch):
    from lightrag_prism.rerankers import lightrag_adapter

    built, outcomes = [], []
    make = lightrag_adapter.make_reranker
    monkeypatch.setattr(lightrag_adapter, "make_reranker", lambda *a, **k: built.append(a[0]) or make(*a, **k))
    docs = [DOCS[k] for k in (3, 1, 4, 2)]

    async def run():
        rag = await build_rag(scripted_server, tmp_path / "store")
        scripted_server.script(PAIRWISE_MARK, prefer_higher_number)
        func = rerank_model_func_for(rag, "tournament", on_outcome=outcomes.append)
        try:
            return [await func(query=QUERY, documents=docs) for _ in range(2)]
        finally:
            await rag.finalize_storages()

    first, second = asyncio.run(run())
    assert built == ["tournament"]  # once, not once per call
    assert first == second and [docs[r["index"]] for r in first] == [DOCS[k] for k in (4, 3, 2, 1)]
    assert scripted_server.count(PAIRWISE_MARK) == tournament_call_count(4)  # the repeat sent nothing ...
    assert [o.llm_calls for o in outcomes] == [tournament_call_count(4)] * 2  # ... LightRAG's cache answered it

def test_unknown_strategy_lists_choices(scripted_server, tmp_path):
    async def run():
        rag = await build_rag(scripted_server, tmp_path / "store")
        try:
            with pytest.raises(ValueError, match="listwise.*tournament"):
                rerank_model_func_for(rag, "pairwise")
        finally:
            await rag.finalize_storages()

    asyncio.run(run())
