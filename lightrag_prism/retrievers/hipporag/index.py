"""A small persistent embedding index for the ``hipporag`` mode: id -> L2-normalised vector.

Used for the fact index (one vector per fact text) and the entity-name index (phrase embeddings for synonym edges).
The matrix lives in memory; the vectors persist in the instance's ``prism_vectors`` KV namespace
(:class:`~lightrag_prism.plugin_state.VectorCache`), so a restart, or a second instance on the same storages,
re-embeds nothing. :meth:`EmbeddingIndex.sync` makes the index hold exactly the given ids: it takes the ids it
does not have from the stage, then from the store, embeds only the rest and stores them. Vectors computed ahead of
time (during an insert, see ``insert/prefetch.py``) are handed in with :meth:`EmbeddingIndex.stage`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Sequence

import numpy as np

from ...plugin_state import VectorCache
from ...vectors import unit_rows

logger = logging.getLogger(__name__)

EmbedFunc = Callable[[list[str]], Awaitable[np.ndarray]]


class EmbeddingIndex:
    """Vectors by id in memory, persisted in a :class:`VectorCache` (None: memory only)."""

    def __init__(self, name: str, store: VectorCache | None) -> None:
        self.name, self.store = name, store
        self.ids: list[str] = []
        self.matrix = np.zeros((0, 0), np.float32)
        self._row: dict[str, int] = {}
        self._staged: dict[str, np.ndarray] = {}  # id -> vector computed ahead of ``sync``
        self.embedded_total = 0  # how many texts this object has sent to the embedder (tests, benchmarks)
        self.loaded_total = 0  # how many vectors it took from the store
        self._lock = asyncio.Lock()

    def has(self, vid: str) -> bool:
        return vid in self._row or vid in self._staged

    def stage(self, ids: list[str], vectors: np.ndarray) -> None:
        """Vectors for ids the next :meth:`sync` may ask for (an id's text must be the one ``sync`` would embed)."""
        for vid, vector in zip(ids, unit_rows(np.asarray(vectors, dtype=np.float32))):
            if vid not in self._row:
                self._staged[vid] = vector

    async def sync(self, ids: list[str], texts: Sequence[str], embed: EmbedFunc) -> np.ndarray:
        """Make the index hold exactly ``ids`` (texts in the same order); return their rows in that order.
        Staged vectors are used and then forgotten, whether ``ids`` wanted them or not. The matrix is rebuilt in
        the order asked, in one gather, and returned as it is (repeated ids: the order of first appearance)."""
        async with self._lock:
            unique = list(dict.fromkeys(ids)) if len(set(ids)) != len(ids) else ids
            rows = np.fromiter((self._row.get(vid, -1) for vid in unique), dtype=np.int64, count=len(unique))
            absent = np.flatnonzero(rows < 0).tolist()
            missing = [unique[i] for i in absent]
            dropped = []
            if len(unique) - len(absent) != len(self.ids):  # some id the index holds is no longer wanted
                wanted = set(unique)
                dropped = [vid for vid in self.ids if vid not in wanted]
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
            if missing or dropped or unique != self.ids:
                matrix = self.matrix[np.maximum(rows, 0)] if len(self.ids) else \
                    np.zeros((len(unique), next(iter(found.values())).shape[-1] if found else 0), np.float32)
                if missing:
                    matrix[absent] = np.stack([found[v] for v in missing])
                self.ids, self.matrix = unique, matrix
                self._row = {vid: i for i, vid in enumerate(unique)}
            if missing or dropped:
                if self.store is not None:
                    await self.store.update(self.name, new, dropped)
                logger.info("hipporag: index %s now holds %d vectors (%d new, %d embedded)", self.name,
                            len(self.ids), len(missing), len(todo))
            if unique is ids:
                return self.matrix
            return self.matrix[[self._row[v] for v in ids]]
