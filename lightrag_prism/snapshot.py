"""The graph snapshot: LightRAG's knowledge graph as cached scipy CSR matrices.

Built only through the public ``BaseGraphStorage`` API, so every graph algorithm in lightrag_prism works the same on
NetworkX, Neo4j, PostgreSQL, Memgraph or Mongo storage. ``PrismRAG`` keeps one snapshot and makes a new one lazily
after any insert, delete, edit or merge (see :class:`SnapshotCache`): from the previous one and the nodes and edges
written since (``get_nodes_batch`` / ``get_edges_batch`` of the names ``graph_changes.py`` noted,
:func:`patch_snapshot`), or from ``get_all_nodes`` / ``get_all_edges`` when that log cannot say what changed.
"""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import numpy as np
import scipy.sparse as sp

from .graph_changes import Changes, GraphChanges, KeyChanges, Written, edge_key, watch_keys, watch_writes

PATCH_ALWAYS_BELOW = 1_000  # changed items up to which a build reads only them, whatever the graph's size
PATCH_SHARE = 16  # past 1/16 of the graph's nodes and edges changed, a build reads the whole graph
GRAPH_FIELD_SEP = "<SEP>"  # LightRAG's separator inside source_id / description fields

#: ``keywords`` of a link the offline extractor makes between two entities that share a sentence but have no parsed
#: relation. LightRAG stores it like any relation (its weight counts source chunks); the snapshot multiplies the
#: weight of a relation whose only keyword this is by :data:`COOCCURRENCE_WEIGHT`, so parsed relations count more
#: in PPR and expansion.
COOCCURRENCE_KEYWORD = "mentioned with"
COOCCURRENCE_WEIGHT = 0.3


def split_field(value: Any) -> list[str]:
    if not value:
        return []
    return [part for part in str(value).split(GRAPH_FIELD_SEP) if part]


@dataclass(eq=False)
class GraphSnapshot:
    """An immutable view of the graph at one version.

    * ``adj``: symmetric (N, N) CSR of non-negative edge weights (LightRAG's ``weight``, see :func:`edge_weight`);
    * ``edge_src``/``edge_tgt``: endpoints of each undirected edge (E,), in name order (``edge_src < edge_tgt``,
      as PostgreSQL stores them): the order another backend returns them in must not orient a fact;
    * ``entry_edge``: for every stored entry of ``adj`` (CSR order), the index of its edge, so per-edge values map
      onto ``adj.data`` with ``values[entry_edge]``;
    * ``entity_chunks``: (N, C) CSR incidence entity -> source chunk; ``relation_chunks``: (E, C).
    * ``changes_through``: the position of the change log (``graph_changes.py``) its read started at;
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
    changes_through: int = 0
    derived: dict[str, Any] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def num_edges(self) -> int:
        return len(self.edge_src)

    def edge_key(self, e: int) -> tuple[str, str]:
        return self.node_ids[self.edge_src[e]], self.node_ids[self.edge_tgt[e]]

    def edge_of(self, src: str, tgt: str) -> int | None:
        """The index of the edge between ``src`` and ``tgt`` (either orientation), None if there is none: a binary
        search in ``src``'s row of ``adj``. A few lookups need no :meth:`edge_index` (a dict of every edge, built
        per snapshot)."""
        i, j = self.node_index.get(src), self.node_index.get(tgt)
        if i is None or j is None:
            return None
        start, stop = int(self.adj.indptr[i]), int(self.adj.indptr[i + 1])
        k = start + int(np.searchsorted(self.adj.indices[start:stop], j))  # columns are sorted within a row
        return int(self.entry_edge[k]) if k < stop and self.adj.indices[k] == j else None

    def edge_index(self) -> dict[tuple[str, str], int]:
        """(src, tgt) -> edge index, both orientations (cached)."""
        if "edge_index" not in self.derived:
            ids = self.node_ids
            sources, targets = [ids[s] for s in self.edge_src.tolist()], [ids[t] for t in self.edge_tgt.tolist()]
            index = dict(zip(zip(targets, sources), range(self.num_edges)))
            index.update(zip(zip(sources, targets), range(self.num_edges)))
            self.derived["edge_index"] = index
        return self.derived["edge_index"]

    def chunks_of_entity(self, i: int) -> list[str]:
        row = self.entity_chunks
        return [self.chunk_ids[c] for c in row.indices[row.indptr[i]:row.indptr[i + 1]]]

    def chunks_of_edge(self, e: int) -> list[str]:
        row = self.relation_chunks
        return [self.chunk_ids[c] for c in row.indices[row.indptr[e]:row.indptr[e + 1]]]


PATCHED_FROM = "patched_from"


@dataclass(frozen=True)
class NodeMoves:
    """How the nodes of a snapshot made by :func:`patch_snapshot` relate to its base's."""

    position: np.ndarray  # base row -> row in the snapshot (-1: the node is gone)
    gone: list[str]  # names the base has and the snapshot does not
    new: list[str]  # names the snapshot has and the base does not

    def base_rows(self, num_nodes: int) -> np.ndarray:
        """Row in the snapshot -> the base row of the same name (-1: a new name); ``position`` inverted."""
        rows = np.full(num_nodes, -1, dtype=np.int64)
        kept = self.position >= 0
        rows[self.position[kept]] = np.flatnonzero(kept)
        return rows


