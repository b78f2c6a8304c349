"""BM25 baseline over passages, on top of ``bm25s`` (offline: numpy scoring, built-in stopwords).

Tokenisation is bm25s's default: lower-case, ``(?u)\\b\\w\\w+\\b`` tokens, bm25s's built-in English
stopword list (a static list in ``bm25s.stopwords``, nothing is downloaded) and no stemmer (no
PyStemmer dependency). Each passage is indexed as HippoRAG's passage string ``title + "\\n" + text``.

The default scoring is bm25s's ``"lucene"`` variant (k1 = 1.5, b = 0.75): idf
``ln(1 + (N - df + 0.5) / (df + 0.5))`` and term weight ``tf / (tf + k1 * (1 - b + b * dl / avgdl))``
(Lucene >= 8 drops the constant ``k1 + 1`` factor, which does not change the ranking).

Ranking is deterministic: scores from ``bm25s.BM25.get_scores``, top-k by ``np.argpartition``,
ties broken by corpus order. Passages with score 0 (no query term) are never returned, so a query
may get fewer than ``k`` hits.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import bm25s
import numpy as np

from lightrag_prism.eval.datasets import Passage

logger = logging.getLogger(__name__)
logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its logger to DEBUG at import: a stray line per index

#: Scoring variants accepted by ``bm25s.BM25(method=...)``.
BM25_METHODS = ("robertson", "lucene", "bm25l", "bm25+", "atire")


def tokenize(texts: Sequence[str], stopwords: str | list[str] | None = "en") -> list[list[str]]:
    """bm25s's default tokenisation of ``texts`` into lists of token strings."""
    return bm25s.tokenize(list(texts), stopwords=stopwords, return_ids=False, show_progress=False)


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest positive scores, best first, ties by lower index."""
    positive = np.flatnonzero(scores > 0)
    if positive.size == 0 or k <= 0:
        return positive[:0]
    if positive.size > k:
        part = np.argpartition(-scores[positive], k - 1)[:k]
        # Keep every candidate tied with the k-th score so the tie-break below sees them all.
        kth = scores[positive[part]].min()
        positive = positive[scores[positive] >= kth]
    order = np.lexsort((positive, -scores[positive]))
    return positive[order][:k]


class BM25Index:
    """BM25 index over passages: ``BM25Index(passages).search(query, k) -> [(passage_id, score)]``."""

    def __init__(
        self,
        passages: Sequence[Passage],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | list[str] | None = "en",
    ):
        if method not in BM25_METHODS:
            raise ValueError(f"unknown BM25 method {method!r}; valid: {', '.join(BM25_METHODS)}")
        if not passages:
            raise ValueError("BM25Index needs at least one passage")
        self.passage_ids = [p.id for p in passages]
        self.stopwords = stopwords
        self._bm25 = bm25s.BM25(k1=k1, b=b, method=method)
        self._bm25.index(tokenize([p.content for p in passages], stopwords), show_progress=False)
        logger.debug("BM25 index over %d passages (%s)", len(passages), method)

    def __len__(self) -> int:
        return len(self.passage_ids)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for ``query`` (zeros if no query token is indexed)."""
        tokens = [t for t in tokenize([query], self.stopwords)[0] if t in self._bm25.vocab_dict]
        if not tokens:
            return np.zeros(len(self), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens))

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """Top-``k`` ``(passage_id, score)`` pairs, best first (only positive scores)."""
        scores = self.scores(query)
        return [(self.passage_ids[i], float(scores[i])) for i in top_k_indices(scores, k)]

    def search_many(self, queries: Sequence[str], k: int = 10) -> list[list[tuple[str, float]]]:
        """:meth:`search` for each query."""
        return [self.search(q, k) for q in queries]
