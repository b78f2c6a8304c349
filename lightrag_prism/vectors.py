"""Entity, relation and chunk vectors aligned with a graph snapshot, fetched BY ID (never paired by position).

Vectors come from the vector stores' public ``get_vectors_by_ids`` (every backend implements it); anything missing
(another backend's gaps, a store written by older code) is re-embedded from the same text LightRAG indexes. The
matrices are L2-normalised and cached in ``snapshot.derived``, so a query pays for them once per graph version.
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


async def entity_matrix(rag, snapshot: GraphSnapshot) -> np.ndarray:
    """(N, d) entity vectors aligned with ``snapshot.node_ids``."""
    if "entity_vectors" not in snapshot.derived:
        ids = [entity_vdb_id(n) for n in snapshot.node_ids]
        texts = [f"{n}\n{d.get('description', '')}" for n, d in zip(snapshot.node_ids, snapshot.node_data)]
        snapshot.derived["entity_vectors"] = await vectors_by_id(
            rag.entities_vdb, ids, texts, rag.embedding_func, rag.embedding_func.embedding_dim)
    return snapshot.derived["entity_vectors"]


async def relation_matrix(rag, snapshot: GraphSnapshot) -> np.ndarray:
    """(E, d) relation vectors aligned with the snapshot's edges."""
    if "relation_vectors" not in snapshot.derived:
        keys = [snapshot.edge_key(e) for e in range(snapshot.num_edges)]
        ids = [relation_vdb_id(s, t) for s, t in keys]
        texts = [f"{d.get('keywords', '')}\t{s}\n{t}\n{d.get('description', '')}"
                 for (s, t), d in zip(keys, snapshot.edge_data)]
        snapshot.derived["relation_vectors"] = await vectors_by_id(
            rag.relationships_vdb, ids, texts, rag.embedding_func, rag.embedding_func.embedding_dim)
    return snapshot.derived["relation_vectors"]


async def chunk_vectors(rag, chunk_ids: list[str]) -> np.ndarray:
    """Vectors of the given chunks (by id; re-embedded from text_chunks if the store lacks them)."""
    if not chunk_ids:
        return np.zeros((0, rag.embedding_func.embedding_dim), np.float32)
    records = await rag.text_chunks.get_by_ids(chunk_ids)
    texts = [(r or {}).get("content", "") for r in records]
    return await vectors_by_id(rag.chunks_vdb, chunk_ids, texts, rag.embedding_func, rag.embedding_func.embedding_dim)


async def chunk_matrix(rag, snapshot: GraphSnapshot) -> np.ndarray:
    """(C, d) vectors of the snapshot's chunks (``snapshot.chunk_ids`` order), cached on the snapshot."""
    if "chunk_vectors" not in snapshot.derived:
        snapshot.derived["chunk_vectors"] = await chunk_vectors(rag, snapshot.chunk_ids)
    return snapshot.derived["chunk_vectors"]


async def entity_and_relation_matrices(rag, snapshot: GraphSnapshot) -> tuple[np.ndarray, np.ndarray]:
    return await asyncio.gather(entity_matrix(rag, snapshot), relation_matrix(rag, snapshot))
