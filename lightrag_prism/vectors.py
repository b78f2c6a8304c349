"""Entity, relation and chunk vectors aligned with a graph snapshot, fetched BY ID (never paired by position).

Vectors come from the vector stores' public ``get_vectors_by_ids`` (every backend implements it); anything missing
(another backend's gaps, a store written by older code) is re-embedded from the same text LightRAG indexes. The
matrices are L2-normalised and cached in ``snapshot.derived``, so a query pays for them once per graph version.
Given the snapshot a new one replaces (``base``), rows whose key (entity name, endpoint pair, chunk id) and embedded
text are unchanged are copied from it, and only new or changed rows are read from the store: a small insert costs
its own rows.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import numpy as np
from lightrag.utils import compute_mdhash_id

from .patches import file_reads
from .snapshot import GraphSnapshot


def entity_vdb_id(name: str) -> str:
    return compute_mdhash_id(name, prefix="ent-")


def relation_vdb_id(src: str, tgt: str) -> str:
    a, b = (tgt, src) if src > tgt else (src, tgt)  # LightRAG stores relations with sorted endpoints
    return compute_mdhash_id(a + b, prefix="rel-")


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)


async def vectors_by_id(vdb, ids: list[str], texts: list[str], embedding_func, dim: int) -> np.ndarray:
    """Rows for ``ids`` in order; ids the store lacks are embedded from ``texts`` (same order as ids)."""
    found = await vdb.get_vectors_by_ids(ids) if ids else {}
    out = np.zeros((len(ids), dim), dtype=np.float32)
    missing = []
    for i, vid in enumerate(ids):
        vec = found.get(vid)
        if vec is None or len(vec) != dim:
            missing.append(i)
        else:
            out[i] = vec
    if missing:
        embedded = await embedding_func([texts[i] for i in missing])
        out[missing] = np.asarray(embedded, dtype=np.float32)
    return unit_rows(out)


def carried_rows(keys: list, texts: list[str], base: tuple[list, list, np.ndarray] | None,
                 dim: int) -> tuple[np.ndarray, list[int]]:
    """A (len(keys), dim) matrix with the rows of ``base = (keys, texts, rows)`` whose key and text are unchanged
    copied in, and the positions it lacks (all of them without a base). Matched by key first, then the texts
    compared: hashing the keys (names, id pairs) is cheap, hashing every text anew was not."""
    out = np.zeros((len(keys), dim), dtype=np.float32)
    if base is None:
        return out, list(range(len(keys)))
    base_keys, base_texts, base_rows = base
    position = dict(zip(base_keys, range(len(base_keys))))
    rows, sources, missing = [], [], []
    for i, (key, text) in enumerate(zip(keys, texts)):
        j = position.get(key)
        if j is not None and base_texts[j] == text:
            rows.append(i)
            sources.append(j)
        else:
            missing.append(i)
    if rows:
        out[rows] = base_rows[sources]
    return out, missing


async def vectors_carrying(rag, vdb, keys: list, texts: list[str], vdb_id: Callable[[Any], str],
                           base: tuple[list, list, np.ndarray] | None = None) -> np.ndarray:
    """Unit rows for ``keys`` (their embedded ``texts`` aligned): a row ``base = (keys, texts, rows)`` has for the
    same key and text is copied; the rest are read from ``vdb`` by id (``vdb_id(key)``), or embedded."""
    dim = rag.embedding_func.embedding_dim
    out, missing = carried_rows(keys, texts, base, dim)
    if missing:
        out[missing] = await vectors_by_id(vdb, [vdb_id(keys[i]) for i in missing], [texts[i] for i in missing],
                                           rag.embedding_func, dim)
    return out


async def _aligned(rag, name: str, snapshot: GraphSnapshot, base: GraphSnapshot | None, vdb, keys: list,
                   texts: list[str], vdb_id: Callable[[Any], str]) -> np.ndarray:
    """``snapshot.derived[name]``, its rows carried over from ``base`` where key and text are unchanged."""
    if name not in snapshot.derived:
        carried = None
        if base is not None and name in base.derived:
            carried = (base.derived[f"{name}_keys"], base.derived[f"{name}_texts"], base.derived[name])
        snapshot.derived[name] = await vectors_carrying(rag, vdb, keys, texts, vdb_id, carried)
        snapshot.derived[f"{name}_keys"], snapshot.derived[f"{name}_texts"] = keys, texts
    return snapshot.derived[name]


async def entity_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(N, d) entity vectors aligned with ``snapshot.node_ids`` (rows of unchanged entities carried from ``base``)."""
    if "entity_vectors" in snapshot.derived:
        return snapshot.derived["entity_vectors"]
    texts = [f"{n}\n{d.get('description', '')}" for n, d in zip(snapshot.node_ids, snapshot.node_data)]
    return await _aligned(rag, "entity_vectors", snapshot, base, rag.entities_vdb, snapshot.node_ids, texts,
                          entity_vdb_id)


async def relation_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(E, d) relation vectors aligned with the snapshot's edges (unchanged relations carried from ``base``)."""
    if "relation_vectors" in snapshot.derived:
        return snapshot.derived["relation_vectors"]
    keys = [snapshot.edge_key(e) for e in range(snapshot.num_edges)]
    texts = [f"{d.get('keywords', '')}\t{s}\n{t}\n{d.get('description', '')}"
             for (s, t), d in zip(keys, snapshot.edge_data)]
    return await _aligned(rag, "relation_vectors", snapshot, base, rag.relationships_vdb, keys, texts,
                          lambda key: relation_vdb_id(*key))


async def chunk_records(rag, ids: list[str], fields: tuple[str, ...]) -> list[dict | None]:
    """``fields`` of each chunk's record in ``text_chunks`` (None: it lacks the chunk); from the JSON store's memory
    without LightRAG's deep copies when it can (``patches/file_reads.py``)."""
    if not ids:
        return []
    records = file_reads.record_fields(rag.text_chunks, ids, fields)
    return records if records is not None else await rag.text_chunks.get_by_ids(ids)


async def chunk_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(C, d) vectors of the snapshot's chunks (``snapshot.chunk_ids`` order), cached on the snapshot. Carried over
    by id and text: a document deleted and inserted again under its id gives new content the same chunk ids."""
    if "chunk_vectors" not in snapshot.derived:
        texts = [(r or {}).get("content", "") for r in await chunk_records(rag, snapshot.chunk_ids, ("content",))]
        await _aligned(rag, "chunk_vectors", snapshot, base, rag.chunks_vdb, snapshot.chunk_ids, texts, str)
    return snapshot.derived["chunk_vectors"]


async def entity_and_relation_matrices(rag, snapshot: GraphSnapshot) -> tuple[np.ndarray, np.ndarray]:
    return await asyncio.gather(entity_matrix(rag, snapshot), relation_matrix(rag, snapshot))
