"""LLM rerankers: one ``Reranker`` interface, one small class per strategy.

>>> reranker = make_reranker("tournament", llm, max_concurrency=4)   # doctest: +SKIP
>>> rag = LightRAG(..., rerank_model_func=as_rerank_model_func(reranker))   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from .base import LLMCallable, Reranker, RerankOutcome, as_rerank_model_func
from .listwise import ListwiseReranker, sliding_windows
from .tournament import TournamentReranker, tournament_call_count

RERANKERS: dict[str, type[Reranker]] = {
    cls.name: cls for cls in (ListwiseReranker, TournamentReranker)
}


def make_reranker(name: str, llm: LLMCallable, **knobs: Any) -> Reranker:
    """Build a registered reranker by name; an unknown name raises ``ValueError`` listing the choices."""
    try:
        cls = RERANKERS[name]
    except KeyError:
        raise ValueError(f"unknown reranker {name!r}; choose one of {sorted(RERANKERS)}") from None
    return cls(llm, **knobs)


__all__ = [
    "LLMCallable",
    "ListwiseReranker",
    "RERANKERS",
    "RerankOutcome",
    "Reranker",
    "TournamentReranker",
    "as_rerank_model_func",
    "make_reranker",
    "sliding_windows",
    "tournament_call_count",
]
