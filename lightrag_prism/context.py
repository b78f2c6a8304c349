"""QueryContext: what a retriever gets: the instance, the query, its parameters and shared per-query services."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import numpy as np

from .errors import LLMNotConfiguredError, connection_refused
from .llm import cached_llm_call
from .result import Retrieval
from .snapshot import GraphSnapshot
from .vectors import unit_rows

if TYPE_CHECKING:
    from lightrag import LightRAG

    from .param import PrismQueryParam


@dataclass
class QueryContext:
    rag: "LightRAG"  # the PrismRAG answering (typed as its base: rag.py imports this module)
    query: str
    param: "PrismQueryParam"
    ll_keywords: str = ""
    hl_keywords: str = ""
    # Calls LightRAG's own retrieval step for this query (stage 1 of kg_query, or naive vector search).
    stock_search: Callable[..., Awaitable[Any]] | None = None
    retrieval: Retrieval = field(default_factory=Retrieval)
    _embeddings: dict[str, np.ndarray] = field(default_factory=dict)
    # Set when a call of this query found the endpoint refusing connections: the query's later LLM steps (a
    # tournament asks dozens of times) take their fallback at once instead of each waiting for its own refusal.
    _llm_unreachable: str | None = None

    @property
    def llm_configured(self) -> bool:
        return self.rag.llm_configured

    async def snapshot(self) -> GraphSnapshot:
        """The instance's graph snapshot; if other processes' writes could not be checked or loaded, the answer
        comes from the last snapshot this process has, and the fallbacks say so (once per query)."""
        snapshot = await self.rag.query_snapshot()  # PrismRAG: the snapshot with the modes' views up to date
        watcher = getattr(self.rag, "version_watcher", None)
        failure = watcher.failure if watcher is not None else None
        if failure and not any(f["step"] == "freshness" for f in self.retrieval.metadata.get("fallbacks", [])):
            self.retrieval.record_fallback("freshness", f"{failure}: answered from this process's last snapshot")
        return snapshot

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts as queries (cached per query), returning L2-normalised rows."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._embeddings]
        if missing:
            vectors = unit_rows(np.asarray(await self.rag.embedding_func(missing, context="query"), dtype=np.float32))
            self._embeddings.update(zip(missing, vectors))
        return np.stack([self._embeddings[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)

    async def llm(self, prompt: str, *, step: str, system_prompt: str | None = None, **kwargs) -> str | None:
        """Ask the instance's LLM (LightRAG's cache and concurrency limit apply).

        Returns ``None`` and records a fallback for ``step`` when no LLM is configured or the call fails; the
        caller then takes its documented non-LLM path.
        """
        if not self.llm_configured:
            self.retrieval.record_fallback(step, "no LLM configured")
            return None
        if self._llm_unreachable is not None:
            self.retrieval.record_fallback(step, self._llm_unreachable)
            return None
        try:
            return await cached_llm_call(self.rag, prompt, system_prompt=system_prompt, cache_type=step,
                                         mode=self.param.mode, **kwargs)
        except LLMNotConfiguredError:
            self.retrieval.record_fallback(step, "no LLM configured")
        except Exception as exc:  # an LLM/network error must not fail the query: fall back and record it
            reason = f"LLM error: {type(exc).__name__}: {exc}"
            if connection_refused(exc) is not None:
                self._llm_unreachable = f"{reason} (the endpoint refused a connection earlier in this query)"
            self.retrieval.record_fallback(step, reason)
        return None

    def reranker_llm(self, step: str, stats: dict):
        """A reranker's injected LLM: :meth:`llm` (the instance's LLM, LightRAG's cache and queue; calls counted in
        ``stats``). A failed call raises, which the rerankers turn into their own fallback (window -> retrieval
        order, pair -> tie)."""

        async def llm(prompt: str, system_prompt: str | None = None) -> str:
            answer = await self.llm(prompt, step=step, system_prompt=system_prompt, stats=stats)
            if answer is None:
                raise RuntimeError("no LLM answer")
            return answer

        return llm

    def own_final_ranking(self, n: int) -> None:
        """The mode is the reranker and picks the count: LightRAG must not rerank again nor cut below ``n``."""
        self.param.enable_rerank = False
        self.param.chunk_top_k = max(self.param.chunk_top_k or 0, n)
