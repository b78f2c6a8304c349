"""The graph snapshot: LightRAG's knowledge graph as cached scipy CSR matrices.

Built only through the public ``BaseGraphStorage`` API (``get_all_nodes`` / ``get_all_edges``), so every graph
algorithm in lightrag_prism works the same on NetworkX, Neo4j, PostgreSQL, Memgraph or Mongo storage. ``PrismRAG``
keeps one snapshot and rebuilds it lazily after any insert, delete, edit or merge (see :class:`SnapshotCache`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import numpy as np
import scipy.sparse as sp

from .insert.extraction.records import COOCCURRENCE_KEYWORD, COOCCURRENCE_WEIGHT

GRAPH_FIELD_SEP = "<SEP>"  # LightRAG's separator inside source_id / description fields


def split_field(value: Any) -> list[str]:
    if not value:
        return []
    return [part for part in str(value).split(GRAPH_FIELD_SEP) if part]


@dataclass(eq=False)
class GraphSnapshot:
    """An immutable view of the graph at one version.

    * ``adj``: symmetric (N, N) CSR of non-negative edge weights (LightRAG's ``weight``, see :func:`edge_weight`);
    * ``edge_src``/``edge_tgt``: endpoints of each undirected edge (E,), as stored by the backend;
    * ``entry_edge``: for every stored entry of ``adj`` (CSR order), the index of its edge, so per-edge values map
      onto ``adj.data`` with ``values[entry_edge]``;
    * ``entity_chunks``: (N, C) CSR incidence entity -> source chunk; ``relation_chunks``: (E, C).
    * ``derived``: per-snapshot cache for values computed from it (vectors, FastRP, ...).
    """

    version: int
    node_ids: list[str]
    node_index: dict[str, int]
    node_data: list[dict]
    adj: sp.csr_matrix
    edge_src: np.ndarray
    edge_tgt: np.ndarray
    edge_data: list[dict]
    entry_edge: np.ndarray
    chunk_ids: list[str]
    chunk_index: dict[str, int]
    entity_chunks: sp.csr_matrix
    relation_chunks: sp.csr_matrix
    derived: dict[str, Any] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def num_edges(self) -> int:
        return len(self.edge_src)

    def edge_key(self, e: int) -> tuple[str, str]:
        return self.node_ids[self.edge_src[e]], self.node_ids[self.edge_tgt[e]]

    def edge_index(self) -> dict[tuple[str, str], int]:
        """(src, tgt) -> edge index, both orientations (cached)."""
        if "edge_index" not in self.derived:
            index = {}
            for e, (s, t) in enumerate(zip(self.edge_src.tolist(), self.edge_tgt.tolist())):
                index[(self.node_ids[s], self.node_ids[t])] = e
                index[(self.node_ids[t], self.node_ids[s])] = e
            self.derived["edge_index"] = index
        return self.derived["edge_index"]

    def chunks_of_entity(self, i: int) -> list[str]:
        row = self.entity_chunks
        return [self.chunk_ids[c] for c in row.indices[row.indptr[i]:row.indptr[i + 1]]]

    def chunks_of_edge(self, e: int) -> list[str]:
        row = self.relation_chunks
        return [self.chunk_ids[c] for c in row.indices[row.indptr[e]:row.indptr[e + 1]]]


def rows_from(snapshot: GraphSnapshot, base: GraphSnapshot) -> tuple[np.ndarray, np.ndarray]:
    """For each node and each edge of ``snapshot``, its index in ``base`` if ``base`` has it (same name; same
    endpoints in the same orientation) with equal data, else -1: what a view of ``snapshot`` can copy from the
    same view of ``base``. One pass, cached on ``snapshot`` for that ``base``; the data dicts of an unchanged item
    hold the very same strings, so comparing them costs next to nothing."""
    cached = snapshot.derived.get("rows_from")
    if cached is not None and cached[0] == (id(base), base.version):
        return cached[1], cached[2]
    base_nodes, base_data = base.node_index, base.node_data
    nodes = np.fromiter((j if j is not None and base_data[j] == data else -1
                         for j, data in ((base_nodes.get(name), data)
                                         for name, data in zip(snapshot.node_ids, snapshot.node_data))),
                        dtype=np.int64, count=snapshot.num_nodes)
    base_edges, base_edge_data = base.edge_index(), base.edge_data
    edges = np.full(snapshot.num_edges, -1, dtype=np.int64)
    for e, data in enumerate(snapshot.edge_data):
        j = base_edges.get(snapshot.edge_key(e))
        if j is not None and base_edge_data[j] == data:  # the data names source and target: same orientation
            edges[e] = j
    snapshot.derived["rows_from"] = ((id(base), base.version), nodes, edges)
    return nodes, edges


def is_cooccurrence(edge: dict) -> bool:
    """True when the relation's only keyword says its entities merely share a sentence (offline extractor)."""
    keywords = {k.strip() for k in str(edge.get("keywords") or "").split(",") if k.strip()}
    return keywords == {COOCCURRENCE_KEYWORD}


def edge_weight(edge: dict) -> float:
    """The weight graph algorithms use: LightRAG's ``weight`` (non-negative), times
    :data:`COOCCURRENCE_WEIGHT` for a co-occurrence link (:func:`is_cooccurrence`)."""
    weight = max(float(edge.get("weight") or 1.0), 0.0)
    return weight * COOCCURRENCE_WEIGHT if is_cooccurrence(edge) else weight


def _incidence(rows_of_chunks: list[list[str]], chunk_index: dict[str, int]) -> sp.csr_matrix:
    lengths = np.fromiter((len(r) for r in rows_of_chunks), dtype=np.int64, count=len(rows_of_chunks))
    cols = np.fromiter((chunk_index[c] for r in rows_of_chunks for c in r), dtype=np.int64, count=int(lengths.sum()))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    data = np.ones(len(cols), dtype=np.float32)
    m = sp.csr_matrix((data, cols, indptr), shape=(len(rows_of_chunks), len(chunk_index)))
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


def build_snapshot(nodes: list[dict], edges: list[dict], version: int = 0) -> GraphSnapshot:
    """Build a snapshot from ``get_all_nodes()`` / ``get_all_edges()`` output (``id``; ``source``/``target``).

    Nodes are ordered by name and edges by their endpoint names: the order a backend returns them in (insertion
    order, which concurrent inserts vary; row order on PostgreSQL) must not decide how a mode breaks ties, or the
    same data would rank differently on two backends or two runs."""
    nodes = sorted(nodes, key=lambda node: str(node["id"]))
    edges = sorted(edges, key=lambda edge: tuple(sorted((str(edge["source"]), str(edge["target"])))))
    node_ids = [str(n["id"]) for n in nodes]
    node_index = {name: i for i, name in enumerate(node_ids)}
    # Backends may return an edge whose endpoint is missing from get_all_nodes (damaged storage): skip it.
    kept = [e for e in edges if str(e["source"]) in node_index and str(e["target"]) in node_index
            and str(e["source"]) != str(e["target"])]
    src = np.fromiter((node_index[str(e["source"])] for e in kept), dtype=np.int64, count=len(kept))
    tgt = np.fromiter((node_index[str(e["target"])] for e in kept), dtype=np.int64, count=len(kept))
    weight = np.fromiter((edge_weight(e) for e in kept), dtype=np.float64, count=len(kept))
    n, n_edges = len(node_ids), len(kept)
    # Symmetric COO with the edge id as data first, to recover entry -> edge after CSR sorting.
    rows, cols = np.concatenate([src, tgt]), np.concatenate([tgt, src])
    edge_of = np.concatenate([np.arange(n_edges), np.arange(n_edges)])
    order = np.lexsort((cols, rows))
    rows, cols, edge_of = rows[order], cols[order], edge_of[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))]) if n else np.zeros(1, np.int64)
    adj = sp.csr_matrix((weight[edge_of], cols, indptr), shape=(n, n))

    node_chunks = [split_field(nd.get("source_id")) for nd in nodes]
    edge_chunks = [split_field(e.get("source_id")) for e in kept]
    chunk_ids = sorted({c for r in node_chunks + edge_chunks for c in r})
    chunk_index = {c: i for i, c in enumerate(chunk_ids)}
    return GraphSnapshot(
        version=version, node_ids=node_ids, node_index=node_index, node_data=nodes, adj=adj,
        edge_src=src, edge_tgt=tgt, edge_data=kept, entry_edge=edge_of,
        chunk_ids=chunk_ids, chunk_index=chunk_index,
        entity_chunks=_incidence(node_chunks, chunk_index), relation_chunks=_incidence(edge_chunks, chunk_index),
    )


