"""Seeds, the passage graph and the passage-aware, query-aware PPR of ``prism`` and ``hipporag`` (pure numpy/scipy
on snapshot arrays).

* **Seeds** (:func:`seed_vector`): HippoRAG 2's fact linking (the ``prism_seed_facts`` facts closest to the query,
  their endpoints weighted by fact score / passage count, the ``prism_seed_phrases`` best kept) plus **name
  linking**: every entity whose name equals, case-insensitively and without a possessive "'s", an entity-like span
  of the query (``keywords.entity_spans``) gets weight ``1 / passage count`` (a fact match of score 1). Embeddings
  of short names are weak evidence; an exact name in the question is strong evidence, and on MuSiQue it adds 4.6
  points of R@5 (docs/prism.md).
* **Passage graph** (:class:`PassageGraph`): entities and passages as nodes; fact edges (co-occurrence weight),
  synonym edges and entity-passage edges, in one CSR whose fact entries are re-weighted per query:
  ``static + cooccurrence * edge_factor[edge]`` with ``edge_factor = max(cos(relation, query), 0) + floor``, so the
  query-aware factor multiplies the fact edges' co-occurrence weight and never touches synonym/passage edges.
* **Ranking** (:func:`passage_ppr`): one PPR whose personalization is the entity weights (seeds plus the
  multi-hop/FastRP expansion) and, on the passages, ``prism_passage_weight * minmax(dense)`` plus the **head seeds**
  (:func:`passage_personalization`); the passage part ranks the chunks, the entity part is the PPR perspective.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...graph import knn, ppr_cg, symmetric_ppr, top_k
from ...snapshot import GraphSnapshot, node_moves

NUM_CHUNKS_KEY = "prism_entity_num_chunks"
HEAD_POOL = 10  # the dense head's second and later passages come from the dense top 10 (dense_head_rows)
NAME_KEYS_KEY = "prism_name_keys"
_POSSESSIVE = re.compile(r"['’]s?$")
# L1 error bound of the PPR over entities and passages (prism and hipporag). 1e-5, not the solver's 1e-6: on the
# pooled 9,000-passage bench index (66,000 nodes) every one of 200 questions got the same chunk ranking in both
# modes; prism's solve took 3.4 ms less per query, hipporag's 10 sparse products instead of 12. On the own indexes
# hipporag's 200 rankings were the same but one, whose ranks 17 and 18 swapped.
PASSAGE_PPR_TOL = 1e-5
# The passage graph's weights, and so its PPR steps, in float32 (graph.ppr_cg: "Precision follows the matrix"): on the
# pooled bench index the solve took 6.3 ms against 8.0 per prism query, and both gave the same top 20 passages and
# top 30 entities on 40 questions (at most 7.5e-8 apart in L1, against the tolerance of 1e-5).
PASSAGE_PPR_DTYPE = np.float32


def entity_num_chunks(snap: GraphSnapshot) -> np.ndarray:
    """(N,) number of chunks each entity appears in (at least 1), cached on the snapshot."""
    if NUM_CHUNKS_KEY not in snap.derived:
        counts = np.diff(snap.entity_chunks.indptr).astype(np.float64)
        snap.derived[NUM_CHUNKS_KEY] = np.maximum(counts, 1.0)
    return snap.derived[NUM_CHUNKS_KEY]


def minmax(x: np.ndarray) -> np.ndarray:
    if x.size == 0:
        return x.astype(np.float64)
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x, dtype=np.float64)


@functools.lru_cache(maxsize=1 << 18)  # every snapshot asks again for each of its names
def name_key(name: str) -> str:
    """Case-folded name without a trailing possessive ("Hello Love's" -> "hello love")."""
    return _POSSESSIVE.sub("", name.strip()).strip().casefold()


def name_keys(snap: GraphSnapshot, base: GraphSnapshot | None = None) -> dict[str, tuple[str, ...]]:
    """:func:`name_key` -> the node names folding to it, cached on the snapshot; carried over from ``base``'s when
    ``snap`` was patched from it (only the names that came or went are folded)."""
    keys = snap.derived.get(NAME_KEYS_KEY)
    if keys is not None:
        return keys
    moves, base_keys = node_moves(snap, base), base.derived.get(NAME_KEYS_KEY) if base is not None else None
    if moves is not None and base_keys is not None:
        keys = dict(base_keys)
        for name in moves.gone:
            key = name_key(name)
            rest = tuple(other for other in keys[key] if other != name)
            if rest:
                keys[key] = rest
            else:
                del keys[key]
        for name in moves.new:
            key = name_key(name)
            keys[key] = keys.get(key, ()) + (name,)
    else:
        grouped: dict[str, list[str]] = {}
        for name in snap.node_ids:
            grouped.setdefault(name_key(name), []).append(name)
        keys = {key: tuple(names) for key, names in grouped.items()}
    snap.derived[NAME_KEYS_KEY] = keys
    return keys


def name_links(snap: GraphSnapshot, spans: list[str]) -> np.ndarray:
    """Node indices whose :func:`name_key` equals a span's (all of them when several names fold together)."""
    keys, index = name_keys(snap), snap.node_index
    hits = [index[name] for span in spans for name in keys.get(name_key(span), ())]
    return np.unique(np.asarray(hits, dtype=np.int64))


