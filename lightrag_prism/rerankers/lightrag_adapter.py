"""Bind a reranker to a LightRAG instance: its LLM function, its LLM cache and its concurrency limit.

``rerank_model_func_for(rag, "tournament")`` returns LightRAG 1.5.7's ``rerank_model_func(query, documents,
top_n)``; every LLM call the reranker makes goes through :func:`lightrag_prism.llm.cached_llm_call`, i.e. through
``rag.role_llm_funcs["query"]`` (the instance's ``llm_model_func`` behind LightRAG's priority queue, at most
``llm_model_max_async`` calls in flight) and LightRAG's ``llm_response_cache`` (a repeated query sends nothing).

Wiring (verified against lightrag-hku 1.5.7 by ``tests/retrievers/test_tournament_mode.py``):

* **At construction (recommended)**: ``deferred = DeferredRerankFunc("tournament")``,
  ``rag = LightRAG(..., rerank_model_func=deferred, default_rerank_timeout=300)``, then ``deferred.bind(rag)``.
  Works in every mode. LightRAG wraps the function in its rerank queue (``rerank_model_max_async``) with
  ``default_rerank_timeout`` (30 s by default, the worker is cancelled after 2 x that): a tournament is many LLM
  calls, so raise it.
* **After construction**: ``install_rerank_model_func(rag, "tournament")``. A plain
  ``rag.rerank_model_func = f`` reaches only ``naive`` (its config is rebuilt per query from the instance):
  ``local``/``global``/``hybrid``/``mix`` read the rerank function from the config dict the storages captured at
  construction (``rag.text_chunks.global_config``), which the helper updates too. No LightRAG queue or timeout is
  applied on this route (the LLM calls inside are still limited by ``llm_model_max_async``).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from ..llm import cached_llm_call
from . import make_reranker
from .base import RerankModelFunc, RerankOutcome, as_rerank_model_func

logger = logging.getLogger(__name__)

RERANK_CACHE_MODE = "rerank"  # LightRAG cache keys: "rerank:<strategy>:<hash>"


def instance_llm(rag, *, cache_type: str, mode: str = RERANK_CACHE_MODE, stats: dict[str, int] | None = None):
    """An ``llm(prompt, system_prompt=None) -> str`` calling ``rag``'s LLM through LightRAG's cache and queue.

    ``stats`` (optional) counts ``llm_calls`` (requests sent) and ``cache_hits``.
    """

    async def llm(prompt: str, system_prompt: str | None = None) -> str:
        return await cached_llm_call(rag, prompt, system_prompt=system_prompt, cache_type=cache_type, mode=mode,
                                     stats=stats)

    return llm


def rerank_model_func_for(
    rag,
    strategy: str = "tournament",
    *,
    on_outcome: Callable[[RerankOutcome], None] | None = None,
    **knobs: Any,
) -> RerankModelFunc:
    """LightRAG's ``rerank_model_func`` backed by ``strategy`` ("tournament" or "listwise") and ``rag``'s LLM.

    ``knobs`` go to the reranker (``window_size``, ``overlap``, ``all_pairs_below``, ``prompt``, ...);
    ``max_concurrency`` defaults to ``rag.llm_model_max_async``. The reranker is built once, here (it depends on
    ``rag``, ``strategy`` and ``knobs`` only); the tournament's in-memory verdict cache is off unless ``cache_size``
    is given, so repeated queries are served by LightRAG's LLM cache (persisted in the working dir).
    Without a configured LLM (PrismRAG's offline stand-in) the documents keep their retrieval order (scores
    1 → 0 by rank) and a warning is logged; no LLM call is made.
    """
    knobs.setdefault("max_concurrency", max(1, int(rag.llm_model_max_async)))
    if strategy == "tournament":
        knobs.setdefault("cache_size", 0)  # the reranker outlives a call: keep LightRAG's cache the only one
    func = as_rerank_model_func(make_reranker(strategy, instance_llm(rag, cache_type=strategy), **knobs),
                                on_outcome=on_outcome)

    async def rerank_model_func(query: str, documents: list[str], top_n: int | None = None,
                                **kwargs: Any) -> list[dict[str, Any]]:
        if not getattr(rag, "llm_configured", True):
            logger.warning("%s rerank: no LLM configured; keeping retrieval order", strategy)
            n = len(documents) if top_n is None else min(top_n, len(documents))
            return [{"index": i, "relevance_score": 1.0 - i / max(1, len(documents))} for i in range(n)]
        return await func(query, documents, top_n, **kwargs)

    rerank_model_func.__name__ = f"{strategy}_rerank_model_func"
    rerank_model_func.strategy = strategy  # type: ignore[attr-defined]
    return rerank_model_func


def install_rerank_model_func(rag, strategy: str = "tournament", **knobs: Any) -> RerankModelFunc:
    """Make ``strategy`` the rerank function of an existing instance, for every query mode; returns it."""
    func = rerank_model_func_for(rag, strategy, **knobs)
    rag.rerank_model_func = func
    storage_config = getattr(getattr(rag, "text_chunks", None), "global_config", None)
    if isinstance(storage_config, dict):  # what local/global/hybrid/mix read at query time
        storage_config["rerank_model_func"] = func
    return func


class DeferredRerankFunc:
    """A rerank function for ``LightRAG(rerank_model_func=...)``, bound to the instance after construction.

    >>> deferred = DeferredRerankFunc("tournament")                          # doctest: +SKIP
    >>> rag = LightRAG(..., rerank_model_func=deferred, default_rerank_timeout=300)   # doctest: +SKIP
    >>> deferred.bind(rag)                                                   # doctest: +SKIP
    """

    def __init__(self, strategy: str = "tournament", **knobs: Any) -> None:
        make_reranker(strategy, instance_llm(None, cache_type=strategy), **{"max_concurrency": 1, **knobs})
        self.strategy, self.knobs = strategy, knobs
        self._func: RerankModelFunc | None = None

    def bind(self, rag) -> "DeferredRerankFunc":
        self._func = rerank_model_func_for(rag, self.strategy, **self.knobs)
        return self

    async def __call__(self, query: str, documents: list[str], top_n: int | None = None, **kwargs: Any):
        if self._func is None:
            raise RuntimeError("DeferredRerankFunc used before bind(rag)")
        return await self._func(query, documents, top_n, **kwargs)
