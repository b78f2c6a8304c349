"""The ``ensemble`` mode: two-stage ensemble reranking (KIND = "chunks").

Stages, in order (``mode.py``): LLM query expansion; one dense retrieval per query, fused; listwise sliding-window
LLM reranking (``rerankers/listwise.py``) fused with the retrieval scores. Without an LLM: the query alone and the
retrieval order (recorded as fallbacks).

Knobs (``PrismQueryParam``): ``expansion_queries_min``, ``expansion_queries_max``, ``ensemble_top_k``,
``rerank_window_size``, ``rerank_window_overlap``, ``rerank_top_k``.
"""

from .mode import KIND, retrieve

__all__ = ["KIND", "retrieve"]
