"""Fusion of several ranked lists ("perspectives": multihop, ppr, fastrp, ...) into one ranking.

PrismRAG merges its perspectives as an ordered union (first list wins, no scores). Here each item gets
a fused score, and the result records which perspectives contained it, for provenance labels such
as ``"multihop+ppr"``.

Perspectives are given as a mapping ``name -> list`` (names kept for provenance) or as a sequence
(names ``"0"``, ``"1"``, ...). Ids can be any hashable. Order of the output: fused score descending;
ties keep first-appearance order (perspective order, then position within that perspective), so
the result is deterministic and stable.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FusionResult", "normalized_score_fusion", "reciprocal_rank_fusion"]


@dataclass(frozen=True)
class FusionResult:
    """``ids[i]`` has fused score ``scores[i]``; ``contributors[i, p]`` is True when perspective
    ``perspectives[p]`` listed it."""

    ids: list
    scores: np.ndarray
    perspectives: tuple
    contributors: np.ndarray

    @property
    def provenance(self) -> list[str]:
        """Per item, the names of the perspectives that listed it, joined by ``+``."""
        names = np.asarray(self.perspectives, dtype=object)
        return ["+".join(names[row]) for row in self.contributors]


def _named(perspectives) -> tuple[tuple[str, ...], list]:
    if isinstance(perspectives, Mapping):
        return tuple(str(k) for k in perspectives), list(perspectives.values())
    if isinstance(perspectives, Sequence) and not isinstance(perspectives, str):
        return tuple(str(i) for i in range(len(perspectives))), list(perspectives)
    raise ValueError("perspectives must be a mapping name -> list or a sequence of lists")


def _weights(names: tuple, weights) -> np.ndarray:
    if weights is None:
        return np.ones(len(names))
    w = np.asarray([weights[n] for n in names] if isinstance(weights, Mapping) else weights, dtype=np.float64)
    if w.shape != (len(names),) or (w.size and (w.min() < 0 or not np.isfinite(w).all())):
        raise ValueError(f"weights must be {len(names)} finite non-negative numbers, one per perspective")
    return w


def _fuse(names: tuple, id_lists: list, contribs: list, weights) -> FusionResult:
    """Weighted sum of per-list contributions by id, via one bincount (missing items add 0)."""
    all_ids = [i for ids in id_lists for i in ids]
    uniq = list(dict.fromkeys(all_ids))  # first-appearance order: the tie-break
    pos = {x: j for j, x in enumerate(uniq)}
    inv = np.fromiter(map(pos.__getitem__, all_ids), dtype=np.int64, count=len(all_ids))
    which = np.repeat(np.arange(len(names)), [len(ids) for ids in id_lists])
    values = np.concatenate([np.zeros(0), *contribs]) * _weights(names, weights)[which]
    scores = np.bincount(inv, weights=values, minlength=len(uniq))
    member = np.zeros((len(uniq), len(names)), dtype=bool)
    member[inv, which] = True
    order = np.argsort(-scores, kind="stable")
    return FusionResult([uniq[j] for j in order], scores[order], names, member[order])


def _ids_scores(item) -> tuple[list, np.ndarray]:
    ids, scores = (list(item.keys()), list(item.values())) if isinstance(item, Mapping) else item
    ids, scores = list(ids), np.asarray(scores, dtype=np.float64)
    if scores.shape != (len(ids),) or len(set(ids)) != len(ids) or not np.isfinite(scores).all():
        raise ValueError("each perspective needs unique ids with one finite score each")
    return ids, scores


def _min_max(scores: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; a constant list maps to 1.0 (each of its items is that list's best)."""
    if scores.size == 0:
        return scores
    span = scores.max() - scores.min()
    return (scores - scores.min()) / span if span > 0 else np.ones_like(scores)


def normalized_score_fusion(perspectives, weights=None) -> FusionResult:
    """Min-max normalise each perspective's scores, then take the weighted sum per id.

    Each perspective is a mapping ``id -> score`` or a pair ``(ids, scores)``. An id missing from a
    perspective contributes 0 there. ``weights``: one per perspective (mapping or sequence).
    """
    names, items = _named(perspectives)
    pairs = [_ids_scores(item) for item in items]
    return _fuse(names, [ids for ids, _ in pairs], [_min_max(s) for _, s in pairs], weights)


def reciprocal_rank_fusion(rankings, k: float = 60, weights=None) -> FusionResult:
    """Reciprocal rank fusion: ``score(id) = sum_p w_p / (k + rank_p(id))`` with 1-based ranks.

    Each ranking is a sequence of unique ids, best first; ids absent from a ranking add 0.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    names, items = _named(rankings)
    id_lists = [list(r) for r in items]
    if any(len(set(ids)) != len(ids) for ids in id_lists):
        raise ValueError("a ranking lists the same id twice")
    contribs = [1.0 / (k + np.arange(1, len(ids) + 1)) for ids in id_lists]
    return _fuse(names, id_lists, contribs, weights)