def node_moves(snapshot: GraphSnapshot, base: GraphSnapshot | None) -> NodeMoves | None:
    """The :class:`NodeMoves` from ``base`` when ``snapshot`` was patched from it, else None: a view of ``base``
    can then be carried over name by name instead of rebuilt from every node."""
    record = snapshot.derived.get(PATCHED_FROM)
    if base is None or record is None or record[0] != (id(base), base.version):
        return None
    return record[1]


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


def _incidence_matrix(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """0/1 CSR of (row, column) entries, a repeated entry once, columns sorted within rows."""
    m = sp.csr_matrix((np.ones(len(cols), dtype=np.float32), (rows, cols)), shape=shape)
    m.sum_duplicates()  # canonical form (scipy sums repeats while converting; this also sorts the columns)
    m.data[:] = 1.0
    return m


def _chunk_entries(rows_of_chunks: list[list[str]], row_ids, column_of) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) entries of chunk lists: ``row_ids[i]`` for list ``i``, ``column_of(chunk id)``."""
    lengths = np.fromiter((len(r) for r in rows_of_chunks), dtype=np.int64, count=len(rows_of_chunks))
    cols = np.fromiter((column_of(c) for r in rows_of_chunks for c in r), dtype=np.int64, count=int(lengths.sum()))
    return np.repeat(np.asarray(row_ids, dtype=np.int64), lengths), cols


def _adjacency(src: np.ndarray, tgt: np.ndarray, weight: np.ndarray, n: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Symmetric CSR of the edges and, for each stored entry, the index of its edge."""
    n_edges = len(src)
    rows, cols = np.concatenate([src, tgt]), np.concatenate([tgt, src])
    edge_of = np.concatenate([np.arange(n_edges), np.arange(n_edges)])
    order = np.argsort(rows * max(n, 1) + cols, kind="stable")  # lexsort((cols, rows)), in one key: 2x faster
    rows, cols, edge_of = rows[order], cols[order], edge_of[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))]) if n else np.zeros(1, np.int64)
    return sp.csr_matrix((weight[edge_of], cols, indptr), shape=(n, n)), edge_of


def oriented(edge: dict) -> dict:
    """``edge`` with ``source`` < ``target`` by name (a copy when it came the other way round)."""
    source, target = edge_key(edge["source"], edge["target"])
    if edge["source"] == source and edge["target"] == target:
        return edge
    return {**edge, "source": source, "target": target}


