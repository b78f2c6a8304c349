"""The ``tournament`` mode: dense retrieval, then a pairwise LLM tournament (KIND = "chunks").

Stages, in order (``mode.py``): the ``rerank_top_k`` chunks closest to the query; every pair judged in both orders
by the instance's LLM (knockout above 10 chunks; ``rerankers/tournament.py``); the top ``return_top_k`` by wins.
Without an LLM the chunks keep their retrieval order (recorded).

Knobs (``PrismQueryParam``): ``rerank_top_k``, ``return_top_k``.
"""

from .mode import KIND, retrieve

__all__ = ["KIND", "retrieve"]
