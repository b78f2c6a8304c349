"""LLM and embedding functions for any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server).

Settings come from the environment:

=========================  ===========================================================
``PRISM_LLM_MODEL``        chat model name; setting it is what turns the LLM on
``OPENAI_BASE_URL``        endpoint, e.g. ``http://localhost:11434/v1`` (default: OpenAI)
``OPENAI_API_KEY``         API key (any non-empty string for local servers)
``PRISM_EMBEDDING_MODEL``  embedding model served by the same endpoint (optional)
``PRISM_EMBEDDING_DIM``    its dimension (required with ``PRISM_EMBEDDING_MODEL``)
``PRISM_LLM_MAX_RETRIES``  retries of a failed LLM call (default 2: three attempts)
``PRISM_LLM_TIMEOUT``      seconds before one LLM call times out (default: the client's)
=========================  ===========================================================

A failed call (connection error, timeout, HTTP 429/5xx, an invalid response) is retried ``max_retries`` times with
exponential waits of 0.5 to 4 s (LightRAG's own client makes three attempts with 4 to 10 s waits), then raised. A
refused connection (nothing listens at the endpoint) is not transient: it is retried once at most.

The client is LightRAG's own ``openai_complete_if_cache`` / ``openai_embed``; nothing here opens a second client.
"""

from __future__ import annotations

import os

from lightrag.utils import EmbeddingFunc

from ..errors import connection_refused


def llm_configured_in_env(environ=os.environ) -> bool:
    return bool(environ.get("PRISM_LLM_MODEL"))


def llm_from_env(environ=os.environ):
    """An async LightRAG ``llm_model_func`` for the endpoint in the environment, or ``None`` if none is set."""
    model = environ.get("PRISM_LLM_MODEL")
    if not model:
        return None
    retries, timeout = environ.get("PRISM_LLM_MAX_RETRIES"), environ.get("PRISM_LLM_TIMEOUT")
    return openai_compatible_llm(model, environ.get("OPENAI_BASE_URL"), environ.get("OPENAI_API_KEY") or "EMPTY",
                                 max_retries=_number("PRISM_LLM_MAX_RETRIES", retries, int, DEFAULT_MAX_RETRIES),
                                 timeout=_number("PRISM_LLM_TIMEOUT", timeout, float, None))


DEFAULT_MAX_RETRIES = 2
DEFAULT_BASE_URL = "https://api.openai.com/v1"  # what the OpenAI client uses without OPENAI_BASE_URL


def _number(name: str, text: str | None, kind, default):
    if text is None or not text.strip():
        return default
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {text!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {text!r}")
    return value


def openai_compatible_llm(model: str, base_url: str | None = None, api_key: str | None = None, *,
                          max_retries: int = DEFAULT_MAX_RETRIES, timeout: float | None = None):
    """An async ``llm_model_func`` that sends LightRAG's prompts to ``model`` at ``base_url``; a failed call is
    retried ``max_retries`` times (LightRAG's retry conditions, shorter waits), ``timeout`` bounds one call."""
    from lightrag.llm.openai import openai_complete_if_cache  # imported lazily: it is heavy
    from tenacity import stop_after_attempt, wait_exponential

    if not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
    send = openai_complete_if_cache.retry_with(stop=stop_after_attempt(max_retries + 1) | _refused_after_one_retry,
                                               reraise=True, wait=wait_exponential(multiplier=0.5, min=0.5, max=4))

    async def complete(prompt, system_prompt=None, history_messages=None, **kwargs):
        kwargs.pop("hashing_kv", None)  # LightRAG caches at its own call sites
        if timeout is not None:
            kwargs.setdefault("timeout", timeout)
        return await send(model, prompt, system_prompt=system_prompt, history_messages=history_messages or [],
                          base_url=base_url, api_key=api_key, **kwargs)

    complete.model_name, complete.base_url = model, base_url or DEFAULT_BASE_URL
    return complete


def _refused_after_one_retry(retry_state) -> bool:
    """tenacity stop condition: a second refused connection ends the retries."""
    outcome = retry_state.outcome
    return (retry_state.attempt_number >= 2 and outcome is not None and outcome.failed
            and connection_refused(outcome.exception()) is not None)


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
