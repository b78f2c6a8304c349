"""Entity, relation and chunk vectors aligned with a graph snapshot, fetched BY ID (never paired by position).

Vectors come from the vector stores' public ``get_vectors_by_ids`` (every backend implements it); anything missing
(another backend's gaps, a store written by older code) is re-embedded from the same text LightRAG indexes. The
matrices are L2-normalised and cached in ``snapshot.derived``, so a query pays for them once per graph version.
Given the snapshot a new one replaces (``base``), the rows of entities and relations whose data is unchanged
(``snapshot.rows_from``), and of chunks whose id and text are the same, are copied from it; only new or
changed rows are read from the store: a small insert costs its own rows.
"""

from __future__ import annotations

import asyncio
from typing import Callable

import numpy as np
from lightrag.utils import compute_mdhash_id

from .snapshot import GraphSnapshot, rows_from

RELATION_VECTORS = "relation_vectors"  # in ``snapshot.derived``


def entity_vdb_id(name: str) -> str:
    return compute_mdhash_id(name, prefix="ent-")


def relation_vdb_id(src: str, tgt: str) -> str:
    a, b = (tgt, src) if src > tgt else (src, tgt)  # LightRAG stores relations with sorted endpoints
    return compute_mdhash_id(a + b, prefix="rel-")


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


async def vectors_by_id(vdb, ids: list[str], texts: list[str], embedding_func, dim: int,
                        kept: VectorsKept | None = None) -> np.ndarray:
    """Rows for ``ids`` in order; ids the store lacks are embedded from ``texts`` (same order as ids). ``kept``:
    rows already read for the same id and text come from there, and what is read or embedded goes there."""
    out = np.zeros((len(ids), dim), dtype=np.float32)
    held = await kept.get(ids, texts) if kept is not None else {}
    ask = [i for i in range(len(ids)) if i not in held]
    found = await vdb.get_vectors_by_ids([ids[i] for i in ask]) if ask else {}
    missing, new = [], {}
    for i in range(len(ids)):
        vec = held.get(i)
        if vec is None:
            vec = found.get(ids[i])
            if vec is None or len(vec) != dim:
                missing.append(i)
                continue
            new[i] = vec
        out[i] = vec
    if missing:
        embedded = await embedding_func([texts[i] for i in missing])
        out[missing] = np.asarray(embedded, dtype=np.float32)
        new.update((i, out[i]) for i in missing)
    if kept is not None and new:
        await kept.put({i: out[i] for i in new}, ids, texts)
    return unit_rows(out)


class VectorsKept:
    """A vector store's vectors as the views read them, kept in the plugin's vector cache by (id, text): a process
    that opens the index builds the entity and passage views from there instead of reading LightRAG's entity and
    chunk stores, which then stay on disk unless a mode queries them (the entity store's matrix and rows: 281 MB at
    9,239 passages; ``storages/nano.py`` reads a store on first use).
    Keyed by the text the store embeds for the id, so a changed description misses and is read again. Values are
    what ``get_vectors_by_ids`` gave (before :func:`unit_rows`), so the rows are the same either way."""

    def __init__(self, cache, index: str) -> None:
        self.cache, self.index = cache, index

    @staticmethod
    def _key(vid: str, text: str) -> str:
        return f"{vid}\0{text}"

    async def get(self, ids: list[str], texts: list[str]) -> dict[int, np.ndarray]:
        keys = [self._key(vid, text) for vid, text in zip(ids, texts)]
        found = await self.cache.get(self.index, keys)
        return {i: found[key] for i, key in enumerate(keys) if key in found}

    async def put(self, rows: dict[int, np.ndarray], ids: list[str], texts: list[str]) -> None:
        await self.cache.update(self.index, {self._key(ids[i], texts[i]): row for i, row in rows.items()})

    async def forget(self, superseded: list[tuple[str, str]], current: list[tuple[str, str]]) -> None:
        """Drop the copies of ``superseded`` (id, text) pairs (a changed description, a removed entity), except
        those still ``current``: without this the file would keep a record per description an entity ever had."""
        keep = {self._key(vid, text) for vid, text in current}
        dropped = [key for key in (self._key(vid, text) for vid, text in superseded) if key not in keep]
        if dropped:
            await self.cache.update(self.index, {}, dropped)


