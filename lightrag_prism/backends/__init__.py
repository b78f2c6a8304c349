"""Offline-first backends: tokenizer, local embedder and OpenAI-compatible endpoints (the no-LLM stand-in, which
answers with the offline extractor, is ``insert/offline_llm.py``)."""

from .openai_compat import (
    embedding_from_env,
    llm_configured_in_env,
    llm_from_env,
    openai_compatible_embedding,
    openai_compatible_llm,
)
from .tokenizer import OfflineTokenizer


def local_embedding_func(batch_size: int = 64, max_token_size: int = 256, torch_threads: int | None = None,
                         precision: str = "auto", query_runtime: str = "numpy"):
    """all-MiniLM-L6-v2 as a LightRAG EmbeddingFunc, computed in a worker process (see ``local_embedder``)."""
    from .local_embedder import local_embedding_func as make

    return make(batch_size=batch_size, max_token_size=max_token_size, torch_threads=torch_threads,
                precision=precision, query_runtime=query_runtime)


def set_worker_idle_seconds(seconds: float | None) -> None:
    """Stop the local embedder's worker processes after ``seconds`` without a request (default 300, or
    ``PRISM_EMBED_IDLE_SECONDS``); None keeps them until the process ends. They start again on demand."""
    from .local_embedder import set_worker_idle_seconds as set_idle

    set_idle(seconds)


EMBEDDING_BATCH = 64  # texts per embedding call (LightRAG sends 10 by default)


def default_embedding_func():
    """The endpoint's embedding model when ``PRISM_EMBEDDING_MODEL`` is set, else the local MiniLM."""
    return embedding_from_env() or local_embedding_func()


__all__ = [
    "EMBEDDING_BATCH", "OfflineTokenizer", "default_embedding_func", "embedding_from_env",
    "llm_configured_in_env", "llm_from_env",
    "local_embedding_func", "openai_compatible_embedding", "openai_compatible_llm",
    "set_worker_idle_seconds",
]
