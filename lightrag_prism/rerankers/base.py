"""The reranker contract: one ABC, one frozen result type, one adapter to LightRAG's rerank signature.

Every strategy (``ListwiseReranker``, ``TournamentReranker``) is a small class implementing
``async rerank(query, documents) -> RerankOutcome``. The LLM is injected as an async callable
``llm(prompt, system_prompt=None) -> str``; nothing here imports LightRAG.
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

logger = logging.getLogger(__name__)


class LLMCallable(Protocol):
    """What a reranker needs from an LLM: ``await llm(prompt, system_prompt=None) -> str``."""

    def __call__(self, prompt: str, system_prompt: str | None = None) -> Awaitable[str]: ...


@dataclass(frozen=True)
class RerankOutcome:
    """Result of one ``rerank`` call.

    Attributes:
        order: input indices, best first; always a permutation of ``range(len(documents))``.
        scores: one score per *input index* (not per rank), higher is better, on the
            strategy's own scale ``[0, score_scale]``.
        fallbacks: human-readable records of every fallback taken (also logged).
        llm_calls: LLM invocations actually made (cache hits are not counted).
        score_scale: the maximum possible score; ``relevance(i)`` maps scores to ``[0, 1]``.
    """

    order: list[int]
    scores: list[float]
    fallbacks: list[str] = field(default_factory=list)
    llm_calls: int = 0
    score_scale: float = 1.0

    def __post_init__(self) -> None:
        if sorted(self.order) != list(range(len(self.scores))):
            raise ValueError(
                f"order must be a permutation of range({len(self.scores)}), got {self.order!r}"
            )
        if not self.score_scale > 0:
            raise ValueError(f"score_scale must be > 0, got {self.score_scale!r}")

    def relevance(self, index: int) -> float:
        """Score of input ``index`` normalised to ``[0, 1]`` (the scale LightRAG's ``min_rerank_score`` expects)."""
        return min(1.0, max(0.0, self.scores[index] / self.score_scale))

    def top(self, n: int | None = None) -> list[int]:
        """The best ``n`` input indices (all when ``n`` is None)."""
        return list(self.order if n is None else self.order[: max(0, n)])


class Reranker(ABC):
    """One reranking strategy. Subclasses hold their knobs and the injected LLM."""

    name: str = "base"

    @abstractmethod
    async def rerank(self, query: str, documents: list[str]) -> RerankOutcome:
        """Rank ``documents`` for ``query``; never drops a document."""


RerankModelFunc = Callable[..., Awaitable[list[dict[str, Any]]]]


def as_rerank_model_func(
    reranker: Reranker,
    on_outcome: Callable[[RerankOutcome], None] | None = None,
) -> RerankModelFunc:
    """Wrap ``reranker`` in LightRAG 1.5.7's rerank signature.

    LightRAG (``lightrag.utils.apply_rerank_if_enabled``) calls
    ``await rerank_model_func(query=..., documents=[str, ...], top_n=int | None)`` and accepts
    ``[{"index": i, "relevance_score": s}, ...]``, keeping that order. Scores are normalised to
    ``[0, 1]`` so ``LightRAG(min_rerank_score=...)`` keeps its cross-encoder meaning.
    ``on_outcome`` receives the full ``RerankOutcome`` (fallbacks, call count) for metadata.
    """

    async def rerank_model_func(
        query: str, documents: list[str], top_n: int | None = None, **kwargs: Any
    ) -> list[dict[str, Any]]:
        if kwargs:
            logger.debug("%s: ignoring rerank kwargs %s", reranker.name, sorted(kwargs))
        if top_n is not None and top_n < 0:
            raise ValueError(f"top_n must be >= 0 or None, got {top_n}")
        outcome = await reranker.rerank(query, list(documents))
        if on_outcome is not None:
            on_outcome(outcome)
        results = []
        for index in outcome.top(top_n):
            score = outcome.relevance(index)
            results.append({"index": index, "relevance_score": score if math.isfinite(score) else 0.0})
        return results

    rerank_model_func.__name__ = f"{reranker.name}_rerank_model_func"
    rerank_model_func.reranker = reranker  # type: ignore[attr-defined]
    return rerank_model_func


def check_prompt_and_concurrency(prompt: str, placeholders: dict[str, object], max_concurrency: int) -> None:
    """Reject a concurrency below 1 and a prompt that lacks a placeholder or is not a ``str.format`` template."""
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    for name in placeholders:
        if "{" + name + "}" not in prompt:
            raise ValueError(f"prompt must contain the placeholder {{{name}}}")
    try:
        prompt.format(**placeholders)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"prompt is not a valid str.format template: {exc!r}") from None
