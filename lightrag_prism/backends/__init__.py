"""Offline-first backends: tokenizer, local embedder, no-LLM stand-in and OpenAI-compatible endpoints."""

from .offline_llm import OFFLINE_MODEL_NAME, offline_llm_complete
from .openai_compat import (
    embedding_from_env,
    llm_configured_in_env,
    llm_from_env,
    openai_compatible_embedding,
    openai_compatible_llm,
)
from .tokenizer import OfflineTokenizer


def local_embedding_func(batch_size: int = 64, max_token_size: int = 256, torch_threads: int | None = None,
                         precision: str = "auto"):
    """all-MiniLM-L6-v2 as a LightRAG EmbeddingFunc, computed in a worker process (see ``local_embedder``)."""
    from .local_embedder import local_embedding_func as make

    return make(batch_size=batch_size, max_token_size=max_token_size, torch_threads=torch_threads,
                precision=precision)


__all__ = [
    "OFFLINE_MODEL_NAME", "OfflineTokenizer", "embedding_from_env", "llm_configured_in_env", "llm_from_env",
    "local_embedding_func", "offline_llm_complete", "openai_compatible_embedding", "openai_compatible_llm",
]