def matched_rows(keys: list, texts: list[str], base_keys: list, base_texts: list) -> np.ndarray:
    """For each (key, text), the index of the same key with the same text in the base lists, else -1. Matched by key
    first, then the texts compared: hashing the keys (ids) is cheap, hashing every text anew was not."""
    position = dict(zip(base_keys, range(len(base_keys))))
    return np.fromiter((j if j is not None and base_texts[j] == text else -1
                        for j, text in ((position.get(key), text) for key, text in zip(keys, texts))),
                       dtype=np.int64, count=len(keys))


async def vectors_carrying(rag, vdb, sources: np.ndarray, base_rows: np.ndarray | None,
                           item: Callable[[int], tuple[str, str]], absent: np.ndarray | None = None,
                           kept: VectorsKept | None = None,
                           base_item: Callable[[int], tuple[str, str]] | None = None) -> np.ndarray:
    """Unit rows, one per entry of ``sources``: row ``sources[i]`` of ``base_rows`` where it is >= 0, the others
    read from ``vdb`` by id (or embedded), ``item(i) -> (id, text)`` naming them (built for those rows only).
    Entries where ``absent`` (a chunk whose record is gone) get a zero row, neither read nor embedded. ``kept``:
    the copies those reads go through; the copies of base rows no entry carries (``base_item(j) -> (id, text)``:
    changed or gone) are dropped from it."""
    dim = rag.embedding_func.embedding_dim
    keep = sources >= 0 if base_rows is not None else np.zeros(len(sources), dtype=bool)
    absent = np.zeros(len(sources), dtype=bool) if absent is None else np.asarray(absent, dtype=bool)
    # One gather (the rows of missing entries are overwritten below): a zeroed matrix filled through the mask
    # passed over the memory twice.
    out = base_rows[np.maximum(sources, 0)] if keep.any() else np.zeros((len(sources), dim), dtype=np.float32)
    out[absent] = 0.0
    missing = np.flatnonzero(~keep & ~absent).tolist()
    ids, texts = zip(*(item(i) for i in missing)) if missing else ((), ())
    if missing:
        out[missing] = await vectors_by_id(vdb, list(ids), list(texts), rag.embedding_func, dim, kept)
    if kept is not None and base_item is not None and base_rows is not None:
        carried = np.zeros(len(base_rows), dtype=bool)
        carried[sources[sources >= 0]] = True
        await kept.forget([base_item(j) for j in np.flatnonzero(~carried).tolist()], list(zip(ids, texts)))
    return out


# the vector cache's indexes of the entity and chunk stores' vectors
ENTITY_VECTORS_KEPT, CHUNK_VECTORS_KEPT = "entity_vectors", "chunk_vectors"


def kept_vectors(rag, vdb, index: str) -> VectorsKept | None:
    """``vdb``'s vectors kept in the plugin's vector cache under ``index``, when that store is a file read on first
    use (the other backends hold nothing in this process: nothing to spare)."""
    # the instance's plugin state, as ``plugin_state.find_plugin_state`` finds it (not imported: vectors.py sits below)
    owner = getattr(rag.__dict__.get("prism_seam"), "plugin_state", None)
    # ``client_read``: a store that reads its file on first use (``storages/nano.py``)
    if owner is None or not owner.ready or not hasattr(type(vdb), "client_read"):
        return None
    return VectorsKept(owner.vectors, index)


def _unchanged(snapshot: GraphSnapshot, base: GraphSnapshot | None, name: str, which: int) -> tuple:
    """(sources, base rows) for ``snapshot.derived[name]``: nodes (``which`` 0) or edges (1) of ``base`` with equal
    data (:func:`rows_from`), or nothing to copy."""
    size = snapshot.num_nodes if which == 0 else snapshot.num_edges
    if base is None or name not in base.derived:
        return np.full(size, -1, dtype=np.int64), None
    return rows_from(snapshot, base)[which], base.derived[name]


