"""Retrieval metrics as used by HippoRAG, and latency summaries. Pure Python/numpy, no LightRAG.

* :func:`recall_at_k` is HippoRAG 2's passage recall (``RetrievalRecall`` in
  ``src/hipporag/evaluation/retrieval_eval.py``): per query ``|set(top-k) ∩ set(gold)| / |set(gold)|``,
  0.0 when the gold set is empty, unweighted mean over queries. HippoRAG rounds the mean to four
  decimals for reporting; these functions return it unrounded.
* :func:`all_in_top_k` is the binary "all gold passages in the top k" (HippoRAG v1's All-Recall
  AR@k; HoVer's retrieval criterion with k = 21), averaged over queries.
* :func:`summarize_latencies` gives the median and 95th percentile of a list of milliseconds.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np

__all__ = [
    "query_recall",
    "recall_at_k",
    "recall_at_ks",
    "query_all_in_top_k",
    "all_in_top_k",
    "summarize_latencies",
    "per_question_recall",
    "paired_bootstrap",
    "reciprocal_rank_fusion",
]


def _check_k(k: int) -> None:
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _check_lengths(gold: Sequence, retrieved: Sequence) -> None:
    if len(gold) != len(retrieved):
        raise ValueError(f"{len(gold)} gold lists but {len(retrieved)} retrieved lists")


def query_recall(gold: Iterable[Hashable], retrieved: Sequence[Hashable], k: int) -> float:
    """Recall@k of one query: ``|set(retrieved[:k]) ∩ set(gold)| / |set(gold)|`` (0.0 if no gold)."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return 0.0
    return len(gold_set.intersection(retrieved[:k])) / len(gold_set)


def recall_at_k(
    gold: Sequence[Iterable[Hashable]], retrieved: Sequence[Sequence[Hashable]], k: int
) -> float:
    """Mean recall@k over queries; ``gold[i]`` and ``retrieved[i]`` belong to query ``i``.

    Returns 0.0 for an empty query list.
    """
    _check_lengths(gold, retrieved)
    if not gold:
        return 0.0
    return float(np.mean([query_recall(g, r, k) for g, r in zip(gold, retrieved)]))


def recall_at_ks(
    gold: Sequence[Iterable[Hashable]], retrieved: Sequence[Sequence[Hashable]], ks: Iterable[int] = (1, 2, 5, 10)
) -> dict[int, float]:
    """``{k: recall_at_k(gold, retrieved, k)}`` for every ``k`` in ``ks``."""
    return {k: recall_at_k(gold, retrieved, k) for k in ks}


def query_all_in_top_k(gold: Iterable[Hashable], retrieved: Sequence[Hashable], k: int = 21) -> bool:
    """True if every gold item is in ``retrieved[:k]``; False when the gold set is empty."""
    _check_k(k)
    gold_set = set(gold)
    return bool(gold_set) and gold_set.issubset(retrieved[:k])


def all_in_top_k(
    gold: Sequence[Iterable[Hashable]], retrieved: Sequence[Sequence[Hashable]], k: int = 21
) -> float:
    """Fraction of queries whose gold items are all in the top ``k`` (HoVer: k = 21; AR@k)."""
    _check_lengths(gold, retrieved)
    if not gold:
        return 0.0
    return float(np.mean([query_all_in_top_k(g, r, k) for g, r in zip(gold, retrieved)]))


def summarize_latencies(ms_list: Iterable[float]) -> dict[str, float]:
    """``{"median": ..., "p95": ...}`` of latencies in milliseconds.

    The p95 uses numpy's default linear interpolation between order statistics. An empty list
    gives NaN for both.
    """
    values = np.asarray(list(ms_list), dtype=float)
    if values.size == 0:
        return {"median": float("nan"), "p95": float("nan")}
    return {"median": float(np.median(values)), "p95": float(np.percentile(values, 95))}


def per_question_recall(gold: Sequence[Iterable[Hashable]], retrieved: Sequence[Sequence[Hashable]], k: int
                        ) -> np.ndarray:
    """:func:`query_recall` of each query, as an array (the input of :func:`paired_bootstrap`)."""
    _check_k(k)
    _check_lengths(gold, retrieved)
    return np.array([query_recall(g, r, k) for g, r in zip(gold, retrieved)], dtype=float)


def paired_bootstrap(ours: np.ndarray, base: np.ndarray, samples: int = 2000, seed: int = 0) -> dict:
    """Mean of ``ours - base`` over the same queries, in points, and its 95% percentile interval over ``samples``
    resamples of the queries (with replacement)."""
    diff = np.asarray(ours, dtype=float) - np.asarray(base, dtype=float)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(samples, len(diff)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": round(100 * float(diff.mean()), 1), "ci95": [round(100 * float(low), 1), round(100 * float(high), 1)]}


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hashable]], k: int = 60) -> list[Hashable]:
    """Items of several rankings ordered by the sum of ``1 / (k + rank)`` (rank from 1) over the rankings that hold
    them (Cormack et al. 2009; k = 60 as there); ties keep first appearance."""
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])
