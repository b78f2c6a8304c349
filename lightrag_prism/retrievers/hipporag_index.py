"""A small persistent embedding index for the ``hipporag`` mode: id -> L2-normalised vector.

Used for the fact index (one vector per fact text) and the entity-name index (phrase embeddings for synonym edges).
Stored in the LightRAG working dir as ``<name>.npz`` (the matrix) + ``<name>.json`` (ids in row order), so a restart
re-embeds nothing. :meth:`EmbeddingIndex.sync` makes the index hold exactly the given ids: it embeds only the ids it
does not have yet, drops the ones no longer wanted and saves when something changed. Vectors computed ahead of
time (during an insert, see ``insert/prefetch.py``) are handed in with :meth:`EmbeddingIndex.stage`; ``sync`` takes
them instead of embedding.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Awaitable, Callable

import numpy as np

from ..vectors import unit_rows

logger = logging.getLogger(__name__)

EmbedFunc = Callable[[list[str]], Awaitable[np.ndarray]]


def storage_dir(rag) -> str:
    """The instance's storage folder (LightRAG's JSON storages use ``working_dir/workspace`` when set)."""
    workspace = getattr(rag, "workspace", "") or ""
    return os.path.join(rag.working_dir, workspace) if workspace else rag.working_dir


class EmbeddingIndex:
    """Vectors by id, persisted as npz + json; ``sync`` embeds only what is new."""

    def __init__(self, directory: str, name: str) -> None:
        self.npz_path = os.path.join(directory, f"{name}.npz")
        self.ids_path = os.path.join(directory, f"{name}.json")
        self.ids: list[str] = []
        self.matrix = np.zeros((0, 0), np.float32)
        self._row: dict[str, int] = {}
        self._staged: dict[str, np.ndarray] = {}  # id -> vector computed ahead of ``sync``
        self.embedded_total = 0  # how many texts this object has sent to the embedder (tests, benchmarks)
        self._lock = asyncio.Lock()
        self._load()

    def _load(self) -> None:
        if not (os.path.exists(self.npz_path) and os.path.exists(self.ids_path)):
            return
        try:
            with open(self.ids_path, encoding="utf-8") as handle:
                ids = json.load(handle)
            matrix = np.load(self.npz_path)["vectors"]
        except (OSError, ValueError, KeyError) as exc:  # a damaged index is rebuilt, not fatal
            logger.warning("hipporag: ignoring unreadable index %s (%s)", self.npz_path, exc)
            return
        if isinstance(ids, list) and matrix.ndim == 2 and len(ids) == matrix.shape[0]:
            self.ids, self.matrix = [str(i) for i in ids], matrix.astype(np.float32)
            self._row = {vid: i for i, vid in enumerate(self.ids)}

    def _save(self) -> None:
        os.makedirs(os.path.dirname(self.npz_path), exist_ok=True)
        np.savez(self.npz_path, vectors=self.matrix)
        with open(self.ids_path, "w", encoding="utf-8") as handle:
            json.dump(self.ids, handle, ensure_ascii=False)

    def has(self, vid: str) -> bool:
        return vid in self._row or vid in self._staged

    def stage(self, ids: list[str], vectors: np.ndarray) -> None:
        """Vectors for ids the next :meth:`sync` may ask for (an id's text must be the one ``sync`` would embed)."""
        for vid, vector in zip(ids, unit_rows(np.asarray(vectors, dtype=np.float32))):
            if vid not in self._row:
                self._staged[vid] = vector

    async def sync(self, ids: list[str], texts: list[str], embed: EmbedFunc) -> np.ndarray:
        """Make the index hold exactly ``ids`` (texts in the same order); return their rows in that order.
        Staged vectors are used and then forgotten, whether ``ids`` wanted them or not."""
        async with self._lock:
            wanted = dict(zip(ids, texts))
            missing = [vid for vid in wanted if vid not in self._row]
            changed = bool(missing) or len(wanted) != len(self._row)
            kept = [vid for vid in self.ids if vid in wanted]
            blocks = [self.matrix[[self._row[v] for v in kept]]] if kept else []
            staged, self._staged = self._staged, {}
            ready = [vid for vid in missing if vid in staged]
            todo = [vid for vid in missing if vid not in staged]
            if ready:
                blocks.append(np.stack([staged[v] for v in ready]))
            if todo:
                vectors = unit_rows(np.asarray(await embed([wanted[v] for v in todo]), dtype=np.float32))
                self.embedded_total += len(todo)
                blocks.append(vectors)
            missing = ready + todo
            if changed:
                self.ids = kept + missing
                self.matrix = np.concatenate(blocks) if blocks else np.zeros((0, self.matrix.shape[-1]), np.float32)
                self._row = {vid: i for i, vid in enumerate(self.ids)}
                self._save()
                logger.info("hipporag: index %s now holds %d vectors (%d new)", os.path.basename(self.npz_path),
                            len(self.ids), len(missing))
            if not ids:
                return np.zeros((0, self.matrix.shape[-1] if self.matrix.ndim == 2 else 0), np.float32)
            return self.matrix[[self._row[v] for v in ids]]