async def entity_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(N, d) entity vectors aligned with ``snapshot.node_ids`` (rows of unchanged entities carried from ``base``)."""
    if "entity_vectors" not in snapshot.derived:
        def entity(snap: GraphSnapshot, i: int) -> tuple[str, str]:
            name = snap.node_ids[i]
            return entity_vdb_id(name), f"{name}\n{snap.node_data[i].get('description', '')}"

        snapshot.derived["entity_vectors"] = await vectors_carrying(
            rag, rag.entities_vdb, *_unchanged(snapshot, base, "entity_vectors", 0), lambda i: entity(snapshot, i),
            kept=kept_vectors(rag, rag.entities_vdb, ENTITY_VECTORS_KEPT),
            base_item=(lambda j: entity(base, j)) if base is not None else None)
    return snapshot.derived["entity_vectors"]


async def relation_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(E, d) relation vectors aligned with the snapshot's edges (unchanged relations carried from ``base``)."""
    if RELATION_VECTORS not in snapshot.derived:
        def item(e: int) -> tuple[str, str]:
            (src, tgt), data = snapshot.edge_key(e), snapshot.edge_data[e]
            return relation_vdb_id(src, tgt), f"{data.get('keywords', '')}\t{src}\n{tgt}\n{data.get('description', '')}"

        snapshot.derived[RELATION_VECTORS] = await vectors_carrying(
            rag, rag.relationships_vdb, *_unchanged(snapshot, base, RELATION_VECTORS, 1), item)
    return snapshot.derived[RELATION_VECTORS]


async def chunk_records(rag, ids: list[str], fields: tuple[str, ...]) -> list[dict | None]:
    """``fields`` of each chunk's record in ``text_chunks`` (None: it lacks the chunk); from the JSON store's memory
    without LightRAG's deep copies when it can (``PrismJsonKVStorage.read_fields``)."""
    if not ids:
        return []
    fast_read = getattr(rag.text_chunks, "read_fields", None)
    return await fast_read(ids, fields) if fast_read is not None else await rag.text_chunks.get_by_ids(ids)


async def chunk_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(C, d) vectors of the snapshot's chunks (``snapshot.chunk_ids`` order), cached on the snapshot. Carried over
    by id and text: a document deleted and inserted again under its id gives new content the same chunk ids."""
    if "chunk_vectors" not in snapshot.derived:
        ids = snapshot.chunk_ids
        records = await chunk_records(rag, ids, ("content",))
        texts = [(r or {}).get("content", "") for r in records]
        base_rows = base.derived.get("chunk_vectors") if base is not None else None
        sources = matched_rows(ids, texts, base.chunk_ids, base.derived["chunk_texts"]) if base_rows is not None \
            else np.full(len(ids), -1, dtype=np.int64)
        # LightRAG's deletion can leave an entity naming a deleted chunk (no extraction cache to rebuild it from)
        gone = np.fromiter((not r for r in records), dtype=bool, count=len(records))
        snapshot.derived["chunk_vectors"] = await vectors_carrying(
            rag, rag.chunks_vdb, sources, base_rows, lambda i: (ids[i], texts[i]), absent=gone,
            kept=kept_vectors(rag, rag.chunks_vdb, CHUNK_VECTORS_KEPT),
            base_item=(lambda j: (base.chunk_ids[j], base.derived["chunk_texts"][j])) if base_rows is not None
            else None)
        snapshot.derived["chunk_texts"] = texts
    return snapshot.derived["chunk_vectors"]


def adopt_chunk_matrix(snapshot: GraphSnapshot, vectors: np.ndarray, texts: list[str]) -> None:
    """Give ``snapshot`` its chunk matrix from rows computed with the same store and texts (the hipporag passage view's
    first rows are the snapshot's chunks): no second read of the records."""
    snapshot.derived.setdefault("chunk_vectors", vectors)
    snapshot.derived.setdefault("chunk_texts", texts)


async def entity_and_relation_matrices(rag, snapshot: GraphSnapshot) -> tuple[np.ndarray, np.ndarray]:
    return await asyncio.gather(entity_matrix(rag, snapshot), relation_matrix(rag, snapshot))
