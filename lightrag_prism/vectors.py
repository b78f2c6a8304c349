"""Entity, relation and chunk vectors aligned with a graph snapshot, fetched BY ID (never paired by position).

Vectors come from the vector stores' public ``get_vectors_by_ids`` (every backend implements it); anything missing
(another backend's gaps, a store written by older code) is re-embedded from the same text LightRAG indexes. The
matrices are L2-normalised and cached in ``snapshot.derived``, so a query pays for them once per graph version.
Given the snapshot a new one replaces (``base``), rows whose embedded text is unchanged (chunks: whose id is) are
copied from it, and only new or changed rows are read from the store: a small insert costs its own rows.
"""

from __future__ import annotations

import asyncio

import numpy as np
from lightrag.utils import compute_mdhash_id

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


def carried_rows(keys: list[str], base_keys: list[str] | None, base_rows: np.ndarray | None,
                 dim: int) -> tuple[np.ndarray, list[int]]:
    """A (len(keys), dim) matrix with the rows of ``base_rows`` whose key is in ``base_keys`` copied in, and the
    positions of the keys it lacks (all of them without a base)."""
    out = np.zeros((len(keys), dim), dtype=np.float32)
    if base_rows is None or base_keys is None:
        return out, list(range(len(keys)))
    position = {key: i for i, key in enumerate(base_keys)}
    found = [(i, position[key]) for i, key in enumerate(keys) if key in position]
    if found:
        rows, sources = (list(x) for x in zip(*found))
        out[rows] = base_rows[sources]
    return out, [i for i, key in enumerate(keys) if key not in position]


async def vectors_carrying(rag, vdb, ids: list[str], texts: list[str], base_texts: list | None = None,
                           base_rows: np.ndarray | None = None) -> np.ndarray:
    """Unit rows for ``ids`` (their embedded ``texts`` aligned): a row whose text ``base_texts`` has is copied from
    ``base_rows``; the rest are read by id from ``vdb`` (or embedded)."""
    dim = rag.embedding_func.embedding_dim
    out, missing = carried_rows(texts, base_texts, base_rows, dim)
    if missing:
        out[missing] = await vectors_by_id(vdb, [ids[i] for i in missing], [texts[i] for i in missing],
                                           rag.embedding_func, dim)
    return out


async def _aligned(rag, name: str, snapshot: GraphSnapshot, base: GraphSnapshot | None, vdb, ids: list[str],
                   texts: list[str]) -> np.ndarray:
    """``snapshot.derived[name]``, its rows carried over from ``base`` by embedded text where they can be."""
    if name not in snapshot.derived:
        carried = (base.derived.get(f"{name}_texts"), base.derived.get(name)) if base is not None else (None, None)
        snapshot.derived[name] = await vectors_carrying(rag, vdb, ids, texts, *carried)
        snapshot.derived[f"{name}_texts"] = texts
    return snapshot.derived[name]


async def entity_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(N, d) entity vectors aligned with ``snapshot.node_ids`` (rows of unchanged entities carried from ``base``)."""
    if "entity_vectors" in snapshot.derived:
        return snapshot.derived["entity_vectors"]
    ids = [entity_vdb_id(n) for n in snapshot.node_ids]
    texts = [f"{n}\n{d.get('description', '')}" for n, d in zip(snapshot.node_ids, snapshot.node_data)]
    return await _aligned(rag, "entity_vectors", snapshot, base, rag.entities_vdb, ids, texts)


async def relation_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(E, d) relation vectors aligned with the snapshot's edges (unchanged relations carried from ``base``)."""
    if "relation_vectors" in snapshot.derived:
        return snapshot.derived["relation_vectors"]
    keys = [snapshot.edge_key(e) for e in range(snapshot.num_edges)]
    ids = [relation_vdb_id(s, t) for s, t in keys]
    texts = [f"{d.get('keywords', '')}\t{s}\n{t}\n{d.get('description', '')}"
             for (s, t), d in zip(keys, snapshot.edge_data)]
    return await _aligned(rag, "relation_vectors", snapshot, base, rag.relationships_vdb, ids, texts)


async def chunk_matrix(rag, snapshot: GraphSnapshot, base: GraphSnapshot | None = None) -> np.ndarray:
    """(C, d) vectors of the snapshot's chunks (``snapshot.chunk_ids`` order), cached on the snapshot. Carried over
    by text, not id: a document deleted and inserted again under its id gives new content the same chunk ids."""
    if "chunk_vectors" not in snapshot.derived:
        records = await rag.text_chunks.get_by_ids(snapshot.chunk_ids) if snapshot.chunk_ids else []
        texts = [(r or {}).get("content", "") for r in records]
        await _aligned(rag, "chunk_vectors", snapshot, base, rag.chunks_vdb, snapshot.chunk_ids, texts)
    return snapshot.derived["chunk_vectors"]


async def entity_and_relation_matrices(rag, snapshot: GraphSnapshot) -> tuple[np.ndarray, np.ndarray]:
    return await asyncio.gather(entity_matrix(rag, snapshot), relation_matrix(rag, snapshot))
