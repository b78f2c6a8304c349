"""A small persistent embedding index for the ``hipporag`` mode: id -> L2-normalised vector.

Used for the fact index (one vector per fact text) and the entity-name index (phrase embeddings for synonym edges).
The matrix lives in memory; the vectors persist in the instance's ``prism_vectors`` KV namespace
(:class:`~lightrag_prism.plugin_state.VectorCache`), so a restart, or a second instance on the same storages,
re-embeds nothing. :meth:`EmbeddingIndex.sync` makes the index hold exactly the given ids: it takes the ids it
does not have from the stage, then from the store, embeds only the rest and stores them. Vectors computed ahead of
time (during an insert, see ``insert/prefetch.py``) are handed in with :meth:`EmbeddingIndex.stage`.

**Rows stay where they are.** A sync returns :class:`IndexRows`: the index's matrix and the row of each id asked
for. New vectors are appended after the rows in use, an id no longer wanted leaves its row unread, and nothing is
moved until those dead rows are an eighth of the matrix; then one compaction lays the rows out in the order asked.
Re-gathering the whole matrix into the order asked on every sync cost two fresh copies of ~33 MB (names and facts)
after deleting one document from 3,000 passages: most of the first query's cost. A row below the size a view was
made with is never written again, so views of older snapshots stay valid while the index moves on.

**Column-major on request** (``column_major=True``, the fact index): every query scores every fact, and OpenBLAS's
matrix-vector product streams a column-major matrix faster (pooled bench, 62,000 x 384 facts, 2 threads: 3.5 ms
against 4.4 row-major). Rows of such a matrix are gathered one dimension at a time (:func:`rows_of`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from itertools import repeat
from typing import Awaitable, Callable, Sequence

import numpy as np

from ...plugin_state import VectorCache
from ...vectors import unit_rows

logger = logging.getLogger(__name__)

EmbedFunc = Callable[[list[str]], Awaitable[np.ndarray]]


DEAD_SHARE = 8  # compact once dead rows are more than 1/DEAD_SHARE of the rows in use


@dataclass(frozen=True)
class IndexRows:
    """What a sync returns: ``matrix`` (the index's rows in use then) and ``rows``, one per id asked for."""

    matrix: np.ndarray
    rows: np.ndarray

    def __getitem__(self, which) -> np.ndarray:
        """The vectors of the ids at positions ``which`` (a copy)."""
        return rows_of(self.matrix, self.rows[which])

    def vectors(self) -> np.ndarray:
        """Every id's vector, in the order asked (a copy: queries use :meth:`scores`)."""
        return rows_of(self.matrix, self.rows)

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """The dot product of every id's vector with ``query_vector``, in the order asked."""
        return (self.matrix @ np.asarray(query_vector, dtype=self.matrix.dtype))[self.rows]


def rows_of(matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``matrix[rows]`` in the matrix's layout. A column-major matrix is gathered one column at a time: indexing
    its rows directly reads every element of a row from a different place (2.4 ms per 1,000 rows of 384 against
    0.06)."""
    if matrix.ndim == 2 and matrix.strides[0] < matrix.strides[1]:  # column-major, or rows of such a buffer
        return np.take(matrix.T, rows, axis=1).T
    return matrix[rows]


class EmbeddingIndex:
    """Vectors by id in memory, persisted in a :class:`VectorCache` (None: memory only); ``column_major``: the
    matrix's layout (see the module docs)."""

    def __init__(self, name: str, store: VectorCache | None, column_major: bool = False) -> None:
        self.name, self.store = name, store
        self.ids: list[str] = []  # the ids held, in the order of the last sync
        self._order = "F" if column_major else "C"
        self._buffer = np.zeros((0, 0), np.float32, order=self._order)  # rows [0, _size) in use; room after
        self._size = 0
        self._row: dict[str, int] = {}  # id -> its row in ``_buffer``
        self._staged: dict[str, np.ndarray] = {}  # id -> vector computed ahead of ``sync``
        self.embedded_total = 0  # how many texts this object has sent to the embedder (tests, benchmarks)
        self.loaded_total = 0  # how many vectors it took from the store
        self.compactions = 0  # tests, benchmarks
        self._lock = asyncio.Lock()
        self._latest: IndexRows | None = None  # what the latest sync returned, if its ids were distinct

    @property
    def matrix(self) -> np.ndarray:
        """The rows in use (dead rows included)."""
        return self._buffer[:self._size]

    def has(self, vid: str) -> bool:
        return vid in self._row or vid in self._staged

    def stage(self, ids: list[str], vectors: np.ndarray) -> None:
        """Vectors for ids the next :meth:`sync` may ask for (an id's text must be the one ``sync`` would embed)."""
        for vid, vector in zip(ids, unit_rows(np.asarray(vectors, dtype=np.float32))):
            if vid not in self._row:
                self._staged[vid] = vector

    async def sync(self, ids: list[str], texts: Sequence[str], embed: EmbedFunc,
                   carried: tuple[IndexRows, np.ndarray] | None = None) -> IndexRows:
        """Make the index hold exactly ``ids`` (texts in the same order); return the row of each. Staged vectors
        are used and then forgotten, whether ``ids`` wanted them or not.

        ``carried``: ``(previous, sources)``, ``previous`` what an earlier sync returned and ``sources[i]`` the
        position in that sync's ids of ``ids[i]`` (the same id), or -1. When ``previous`` is this index's latest
        sync, those ids keep their rows without a lookup each: looking up 21,000 names scattered over a large heap
        was 30 ms of a deletion's first query."""
        async with self._lock:
            located = self._locate_carried(ids, *carried) if carried is not None else None
            if located is not None:
                unique, rows, dropped = ids, *located
            else:
                unique = list(dict.fromkeys(ids)) if len(set(ids)) != len(ids) else ids
                rows = np.fromiter(map(self._row.get, unique, repeat(-1)), dtype=np.int64, count=len(unique))
                dropped = []
                if np.count_nonzero(rows >= 0) != len(self._row):  # some id the index holds is no longer wanted
                    dropped = list(self._row.keys() - set(unique))
            absent = np.flatnonzero(rows < 0).tolist()
            missing = [unique[i] for i in absent]
            found, self._staged = {v: self._staged[v] for v in missing if v in self._staged}, {}
            new = dict(found)  # vectors the store does not hold yet
            if self.store is not None and len(found) < len(missing):
                stored = await self.store.get(self.name, [v for v in missing if v not in found])
                self.loaded_total += len(stored)
                found.update(stored)
            todo = [vid for vid in missing if vid not in found]
            if todo:
                # ``texts`` may compute each text on demand (facts.py): only the ones to embed are asked for.
                if unique is ids:  # no repeats: a position in ``unique`` is one in ``ids``
                    at = dict(zip(missing, absent))
                else:
                    wanted, at = set(todo), {}
                    for i, vid in enumerate(ids):
                        if vid in wanted:
                            at.setdefault(vid, i)
                vectors = unit_rows(np.asarray(await embed([texts[at[v]] for v in todo]), dtype=np.float32))
                self.embedded_total += len(todo)
                found.update(zip(todo, vectors))
                new.update(zip(todo, vectors))
            for vid in dropped:
                del self._row[vid]
            if missing:
                rows[absent] = self._append([found[v] for v in missing])
                self._row.update(zip(missing, rows[absent].tolist()))
            if self._size - len(self._row) > self._size // DEAD_SHARE:
                rows = self._compact(unique, rows)
            self.ids = unique
            if missing or dropped:
                if self.store is not None:
                    await self.store.update(self.name, new, dropped)
                logger.info("hipporag: index %s now holds %d vectors (%d new, %d embedded)", self.name,
                            len(self.ids), len(missing), len(todo))
            if unique is not ids:
                rows = np.fromiter(map(self._row.__getitem__, ids), dtype=np.int64, count=len(ids))
            result = IndexRows(self.matrix, rows)
            self._latest = result if unique is ids else None  # rows aligned with ``self.ids``: a next carried sync
            return result

    def _locate_carried(self, ids: list[str], previous: IndexRows, sources: np.ndarray
                        ) -> tuple[np.ndarray, list[str]] | None:
        """(row of each id or -1, ids held but no longer wanted) from the rows of ``previous``; None unless
        ``previous`` is this index's latest sync and every id of ``ids`` is distinct (then :meth:`sync` looks up
        each id)."""
        sources = np.asarray(sources, dtype=np.int64)
        if previous is not self._latest or len(sources) != len(ids):
            return None
        rows = np.full(len(ids), -1, dtype=np.int64)
        carried = sources >= 0
        rows[carried] = previous.rows[sources[carried]]
        rest = np.flatnonzero(~carried)
        rest_ids = [ids[i] for i in rest.tolist()]
        rows[rest] = np.fromiter(map(self._row.get, rest_ids, repeat(-1)), dtype=np.int64, count=len(rest_ids))
        held = rows[rows >= 0]
        wanted = np.zeros(self._size, dtype=bool)
        wanted[held] = True
        if np.count_nonzero(wanted) != len(held) or len(set(rest_ids)) != len(rest_ids):
            return None  # an id twice: the lookup path dedupes
        return rows, [self.ids[j] for j in np.flatnonzero(~wanted[previous.rows]).tolist()]

    def _append(self, vectors: list[np.ndarray]) -> np.ndarray:
        """Write ``vectors`` after the rows in use (a larger buffer when full: the old one stays with its views)."""
        count, dim = len(vectors), vectors[0].shape[-1]
        if self._size + count > len(self._buffer) or self._buffer.shape[1] != dim:
            buffer = np.empty((max(self._size + count, len(self._buffer) * 5 // 4 + 64), dim), np.float32,
                              order=self._order)
            if self._size:
                buffer[:self._size] = self._buffer[:self._size]
            self._buffer = buffer
        np.stack(vectors, out=self._buffer[self._size:self._size + count])  # no stacked copy on the way (at open:
        # every stored vector, 200 MB at 9,000 passages)
        self._size += count
        return np.arange(self._size - count, self._size)

    def _compact(self, unique: list[str], rows: np.ndarray) -> np.ndarray:
        """Only the live rows, in the order of ``unique``, in a new buffer (old views keep the old one)."""
        dim = self._buffer.shape[1]
        self._buffer = rows_of(self._buffer, rows) if len(rows) else np.zeros((0, dim), np.float32, order=self._order)
        self._size = len(rows)
        self._row = dict(zip(unique, range(len(unique))))
        self.compactions += 1
        return np.arange(len(rows))