async def snapshot_from_storage(graph_storage, version: int = 0) -> GraphSnapshot:
    """Read the whole graph through the public BaseGraphStorage API and build a snapshot."""
    nodes, edges = await asyncio.gather(graph_storage.get_all_nodes(), graph_storage.get_all_edges())
    return await asyncio.to_thread(build_snapshot, nodes, edges, version)


class SnapshotCache:
    """Holds the current snapshot; ``invalidate()`` after this process changed the graph (the next ``get()``
    rebuilds), ``refresh(prepare)`` after another process did (the current snapshot keeps answering meanwhile).

    The previous snapshot is kept in ``previous`` so derived data (e.g. FastRP) can be updated incrementally.
    """

    def __init__(self, graph_storage) -> None:
        self._storage = graph_storage
        self._version = 0
        self._current: GraphSnapshot | None = None
        self.previous: GraphSnapshot | None = None
        self._lock = asyncio.Lock()
        self._refresh_lock = asyncio.Lock()
        self.builds = 0

    @property
    def version(self) -> int:
        return self._version

    @property
    def current(self) -> GraphSnapshot | None:
        return self._current

    def invalidate(self) -> None:
        self._version += 1

    async def get(self) -> GraphSnapshot:
        current = self._current
        if current is not None and current.version == self._version:
            return current
        async with self._lock:
            if self._current is None or self._current.version != self._version:
                version = self._version
                snapshot = await snapshot_from_storage(self._storage, version)
                self.previous, self._current = self._current, snapshot
                self.builds += 1
            return self._current

    async def refresh(self, prepare: Callable[[GraphSnapshot, GraphSnapshot | None], Awaitable[Any]]) -> None:
        """Read the graph again and make it current once ``prepare(new, base)`` has built its derived views
        (``base``: the snapshot it replaces, for incremental updates). Queries meanwhile get the current one."""
        async with self._refresh_lock:
            version, base = self._version, self._current
            snapshot = await snapshot_from_storage(self._storage, version)
            await prepare(snapshot, base)
            async with self._lock:
                # A local invalidate() meanwhile means get() rebuilds anyway: this one is already out of date.
                if self._version == version:
                    self.previous, self._current = self._current, snapshot
                    self.builds += 1
