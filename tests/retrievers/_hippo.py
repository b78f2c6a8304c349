"""Small fakes for the hipporag graph-view tests: storages with just the public methods the view calls."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from lightrag_prism.snapshot import GRAPH_FIELD_SEP, build_snapshot
from tests.scripted_server import hashed_bow

DIM = 256


class HashEmbedder:
    """A cheap deterministic embedder (hashed bag of words) that counts the texts it embedded."""

    embedding_dim = DIM

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, texts, **_):
        self.texts.extend(texts)
        return np.stack([hashed_bow(t, DIM) for t in texts])


class FakeKV:
    def __init__(self, records: dict[str, dict]) -> None:
        self.records = records

    async def get_by_ids(self, ids):
        return [self.records.get(i) for i in ids]


class FakeVDB:
    async def get_vectors_by_ids(self, ids):
        return {}  # everything is re-embedded from text


class FakeDocStatus:
    def __init__(self, chunks_lists: dict[str, list[str]]) -> None:
        self.docs = {doc: SimpleNamespace(chunks_list=chunks) for doc, chunks in chunks_lists.items()}

    async def get_docs_by_statuses(self, statuses, strict=False):
        return self.docs


def fake_rag(working_dir, chunks: dict[str, str], docs: dict[str, list[str]] | None = None):
    records = {cid: {"content": text, "file_path": f"{cid}.txt"} for cid, text in chunks.items()}
    return SimpleNamespace(working_dir=str(working_dir), workspace="", embedding_func=HashEmbedder(),
                           text_chunks=FakeKV(records), chunks_vdb=FakeVDB(), doc_status=FakeDocStatus(docs or {}))


def snapshot_of(entities: dict[str, list[str]], relations: list[tuple[str, str, str, float, list[str]]],
                version: int = 0):
    """``entities``: name -> source chunks; ``relations``: (src, tgt, keywords, weight, source chunks)."""
    nodes = [{"id": name, "entity_id": name, "description": name, "source_id": GRAPH_FIELD_SEP.join(src)}
             for name, src in entities.items()]
    edges = [{"source": s, "target": t, "keywords": kw, "description": f"{s} {kw} {t}", "weight": w,
              "source_id": GRAPH_FIELD_SEP.join(src)} for s, t, kw, w, src in relations]
    return build_snapshot(nodes, edges, version)