def build_snapshot(nodes: list[dict], edges: list[dict], version: int = 0) -> GraphSnapshot:
    """Build a snapshot from ``get_all_nodes()`` / ``get_all_edges()`` output (``id``; ``source``/``target``).

    Nodes are ordered by name, edges oriented and ordered by their endpoint names: the order a backend returns them
    in (insertion order, which concurrent inserts vary; row order on PostgreSQL) must not decide how a mode breaks
    ties, or the same data would rank differently on two backends or two runs."""
    nodes = sorted(nodes, key=lambda node: str(node["id"]))
    node_ids = [str(n["id"]) for n in nodes]
    node_index = dict(zip(node_ids, range(len(node_ids))))
    # Backends may return an edge whose endpoint is missing from get_all_nodes (damaged storage): skip it. A
    # backend storing a pair twice (both directions) gives one edge, the first.
    edges = sorted((oriented(e) for e in edges), key=lambda edge: (edge["source"], edge["target"]))
    kept, seen = [], set()
    for e in edges:
        key = (e["source"], e["target"])
        if key[0] in node_index and key[1] in node_index and key[0] != key[1] and key not in seen:
            seen.add(key)
            kept.append(e)
    src = np.fromiter((node_index[e["source"]] for e in kept), dtype=np.int64, count=len(kept))
    tgt = np.fromiter((node_index[e["target"]] for e in kept), dtype=np.int64, count=len(kept))
    weight = np.fromiter((edge_weight(e) for e in kept), dtype=np.float64, count=len(kept))
    adj, edge_of = _adjacency(src, tgt, weight, len(node_ids))

    node_chunks = [split_field(nd.get("source_id")) for nd in nodes]
    edge_chunks = [split_field(e.get("source_id")) for e in kept]
    chunk_ids = sorted({c for r in node_chunks + edge_chunks for c in r})
    chunk_index = dict(zip(chunk_ids, range(len(chunk_ids))))

    def incidence(rows_of_chunks: list[list[str]]) -> sp.csr_matrix:
        entries = _chunk_entries(rows_of_chunks, np.arange(len(rows_of_chunks)), chunk_index.__getitem__)
        return _incidence_matrix(*entries, (len(rows_of_chunks), len(chunk_ids)))

    return GraphSnapshot(
        version=version, node_ids=node_ids, node_index=node_index, node_data=nodes, adj=adj,
        edge_src=src, edge_tgt=tgt, edge_data=kept, entry_edge=edge_of,
        chunk_ids=chunk_ids, chunk_index=chunk_index,
        entity_chunks=incidence(node_chunks), relation_chunks=incidence(edge_chunks),
    )


def _merged(kept: list, added: list, at: list[int]) -> list:
    """``kept`` with ``added[k]`` inserted before ``kept[at[k]]`` (``at`` non-decreasing)."""
    out, start = [], 0
    for item, stop in zip(added, at):
        out.extend(kept[start:stop])
        out.append(item)
        start = stop
    out.extend(kept[start:])
    return out


def _without(items: list, rows: np.ndarray) -> list:
    """``items`` without the (sorted, unique) positions ``rows``, by slices: a patch removes few rows, and a
    comprehension over the 20,000 kept ones took ~2 ms each time."""
    out, start = [], 0
    for row in rows.tolist():
        out.extend(items[start:row])
        start = row + 1
    out.extend(items[start:])
    return out


def _rows_entries(matrix: sp.csr_matrix, rows: np.ndarray, new_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) entries of ``matrix``'s ``rows``, renumbered ``new_rows``."""
    sub = matrix[rows]
    return np.repeat(new_rows, np.diff(sub.indptr)), sub.indices.astype(np.int64)


