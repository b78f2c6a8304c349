"""The FastRP view of a graph snapshot (prism's FastRP perspective): node embeddings cached on the snapshot and
carried to the next one incrementally, prepared at insert time (``query_state.py``) and read by queries
(``prism/expand.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...graph import FastRPState
from ...snapshot import GraphSnapshot, node_moves

FASTRP_KEY = "prism_fastrp"


@dataclass(frozen=True)
class FastRPCache:
    state: FastRPState
    order: list[str]  # node names in the state's row order
    rows: np.ndarray  # state row -> snapshot row (-1: a tombstone)
    tombstones: dict[str, int]  # name -> state row of the deleted nodes still holding a row
    state_rows: np.ndarray  # snapshot row -> state row
    incremental: bool

    @property
    def embedding(self) -> np.ndarray:
        """The embeddings in snapshot order (a copy; queries score the state's rows in place, see
        :func:`fastrp_scores`)."""
        return self.state.embedding[self.state_rows]


FASTRP_POWERS_TAKEN = "prism_fastrp_powers_taken"  # set on a snapshot whose FastRP powers a successor took
TOMBSTONE_LIMIT = 0.1  # rebuild FastRP from scratch once this share of its rows are deleted nodes


def _grown_layout(snap: GraphSnapshot, previous: GraphSnapshot, old: FastRPCache
                  ) -> tuple[list[str], np.ndarray, dict[str, int]]:
    """``old``'s state rows laid out on ``snap``: (order, rows, tombstones) with the old rows first, then the new
    nodes in snapshot order; a deleted node's row becomes a tombstone, and a tombstone's name that comes back takes
    its row again. From the patch's node moves when ``snap`` was patched from ``previous`` (only the names that came
    or went are looked at), else by name over every node."""
    moves = node_moves(snap, previous)
    if moves is None:
        known = set(old.order)
        order = old.order + [name for name in snap.node_ids if name not in known]
        rows = np.fromiter((snap.node_index.get(name, -1) for name in order), dtype=np.int64, count=len(order))
        return order, rows, {order[i]: i for i in np.flatnonzero(rows < 0).tolist()}
    live = old.rows >= 0
    rows = np.full(len(old.rows), -1, dtype=np.int64)
    rows[live] = moves.position[old.rows[live]]
    state_row = np.full(previous.num_nodes, -1, dtype=np.int64)  # previous snapshot row -> state row
    state_row[old.rows[live]] = np.flatnonzero(live)
    tombstones = dict(old.tombstones)
    tombstones.update((name, int(state_row[previous.node_index[name]])) for name in moves.gone)
    appended = []
    for name in moves.new:
        row = tombstones.pop(name, None)
        if row is None:
            appended.append(name)
        else:
            rows[row] = snap.node_index[name]
    added_rows = np.fromiter((snap.node_index[name] for name in appended), dtype=np.int64, count=len(appended))
    return old.order + appended, np.concatenate([rows, added_rows]), tombstones


def fastrp_cache(snap: GraphSnapshot, previous: GraphSnapshot | None, keep_powers: bool = True) -> FastRPCache:
    """The FastRP state of ``snap``, cached on the snapshot.

    When the previous snapshot has FastRP, the state is updated incrementally: the new graph is laid out as "old
    nodes in their old order, then new nodes" (:func:`_grown_layout`), which is what ``FastRPState.update``
    requires. A deleted node keeps its row as an isolated tombstone (its random projection row stays put, so no
    other row moves) until tombstones are :data:`TOMBSTONE_LIMIT` of the rows; otherwise, and without a previous
    state, it is built from scratch. The embeddings stay in the state's row order: copying them into snapshot
    order took a third of the first query after deleting one document from 3,000 (tens of MB moved per snapshot).

    ``keep_powers`` False (a process that never changes the graph, ``query_state.py``): the state keeps only its
    embedding, not the powers ``S^k R`` an incremental update needs (four fifths of its memory: 450 MB at 57,000
    entities); when the graph changes, the next state is built whole.
    """
    cached = snap.derived.get(FASTRP_KEY)
    if cached is not None:
        return cached
    old = previous.derived.get(FASTRP_KEY) if previous is not None else None
    rows = None
    if old is not None:
        order, rows, tombstones = _grown_layout(snap, previous, old)
        token = object()  # the previous state's powers are updated in place, so for one successor only
        if not old.state.powers or len(tombstones) > TOMBSTONE_LIMIT * len(order) or \
                previous.derived.setdefault(FASTRP_POWERS_TAKEN, token) is not token:
            rows = None
    if rows is not None:
        live = np.flatnonzero(rows >= 0)
        # Q maps the snapshot's nodes onto the state's rows (a tombstone's row gets no entry): Q A Q^T.
        q = sp.csr_matrix((np.ones(len(live)), (live, rows[live])), shape=(len(order), snap.num_nodes))
        state, incremental = old.state.update(q @ snap.adj @ q.T, reuse_powers=True), True
    else:
        order, live, rows, tombstones = list(snap.node_ids), np.arange(snap.num_nodes), np.arange(snap.num_nodes), {}
        state, incremental = FastRPState.build(snap.adj), False
    if not keep_powers:
        state = state.without_powers()
    state_rows = np.empty(snap.num_nodes, dtype=np.int64)
    state_rows[rows[live]] = live
    cache = snap.derived[FASTRP_KEY] = FastRPCache(state, order, rows, tombstones, state_rows, incremental)
    return cache
