"""A small constructed knowledge graph and a cheap deterministic embedder for retriever tests."""

from __future__ import annotations

import hashlib
import re
import uuid

import numpy as np
from lightrag.utils import EmbeddingFunc

from lightrag_prism import PrismRAG
from tests.helpers import offline_tokenizer

DIM = 128
_WORD = re.compile(r"[a-z0-9]+")


def hash_vector(text: str) -> np.ndarray:
    """Bag of words hashed into DIM buckets (cosine ~ word overlap), L2-normalised."""
    vec = np.zeros(DIM, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        h = int.from_bytes(hashlib.md5(word.encode()).digest()[:8], "little")
        vec[h % DIM] += 1.0 if (h >> 32) & 1 else -1.0
    norm = np.linalg.norm(vec)
    return vec / norm if norm else vec


async def _embed(texts: list[str], **_) -> np.ndarray:
    return np.stack([hash_vector(t) for t in texts])


def hash_embedding_func() -> EmbeddingFunc:
    return EmbeddingFunc(embedding_dim=DIM, max_token_size=8192, func=_embed, model_name="hash-bow")


# Alice Vance -- Townsville -- Blue River is the 2-hop chain; Bob Stone -- Gallery Nine matches the hl keywords.
CHUNKS = {
    "c_alice": "Alice Vance was born in Townsville.",
    "c_blue": "The Blue River flows through Townsville.",
    "c_bob": "Bob Stone opened a painting exhibition at Gallery Nine.",
    "c_misc": "Carl Dunn founded Delta Works near Echo Lake.",
    "c_far": "Echo Lake feeds the Fox Canal.",
}
ENTITIES = [
    ("Alice Vance", "person", "Alice Vance is a person.", "c_alice"),
    ("Townsville", "location", "Townsville is a town.", "c_alice"),
    ("Blue River", "location", "Blue River is a stream of water.", "c_blue"),
    ("Bob Stone", "person", "Bob Stone is a person.", "c_bob"),
    ("Gallery Nine", "organization", "Gallery Nine is a venue.", "c_bob"),
    ("Carl Dunn", "person", "Carl Dunn is a person.", "c_misc"),
    ("Delta Works", "organization", "Delta Works is a company.", "c_misc"),
    ("Echo Lake", "location", "Echo Lake is a lake.", "c_misc"),
    ("Fox Canal", "location", "Fox Canal is a canal.", "c_far"),
]
RELATIONS = [
    ("Alice Vance", "Townsville", "Alice Vance was born in Townsville.", "born in", "c_alice"),
    ("Townsville", "Blue River", "The Blue River flows through Townsville.", "flows through", "c_blue"),
    ("Bob Stone", "Gallery Nine", "Bob Stone opened a painting exhibition at Gallery Nine.",
     "painting exhibition", "c_bob"),
    ("Carl Dunn", "Delta Works", "Carl Dunn founded Delta Works.", "founded", "c_misc"),
    ("Delta Works", "Echo Lake", "Delta Works is near Echo Lake.", "near", "c_misc"),
    ("Echo Lake", "Fox Canal", "Echo Lake feeds the Fox Canal.", "feeds", "c_far"),
    ("Gallery Nine", "Carl Dunn", "Gallery Nine shows works of Carl Dunn.", "shows", "c_misc"),
]
QUERY = "Which river flows through the town where Alice Vance was born?"
LL, HL = ["Alice Vance"], ["painting exhibition"]


def custom_kg() -> dict:
    return {
        "chunks": [{"content": text, "source_id": sid, "file_path": f"{sid}.txt"} for sid, text in CHUNKS.items()],
        "entities": [{"entity_name": n, "entity_type": t, "description": d, "source_id": s, "file_path": f"{s}.txt"}
                     for n, t, d, s in ENTITIES],
        "relationships": [{"src_id": a, "tgt_id": b, "description": d, "keywords": k, "weight": 1.0,
                           "source_id": s, "file_path": f"{s}.txt"} for a, b, d, k, s in RELATIONS],
    }


def chunk_id_of(alias: str) -> str:
    from lightrag.utils import compute_mdhash_id

    return compute_mdhash_id(CHUNKS[alias], prefix="chunk-")


async def make_rag(tmp_path, kg: dict | None = None, **kwargs) -> PrismRAG:
    """A PrismRAG holding ``kg`` (default: the graph above)."""
    params = dict(working_dir=str(tmp_path), workspace=f"t_{uuid.uuid4().hex[:10]}",
                  embedding_func=hash_embedding_func(), tokenizer=offline_tokenizer())
    params.update(kwargs)
    rag = PrismRAG(**params)
    await rag.initialize_storages()
    await rag.ainsert_custom_kg(custom_kg() if kg is None else kg)
    return rag
