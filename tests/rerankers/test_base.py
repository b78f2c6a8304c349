import asyncio

import pytest

from lightrag_prism.rerankers import (
    RERANKERS,
    ListwiseReranker,
    RerankOutcome,
    TournamentReranker,
    as_rerank_model_func,
    make_reranker,
)

from .fakes import ListwiseJudge, RelevanceJudge, make_docs


def test_outcome_must_be_a_permutation():
    RerankOutcome([1, 0], [0.2, 0.9])
    with pytest.raises(ValueError):
        RerankOutcome([0, 0], [0.2, 0.9])
    with pytest.raises(ValueError):
        RerankOutcome([0], [0.2, 0.9])


def test_outcome_is_frozen_and_relevance_is_normalised():
    outcome = RerankOutcome([1, 0], [40.0, 80.0], score_scale=100.0)
    with pytest.raises(AttributeError):
        outcome.order = [0, 1]  # type: ignore[misc]
    assert outcome.relevance(1) == pytest.approx(0.8)
    assert outcome.top(1) == [1]


def test_factory_format_and_top_n():
    docs = make_docs([10, 90, 50, 70])
    func = as_rerank_model_func(ListwiseReranker(ListwiseJudge()))
    results = asyncio.run(func(query="q", documents=docs, top_n=None))
    assert [r["index"] for r in results] == [1, 3, 2, 0]
    assert all(set(r) == {"index", "relevance_score"} for r in results)
    assert results[0]["relevance_score"] == pytest.approx(0.9)
    assert all(0.0 <= r["relevance_score"] <= 1.0 for r in results)
    top2 = asyncio.run(func(query="q", documents=docs, top_n=2, extra="ignored"))
    assert [r["index"] for r in top2] == [1, 3]
    assert asyncio.run(func(query="q", documents=docs, top_n=0)) == []
    assert asyncio.run(func(query="q", documents=[], top_n=3)) == []
    with pytest.raises(ValueError):
        asyncio.run(func(query="q", documents=docs, top_n=-1))


def test_factory_reports_outcome():
    seen = []
    func = as_rerank_model_func(TournamentReranker(RelevanceJudge()), on_outcome=seen.append)
    results = asyncio.run(func("q", make_docs([1, 3, 2])))
    assert [r["index"] for r in results] == [1, 2, 0]
    assert seen[0].llm_calls == 6
    assert results[0]["relevance_score"] == 1.0 and results[-1]["relevance_score"] == 0.0


def test_lightrag_call_site_accepts_the_factory():
    """apply_rerank_if_enabled (lightrag 1.5.7) must reorder chunks by our output."""
    from lightrag.utils import apply_rerank_if_enabled

    chunks = [{"content": d, "id": i} for i, d in enumerate(make_docs([10, 90, 50, 70]))]
    func = as_rerank_model_func(TournamentReranker(RelevanceJudge()))
    out = asyncio.run(
        apply_rerank_if_enabled("q", chunks, {"rerank_model_func": func}, enable_rerank=True, top_n=3)
    )
    assert [c["id"] for c in out] == [1, 3, 2]
    assert all("rerank_score" in c for c in out)


def test_registry_and_unknown_name():
    assert sorted(RERANKERS) == ["listwise", "tournament"]
    assert isinstance(make_reranker("listwise", ListwiseJudge(), window_size=5, overlap=1), ListwiseReranker)
    with pytest.raises(ValueError, match="listwise.*tournament"):
        make_reranker("pointwise", ListwiseJudge())
