"""Write the MuSiQue OpenIE graph straight into a PrismRAG's storages (public storage APIs only, no LLM).

Faster than replaying the triples through LightRAG's insert pipeline (``eval.index``) on a small CPU: every text is
embedded once, in large batches, and cached on disk. One chunk per passage (chunk id = HippoRAG passage id);
entity = OpenIE phrase (descriptions = its facts), relation = subject/object pair (weight = number of triples,
keywords = predicates); ``source_id`` lists every passage a node or edge comes from, as LightRAG stores it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from lightrag.utils import EmbeddingFunc

from lightrag_prism.backends.local_embedder import EMBEDDING_DIM, MODEL_NAME, encode_texts
from lightrag_prism.snapshot import GRAPH_FIELD_SEP
from lightrag_prism.vectors import entity_vdb_id, relation_vdb_id

logger = logging.getLogger("bench")
MAX_FACTS = 12
VDB_FACTS = 2  # facts in the embedded text: keeps MiniLM fast on a small CPU (the graph keeps MAX_FACTS)


def _key(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """MiniLM with a text -> vector cache (npz on disk); ``warm(texts)`` embeds the missing ones in bulk."""

    def __init__(self, path: Path):
        self.path = path
        self.cache: dict[str, np.ndarray] = {}
        if path.exists():
            data = np.load(path)
            self.cache = dict(zip(data["keys"].tolist(), data["vectors"]))

    def warm(self, texts: list[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if _key(t) not in self.cache))
        if missing:
            start = time.perf_counter()
            vectors = encode_texts(missing, batch_size=128)
            self.cache.update(zip(map(_key, missing), vectors))
            logger.warning("embedded %d texts in %.0f s", len(missing), time.perf_counter() - start)
            keys = list(self.cache)
            np.savez(self.path, keys=np.asarray(keys), vectors=np.stack([self.cache[k] for k in keys]))

    async def __call__(self, texts: list[str], **_) -> np.ndarray:
        missing = [t for t in texts if _key(t) not in self.cache]
        if missing:
            self.cache.update(zip(map(_key, missing), encode_texts(missing)))
        return np.stack([self.cache[_key(t)] for t in texts])

    def embedding_func(self) -> EmbeddingFunc:
        return EmbeddingFunc(embedding_dim=EMBEDDING_DIM, max_token_size=8192, func=self, model_name=MODEL_NAME)


def _clean(text: str) -> str:
    return " ".join(str(text).replace("<", " ").replace(">", " ").replace("|", " ").split())


def graph_records(dataset):
    """(chunks, nodes, edges) dicts for the storages, from the dataset's OpenIE."""
    chunks = {p.id: {"content": p.content, "tokens": len(p.content.split()), "chunk_order_index": 0,
                     "full_doc_id": p.id, "file_path": f"musique/{p.title}"} for p in dataset.passages}
    facts, sources = defaultdict(list), defaultdict(list)
    pair_keywords, pair_facts, pair_sources = defaultdict(list), defaultdict(list), defaultdict(list)
    pair_count: dict = defaultdict(int)
    for pid, openie in dataset.openie.items():
        for name in map(_clean, openie.entities):
            if name:
                sources[name].append(pid)
        for s, p, o in openie.triples:
            s, p, o = _clean(s), _clean(p), _clean(o)
            if not s or not o or s.lower() == o.lower():
                continue
            fact = f"{s} {p} {o}."
            for name in (s, o):
                facts[name].append(fact)
                sources[name].append(pid)
            pair = tuple(sorted((s, o)))
            pair_keywords[pair].append(p)
            pair_facts[pair].append(fact)
            pair_sources[pair].append(pid)
            pair_count[pair] += 1
    nodes = {n: {"entity_id": n, "entity_type": "concept", "file_path": "musique",
                 "description": " ".join(list(dict.fromkeys(facts.get(n, [])))[:MAX_FACTS]) or n,
                 "source_id": GRAPH_FIELD_SEP.join(dict.fromkeys(src)), "created_at": 0} for n, src in sources.items()}
    edges = {pair: {"weight": float(pair_count[pair]), "description": " ".join(list(dict.fromkeys(pair_facts[pair]))[:MAX_FACTS]),
                    "keywords": ", ".join(dict.fromkeys(pair_keywords[pair])), "file_path": "musique", "created_at": 0,
                    "source_id": GRAPH_FIELD_SEP.join(dict.fromkeys(pair_sources[pair]))} for pair in pair_count}
    return chunks, nodes, edges


def _first_facts(description: str) -> str:
    return ". ".join(description.split(". ")[:VDB_FACTS])


async def write_graph(rag, dataset, embedder: CachedEmbedder) -> None:
    chunks, nodes, edges = graph_records(dataset)
    entity_rows = {entity_vdb_id(n): {"content": f"{n}\n{_first_facts(d['description'])}", "entity_name": n, **d}
                   for n, d in nodes.items()}
    relation_rows = {relation_vdb_id(s, t): {"src_id": s, "tgt_id": t, **d,
                                             "content": f"{d['keywords']}\t{s}\n{t}\n{_first_facts(d['description'])}"}
                     for (s, t), d in edges.items()}
    embedder.warm([c["content"] for c in chunks.values()] + [r["content"] for r in entity_rows.values()]
                  + [r["content"] for r in relation_rows.values()])
    graph = rag.chunk_entity_relation_graph
    for name, data in nodes.items():
        await graph.upsert_node(name, data)
    for (s, t), data in edges.items():
        await graph.upsert_edge(s, t, data)
    await rag.text_chunks.upsert(chunks)
    await rag.chunks_vdb.upsert(chunks)
    await rag.entities_vdb.upsert(entity_rows)
    await rag.relationships_vdb.upsert(relation_rows)
    for storage in (graph, rag.text_chunks, rag.chunks_vdb, rag.entities_vdb, rag.relationships_vdb):
        await storage.index_done_callback()
    rag.invalidate_snapshot()
    logger.warning("graph: %d chunks, %d entities, %d relations", len(chunks), len(nodes), len(edges))