def patch_snapshot(base: GraphSnapshot, nodes: dict[str, dict | None], edges: dict[tuple[str, str], dict | None],
                   version: int = 0) -> GraphSnapshot:
    """``base`` with the nodes and edges read again from the storage applied: ``nodes`` name -> data as
    ``get_nodes_batch`` gives it (None: gone), ``edges`` :func:`~lightrag_prism.graph_changes.edge_key` -> data as
    ``get_edges_batch`` gives it (None: gone). When they name everything written since ``base`` was read, the result
    equals :func:`build_snapshot` of the whole graph (tested). Everything else is carried over by array operations,
    and ``rows_from(result, base)`` is known without its pass."""
    # Nodes: base rows not named stay, in order; the named ones that exist are merged in by name.
    named_rows = [base.node_index[name] for name in nodes if name in base.node_index]
    keep = np.ones(base.num_nodes, dtype=bool)
    keep[named_rows] = False
    kept_rows = np.flatnonzero(keep)
    named_sorted = np.flatnonzero(~keep)
    kept_names = _without(base.node_ids, named_sorted)
    added = sorted(name for name, data in nodes.items() if data is not None)
    at = [bisect.bisect_left(kept_names, name) for name in added]
    node_ids = _merged(kept_names, added, at)
    added_data = [{**nodes[name], "id": name} for name in added]
    node_data = _merged(_without(base.node_data, named_sorted), added_data, at)
    node_index = dict(zip(node_ids, range(len(node_ids))))  # C-level: a comprehension took 5 ms at 20,000 names
    n = len(node_ids)
    kept_new = np.arange(len(kept_rows)) + np.searchsorted(np.asarray(at, dtype=np.int64), np.arange(len(kept_rows)),
                                                           side="right")
    added_new = np.asarray(at, dtype=np.int64) + np.arange(len(added), dtype=np.int64)
    position = np.full(base.num_nodes, -1, dtype=np.int64)  # base row -> row here (-1: gone)
    position[kept_rows] = kept_new
    node_sources = np.full(n, -1, dtype=np.int64)  # row here -> base row with equal data (rows_from)
    node_sources[kept_new] = kept_rows
    for name, row, data in zip(added, added_new.tolist(), added_data):
        j = base.node_index.get(name)
        if j is not None:
            position[j] = row
            if base.node_data[j] == data:
                node_sources[row] = j

    # Edges: base edges not named whose endpoints remain, then the named ones that exist; ordered by endpoints.
    base_rows = {key: base.edge_of(*key) for key in edges}
    keep = np.ones(base.num_edges, dtype=bool)
    keep[[e for e in base_rows.values() if e is not None]] = False
    src_now, tgt_now = position[base.edge_src], position[base.edge_tgt]
    edge_kept = keep & (src_now >= 0) & (tgt_now >= 0)
    kept_edges = np.flatnonzero(edge_kept)
    new_edges = [(key, {**data, "source": key[0], "target": key[1]}) for key, data in sorted(edges.items())
                 if data is not None and key[0] != key[1] and key[0] in node_index and key[1] in node_index]

    def carried(key: tuple[str, str], data: dict) -> int:  # the base edge with equal data, else -1
        j = base_rows[key]
        return j if j is not None and base.edge_data[j] == data else -1

    def of_new(values, dtype) -> np.ndarray:
        return np.fromiter(values, dtype=dtype, count=len(new_edges))

    base_weight = np.empty(base.num_edges, dtype=np.float64)
    base_weight[base.entry_edge] = base.adj.data
    src = np.concatenate([src_now[kept_edges], of_new((node_index[a] for (a, _), _ in new_edges), np.int64)])
    tgt = np.concatenate([tgt_now[kept_edges], of_new((node_index[b] for (_, b), _ in new_edges), np.int64)])
    weight = np.concatenate([base_weight[kept_edges], of_new((edge_weight(d) for _, d in new_edges), np.float64)])
    sources = np.concatenate([kept_edges, of_new((carried(k, d) for k, d in new_edges), np.int64)])
    order = np.lexsort((tgt, src))
    combined = _without(base.edge_data, np.flatnonzero(~edge_kept))
    combined += [d for _, d in new_edges]
    edge_data = combined if np.array_equal(order, np.arange(len(order))) else [combined[i] for i in order.tolist()]
    edge_row = np.empty(len(order), dtype=np.int64)  # combined position -> row here
    edge_row[order] = np.arange(len(order))
    adj, entry_edge = _adjacency(src[order], tgt[order], weight[order], n)

    # Chunks: carried rows keep their base columns; new chunk ids get columns after them; unused ones drop out.
    extra: dict[str, int] = {}

    def column_of(chunk: str) -> int:
        j = base.chunk_index.get(chunk)
        return j if j is not None else extra.setdefault(chunk, len(base.chunk_ids) + len(extra))

    parts = [_rows_entries(base.entity_chunks, kept_rows, kept_new),
             _chunk_entries([split_field(d.get("source_id")) for d in added_data], added_new, column_of)]
    edge_parts = [_rows_entries(base.relation_chunks, kept_edges, edge_row[:len(kept_edges)]),
                  _chunk_entries([split_field(d.get("source_id")) for _, d in new_edges],
                                 edge_row[len(kept_edges):], column_of)]
    names = base.chunk_ids + list(extra)
    used = np.unique(np.concatenate([cols for _, cols in parts + edge_parts]))
    used_names = [names[c] for c in used.tolist()]
    by_name = sorted(range(len(used)), key=used_names.__getitem__)
    chunk_ids = [used_names[i] for i in by_name]
    column = np.full(len(names), -1, dtype=np.int64)
    column[used[by_name]] = np.arange(len(used))
    shape = (len(chunk_ids),)
    entity_chunks = _incidence_matrix(np.concatenate([r for r, _ in parts]),
                                      column[np.concatenate([c for _, c in parts])], (n, *shape))
    relation_chunks = _incidence_matrix(np.concatenate([r for r, _ in edge_parts]),
                                        column[np.concatenate([c for _, c in edge_parts])], (len(order), *shape))
    snapshot = GraphSnapshot(
        version=version, node_ids=node_ids, node_index=node_index, node_data=node_data, adj=adj,
        edge_src=src[order], edge_tgt=tgt[order], edge_data=edge_data, entry_edge=entry_edge,
        chunk_ids=chunk_ids, chunk_index=dict(zip(chunk_ids, range(len(chunk_ids)))),
        entity_chunks=entity_chunks, relation_chunks=relation_chunks)
    snapshot.derived["rows_from"] = ((id(base), base.version), node_sources, sources[order])
    gone = [name for name in nodes if name in base.node_index and name not in node_index]
    snapshot.derived[PATCHED_FROM] = ((id(base), base.version),
                                      NodeMoves(position, gone, [name for name in added if name not in base.node_index]))
    return snapshot


