"""Build (once) a LightRAG knowledge graph of musique_train_100 from its bundled GPT-3.5 OpenIE triples.

No LLM: passages become chunks, triple subjects/objects entities (lower-cased and whitespace-collapsed like
HippoRAG 2, but Unicode kept), triples relations (one relation per entity pair; predicates as ``keywords``, weight =
triple count, as HippoRAG's fact-edge weight). Embeddings: the local all-MiniLM-L6-v2. The working dir is reused
when it already holds the graph.
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


def custom_kg(dataset: Dataset) -> dict:
    chunks, entity_sources, pairs = [], defaultdict(set), {}
    for passage in dataset.passages:
        chunks.append({"content": passage.content, "source_id": passage.id, "file_path": passage.title})
        openie = (dataset.openie or {}).get(passage.id)
        for s, p, o in (openie.triples if openie else []):
            s, o, p = norm_entity(s), norm_entity(o), " ".join(p.split())
            if not s or not o or s == o:
                continue
            entity_sources[s].add(passage.id)
            entity_sources[o].add(passage.id)
            key = (s, o) if (o, s) not in pairs else (o, s)
            rel = pairs.setdefault(key, {"predicates": [], "sources": set(), "count": 0})
            rel["predicates"].append(p)
            rel["sources"].add(passage.id)
            rel["count"] += 1
    entities = [{"entity_name": name, "entity_type": "entity", "description": name,
                 "source_id": GRAPH_SEP.join(sorted(src))} for name, src in entity_sources.items()]
    relations = [{"src_id": s, "tgt_id": o, "keywords": ", ".join(dict.fromkeys(r["predicates"])),
                  "description": GRAPH_SEP.join(f"{s} {p} {o}" for p in dict.fromkeys(r["predicates"])),
                  "weight": float(r["count"]), "source_id": GRAPH_SEP.join(sorted(r["sources"]))}
                 for (s, o), r in pairs.items()]
    return {"chunks": chunks, "entities": entities, "relationships": relations}


async def musique_rag(working_dir: str, dataset: Dataset | None = None) -> tuple[LightRAG, Dataset, dict]:
    """A PrismRAG over the musique graph (built on first use) and a chunk id -> passage id map."""
    dataset = dataset or load_musique()
    rag = LightRAG(working_dir=working_dir, embedding_func=local_embedding_func(), embedding_batch_num=64,
                   workspace="musique")
    await rag.initialize_storages()
    marker = os.path.join(working_dir, "musique_built.json")
    if not os.path.exists(marker):
        kg = custom_kg(dataset)
        await rag.ainsert_custom_kg(kg)
        with open(marker, "w") as handle:
            json.dump({"entities": len(kg["entities"]), "relations": len(kg["relationships"])}, handle)
    chunk_to_passage = {compute_mdhash_id(sanitize_text_for_encoding(p.content), prefix="chunk-"): p.id
                        for p in dataset.passages}
    return rag, dataset, chunk_to_passage
