"""Build (once) a LightRAG knowledge graph of musique_train_100 from its bundled GPT-3.5 OpenIE triples.

No LLM: passages become chunks (``ainsert_custom_kg``, embedded with the local all-MiniLM-L6-v2), triple
subjects/objects entities (lower-cased and whitespace-collapsed like HippoRAG 2, but Unicode kept), triples relations
(one relation per entity pair; predicates as ``keywords``, weight = triple count, as HippoRAG's fact-edge weight).
Entities and relations are written with the public graph-storage API (``upsert_node``/``upsert_edge``) with their
full multi-passage ``source_id`` (``ainsert_custom_kg`` maps only ONE source alias per record); they are not put in
the entity/relation vector stores, which only LightRAG's KG modes read: this graph serves naive, hipporag and BM25.
The working dir is reused when it already holds the graph.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

from lightrag.utils import compute_mdhash_id, normalize_entity_name, sanitize_text_for_encoding

from lightrag_prism import LightRAG
from lightrag_prism.backends import local_embedding_func
from lightrag_prism.eval.datasets import Dataset, load_musique

GRAPH_SEP = "<SEP>"


def norm_entity(text: str) -> str:
    """HippoRAG 2 lower-cases; LightRAG's own name contract then applies (it may empty short numbers)."""
    return normalize_entity_name(" ".join(text.lower().split()))


def musique_graph(dataset: Dataset, chunk_id) -> tuple[list[dict], dict, dict]:
    """(chunks for ainsert_custom_kg, entity name -> node data, (src, tgt) -> edge data)."""
    chunks, entity_sources, pairs = [], defaultdict(set), {}
    for passage in dataset.passages:
        chunks.append({"content": passage.content, "source_id": passage.id, "file_path": passage.title})
        cid = chunk_id(passage)
        openie = (dataset.openie or {}).get(passage.id)
        for s, p, o in (openie.triples if openie else []):
            s, o, p = norm_entity(s), norm_entity(o), " ".join(p.split())
            if not s or not o or s == o:
                continue
            entity_sources[s].add(cid)
            entity_sources[o].add(cid)
            key = (s, o) if (o, s) not in pairs else (o, s)
            rel = pairs.setdefault(key, {"predicates": [], "sources": set(), "count": 0})
            rel["predicates"].append(p)
            rel["sources"].add(cid)
            rel["count"] += 1
    nodes = {name: {"entity_id": name, "entity_type": "entity", "description": name,
                    "source_id": GRAPH_SEP.join(sorted(src)), "file_path": "musique"}
             for name, src in entity_sources.items()}
    edges = {(s, o): {"keywords": ", ".join(dict.fromkeys(r["predicates"])),
                      "description": GRAPH_SEP.join(f"{s} {p} {o}" for p in dict.fromkeys(r["predicates"])),
                      "weight": float(r["count"]), "source_id": GRAPH_SEP.join(sorted(r["sources"])),
                      "file_path": "musique"}
             for (s, o), r in pairs.items()}
    return chunks, nodes, edges


def _chunk_id(passage) -> str:
    return compute_mdhash_id(sanitize_text_for_encoding(passage.content), prefix="chunk-")


async def musique_rag(working_dir: str, dataset: Dataset | None = None) -> tuple[LightRAG, Dataset, dict]:
    """A PrismRAG over the musique graph (built on first use) and a chunk id -> passage id map."""
    dataset = dataset or load_musique()
    rag = LightRAG(working_dir=working_dir, embedding_func=local_embedding_func(), embedding_batch_num=32,
                   default_embedding_timeout=600, workspace="musique")
    await rag.initialize_storages()
    marker = os.path.join(working_dir, "musique_built.json")
    chunk_to_passage = {_chunk_id(p): p.id for p in dataset.passages}
    if not os.path.exists(marker):
        chunks, nodes, edges = musique_graph(dataset, _chunk_id)
        await rag.ainsert_custom_kg({"chunks": chunks})
        graph = rag.chunk_entity_relation_graph  # public BaseGraphStorage API
        for name, data in nodes.items():
            await graph.upsert_node(name, data)
        for (s, o), data in edges.items():
            await graph.upsert_edge(s, o, data)
        await graph.index_done_callback()
        rag.invalidate_snapshot()
        with open(marker, "w") as handle:
            json.dump({"entities": len(nodes), "relations": len(edges)}, handle)
    return rag, dataset, chunk_to_passage