async def snapshot_from_storage(graph_storage, version: int = 0) -> GraphSnapshot:
    """Read the whole graph through the public BaseGraphStorage API and build a snapshot."""
    nodes, edges = await asyncio.gather(graph_storage.get_all_nodes(), graph_storage.get_all_edges())
    return await asyncio.to_thread(build_snapshot, nodes, edges, version)


async def patched_from_storage(graph_storage, base: GraphSnapshot, changes: Changes, version: int) -> GraphSnapshot:
    """``base`` with the nodes and edges ``changes`` names read again (``get_nodes_batch``/``get_edges_batch``)."""
    pairs = set(changes.edges)
    for name in changes.removed:  # a removal took the node's edges along; one written back since is read again
        row = base.node_index.get(name)
        if row is not None:
            entries = base.entry_edge[base.adj.indptr[row]:base.adj.indptr[row + 1]]
            pairs.update(base.edge_key(e) for e in entries.tolist())
    names, pairs = sorted(changes.nodes), sorted(pairs)
    found_nodes = await graph_storage.get_nodes_batch(names) if names else {}
    found_edges = await graph_storage.get_edges_batch([{"src": a, "tgt": b} for a, b in pairs]) if pairs else {}
    nodes = {name: found_nodes.get(name) for name in names}
    edges = {pair: found_edges.get(pair) for pair in pairs}
    return await asyncio.to_thread(patch_snapshot, base, nodes, edges, version)


