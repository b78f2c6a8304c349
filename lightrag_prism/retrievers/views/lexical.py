"""The lexical channel of ``prism`` and ``hipporag``: the question's exact words and identifiers, scored over the
passages as BM25 scores them, fused with the dense scores into the first stage that picks the head passages and
weights the passages in the PPR's personalization.

Dense retrieval misses what a question names exactly (``work_mem``, a rare surname); BM25 misses a paraphrase.
Their reciprocal-rank fusion (Cormack et al. 2009, k = 60) is the "hybrid search" most RAG stacks ship; on the
manual and notes benches it beats either alone (docs/benchmarks.md, "Your own documents"). Tokens are bm25s's
(lower-case ``\\w\\w+`` runs, its English stopwords, no stemming), so the channel scores as the bench's BM25 row.

:class:`Lexicon` keeps, per instance, the term ids and each passage's term counts: a passage is tokenized once, when
a view first holds it, and every later view reuses its row (views are rebuilt after each insert).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from bm25s.stopwords import STOPWORDS_EN

from ...graph.lexical import bm25_matrix, bm25_scores

TOKEN = re.compile(r"(?u)\b\w\w+\b")  # bm25s's default token pattern
STOPWORDS = frozenset(STOPWORDS_EN)
RRF_K = 60  # Cormack et al.'s constant, as in the bench's BM25 + dense row


def terms(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in STOPWORDS]


class Lexicon:
    """Term ids, and each passage's ``(term ids, counts)`` keyed by passage id and text."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self._rows: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}

    def passage_rows(self, ids: list[str], texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """The rows of these passages (tokenizing only those not seen with this text); forgets the others."""
        kept = {}
        for pid, text in zip(ids, texts):
            row = self._rows.get(pid)
            kept[pid] = row if row is not None and row[0] == text else (text, *self._count(text))
        self._rows = kept
        return [kept[pid][1:] for pid in ids]

    def query_terms(self, text: str) -> np.ndarray:
        """Ids of the question's terms that some passage has held (others cannot score)."""
        found = [self.vocabulary.get(t, -1) for t in terms(text)]
        return np.asarray([i for i in found if i >= 0], dtype=np.int64)

    def _count(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        ids = [self.vocabulary.setdefault(t, len(self.vocabulary)) for t in terms(text)]
        unique, counts = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
        return unique.astype(np.int32), counts.astype(np.int32)


@dataclass(frozen=True)
class LexicalIndex:
    """BM25 over one view's passages (their order)."""

    lexicon: Lexicon
    matrix: sp.csc_matrix
    idf: np.ndarray

    @classmethod
    def build(cls, lexicon: Lexicon, ids: list[str], texts: list[str]) -> "LexicalIndex":
        rows = lexicon.passage_rows(ids, texts)
        return cls(lexicon, *bm25_matrix(rows, len(lexicon.vocabulary)))

    def scores(self, question: str) -> np.ndarray:
        return bm25_scores(self.matrix, self.idf, self.lexicon.query_terms(question))


def fused_scores(dense: np.ndarray, lexical: np.ndarray, weight: float = 1.0, k: int = RRF_K) -> np.ndarray:
    """(P,) the first stage: ``1 / (k + dense rank) + weight / (k + lexical rank)``, min-max scaled to [0, 1] like
    the dense scores it replaces. Every passage has a dense rank; only passages holding a question term have a
    lexical one. Ties keep passage order."""
    fused = np.zeros(len(dense))
    if not len(dense):
        return fused
    fused[np.argsort(-dense, kind="stable")] += 1.0 / (k + np.arange(1, len(dense) + 1))
    hits = np.flatnonzero(lexical > 0)
    fused[hits[np.argsort(-lexical[hits], kind="stable")]] += weight / (k + np.arange(1, hits.size + 1))
    low, high = fused.min(), fused.max()
    return (fused - low) / (high - low) if high > low else np.zeros_like(fused)
