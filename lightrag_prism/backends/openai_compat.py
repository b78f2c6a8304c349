"""LLM and embedding functions for any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server).

Settings come from the environment:

=========================  ===========================================================
``PRISM_LLM_MODEL``        chat model name; setting it is what turns the LLM on
``OPENAI_BASE_URL``        endpoint, e.g. ``http://localhost:11434/v1`` (default: OpenAI)
``OPENAI_API_KEY``         API key (any non-empty string for local servers)
``PRISM_EMBEDDING_MODEL``  embedding model served by the same endpoint (optional)
``PRISM_EMBEDDING_DIM``    its dimension (required with ``PRISM_EMBEDDING_MODEL``)
=========================  ===========================================================

The client is LightRAG's own ``openai_complete_if_cache`` / ``openai_embed``; nothing here opens a second client.
"""

from __future__ import annotations

import os
from lightrag.utils import EmbeddingFunc


def llm_configured_in_env(environ=os.environ) -> bool:
    return bool(environ.get("PRISM_LLM_MODEL"))


def llm_from_env(environ=os.environ):
    """An async LightRAG ``llm_model_func`` for the endpoint in the environment, or ``None`` if none is set."""
    model = environ.get("PRISM_LLM_MODEL")
    if not model:
        return None
    return openai_compatible_llm(model, environ.get("OPENAI_BASE_URL"), environ.get("OPENAI_API_KEY") or "EMPTY")


def openai_compatible_llm(model: str, base_url: str | None = None, api_key: str | None = None):
    """An async ``llm_model_func`` that sends LightRAG's prompts to ``model`` at ``base_url``."""
    from lightrag.llm.openai import openai_complete_if_cache  # imported lazily: it is heavy

    async def complete(prompt, system_prompt=None, history_messages=None, **kwargs):
        kwargs.pop("hashing_kv", None)  # LightRAG caches at its own call sites
        return await openai_complete_if_cache(
            model, prompt, system_prompt=system_prompt, history_messages=history_messages or [],
            base_url=base_url, api_key=api_key, **kwargs,
        )

    complete.model_name = model
    return complete


def embedding_from_env(environ=os.environ) -> EmbeddingFunc | None:
    """LightRAG ``EmbeddingFunc`` for ``PRISM_EMBEDDING_MODEL`` at the endpoint, or ``None`` if unset."""
    model = environ.get("PRISM_EMBEDDING_MODEL")
    if not model:
        return None
    dim = environ.get("PRISM_EMBEDDING_DIM")
    if not dim or not dim.isdigit():
        raise ValueError("PRISM_EMBEDDING_DIM must be set to the embedding dimension of PRISM_EMBEDDING_MODEL")
    return openai_compatible_embedding(model, int(dim), environ.get("OPENAI_BASE_URL"),
                                       environ.get("OPENAI_API_KEY") or "EMPTY")


def openai_compatible_embedding(model: str, dim: int, base_url: str | None = None, api_key: str | None = None,
                                max_token_size: int = 8192) -> EmbeddingFunc:
    from lightrag.llm.openai import openai_embed

    async def embed(texts: list[str], **_: object):
        # max_token_size=0: LightRAG's client would otherwise truncate with a tiktoken vocabulary it downloads;
        # LightRAG already keeps chunks under the EmbeddingFunc's max_token_size.
        return await openai_embed.func(texts, model=model, base_url=base_url, api_key=api_key, max_token_size=0)

    return EmbeddingFunc(embedding_dim=dim, max_token_size=max_token_size, func=embed, model_name=model)