class SnapshotCache:
    """Holds the current snapshot; ``invalidate()`` after this process changed the graph through the storage's
    write methods (the next ``get()`` patches the snapshot with what they wrote), ``need_whole()`` after a change
    they did not see, ``refresh(prepare)`` after another process changed it (the current snapshot keeps answering
    meanwhile).

    The previous snapshot is kept in ``previous`` so derived data (e.g. FastRP) can be updated incrementally, until
    the current one's views are built (:meth:`release_previous`).
    """

    def __init__(self, graph_storage, chunk_storage=None) -> None:
        self._storage = graph_storage
        self._version = 0
        self._current: GraphSnapshot | None = None
        self.previous: GraphSnapshot | None = None
        self._lock = asyncio.Lock()
        self._refresh_lock = asyncio.Lock()
        self._refresh_from: int | None = None  # log position a refresh in progress read from
        self.changes = GraphChanges()
        watch_writes(graph_storage, self.changes)
        if hasattr(graph_storage, "on_foreign_write"):  # a storage that follows other processes' writes
            graph_storage.on_foreign_write = self._foreign_write
        # The passages' records written (views/passage_graph.py reads only those again); None: not watched, read whole.
        self.chunk_changes: KeyChanges | None = None
        if chunk_storage is not None:
            self.chunk_changes = KeyChanges()
            watch_keys(chunk_storage, self.chunk_changes)
        self.builds = 0
        self.patches = 0  # builds that read only what changed

    @property
    def version(self) -> int:
        return self._version

    @property
    def current(self) -> GraphSnapshot | None:
        return self._current

    def invalidate(self) -> None:
        self._version += 1

    def need_whole(self) -> None:
        """The graph changed in ways the change log did not see: the next build reads all of it."""
        self.changes.need_whole()
        self._version += 1

    async def _read(self, version: int) -> GraphSnapshot:
        base, position = self._current, self.changes.position
        changes = self.changes.since(base.changes_through) if base is not None else None
        # Reading items by name costs ~20x their share of a whole read on NetworkX (10,000 nodes and 10,000 edges
        # 0.39 s, all 119,000 of the pooled bench's graph 0.11 s): past a sixteenth of the graph, read it whole.
        if changes is None or len(changes) > max((base.num_nodes + base.num_edges) // PATCH_SHARE,
                                                 PATCH_ALWAYS_BELOW):
            snapshot = await snapshot_from_storage(self._storage, version)
        else:
            snapshot = await patched_from_storage(self._storage, base, changes, version)
            self.patches += 1
        snapshot.changes_through = position
        return snapshot

    def release_previous(self, prepared: GraphSnapshot, base: GraphSnapshot | None) -> None:
        """``prepared`` has its views, built from ``base``: when those are the current snapshot and ``previous``,
        ``previous`` is the base of nothing more, so it is let go, and its views (as large as the current ones: 400 MB
        at 9,000 passages) are freed when the queries still reading it end. Kept, every process that had changed the
        graph held both."""
        if base is not None and prepared is self._current and base is self.previous:
            self.previous = None

    def _install(self, snapshot: GraphSnapshot) -> None:
        self.previous, self._current = self._current, snapshot
        self.builds += 1
        kept = snapshot.changes_through if self._refresh_from is None else min(snapshot.changes_through,
                                                                                self._refresh_from)
        self.changes.forget_through(kept)

    async def get(self) -> GraphSnapshot:
        current = self._current
        if current is not None and current.version == self._version:
            return current
        async with self._lock:
            if self._current is None or self._current.version != self._version:
                self._install(await self._read(self._version))
            return self._current

    def _foreign_write(self, written: Written | None) -> None:
        """The graph storage applied another process's write (``written``: the names; None: it read the file whole)."""
        if written is None:
            self.changes.need_whole()
        else:
            self.changes.note(written)

    async def refresh(self, prepare: Callable[[GraphSnapshot, GraphSnapshot | None], Awaitable[Any]]) -> None:
        """After another process changed the graph: a new snapshot, made current once ``prepare(new, base)`` has
        built its derived views (``base``: the snapshot it replaces, for incremental updates). Queries meanwhile get
        the current one. A storage that follows other processes' writes (``catch_up``, the NetworkX storage over
        its journal) names what they changed, and the current snapshot is patched with that; otherwise the graph is
        read whole. The passages' records are read whole either way: the other process's are named nowhere."""
        async with self._refresh_lock:
            catch_up = getattr(self._storage, "catch_up", None)
            if catch_up is None or not await catch_up():
                self.changes.need_whole()
            if self.chunk_changes is not None:
                self.chunk_changes.need_whole()
            version, base = self._version, self._current
            self._refresh_from = self.changes.position
            try:
                snapshot = await self._read(version)
                await prepare(snapshot, base)
                async with self._lock:
                    if self._version == version:
                        self._install(snapshot)
                    else:  # a local change came first: a patch of it would lack what this read found
                        self.need_whole()
            finally:
                self._refresh_from = None