def seed_vector(fact_seeds: np.ndarray, linked: np.ndarray, num_chunks: np.ndarray) -> np.ndarray:
    """(N,) seed weights: the fact seeds plus ``1 / num_chunks`` for each name-linked entity."""
    seeds = np.asarray(fact_seeds, dtype=np.float64).copy()
    seeds[linked] += 1.0 / num_chunks[linked]
    return seeds


@dataclass(frozen=True)
class PassageGraph:
    """CSR structure over ``[entities; passages]`` with per-entry weight parts (see module doc). Only the fact
    entries change per query, so :meth:`weights` touches those and reuses the static part's out-weights.

    The structure is kept relabelled in **solve order** (``ppr_cg.rows_by_length``: node ``order[k]`` is row ``k``),
    where PPR's sparse products run about twice as fast; :meth:`weights` and :meth:`weighted` are in solve order,
    :meth:`adjacency` and :func:`passage_ppr` in node order."""

    n_entities: int
    indptr: np.ndarray  # int32 where it fits: scipy's sparse product is faster on int32 indices
    indices: np.ndarray
    static_weight: np.ndarray  # synonym + entity-passage weight of each entry (PASSAGE_PPR_DTYPE)
    static_out: np.ndarray  # (size,) each row's out-weight over its static entries (float64)
    fact_entries: np.ndarray  # the entries carrying a fact edge
    fact_rows: np.ndarray  # their rows
    fact_edge: np.ndarray  # their fact edge
    fact_weight: np.ndarray  # its co-occurrence weight (PASSAGE_PPR_DTYPE)
    order: np.ndarray  # solve row -> node
    position: np.ndarray  # node -> solve row

    @property
    def size(self) -> int:
        return len(self.indptr) - 1

    def weights(self, edge_factor: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(weight of each entry, out-weight of each row) for one query, in solve order: fact entries scaled by
        ``edge_factor[edge]`` (None: by 1). The weights are ``PASSAGE_PPR_DTYPE``, the out-weights float64."""
        if edge_factor is None:
            scaled = self.fact_weight
        else:
            scaled = self.fact_weight * np.asarray(edge_factor, dtype=self.fact_weight.dtype)[self.fact_edge]
        data = self.static_weight.copy()
        data[self.fact_entries] += scaled  # an entry appears once, so no np.add.at
        return data, self.static_out + np.bincount(self.fact_rows, scaled, minlength=self.size)

    def weighted(self, edge_factor: np.ndarray | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
        """The weighted adjacency for one query and its row sums, in solve order."""
        data, out_weight = self.weights(edge_factor)
        return self._csr(data), out_weight

    def adjacency(self, edge_factor: np.ndarray | None = None) -> sp.csr_matrix:
        """The weighted adjacency for one query, in node order."""
        solve_order = self.weighted(edge_factor)[0]
        return solve_order[self.position][:, self.position]

    def _csr(self, data: np.ndarray) -> sp.csr_matrix:
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.size, self.size))


def build_passage_graph(snap: GraphSnapshot, synonyms: sp.csr_matrix, incidence: sp.csr_matrix) -> PassageGraph:
    """Merge the fact block (``snap.adj``), the ``synonyms`` block and the N x P entity-passage ``incidence``
    into one sorted CSR in solve order; entries present in several blocks are summed part by part."""
    n = snap.num_nodes
    size = n + incidence.shape[1]
    fact, syn, inc = snap.adj.tocoo(), synonyms.tocoo(), incidence.tocoo()
    rows = np.concatenate([fact.row, syn.row, inc.row, inc.col + n]).astype(np.int64)
    cols = np.concatenate([fact.col, syn.col, inc.col + n, inc.row]).astype(np.int64)
    static_part = np.concatenate([np.zeros(fact.nnz), syn.data, inc.data, inc.data]).astype(np.float64)
    # Solve order from the row lengths before merging: entries in two blocks (a synonym pair that is also a fact)
    # are few, and any order gives the same PPR; this one spares a second sort of every entry.
    order = ppr_cg.rows_by_length(np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=size))]))
    position = np.empty(size, dtype=np.int64)
    position[order] = np.arange(size)
    keys, entry = np.unique(position[rows] * size + position[cols], return_inverse=True)  # merged, solve order
    static_weight = np.bincount(entry, static_part, keys.size).astype(PASSAGE_PPR_DTYPE)  # int64 when empty
    entry_rows = keys // size
    static_out = np.bincount(entry_rows, static_weight, minlength=size).astype(np.float64)  # of the weights kept
    # tocoo keeps CSR entry order, so snap.entry_edge lines up with the fact block's entries (distinct: a snapshot
    # has no self-loop, so no edge is stored twice at one place)
    fact_entries = entry[:fact.nnz]
    index_dtype = np.int32 if max(size, keys.size) < np.iinfo(np.int32).max else np.int64
    indptr = np.concatenate([[0], np.cumsum(np.bincount(entry_rows, minlength=size))]).astype(index_dtype)
    return PassageGraph(n, indptr, (keys % size).astype(index_dtype), static_weight, static_out, fact_entries,
                        entry_rows[fact_entries], np.asarray(snap.entry_edge, dtype=np.int64),
                        fact.data.astype(PASSAGE_PPR_DTYPE), order, position)


def dense_head_rows(dense: np.ndarray, vectors: np.ndarray, head: int, novelty: float,
                    pool: int = HEAD_POOL) -> np.ndarray:
    """The ``head`` passages shown first, best first: dense retrieval's best passage, then, one at a time, the
    passage of the dense top ``pool`` with the highest ``dense - novelty * (max cosine to the ones already chosen)``
    (maximal marginal relevance, Carbonell & Goldstein 1998). ``novelty=0`` is the dense top ``head``.

    Dense retrieval's second passage is often a near copy of its first (the same hop, said again); a multi-hop
    question needs the other hop. Measured in docs/prism.md ("The head").
    """
    if head <= 0 or novelty <= 0:
        return top_k(dense, head)
    candidates = top_k(dense, max(pool, head))
    if candidates.size == 0:  # no passage (an empty or cleared index)
        return candidates
    unit = knn.unit_rows(vectors[candidates].astype(np.float64))
    cosine = unit @ unit.T
    relevance = dense[candidates]
    chosen = [0]  # positions in ``candidates``; the dense best is always first
    closest = cosine[0].copy()  # each candidate's max cosine to the chosen ones
    while len(chosen) < min(head, candidates.size):
        score = relevance - novelty * closest
        score[chosen] = -np.inf
        best = int(np.argmax(score))  # ties: the better dense rank
        chosen.append(best)
        np.maximum(closest, cosine[best], out=closest)
    return candidates[chosen]


def passage_personalization(dense: np.ndarray, weight: float, head_rows: np.ndarray, head_mass: float
                            ) -> np.ndarray:
    """(P,) passage part of the personalization: ``weight * minmax(dense)`` on every passage, plus ``head_mass``
    split evenly over the head passages (``head_rows``, :func:`dense_head_rows`).

    The dense prior alone is spread over the whole corpus, so the passages shown first (the dense head) pass little
    to the entities they mention. Seeding them like the linked entities lets the walk cross the bridge of a
    two-hop question: "...resigned to become a lobbyist for Boston Beer Company" -> the Boston Beer Company passage.
    """
    out = weight * minmax(dense)
    if head_rows.size:
        out[head_rows] += head_mass / head_rows.size
    return out


def passage_ppr(graph: PassageGraph, entity_weights: np.ndarray, passage_weights: np.ndarray,
                edge_factor: np.ndarray, damping: float) -> tuple[np.ndarray, np.ndarray]:
    """PPR over the passage graph with query-scaled fact edges: (entity scores (N,), passage scores (P,))."""
    personalization = np.concatenate([entity_weights, passage_weights])[graph.order]
    scores = symmetric_ppr(*graph.weighted(edge_factor), personalization, damping=damping,
                           tol=PASSAGE_PPR_TOL)[graph.position]
    return scores[:graph.n_entities], scores[graph.n_entities:]
