"""Vectorised hop scoring for the ``fidelis`` beam search (numpy only, no LightRAG import).

For a frontier node ``f`` and each of its relations ``e = (f, u)``::

    hop_score = rel_sim[e] + ent_sim[u] + alpha * lookahead(f, u)
    lookahead(f, u) = max over u's relations e' = (u, w), w != f, of rel_sim[e'] + ent_sim[w]   (0 if none)

where ``sim(x) = max over keywords k of cos(vec(x), vec(k))``. All relations of all frontier nodes are scored at
once from CSR row slices; similarities and look-aheads are computed lazily for the rows a query touches and cached
for the rest of the query (:class:`HopScorer`), so a node's scoring is never repeated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ...graph import cached_rows


@dataclass
class Path:
    """A beam: entity rows, the relation rows between them, and each hop's score."""

    nodes: list[int]
    edges: list[int] = field(default_factory=list)
    hop_scores: list[float] = field(default_factory=list)

    @property
    def score(self) -> float:
        return float(np.mean(self.hop_scores)) if self.hop_scores else 0.0

    def extend(self, edge: int, node: int, hop_score: float) -> "Path":
        return Path(self.nodes + [node], self.edges + [edge], self.hop_scores + [hop_score])


def row_entries(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of all stored entries of ``rows`` in CSR order, and the index (into ``rows``) each belongs to."""
    rows = np.asarray(rows, dtype=np.int64)
    starts, lengths = indptr[rows], indptr[rows + 1] - indptr[rows]
    owner = np.repeat(np.arange(len(rows)), lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(rows) else np.zeros(0, np.int64)
    positions = np.arange(int(lengths.sum())) - np.repeat(offsets, lengths) + np.repeat(starts, lengths)
    return positions.astype(np.int64), owner


class HopScorer:
    """Keyword similarities, look-aheads and hop scores over one snapshot for one query (lazily cached)."""

    def __init__(self, adj: sp.csr_matrix, entry_edge: np.ndarray, entity_vecs: np.ndarray,
                 relation_vecs: np.ndarray, keyword_vecs: np.ndarray, alpha: float) -> None:
        self.indptr, self.indices, self.entry_edge = adj.indptr, adj.indices, entry_edge
        self.entity_vecs, self.relation_vecs = entity_vecs, relation_vecs
        self.keywords = np.asarray(keyword_vecs, dtype=np.float32)
        self.alpha = float(alpha)
        n, n_edges = adj.shape[0], len(relation_vecs)
        self._ent = np.full(n, np.nan, dtype=np.float64)
        self._rel = np.full(n_edges, np.nan, dtype=np.float64)
        self._la_best = np.full(n, np.nan, dtype=np.float64)
        self._la_second = np.full(n, -np.inf, dtype=np.float64)
        self._la_col = np.full(n, -1, dtype=np.int64)

    # --- similarities -------------------------------------------------------------------------------------------
    def _fill(self, cache: np.ndarray, matrix: np.ndarray, ids: np.ndarray) -> np.ndarray:
        def best_keyword(missing: np.ndarray) -> np.ndarray:
            return (matrix[missing] @ self.keywords.T).max(axis=1) if len(self.keywords) else 0.0

        return cached_rows(cache, ids, best_keyword)

    def ent_sim(self, nodes: np.ndarray) -> np.ndarray:
        return self._fill(self._ent, self.entity_vecs, nodes)

    def rel_sim(self, edges: np.ndarray) -> np.ndarray:
        return self._fill(self._rel, self.relation_vecs, edges)

    # --- look-ahead ---------------------------------------------------------------------------------------------
    def _fill_lookahead(self, nodes: np.ndarray) -> None:
        todo = np.unique(np.asarray(nodes, dtype=np.int64))
        todo = todo[np.isnan(self._la_best[todo])]
        if not len(todo):
            return
        positions, owner = row_entries(self.indptr, todo)
        cols = self.indices[positions].astype(np.int64)
        values = self.rel_sim(self.entry_edge[positions]) + self.ent_sim(cols)
        order = np.lexsort((-values, owner))  # per row, best first
        owner, cols, values = owner[order], cols[order], values[order]
        counts = np.bincount(owner, minlength=len(todo))
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        has1, has2 = counts >= 1, counts >= 2
        self._la_best[todo] = np.where(has1, values[np.minimum(first, len(values) - 1)] if len(values) else 0, -np.inf)
        self._la_col[todo] = np.where(has1, cols[np.minimum(first, len(cols) - 1)] if len(cols) else -1, -1)
        second = values[np.minimum(first + 1, len(values) - 1)] if len(values) else np.zeros(len(todo))
        self._la_second[todo] = np.where(has2, second, -np.inf)

    def lookahead(self, from_nodes: np.ndarray, to_nodes: np.ndarray) -> np.ndarray:
        """Best next hop out of ``to_nodes``, not going back to the matching ``from_nodes`` (0 when none)."""
        to_nodes = np.asarray(to_nodes, dtype=np.int64)
        self._fill_lookahead(to_nodes)
        best = np.where(self._la_col[to_nodes] == np.asarray(from_nodes), self._la_second[to_nodes],
                        self._la_best[to_nodes])
        return np.where(np.isfinite(best), best, 0.0)

    def prefetch(self, nodes: np.ndarray) -> None:
        """Score everything the next step will need when expanding ``nodes`` (run while the LLM thinks)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        if not len(nodes):
            return
        positions, _ = row_entries(self.indptr, nodes)
        self.rel_sim(self.entry_edge[positions])
        if self.alpha:
            self._fill_lookahead(self.indices[positions])
        else:
            self.ent_sim(self.indices[positions])

    # --- expansion ----------------------------------------------------------------------------------------------
    def expand(self, frontier: np.ndarray, visited: list[np.ndarray]) -> dict[str, np.ndarray]:
        """Score every relation out of each beam's last node ``frontier[b]`` to a node not in ``visited[b]``.

        Returns arrays over the candidate relations: ``beam``, ``edge``, ``node`` (the neighbour), ``score``.
        """
        frontier = np.asarray(frontier, dtype=np.int64)
        positions, beam = row_entries(self.indptr, frontier)
        nbr = self.indices[positions].astype(np.int64)
        n = len(self._ent)
        if visited:
            keys = np.concatenate([b * n + np.asarray(v, dtype=np.int64) for b, v in enumerate(visited)])
            keep = ~np.isin(beam * n + nbr, keys)
            positions, beam, nbr = positions[keep], beam[keep], nbr[keep]
        edge = self.entry_edge[positions].astype(np.int64)
        score = self.rel_sim(edge) + self.ent_sim(nbr)
        if self.alpha and len(nbr):
            score = score + self.alpha * self.lookahead(frontier[beam], nbr)
        return {"beam": beam, "edge": edge, "node": nbr, "score": score}


def top_candidates(candidates: dict[str, np.ndarray], top_n: int) -> np.ndarray:
    """Indices of the ``top_n`` best candidates, best first (ties: lower index first)."""
    score = candidates["score"]
    if len(score) > top_n:
        part = np.argpartition(-score, top_n - 1)[:top_n]
    else:
        part = np.arange(len(score))
    return part[np.lexsort((part, -score[part]))]
